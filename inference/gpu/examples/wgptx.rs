//! Dumps the PTX of one tile-kernel plan (for ptxas reports): wgptx PRESET THREADS F16 WG OUT [STAGES]
//! (WG = 1: warpgroup MMAs; WG = cN: the column kernel with N streams per block; WG = kLxW:
//! kernel 1c with L layers per chain block and W chain warps).
use dv_gpu::{compile_ptx, MultiPlan, SinglePlan, Weights};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let cfg = dv_voice::PRESETS.iter().find(|(n, _)| *n == a[1]).unwrap().1;
    let w = Weights::from_voice(&dv_synth::random::random_voice(cfg, 1).unwrap()).unwrap();
    let threads: usize = a[2].parse().unwrap();
    let f16 = a[3] == "1";
    let stages: usize = a.get(6).map_or(2, |s| s.parse().unwrap());
    if let Some(k) = a[4].strip_prefix('k') {
        let (l, cw) = k.split_once('x').unwrap();
        let plan = SinglePlan::chain_split(&w.sizes, l.parse().unwrap(), cw.parse().unwrap(), 227 * 1024).unwrap();
        let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), "compute_90").unwrap();
        std::fs::write(&a[5], ptx.to_src()).unwrap();
        return;
    }
    let plan = if let Some(n) = a[4].strip_prefix('c') {
        MultiPlan::cols(&w.sizes, n.parse().unwrap(), stages, 0, 227 * 1024).unwrap()
    } else if a[4] == "1" {
        MultiPlan::tiles_wg(&w.sizes, threads, stages, 0, f16, 227 * 1024).unwrap()
    } else {
        MultiPlan::tiles(&w.sizes, 64, threads, stages, 0, f16, 227 * 1024).unwrap()
    };
    let ptx = compile_ptx(&plan.source(&w.sizes), plan.entry(), &plan.arch((9, 0))).unwrap();
    std::fs::write(&a[5], ptx.to_src()).unwrap();
}
