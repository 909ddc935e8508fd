//! The per-block slices of kernel 1 and the whole matrices of kernel 2 hold
//! exactly the voice's weights, each where the kernel indexes it.
use dv_gpu::model::{bf16_bits, bf16_value, gate_row, MultiLayout, SingleLayout, Stored, A};
use dv_gpu::{MultiPlan, SinglePlan, Weights};
use dv_synth::random::random_voice;
use dv_voice::WavenetConfig;

fn weights(name: &str) -> Weights {
    let voice = random_voice(WavenetConfig::preset(name).unwrap(), 11).unwrap();
    Weights::from_voice(&voice).unwrap()
}

#[test]
fn single_slices_put_every_weight_where_the_kernel_reads_it() {
    let w = weights("20x32x128");
    let (l, r, s) = (w.sizes.layers, w.sizes.residual, w.sizes.skip);
    for cluster in [1, 2, 4, 8, 16] {
        let lay = SingleLayout::new(&w, cluster, false).unwrap();
        let (u, ac) = (r / cluster, A / cluster);
        for c in 0..cluster {
            for i in [0, l - 1] {
                for q in 0..2 * u {
                    let o = gate_row(r, u, c, q);
                    for j in [0, r - 1] {
                        let k = ((c * l + i) * 2 * u + q) * r + j;
                        assert_eq!(lay.wc.get(k), w.w_cur[i][o * r + j]);
                        assert_eq!(lay.wp.get(k), w.w_prev[i][o * r + j]);
                    }
                }
            }
            for i in [0, l - 2] {
                for j in 0..u {
                    for o in [0, r - 1] {
                        assert_eq!(lay.wr.get(((c * (l - 1) + i) * u + j) * r + o), w.w_res[i][o * r + c * u + j]);
                    }
                }
            }
            for i in [0, l - 1] {
                for j in 0..u {
                    for o in [0, s - 1] {
                        let k = (c * l * u + i * u + j) * s + o;
                        assert_eq!(lay.wsk.get(k), w.skip_w[o * l * r + i * r + c * u + j]);
                    }
                }
            }
            for q in [0, ac - 1] {
                assert_eq!(lay.wz.get((c * ac + q) * s + 7), w.relu_w[(c * ac + q) * s + 7]);
                assert_eq!(lay.wo.get((c * ac + q) * A + 9), w.out_w[(c * ac + q) * A + 9]);
            }
        }
        // Every gate row belongs to exactly one block.
        let mut seen = vec![0; 2 * r];
        for c in 0..cluster {
            for q in 0..2 * u {
                seen[gate_row(r, u, c, q)] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "cluster {cluster}: {seen:?}");
        assert_eq!(lay.wc.len(), l * 2 * r * r);
        assert_eq!(lay.wr.len(), (l - 1) * r * r);
    }
    assert!(SingleLayout::new(&w, 3, false).is_err());
    assert!(SingleLayout::new(&w, 64, false).is_err());
}

#[test]
fn multi_matrices_are_row_major_or_transposed() {
    let w = weights("20x32x128");
    let (l, r, s) = (w.sizes.layers, w.sizes.residual, w.sizes.skip);
    let rm = MultiLayout::new(&w, true, false);
    let tr = MultiLayout::new(&w, false, false);
    let i = l - 1;
    for (o, k) in [(0, 0), (2 * r - 1, 0), (3, r), (5, 2 * r - 1)] {
        let want = if k < r { w.w_prev[i][o * r + k] } else { w.w_cur[i][o * r + k - r] };
        assert_eq!(rm.dil.get(i * 4 * r * r + o * 2 * r + k), want);
        assert_eq!(tr.dil.get(i * 4 * r * r + k * 2 * r + o), want);
    }
    for (o, k) in [(0, 0), (s - 1, r - 1), (7, 3)] {
        let want = w.skip_w[o * l * r + i * r + k];
        assert_eq!(rm.skip.get(i * s * r + o * r + k), want);
        assert_eq!(tr.skip.get(i * s * r + k * s + o), want);
    }
    assert_eq!(rm.res.get((l - 2) * r * r + 3 * r + 5), w.w_res[l - 2][3 * r + 5]);
    assert_eq!(tr.res.get((l - 2) * r * r + 5 * r + 3), w.w_res[l - 2][3 * r + 5]);
    assert_eq!(rm.out.get(10 * A + 20), w.out_w[10 * A + 20]);
    assert_eq!(tr.out.get(20 * A + 10), w.out_w[10 * A + 20]);
    assert_eq!(tr.relu.get(3 * A + 200), w.relu_w[200 * s + 3]);
}

#[test]
fn the_tile_layout_interleaves_gate_rows_and_joins_residual_and_skip() {
    for name in ["20x32x128", "40x64x256"] {
        let w = weights(name);
        let (l, r, s) = (w.sizes.layers, w.sizes.residual, w.sizes.skip);
        let t = MultiLayout::tiles(&w, false);
        assert_eq!(t.dil.len(), l * 4 * r * r);
        assert_eq!(t.res.len(), l * (r + s) * r);
        for i in [0, l - 1] {
            for j in [0, 3, r - 1] {
                for k in [0, 5, r - 1, r, 2 * r - 1] {
                    // Row 2j is unit j's tanh row, 2j + 1 its sigmoid row; columns [W_prev | W_cur].
                    for (row, o) in [(2 * j, j), (2 * j + 1, r + j)] {
                        let want = if k < r { w.w_prev[i][o * r + k] } else { w.w_cur[i][o * r + k - r] };
                        assert_eq!(t.dil.get(i * 4 * r * r + row * 2 * r + k), want, "{name} {i} {j} {k}");
                    }
                }
            }
            let base = i * (r + s) * r;
            for (o, k) in [(0, 0), (r - 1, 7), (2, r - 1)] {
                let want = if i + 1 < l { w.w_res[i][o * r + k] } else { 0.0 };
                assert_eq!(t.res.get(base + o * r + k), want, "{name} res {i}");
            }
            for (o, k) in [(0, 0), (s - 1, r - 1), (7, 3)] {
                assert_eq!(t.res.get(base + (r + o) * r + k), w.skip_w[o * l * r + i * r + k], "{name} skip {i}");
            }
        }
        assert_eq!(t.relu.get(3 * s + 2), w.relu_w[3 * s + 2]);
        assert_eq!(t.out.get(10 * A + 20), w.out_w[10 * A + 20]);
    }
}

#[test]
fn the_f16_tile_layout_holds_the_bf16_weights_exactly_scaled_by_powers_of_two() {
    let w = weights("20x64x128");
    let t = MultiLayout::tiles(&w, false);
    let (h, sc) = MultiLayout::tiles_f16(&w);
    for (k, (full, half)) in
        [(&t.dil, &h.dil), (&t.res, &h.res), (&t.relu, &h.relu), (&t.out, &h.out)].into_iter().enumerate()
    {
        assert!(matches!(half, Stored::F16(_)));
        assert_eq!(sc[k], 2f32.powi(sc[k].log2().round() as i32), "scale {k} is a power of two");
        let max = (0..half.len()).map(|i| half.get(i).abs()).fold(0.0f32, f32::max);
        assert!((16384.0..32768.0).contains(&max), "set {k}: largest scaled magnitude {max}");
        let mut exact = 0;
        for i in 0..full.len() {
            let want = bf16_value(bf16_bits(full.get(i)));
            let got = half.get(i) * sc[k];
            if got == want {
                exact += 1;
            } else {
                // Only weights below half precision's normal range after scaling may change.
                assert!(want.abs() < max * sc[k] / 2f32.powi(28), "set {k} weight {i}: {got} vs {want}");
                assert!((got - want).abs() <= max * sc[k] / 2f32.powi(28), "set {k} weight {i}: {got} vs {want}");
            }
        }
        assert!(exact > full.len() * 99 / 100, "set {k}: {exact} of {} exact", full.len());
    }
    let p = MultiPlan::tiles(&w.sizes, 64, 256, 3, 0, true, 227 * 1024).unwrap();
    assert!(p.f16 && p.source(&w.sizes).contains("#define F16 1"), "one 16-bit term leaves room for a third slot");
}

#[test]
fn tile_plans_size_their_chunks_to_the_slots_and_refuse_what_they_cannot_run() {
    let smem = 227 * 1024;
    let w = weights("20x64x128");
    let p = MultiPlan::tiles(&w.sizes, 64, 256, 2, 0, false, smem).unwrap();
    assert_eq!((p.warps_n, p.entry()), (2, "wavenet_tiles"));
    // A slot holds W_dil (128 rows of 128 + 8 bfloat16) and [W_res; W_skip] (192 rows of 72).
    assert_eq!(p.panel_bytes, 128 * 136 * 2);
    // Relu rows (K = 128) and output rows (K = 256) per chunk: multiples of 32 dividing 256 that fit.
    assert_eq!(p.chunk_rows, [128, 64]);
    assert!(p.smem_bytes <= smem);
    assert!(
        MultiPlan::tiles(&w.sizes, 64, 256, 3, 0, false, smem).is_err(),
        "three slots do not fit beside 64 streams"
    );
    assert!(MultiPlan::tiles(&w.sizes, 24, 256, 2, 0, false, smem).is_err(), "not a multiple of 16");
    assert!(
        MultiPlan::tiles(&w.sizes, 32, 192, 2, 0, false, smem).is_err(),
        "192 threads are not 2 row tiles × whole warps"
    );
    assert!(MultiPlan::tiles(&w.sizes, 32, 512, 2, 0, false, smem).is_err(), "8 warps along 64 residual outputs");
    let small = weights("20x32x128");
    let p = MultiPlan::tiles(&small.sizes, 32, 128, 2, 0, false, smem).unwrap();
    // The slot grows to 32 output-layer rows of 256 + 8.
    assert_eq!(p.panel_bytes, (32 * 264 * 2usize).next_multiple_of(128));
    assert_eq!(p.chunk_rows, [32, 32]);
    let big = weights("40x64x256");
    assert!(
        MultiPlan::tiles(&big.sizes, 64, 256, 2, 0, false, smem).is_err(),
        "(40, 64, 256) at 64 streams exceeds shared memory"
    );
    assert!(MultiPlan::tiles(&big.sizes, 48, 192, 2, 0, false, smem).is_ok());
}

#[test]
fn bf16_rounds_to_nearest_even() {
    assert_eq!(bf16_bits(1.0), 0x3f80);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
    assert_eq!(bf16_value(bf16_bits(1.0 + 1.0 / 256.0)), 1.0);
    // Just above halfway rounds up.
    assert_eq!(bf16_value(bf16_bits(1.0 + 1.0 / 256.0 + 1.0 / 65536.0)), 1.0 + 1.0 / 128.0);
    assert_eq!(bf16_value(bf16_bits(-3.5)), -3.5);
    assert!(bf16_value(bf16_bits(f32::NAN)).is_nan());
    for x in [0.1f32, -7.77, 1e-20, 3e30] {
        assert!(((bf16_value(bf16_bits(x)) - x) / x).abs() <= 1.0 / 256.0, "{x}");
    }
    match Stored::new(vec![0.5, 2.0], true) {
        Stored::Bf16(v) => assert_eq!(v, vec![0x3f00, 0x4000]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn plans_keep_the_kernels_warp_invariants_and_refuse_what_they_cannot_run() {
    for (name, cfg) in dv_voice::PRESETS {
        let voice = random_voice(cfg, 1).unwrap();
        let w = Weights::from_voice(&voice).unwrap();
        let r = w.sizes.residual;
        for cluster in [1, 2, 4, 8, 16] {
            let p = match SinglePlan::new(&w.sizes, cluster, false, 227 * 1024) {
                Ok(p) => p,
                Err(e) => {
                    // Refused only for a gate wider than one warp or too many
                    // output weights per thread (small clusters).
                    let e = e.to_string();
                    assert!(e.contains("gate rows") || e.contains("registers"), "{name} C={cluster}: {e}");
                    assert!(cluster <= 4, "{name}: cluster {cluster} refused: {e}");
                    continue;
                }
            };
            let (u, ac) = (r / cluster, A / cluster);
            assert_eq!(2 * u * p.tpr, 32, "{name} C={cluster}: the gate is one warp");
            assert_eq!(p.threads, 32 * p.chain_warps + w.sizes.skip);
            assert_eq!(p.chain_warps, if r >= 64 { 2 } else { 1 }, "{name}: two gate warps where r allows");
            assert_eq!((2 * u * p.tpp) % 32, 0);
            assert_eq!((ac * p.tpz) % 32, 0);
            assert!(p.smem_bytes <= 227 * 1024);
        }
        // (40, 64, 256) in float32 fits shared memory only split 16 ways.
        let big = SinglePlan::new(&w.sizes, 16, false, 227 * 1024).unwrap();
        if name == "40x64x256" {
            assert!(big.smem_weights);
            assert!(!SinglePlan::new(&w.sizes, 4, false, 227 * 1024).unwrap().smem_weights);
            assert!(!SinglePlan::new(&w.sizes, 8, false, 227 * 1024).unwrap().smem_weights);
            assert!(SinglePlan::new(&w.sizes, 8, true, 227 * 1024).unwrap().smem_weights);
        }
        for bf16 in [false, true] {
            let p = MultiPlan::new(&w.sizes, 32, 256, bf16, 3, 16384, 227 * 1024).unwrap();
            assert_eq!(p.mma, bf16, "{name}");
            assert!(p.smem_bytes <= 227 * 1024);
        }
        assert!(MultiPlan::new(&w.sizes, 24, 256, false, 4, 16384, 227 * 1024).is_err(), "not a multiple of 16");
        assert!(MultiPlan::new(&w.sizes, 32, 96, false, 4, 16384, 227 * 1024).is_err(), "96 does not divide 32·r");
        assert!(MultiPlan::new(&w.sizes, 32, 256, false, 4, 4096, 227 * 1024).is_err(), "panel too small for 8 rows");
    }
}

#[test]
fn the_chain_block_layout_interleaves_gate_rows_and_keeps_the_rest() {
    let w = weights("20x32x128");
    let (l, r) = (w.sizes.layers, w.sizes.residual);
    let lay = SingleLayout::chain_block(&w, false);
    for i in [0, l - 1] {
        for j in [0, 5, r - 1] {
            for k in [0, 7, r - 1] {
                // Pair (k, j): W_cur[j, k] then its sigmoid row's W_cur[r + j, k].
                assert_eq!(lay.wc.get(((i * r + k) * r + j) * 2), w.w_cur[i][j * r + k]);
                assert_eq!(lay.wc.get(((i * r + k) * r + j) * 2 + 1), w.w_cur[i][(r + j) * r + k]);
                assert_eq!(lay.wp.get((i * 2 * r + r + j) * r + k), w.w_prev[i][(r + j) * r + k]);
            }
        }
    }
    // W_res transposed: [k][o].
    assert_eq!(lay.wr.get((l - 2) * r * r + 4 * r + 3), w.w_res[l - 2][3 * r + 4]);
    assert_eq!(lay.wsk.len(), w.skip_w.len());
    assert_eq!(lay.wo.get(1234), w.out_w[1234]);
    // (20, 32, 128) fits in bfloat16 with 2, 4 or 8 helpers, not in float32.
    for h in [2, 4, 8] {
        let p = SinglePlan::chain_block(&w.sizes, h, 4, true, 227 * 1024).unwrap();
        assert_eq!((p.cluster, p.threads, p.helpers), (h + 1, 8 * r, h));
    }
    assert!(SinglePlan::chain_block(&w.sizes, 4, 4, false, 227 * 1024).is_err());
    assert!(SinglePlan::chain_block(&w.sizes, 3, 4, true, 227 * 1024).is_err(), "3 does not divide 256");
}

#[test]
fn chain_split_layout_and_plans() {
    let voice = random_voice(dv_voice::PRESETS.iter().find(|(n, _)| *n == "40x64x256").unwrap().1, 3).unwrap();
    let w = Weights::from_voice(&voice).unwrap();
    let (l, r, s) = (w.sizes.layers, w.sizes.residual, w.sizes.skip);
    let lay = dv_gpu::model::SingleLayout::chain_split(&w);
    // W_skip as [ℓ][r/2][s][2]: the pair (2m, 2m + 1) of layer i's columns for row o.
    for (i, m, o) in [(0, 0, 0), (3, 5, 17), (l - 1, r / 2 - 1, s - 1)] {
        let at = ((i * (r / 2) + m) * s + o) * 2;
        let bf = |v: f32| dv_gpu::model::bf16_value(dv_gpu::model::bf16_bits(v));
        assert_eq!(lay.wsk.get(at), bf(w.skip_w[o * l * r + i * r + 2 * m]));
        assert_eq!(lay.wsk.get(at + 1), bf(w.skip_w[o * l * r + i * r + 2 * m + 1]));
    }
    // The chain's matrices are the chain-block layout in bfloat16 (the head: below).
    let cb = dv_gpu::model::SingleLayout::chain_block(&w, true);
    assert_eq!(lay.wc.get(777), cb.wc.get(777));
    assert_eq!(lay.wr.get(4321), cb.wr.get(4321));
    // 8 layers per block: 5 chain blocks + 2; 4 or 8 chain warps; r = 32, zero
    // layers per block and too many blocks are refused.
    let smem = 227 * 1024;
    let p = SinglePlan::chain_split(&w.sizes, 8, 8, smem).unwrap();
    assert_eq!((p.cluster, p.threads, p.layers_per_block, p.chain_warps), (7, 512, 8, 8));
    assert!(p.smem_bytes <= smem && p.bf16);
    assert_eq!(p.entry(), "wavenet_chain");
    assert!(SinglePlan::chain_split(&w.sizes, 8, 6, smem).is_err());
    assert!(SinglePlan::chain_split(&w.sizes, 0, 8, smem).is_err());
    assert!(SinglePlan::chain_split(&w.sizes, 2, 8, smem).is_err(), "22 blocks");
    assert!(SinglePlan::chain_split(&w.sizes, 10, 8, smem).is_err(), "10 layers do not fit shared memory");
    // r = 32: one chain warp (no named barriers) and all 20 layers in one chain block.
    let small = dv_voice::PRESETS.iter().find(|(n, _)| *n == "20x32x128").unwrap().1;
    let small = Weights::from_voice(&random_voice(small, 3).unwrap()).unwrap();
    let p = SinglePlan::chain_split(&small.sizes, 20, 1, smem).unwrap();
    assert_eq!((p.cluster, p.chain_warps), (3, 1));
    assert!(SinglePlan::chain_split(&small.sizes, 20, 8, smem).is_err(), "4 inputs per warp part");
}

#[test]
fn the_warpgroup_layout_tiles_core_matrices_and_permutes_gate_units_and_the_pool() {
    let w = weights("20x64x128");
    let (r, s, l) = (w.sizes.residual, w.sizes.skip, w.sizes.layers);
    let t = MultiLayout::tiles(&w, true);
    let (g, sc) = MultiLayout::tiles_wg(&w, false, None);
    assert_eq!(sc, [1.0; 4]);
    // W_dil of layer 1: value (row, k) at ((row / 8)·(K / 8) + k / 8)·64 + (row % 8)·8 + k % 8.
    let k = 2 * r;
    for (row, col) in [(0, 0), (3, 17), (9, 8), (127, 127), (64, 5)] {
        let want = t.dil.get(4 * r * r + row * k + col);
        let at = 4 * r * r + ((row / 8) * (k / 8) + col / 8) * 64 + (row % 8) * 8 + col % 8;
        assert_eq!(g.dil.get(at), want, "dil ({row}, {col})");
    }
    // [W_res; W_skip]: its inputs (gate units) permuted within groups of 8 as the kernel stores them.
    let perm: Vec<usize> = (0..r).map(dv_gpu::model::wg_unit_column).collect();
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..r).collect::<Vec<_>>(), "a permutation");
    assert_eq!(&perm[..8], &[0, 2, 4, 6, 1, 3, 5, 7]);
    for (row, unit) in [(0, 0), (5, 4), (70, 13), (r + s - 1, r - 1)] {
        let c = perm[unit];
        let at = l.min(2) * (r + s) * r + ((row / 8) * (r / 8) + c / 8) * 64 + (row % 8) * 8 + c % 8;
        assert_eq!(g.res.get(at), t.res.get(l.min(2) * (r + s) * r + row * r + unit), "res ({row}, {unit})");
    }
    // The pool: per layer, thread (wn, tq)'s (tanh, sigmoid) pairs adjacent, the gate biases added.
    let width = l * 2 * r;
    let pool: Vec<f32> = (0..2 * width).map(|i| (i as f32 * 0.37).sin()).collect();
    let wn_count = 2;
    let nt = 2 * r / 8 / wn_count;
    let p = MultiLayout::tiles_wg_pool(&w, &pool, wn_count);
    let (frame, layer, wn, tq, tile) = (1, 3, 1, 2, 5);
    let j = (wn * nt + tile) * 4 + tq;
    let at = frame * width + layer * 2 * r + ((wn * 4 + tq) * nt + tile) * 2;
    let src = frame * width + layer * 2 * r;
    assert_eq!(p[at], pool[src + j] + w.gate_b[layer * 2 * r + j], "tanh term");
    assert_eq!(p[at + 1], pool[src + r + j] + w.gate_b[layer * 2 * r + r + j], "sigmoid term");
    let mut a: Vec<f32> = p.iter().map(|v| v.to_bits() as f32).collect();
    let mut b: Vec<f32> = (0..pool.len()).map(|i| (pool[i] + w.gate_b[i % width]).to_bits() as f32).collect();
    a.sort_by(f32::total_cmp);
    b.sort_by(f32::total_cmp);
    assert_eq!(a, b, "every term once");
}

#[test]
fn warpgroup_plans_size_shared_memory_and_need_64_streams() {
    let smem = 227 * 1024;
    let w = weights("20x64x128");
    let p = MultiPlan::tiles_wg(&w.sizes, 256, 2, 0, false, smem).unwrap();
    // Unpadded W_dil (128 rows of 128) sets the slot; logits padded by 4 floats; the
    // residual biases of 20 layers.
    assert_eq!((p.streams_per_block, p.warps_n, p.panel_bytes), (64, 2, 128 * 128 * 2));
    let fixed = 64 * 260 * 4 + 2 * 64 * 256 * 2 + 5 * 4 * 64 + 80 + 20 * 64 * 4;
    assert_eq!(p.smem_bytes, 2 * 32768 + fixed + 2 * 8);
    assert!(p.smem_bytes <= smem && p.wgmma);
    assert!(MultiPlan::tiles_wg(&w.sizes, 256, 3, 0, false, smem).is_err(), "three 32 KB slots: 5 KB short");
    let small = weights("20x32x128");
    assert!(MultiPlan::tiles_wg(&small.sizes, 256, 3, 0, false, smem).is_ok());
    assert_eq!(p.arch((9, 0)), "compute_90a");
    assert!(MultiPlan::tiles_wg(&w.sizes, 192, 2, 0, false, smem).is_err(), "not whole warpgroups");
    assert!(MultiPlan::tiles_wg(&w.sizes, 1024, 2, 0, false, smem).is_err(), "at most 4 warpgroups");
    let big = weights("40x64x256");
    assert!(MultiPlan::tiles_wg(&big.sizes, 256, 2, 0, false, smem).is_ok(), "unpadded, 64 streams fit");
    assert!(MultiPlan::tiles_wg(&big.sizes, 256, 3, 0, false, smem).is_err());
}

#[test]
fn the_swizzled_warpgroup_layout_puts_each_weight_where_sw_off_says() {
    let w = weights("20x64x128");
    let (r, s, l) = (w.sizes.residual, w.sizes.skip, w.sizes.layers);
    let t = MultiLayout::tiles(&w, true);
    let plan = MultiPlan::tiles_wg(&w.sizes, 256, 2, 0, false, 227 * 1024).unwrap();
    assert!(plan.wg_swizzle, "r = 64, s = 128 take the 128-byte swizzle");
    let [cr1, cr2] = plan.chunk_rows;
    let (g, _) = MultiLayout::tiles_wg(&w, false, Some(plan.chunk_rows));
    // SW_OFF (kernels/wgmma.cuh) of (row, k) in a chunk of `rows` rows.
    let sw =
        |row: usize, k: usize, rows: usize| (k / 64) * rows * 64 + row * 64 + (((k / 8) % 8) ^ (row % 8)) * 8 + k % 8;
    let layer = 3;
    for (row, k) in [(0, 0), (5, 9), (127, 127), (64, 70), (9, 63)] {
        let at = layer * 4 * r * r + sw(row, k, 2 * r);
        assert_eq!(g.dil.get(at), t.dil.get(layer * 4 * r * r + row * 2 * r + k), "dil ({row}, {k})");
    }
    for (row, unit) in [(0, 0), (7, 4), (100, 13), (r + s - 1, r - 1)] {
        let at = layer * (r + s) * r + sw(row, dv_gpu::model::wg_unit_column(unit), r + s);
        assert_eq!(g.res.get(at), t.res.get(layer * (r + s) * r + row * r + unit), "res ({row}, {unit})");
    }
    // The output layer in chunks of cr2 rows, each swizzled on its own.
    for (row, k) in [(0, 0), (cr2 + 3, 200), (A - 1, A - 1)] {
        let at = (row / cr2) * cr2 * A + sw(row % cr2, k, cr2);
        assert_eq!(g.out.get(at), t.out.get(row * A + k), "out ({row}, {k})");
    }
    assert!(cr1 % 8 == 0 && l > 0);
    // A permutation: the same multiset of values.
    let mut a: Vec<u32> = (0..g.relu.len()).map(|i| g.relu.get(i).to_bits()).collect();
    let mut b: Vec<u32> = (0..t.relu.len()).map(|i| t.relu.get(i).to_bits()).collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    assert!(!MultiPlan::tiles_wg(&weights("20x32x128").sizes, 256, 2, 0, false, 227 * 1024).unwrap().wg_swizzle);
}

/// Element (row, k) of a K-wide core-matrix-tiled operand (`WG_OFF`).
fn wg_off(row: usize, k: usize, kk: usize) -> usize {
    ((row / 8) * (kk / 8) + k / 8) * 64 + (row % 8) * 8 + k % 8
}

#[test]
fn the_column_layout_gives_each_thread_its_units_products() {
    use dv_gpu::model::{cols_gate_row, cols_input};
    let w = weights("20x64x128");
    let (r, s, l) = (w.sizes.residual, w.sizes.skip, w.sizes.layers);
    let lay = MultiLayout::cols(&w);
    let bf = |x: f32| bf16_value(bf16_bits(x));
    let perm: Vec<usize> = (0..A).map(cols_input).collect();
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..A).collect::<Vec<_>>(), "a permutation");
    assert_eq!(&perm[..10], &[0, 2, 4, 6, 8, 10, 12, 14, 1, 3]);
    // A thread's two accumulator rows of a dilated tile are one unit's tanh and sigmoid rows.
    for p in 0..2 * r {
        let (unit, gate) = cols_gate_row(p);
        assert_eq!(gate, usize::from(p % 16 >= 8), "row {p}");
        assert_eq!(cols_gate_row(p - 8 * gate), (unit, 0), "row {p}");
    }
    let mut units: Vec<usize> = (0..2 * r).map(|p| cols_gate_row(p).0 * 2 + cols_gate_row(p).1).collect();
    units.sort_unstable();
    assert_eq!(units, (0..2 * r).collect::<Vec<_>>(), "every gate row once");
    // Layer 1's dilated product as the kernel computes it: the B operand row of one stream
    // [x(t - d) | x(t)] with channels at cols_input, against W_prev·x(t - d) + W_cur·x(t).
    let i = 1;
    let xo: Vec<f32> = (0..r).map(|c| (c as f32 * 0.71).sin()).collect();
    let x: Vec<f32> = (0..r).map(|c| (c as f32 * 0.29).cos()).collect();
    let mut din = vec![0.0f32; 2 * r];
    for c in 0..r {
        din[cols_input(c)] = xo[c];
        din[r + cols_input(c)] = x[c];
    }
    for p in 0..2 * r {
        let got: f32 = (0..2 * r).map(|k| lay.dil.get(i * 4 * r * r + wg_off(p, k, 2 * r)) * din[k]).sum();
        let (unit, gate) = cols_gate_row(p);
        let o = gate * r + unit;
        let want: f32 = (0..r).map(|j| bf(w.w_prev[i][o * r + j]) * xo[j] + bf(w.w_cur[i][o * r + j]) * x[j]).sum();
        assert!((got - want).abs() < 1e-4, "dil row {p}: {got} vs {want}");
    }
    // [W_res; W_skip] on the gate outputs in unit order; the last layer's residual rows zero.
    let h: Vec<f32> = (0..r).map(|j| (j as f32 * 0.13).sin()).collect();
    for layer in [i, l - 1] {
        for o in 0..r + s {
            let got: f32 = (0..r).map(|k| lay.res.get(layer * (r + s) * r + wg_off(o, k, r)) * h[k]).sum();
            let want: f32 = if o < r {
                if layer + 1 == l {
                    0.0
                } else {
                    (0..r).map(|j| bf(w.w_res[layer][o * r + j]) * h[j]).sum()
                }
            } else {
                (0..r).map(|j| bf(w.skip_w[(o - r) * l * r + layer * r + j]) * h[j]).sum()
            };
            assert!((got - want).abs() < 1e-4, "res layer {layer} row {o}: {got} vs {want}");
        }
    }
    // The relu and output layers read their inputs at cols_input.
    let v: Vec<f32> = (0..A).map(|c| (c as f32 * 0.41).cos()).collect();
    let mut vin = vec![0.0f32; A];
    for c in 0..A {
        vin[cols_input(c)] = v[c];
    }
    for o in [0, 9, 100, A - 1] {
        let got: f32 = (0..s).map(|k| lay.relu.get(wg_off(o, k, s)) * vin[k]).sum();
        let want: f32 = (0..s).map(|c| bf(w.relu_w[o * s + c]) * v[c]).sum();
        assert!((got - want).abs() < 1e-4, "relu row {o}");
        let got: f32 = (0..A).map(|k| lay.out.get(wg_off(o, k, A)) * vin[k]).sum();
        let want: f32 = (0..A).map(|c| bf(w.out_w[o * A + c]) * v[c]).sum();
        assert!((got - want).abs() < 1e-4, "output row {o}");
    }
    // The pool: unit j's (tanh, sigmoid) terms at 2j, 2j + 1 of its layer, the gate biases added.
    let width = l * 2 * r;
    let pool: Vec<f32> = (0..2 * width).map(|k| (k as f32 * 0.37).sin()).collect();
    let p = MultiLayout::cols_pool(&w, &pool);
    for (frame, layer, j) in [(0, 0, 0), (1, 3, 17), (1, l - 1, r - 1)] {
        let base = frame * width + layer * 2 * r;
        let bias = layer * 2 * r;
        assert_eq!(p[base + 2 * j], pool[base + j] + w.gate_b[bias + j], "tanh term");
        assert_eq!(p[base + 2 * j + 1], pool[base + r + j] + w.gate_b[bias + r + j], "sigmoid term");
    }
}

#[test]
fn column_plans_take_any_multiple_of_8_streams_and_r_64() {
    let smem = 227 * 1024;
    let w = weights("20x64x128");
    for bs in [8, 40, 48, 64] {
        let p = MultiPlan::cols(&w.sizes, bs, 2, 0, smem).unwrap();
        assert_eq!((p.streams_per_block, p.threads, p.entry()), (bs, 256, "wavenet_cols"));
        assert_eq!(p.arch((9, 0)), "compute_90a");
        assert!(p.smem_bytes <= smem);
        // 32 KB slots: the relu layer in 128-row chunks (two tiles), the output layer in 64.
        assert_eq!((p.panel_bytes, p.chunk_rows), (32768, [128, 64]));
    }
    let big = MultiPlan::cols(&w.sizes, 40, 2, 65536, smem).unwrap();
    assert_eq!(big.chunk_rows, [256, 128], "64 KB slots");
    for bs in [0, 12, 72] {
        assert!(MultiPlan::cols(&w.sizes, bs, 2, 0, smem).is_err(), "{bs} streams");
    }
    assert!(MultiPlan::cols(&w.sizes, 40, 7, 0, smem).is_err(), "7 slots");
    assert!(MultiPlan::cols(&w.sizes, 40, 4, 0, smem).is_ok(), "4 slots of 32 KB beside 40 streams");
    assert!(MultiPlan::cols(&w.sizes, 64, 4, 0, smem).is_err(), "4 slots beside 64 streams");
    assert!(MultiPlan::cols(&weights("20x32x128").sizes, 40, 2, 0, smem).is_err(), "r = 32");
    assert!(MultiPlan::cols(&weights("40x64x256").sizes, 40, 2, 0, smem).is_ok());
}

#[test]
fn the_fastest_plan_is_kernel_2e_for_r_64_on_hopper() {
    let smem = 227 * 1024;
    for name in ["20x64x128", "40x64x256", "40x64x128"] {
        let p = MultiPlan::fastest(&weights(name).sizes, (9, 0), smem).unwrap();
        assert_eq!((p.entry(), p.streams_per_block, p.stages), ("wavenet_cols", 40, 3), "{name}");
    }
    // r = 32 on Hopper: kernel 2c (64 streams per block); elsewhere kernel 2b.
    let small = weights("20x32x128");
    let p = MultiPlan::fastest(&small.sizes, (9, 0), smem).unwrap();
    assert_eq!((p.entry(), p.streams_per_block, p.wgmma), ("wavenet_tiles", 64, true));
    let p = MultiPlan::fastest(&weights("20x64x128").sizes, (8, 0), 163 * 1024).unwrap();
    assert_eq!((p.entry(), p.streams_per_block, p.wgmma), ("wavenet_tiles", 32, false));
}

#[test]
fn a_served_load_is_spread_over_every_multiprocessor() {
    let smem = 227 * 1024;
    let sizes = weights("20x64x128").sizes;
    let per_block = |streams| MultiPlan::for_streams(&sizes, (9, 0), smem, streams, 132).unwrap();
    for (streams, want) in
        [(0, 8), (1, 8), (1056, 8), (1057, 16), (2048, 16), (4096, 32), (4224, 32), (4225, 40), (5280, 40)]
    {
        let p = per_block(streams);
        assert_eq!((p.entry(), p.streams_per_block, p.stages), ("wavenet_cols", want, 3), "{streams} streams");
        assert!(streams.div_ceil(p.streams_per_block) <= 132, "{streams} streams in one wave");
    }
    // Beyond one wave of 40: the fastest plan; other devices and sizes: theirs.
    assert_eq!(per_block(6000).streams_per_block, MultiPlan::fastest(&sizes, (9, 0), smem).unwrap().streams_per_block);
    let p = MultiPlan::for_streams(&sizes, (8, 0), 163 * 1024, 64, 108).unwrap();
    assert_eq!((p.entry(), p.wgmma), ("wavenet_tiles", false));
    let p = MultiPlan::for_streams(&weights("20x32x128").sizes, (9, 0), smem, 64, 132).unwrap();
    assert_eq!((p.entry(), p.streams_per_block, p.wgmma), ("wavenet_tiles", 64, true));
}

/// Where `wavenet_chain`'s `head_input` puts element k of a vector (its hi
/// term; the lo term 16 u16 later): `head_at` in the kernel.
fn head_at(k: usize) -> usize {
    let rr = k & 15;
    (k >> 4) * 32 + ((rr & 7) >> 1) * 4 + (rr >> 3) * 2 + (rr & 1)
}

/// Block P's and Q's products as the kernel computes them, from the host's
/// fragment layout: each warp's `mma.sync.m16n8k16` over its row tile, the
/// A fragment of lane (g, c) as `mma_fragments` stores it, the B operand
/// read from `head_input`'s layout (hi terms in the even columns, lo terms
/// in the odd ones), and a row as the sum of a lane's two accumulator
/// columns. Every lane's two rows must be W·v (bfloat16 W).
#[test]
fn the_head_fragments_give_each_lane_its_rows_products() {
    let bf = |v: f32| bf16_value(bf16_bits(v));
    for preset in ["20x32x128", "40x64x256"] {
        let w = weights(preset);
        let lay = SingleLayout::chain_split(&w);
        let s = w.sizes.skip;
        let mut g = dv_synth::Rng::new(5);
        for (name, m, k, frags) in [("W_relu", &w.relu_w, s, &lay.wz), ("W_out", &w.out_w, A, &lay.wo)] {
            assert_eq!(frags.len(), A * k, "{name}");
            let v: Vec<f32> = (0..k).map(|_| 4.0 * g.uniform() - 1.0).collect();
            // head_input: u16 terms of each element, as values.
            let mut zf = vec![0f32; 2 * k];
            for (e, &x) in v.iter().enumerate() {
                let hi = bf(x);
                zf[head_at(e)] = hi;
                zf[head_at(e) + 16] = bf(x - hi);
            }
            let mut worst = 0f64;
            for warp in 0..A / 16 {
                for lane in 0..32 {
                    let (gq, c) = (lane / 4, lane % 4);
                    let mut rows = [0f64; 2];
                    for kt in 0..k / 16 {
                        // The tile's A[row][col] from the 32 lanes' fragments.
                        let tile = warp * (k / 16) + kt;
                        let a = |row: usize, col: usize| {
                            let (ln, q) = (4 * (row % 8) + (col % 8) / 2, row / 8 + 2 * (col / 8));
                            frags.get(((tile * 32 + ln) * 4 + q) * 2 + col % 2) as f64
                        };
                        // B[kk][n]: lane (n, c') reads uint2 (kt·8 + (n & 1)·4 + c'): u16 [+0, +1] are
                        // inputs 2c', 2c' + 1 and [+2, +3] inputs 2c' + 8, 2c' + 9.
                        let b = |kk: usize, n: usize| {
                            let cp = (kk % 8) / 2;
                            let at = (kt * 8 + (n & 1) * 4 + cp) * 4 + (kk / 8) * 2 + kk % 2;
                            zf[at] as f64
                        };
                        for (h, row) in [gq, gq + 8].into_iter().enumerate() {
                            for col in [2 * c, 2 * c + 1] {
                                rows[h] += (0..16).map(|kk| a(row, kk) * b(kk, col)).sum::<f64>();
                            }
                        }
                    }
                    for (h, row) in [16 * warp + gq, 16 * warp + gq + 8].into_iter().enumerate() {
                        let want: f64 = (0..k).map(|e| bf(m[row * k + e]) as f64 * v[e] as f64).sum();
                        let scale: f64 = (0..k).map(|e| (m[row * k + e] * v[e]).abs() as f64).sum::<f64>() + 1e-30;
                        worst = worst.max((rows[h] - want).abs() / scale);
                    }
                }
            }
            // hi + lo keeps about 16 bits of each input.
            assert!(worst < 2e-5, "{preset} {name}: relative error {worst:e}");
        }
    }
}

#[test]
fn serving_windows_hold_every_frame_a_launch_reads_and_pool_rows_match_the_pool() {
    // A launch of `steps` samples from any position p reads frames p / hop ..= (p + steps − 1) / hop.
    for hop in [1, 64, 80] {
        for steps in [1, 63, 64, 65, 1638, 2048] {
            let wf = dv_gpu::window_frames(steps, hop);
            let worst = (0..4 * hop).map(|p| (p + steps - 1) / hop - p / hop + 1).max().unwrap();
            assert!(worst <= wf, "hop {hop}, {steps} steps: {worst} frames read, window {wf}");
            assert!(wf <= worst + 1, "hop {hop}, {steps} steps: window {wf} wastes frames ({worst} read)");
        }
    }
    // set_windows takes rows laid out as MultiStream::new lays out its pool.
    let w = weights("20x64x128");
    let rows: Vec<f32> = (0..3 * w.sizes.conditioning_width()).map(|k| (k % 97) as f32 * 0.01 - 0.4).collect();
    let smem = 227 * 1024;
    let cols = MultiPlan::fastest(&w.sizes, (9, 0), smem).unwrap();
    assert_eq!(dv_gpu::MultiStream::pool_rows(&cols, &w, &rows), MultiLayout::cols_pool(&w, &rows));
    let wg = MultiPlan::tiles_wg(&w.sizes, 256, 2, 0, false, smem).unwrap();
    assert_eq!(dv_gpu::MultiStream::pool_rows(&wg, &w, &rows), MultiLayout::tiles_wg_pool(&w, &rows, wg.warps_n));
    let tiles = MultiPlan::tiles(&w.sizes, 32, 256, 2, 0, false, smem).unwrap();
    assert_eq!(dv_gpu::MultiStream::pool_rows(&tiles, &w, &rows), rows);
}

/// The GPU conditioning network's layout (`CondLayout`: stacked gates, the
/// projection in each plan's pool order with the gate biases folded in)
/// computes, through its CPU reference of the kernels, what
/// `dv_synth::ConditioningNetwork` computes and the plan's pool holds.
#[test]
fn the_gpu_conditioning_layout_gives_the_pool_rows_of_the_cpu_network() {
    use dv_gpu::{CondLayout, MultiStream};
    use dv_synth::ConditioningNetwork;
    let smem = 227 * 1024;
    for (name, plan) in [
        ("20x64x128", MultiPlan::cols(&weights("20x64x128").sizes, 40, 3, 0, smem).unwrap()),
        ("20x32x128", MultiPlan::tiles_wg(&weights("20x32x128").sizes, 256, 2, 0, false, smem).unwrap()),
        ("20x32x128", MultiPlan::new(&weights("20x32x128").sizes, 32, 256, true, 3, 16384, smem).unwrap()),
    ] {
        let voice = random_voice(WavenetConfig::preset(name).unwrap(), 11).unwrap();
        let w = Weights::from_voice(&voice).unwrap();
        let lay = CondLayout::new(&voice, &plan, &w).unwrap();
        let d = voice.config().conditioning.input_dim;
        let frames = 9;
        let mut rng = dv_synth::Rng::new(4);
        let features: Vec<f32> = (0..frames * d).map(|_| rng.uniform()).collect();
        let cpu = ConditioningNetwork::new(&voice).unwrap().forward(&features).unwrap();
        let expected = MultiStream::pool_rows(&plan, &w, cpu.data());
        let u = lay.u_reference(&features);
        assert_eq!(u.len(), frames * lay.u_width);
        let got = lay.project_reference(&u);
        assert_eq!(got.len(), expected.len());
        let diff = got.iter().zip(&expected).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(diff < 1e-4, "{name} {:?}: max |Δ| {diff}", plan.kernel);
        // Not a permutation of zeros: the rows vary and carry the gate biases.
        assert!(expected.iter().any(|v| v.abs() > 1e-3), "{name}");
    }
}
