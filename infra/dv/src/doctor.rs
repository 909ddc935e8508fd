//! `dv doctor`: what a user needs to know before a run.

use dv_corpus::embedded::Tools;
use dv_doctor::{cpu, cuda, tool};
use dv_torch::LibtorchInfo;

fn line(label: &str, value: impl std::fmt::Display) {
    println!("{label:<24} {value}");
}

pub(crate) fn run() -> anyhow::Result<()> {
    println!("dv {}", env!("CARGO_PKG_VERSION"));
    let mut extra_dirs = Vec::new();
    match LibtorchInfo::query() {
        Ok(t) => {
            line("libtorch", t.version.as_deref().unwrap_or("unknown version"));
            line("  loaded from", t.lib_dir.display());
            if let Some(b) = &t.build_dir {
                line("  built against", b.display());
            }
            line("  libtorch_cuda linked", t.cuda_linked);
            line("  CUDA usable", t.cuda_usable);
            line("  CUDA devices", t.cuda_devices);
            match t.cudnn_version {
                Some(v) => line("  cuDNN", format!("available: {}, version {v}", t.cudnn_available)),
                None => line("  cuDNN", "not usable (no CUDA device)"),
            }
            if let Some(v) = t.cudart_version {
                line("  CUDA runtime", v);
            }
            line("  CPU threads", format!("{} (MKL: {}, OpenMP: {})", t.cpu_threads, t.mkl, t.openmp));
            extra_dirs = cuda::wheel_library_dirs(&t.lib_dir);
        }
        Err(e) => line("libtorch", format!("ERROR: {e}")),
    }
    match cuda::driver() {
        Ok(d) => {
            line("CUDA driver", format!("{} ({})", d.loaded.version, d.loaded.path));
            for dev in &d.devices {
                line(
                    &format!("  GPU {}", dev.index),
                    format!(
                        "{}, {:.1} GiB, compute {}.{}",
                        dev.name,
                        dev.memory_bytes as f64 / (1u64 << 30) as f64,
                        dev.compute_capability.0,
                        dev.compute_capability.1
                    ),
                );
            }
        }
        Err(e) => line("CUDA driver", format!("not available: {e}")),
    }
    match cuda::nvrtc(&extra_dirs) {
        Ok(l) => line("NVRTC", format!("{} ({})", l.version, l.path)),
        Err(e) => line("NVRTC", format!("cannot load: {e}")),
    }
    match cuda::nccl(&extra_dirs) {
        Ok(l) => line("NCCL", format!("{} ({})", l.version, l.path)),
        Err(e) => line("NCCL", format!("cannot load: {e}")),
    }
    let simd: Vec<String> =
        cpu::simd_features().into_iter().map(|(n, on)| format!("{n}{}", if on { "+" } else { "-" })).collect();
    line("CPU SIMD", simd.join(" "));
    line("CPU cores", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    println!("default corpus recipe:");
    for (what, path, package) in Tools::default().requirements() {
        let state = if path.exists() {
            format!("ok ({})", path.display())
        } else {
            format!("MISSING: apt-get install {package}")
        };
        line(&format!("  {what}"), state);
    }
    // What is missing and for what: python3 scores voices (whisper, DNSMOS), praat is only the
    // oracle of the pitch tracker's tests and benchmarks.
    for (prog, missing) in [
        ("python3", "not found (dv recipe's evaluate stage scores voices with it)"),
        ("praat", "not found (optional: the pitch tracker's oracle in tests and benchmarks)"),
    ] {
        line(
            &format!("  {prog}"),
            tool::find_program(prog).map(|p| format!("ok ({})", p.display())).unwrap_or_else(|| missing.into()),
        );
    }
    match dv_text::LexiconSource::cmudict() {
        Ok(dv_text::LexiconSource::Embedded) => match dv_text::embedded_cmudict() {
            Ok(_) => line("  CMUDict", format!("ok ({})", dv_text::LexiconSource::Embedded)),
            Err(e) => line("  CMUDict", format!("DAMAGED: {e}")),
        },
        Ok(source) => line("  CMUDict", format!("ok ({source}, from DV_CMUDICT)")),
        Err(e) => line("  CMUDict", format!("MISSING: {e}")),
    }
    Ok(())
}
