//! Dumps the PTX of one tile-kernel plan (for ptxas reports): wgptx PRESET THREADS F16 WG OUT [STAGES]
//! (WG: 0 kernel 2b, 1 kernel 2c, 2 kernel 2d with its 128 threads)
use dv_gpu::{compile_ptx, MultiPlan, Weights};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let cfg = dv_voice::PRESETS.iter().find(|(n, _)| *n == a[1]).unwrap().1;
    let w = Weights::from_voice(&dv_synth::random::random_voice(cfg, 1).unwrap()).unwrap();
    let threads: usize = a[2].parse().unwrap();
    let f16 = a[3] == "1";
    let stages: usize = a.get(6).map_or(2, |s| s.parse().unwrap());
    let plan = if a[4] == "2" {
        MultiPlan::tiles_wg_rs(&w.sizes, stages, 0, 227 * 1024).unwrap()
    } else if a[4] == "1" {
        MultiPlan::tiles_wg(&w.sizes, threads, stages, 0, f16, 227 * 1024).unwrap()
    } else {
        MultiPlan::tiles(&w.sizes, 64, threads, stages, 0, f16, 227 * 1024).unwrap()
    };
    let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), &plan.arch((9, 0))).unwrap();
    std::fs::write(&a[5], ptx.to_src()).unwrap();
}
