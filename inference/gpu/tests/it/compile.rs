//! NVRTC compiles both kernels for every Table 2 size and variant (no GPU
//! needed); without NVRTC the error says how to provide it.
use dv_gpu::{compile_ptx, nvrtc_available, GpuError, MultiPlan, SinglePlan, Weights};
use dv_synth::random::random_voice;

#[test]
fn nvrtc_compiles_both_kernels_for_every_preset() {
    if !nvrtc_available() {
        let e = compile_ptx("extern \"C\" __global__ void k() {}", "k", "compute_90").unwrap_err();
        assert!(matches!(e, GpuError::CudaUnavailable { .. }) && e.to_string().contains("LD_LIBRARY_PATH"), "{e}");
        eprintln!("NVRTC not loadable here: kernel compilation not checked");
        return;
    }
    let smem = 227 * 1024;
    for (name, cfg) in dv_voice::PRESETS {
        let voice = random_voice(cfg, 1).unwrap();
        let w = Weights::from_voice(&voice).unwrap();
        for (cluster, bf16) in [(16, false), (8, true)] {
            let plan = SinglePlan::new(&w.sizes, cluster, bf16, smem).unwrap();
            let ptx = compile_ptx(&plan.source(&w.sizes), "wavenet_single", "compute_90")
                .unwrap_or_else(|e| panic!("{name} C={cluster}: {e}"))
                .to_src();
            assert!(ptx.contains(".entry wavenet_single"), "{name}");
            assert!(ptx.contains("barrier.cluster.arrive"), "{name}: no cluster barrier");
            assert!(ptx.contains("mapa.shared::cluster"), "{name}: no distributed shared memory");
            assert!(
                ptx.contains(&format!(".reqnctapercluster {cluster}")) || ptx.contains(".explicitcluster"),
                "{name}"
            );
        }
        if w.sizes.residual >= 64 {
            let plan = SinglePlan::with_gate_warps(&w.sizes, 16, 2, false, smem).unwrap();
            assert_eq!(plan.threads, 64 + w.sizes.skip);
            compile_ptx(&plan.source(&w.sizes), plan.entry(), "compute_90")
                .unwrap_or_else(|e| panic!("{name} 2 gate warps: {e}"));
        } else {
            assert!(SinglePlan::with_gate_warps(&w.sizes, 16, 4, false, smem).is_err(), "{name}: 8 inputs per warp");
        }
        // The chain-block kernel: only sizes whose chain fits one block.
        match SinglePlan::chain_block(&w.sizes, 4, 4, true, smem) {
            Ok(plan) => {
                assert_eq!(name, "20x32x128", "only the smallest chain fits one block");
                let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), "compute_90")
                    .unwrap_or_else(|e| panic!("{name} chain block: {e}"))
                    .to_src();
                assert!(ptx.contains(".entry wavenet_small"), "{name}");
                assert!(ptx.contains("st.shared::cluster"), "{name}: no pushes to the helpers");
            }
            Err(e) => assert_ne!(name, "20x32x128", "{e}"),
        }
        // The layer-split chain kernel: r = 32 or 64, r / 32 × 1, 2 or 4 chain warps.
        for (lpb, warps) in [(8, 4), (8, 8), (5, 8), (20, 1), (10, 2)] {
            match SinglePlan::chain_split(&w.sizes, lpb, warps, smem) {
                Ok(plan) => {
                    let cq = warps / (w.sizes.residual / 32);
                    assert!([1, 2, 4].contains(&cq), "{name} {warps} warps");
                    assert_eq!(plan.cluster, w.sizes.layers.div_ceil(lpb) + 2, "{name}");
                    let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), "compute_90")
                        .unwrap_or_else(|e| panic!("{name} chain split {lpb}/{warps}: {e}"))
                        .to_src();
                    assert!(ptx.contains(".entry wavenet_chain"), "{name}");
                    assert!(
                        ptx.contains("st.async.shared::cluster.mbarrier::complete_tx::bytes"),
                        "{name}: no st.async"
                    );
                    assert!(
                        ptx.contains("mbarrier.try_wait.parity.acquire.cluster")
                            || ptx.contains("mbarrier.test_wait.parity.acquire.cluster"),
                        "{name}: no wait on data from another block"
                    );
                    // One cluster barrier at the start and one at the end, none per sample.
                    assert_eq!(ptx.matches("barrier.cluster.wait").count(), 2, "{name}");
                    // One chain warp has no named barrier 3 (bar.sync 1 is the rows warps').
                    assert_eq!(ptx.contains("bar.sync 3"), cq > 1, "{name} {lpb}/{warps}");
                    assert!(!ptx.contains(".local"), "{name} chain split {lpb}/{warps}: spills to local memory");
                }
                Err(e) => {
                    let r = w.sizes.residual;
                    let fits =
                        (r == 32 && warps <= 4 && lpb <= 20) || (r == 64 && (warps == 4 || warps == 8) && lpb <= 8);
                    assert!(!fits, "{name} {lpb}/{warps}: {e}");
                }
            }
        }
        for mma in [true, false] {
            let plan = MultiPlan::new(&w.sizes, 32, 256, mma, 3, 16384, smem).unwrap();
            let ptx = compile_ptx(&plan.source(&w.sizes), "wavenet_multi", "compute_90")
                .unwrap_or_else(|e| panic!("{name} mma={mma}: {e}"))
                .to_src();
            assert!(ptx.contains(".entry wavenet_multi"), "{name}");
            assert_eq!(ptx.contains("mma.sync.aligned.m16n8k16"), mma, "{name} mma={mma}");
            assert!(ptx.contains("cp.async.cg.shared.global"), "{name}: weights not staged with cp.async");
        }
        // The tile kernel at the stream counts per block the benchmarks use.
        for (per_block, threads, stages, f16) in
            [(32, 128, 2, false), (48, 192, 3, false), (64, 256, 2, false), (64, 256, 3, true)]
        {
            let plan = match MultiPlan::tiles(&w.sizes, per_block, threads, stages, 0, f16, smem) {
                Ok(p) => p,
                Err(e) => {
                    // Only the 256 skip channels' chunks outgrow shared memory.
                    assert!(w.sizes.skip == 256 && e.to_string().contains("shared memory"), "{name} {per_block}: {e}");
                    continue;
                }
            };
            let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), "compute_90")
                .unwrap_or_else(|e| panic!("{name} tiles {per_block}: {e}"))
                .to_src();
            assert!(ptx.contains(".entry wavenet_tiles"), "{name}");
            let mma = if f16 { "m16n8k16.row.col.f32.f16.f16.f32" } else { "m16n8k16.row.col.f32.bf16.bf16.f32" };
            assert!(ptx.contains(mma), "{name} f16={f16}");
            assert!(ptx.contains("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), "{name}");
            assert!(!ptx.contains(".local"), "{name} tiles {per_block}: register arrays spilled to local memory");
        }
        // The warpgroup-MMA tile kernel (sm_90a): every product a wgmma from
        // shared-memory descriptors; no ldmatrix or mma.sync left.
        for (threads, f16, stages) in [(256, false, 2), (256, false, 3), (512, false, 2), (256, true, 2)] {
            let plan = match MultiPlan::tiles_wg(&w.sizes, threads, stages, 0, f16, smem) {
                Ok(p) => p,
                Err(e) => {
                    // Three slots of r = 64's 32 or 40 KB chunks do not fit beside 64 streams.
                    assert!(w.sizes.residual == 64 && stages == 3 && e.to_string().contains("shared memory"), "{e}");
                    continue;
                }
            };
            assert_eq!(plan.arch((9, 0)), "compute_90a");
            let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), &plan.arch((9, 0)))
                .unwrap_or_else(|e| panic!("{name} tiles-wg {threads}: {e}"))
                .to_src();
            let ty = if f16 { "f32.f16.f16" } else { "f32.bf16.bf16" };
            assert!(ptx.contains(".target sm_90a"), "{name}");
            assert!(ptx.contains("wgmma.mma_async.sync.aligned.m64n") && ptx.contains(ty), "{name} f16={f16}");
            assert!(ptx.contains("wgmma.wait_group.sync.aligned 0"), "{name}");
            assert!(ptx.contains("fence.proxy.async.shared::cta"), "{name}");
            assert!(!ptx.contains("mma.sync") && !ptx.contains("ldmatrix"), "{name}");
            assert!(!ptx.contains(".local"), "{name} tiles-wg {threads}: spills to local memory");
        }
        // The column kernel (sm_90a, r = 64 only): streams as the wgmma's N.
        for (per_block, stages) in [(8, 2), (40, 2), (48, 3), (64, 2)] {
            let plan = match MultiPlan::cols(&w.sizes, per_block, stages, 0, smem) {
                Ok(p) => p,
                Err(e) => {
                    let why = e.to_string();
                    assert!(
                        w.sizes.residual != 64 || (why.contains("shared memory") && w.sizes.skip == 256),
                        "{name} cols {per_block}: {e}"
                    );
                    continue;
                }
            };
            let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), &plan.arch((9, 0)))
                .unwrap_or_else(|e| panic!("{name} cols {per_block}: {e}"))
                .to_src();
            assert!(ptx.contains(".entry wavenet_cols"), "{name}");
            assert!(ptx.contains(&format!("wgmma.mma_async.sync.aligned.m64n{per_block}k16.f32.bf16.bf16")), "{name}");
            assert!(ptx.contains("cp.async.bulk.shared::cluster.global"), "{name}: chunks not by TMA");
            assert!(!ptx.contains(".local"), "{name} cols {per_block}: spills to local memory");
        }
    }
}

#[test]
fn a_broken_source_is_a_compile_error_with_the_log() {
    if !nvrtc_available() {
        return;
    }
    let e = compile_ptx("extern \"C\" __global__ void k() { undefined_name; }", "broken.cu", "compute_90").unwrap_err();
    match e {
        GpuError::Compile { kernel, log } => {
            assert_eq!(kernel, "broken.cu");
            assert!(log.contains("undefined_name"), "{log}");
        }
        other => panic!("{other:?}"),
    }
}

/// The conditioning network's kernels (`kernels/conditioning.cu`) compile,
/// all three entry points in one module.
#[test]
fn nvrtc_compiles_the_conditioning_kernels() {
    if !nvrtc_available() {
        eprintln!("NVRTC not loadable here: the conditioning kernels not checked");
        return;
    }
    let ptx = compile_ptx(dv_gpu::conditioning_source(), "cond_gemm", "compute_90").unwrap().to_src();
    for entry in ["cond_gemm", "cond_fo_pool", "cond_project"] {
        assert!(ptx.contains(&format!(".entry {entry}")), "{entry} missing");
    }
    if std::env::var_os("DV_GPU_DEFINES").is_none() {
        assert!(!ptx.contains("mma.sync"), "float32 FMAs by default");
    }
    // The experiment `DV_GPU_DEFINES=COND_TF32`: the products on tensor cores in three TF32 passes.
    let src = format!("#define COND_TF32\n{}", dv_gpu::conditioning_source());
    let ptx = compile_ptx(&src, "cond_gemm", "compute_90").unwrap().to_src();
    for entry in ["cond_gemm", "cond_fo_pool", "cond_project"] {
        assert!(ptx.contains(&format!(".entry {entry}")), "{entry} missing with COND_TF32");
    }
    assert!(ptx.contains("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), "tensor-core MMAs with COND_TF32");
    assert!(ptx.contains("cvt.rna.tf32.f32"), "operands split into TF32 terms");
}
