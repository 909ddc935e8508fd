//! The aligner conformance suite (issue 33): the same batches on every
//! aligner this machine has, through `dv-conformance`'s harness.
//!
//! | measure | reference | bound |
//! | --- | --- | --- |
//! | illegal path steps (MAS: starts at token 0, ends at the last, grows by 0 or 1; CTC: starts in state 0 or 1, ends in 2L − 1 or 2L, grows by 0, 1, or 2 onto a label unlike the one two states back) | the contract in the crate docs | 0 |
//! | the path's score, summed in f64 | the optimum found in f64 (MAS: `maximum_path::<f64>`; CTC: a Viterbi recursion written here) | 1e-4 + 1e-6 · \|optimum\| |
//! | paths that differ (CUDA only) | the CPU's f32 paths, the kernels' oracle | 0 (bit-identical) |
//!
//! Backends: `cpu` always; `cuda` (`GpuAligner` on device 0) when a device
//! opens, else it prints `skipped: no CUDA device …`. Small-integer scores
//! make ties frequent, so the tie rules are exercised; continuous scores
//! make the f32 sums inexact. A kernel's typed refusal of a size
//! (`AlignError::Unsupported`) is reported as not applicable.

use dv_align::{
    ctc_viterbi_batch, maximum_path, maximum_path_batch, AlignError, CtcLen, CtcShape, GpuAligner, MasLen, MasShape,
};
use dv_conformance::{Checked, Measure, Outcome, Report, Suite, Tolerance};

use crate::rng::SplitMix64;

enum Backend {
    Cpu,
    Cuda(GpuAligner),
    /// The CPU with one frame of the first path moved to the next token or state: must fail.
    Perturbed,
}

enum Task {
    Mas { lens: Vec<MasLen> },
    Ctc { lens: Vec<CtcLen>, classes: usize, labels: Vec<Vec<u32>> },
}

struct Case {
    name: &'static str,
    task: Task,
    /// Scores are small integers (exact sums, many ties), else continuous log-likelihoods.
    integers: bool,
    seed: u64,
}

fn mas(text: usize, speech: usize) -> MasLen {
    MasLen { text, speech }
}

/// `n` labels in `1..classes` with runs of repeats (which need a blank between them).
fn labels(rng: &mut SplitMix64, n: usize, classes: usize) -> Vec<u32> {
    let mut v: Vec<u32> = Vec::with_capacity(n);
    for _ in 0..n {
        let repeat = !v.is_empty() && rng.range(0, 3) == 0;
        v.push(if repeat { *v.last().unwrap() } else { rng.range(1, classes - 1) as u32 });
    }
    v
}

fn ctc(seed: u64, items: &[(usize, usize)], classes: usize) -> Task {
    let mut rng = SplitMix64::new(seed);
    let labels: Vec<Vec<u32>> = items.iter().map(|&(_, n)| labels(&mut rng, n, classes)).collect();
    let lens = items.iter().map(|&(frames, labels)| CtcLen { frames, labels }).collect();
    Task::Ctc { lens, classes, labels }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "MAS 3 items (40x90, 1x7, 33x33)",
            task: Task::Mas { lens: vec![mas(40, 90), mas(1, 7), mas(33, 33)] },
            integers: true,
            seed: 1,
        },
        Case { name: "MAS 1 item, odd 17x31", task: Task::Mas { lens: vec![mas(17, 31)] }, integers: false, seed: 2 },
        Case {
            name: "MAS 300x700 + 17x20",
            task: Task::Mas { lens: vec![mas(300, 700), mas(17, 20)] },
            integers: true,
            seed: 3,
        },
        Case {
            name: "MAS 1100x1150 + 600x1000 (two tokens per thread)",
            task: Task::Mas { lens: vec![mas(1100, 1150), mas(600, 1000)] },
            integers: false,
            seed: 4,
        },
        Case { name: "MAS 1x1", task: Task::Mas { lens: vec![mas(1, 1)] }, integers: false, seed: 5 },
        Case {
            name: "CTC 2 items (30 frames 5 labels, 9 frames 2 labels), 6 classes",
            task: ctc(6, &[(30, 5), (9, 2)], 6),
            integers: true,
            seed: 6,
        },
        Case { name: "CTC 1 item, 1 frame 1 label", task: ctc(7, &[(1, 1)], 4), integers: false, seed: 7 },
        Case { name: "CTC 1 item, 0 labels, 13 frames", task: ctc(8, &[(13, 0)], 4), integers: false, seed: 8 },
        Case {
            name: "CTC 3 items up to 400 frames 61 labels, 41 classes",
            task: ctc(9, &[(400, 61), (257, 40), (99, 1)], 41),
            integers: false,
            seed: 9,
        },
        Case {
            name: "CTC 2 items up to 333 frames 120 labels, 5 classes (many repeats)",
            task: ctc(10, &[(333, 120), (200, 77)], 5),
            integers: true,
            seed: 10,
        },
    ]
}

fn values(rng: &mut SplitMix64, n: usize, integers: bool) -> Vec<f32> {
    (0..n).map(|_| if integers { rng.int(2) } else { rng.log_like() }).collect()
}

fn refused(e: AlignError) -> Checked<AlignError> {
    match e {
        AlignError::Unsupported { .. } => Ok(Outcome::NotApplicable(e.to_string())),
        e => Err(e),
    }
}

/// MAS: illegal steps and the path's f64 score of each item.
fn mas_path(value: &[f32], text: usize, speech: usize, stride: usize, path: &[i32]) -> (usize, f64) {
    let mut illegal =
        usize::from(path.len() != speech || path.first() != Some(&0) || path.last() != Some(&(text as i32 - 1)));
    illegal += path.windows(2).filter(|w| !(0..=1).contains(&(w[1] - w[0]))).count();
    let score =
        path.iter().enumerate().map(|(t, &x)| value[x.clamp(0, text as i32 - 1) as usize * stride + t] as f64).sum();
    (illegal, score)
}

/// The best CTC path's log-probability in f64 (−∞ when there is none).
fn ctc_optimum(lp: &[f32], frames: usize, classes: usize, labels: &[u32]) -> f64 {
    let s = 2 * labels.len() + 1;
    let class = |k: usize| if k.is_multiple_of(2) { 0 } else { labels[k / 2] as usize };
    let mut a = vec![f64::NEG_INFINITY; s];
    a[0] = lp[class(0)] as f64;
    if s > 1 {
        a[1] = lp[class(1)] as f64;
    }
    for t in 1..frames {
        let prev = a.clone();
        for k in 0..s {
            let mut best = prev[k];
            if k >= 1 {
                best = best.max(prev[k - 1]);
            }
            if k >= 2 && k % 2 == 1 && labels[k / 2] != labels[k / 2 - 1] {
                best = best.max(prev[k - 2]);
            }
            a[k] = best + lp[t * classes + class(k)] as f64;
        }
    }
    if s > 1 {
        a[s - 1].max(a[s - 2])
    } else {
        a[0]
    }
}

/// CTC: illegal steps and the path's f64 score.
fn ctc_path(lp: &[f32], frames: usize, classes: usize, labels: &[u32], states: &[i32]) -> (usize, f64) {
    let last = 2 * labels.len() as i32;
    let ok_state = |k: i32| (0..=last).contains(&k);
    let mut illegal = usize::from(states.len() != frames || !states.iter().all(|&k| ok_state(k)));
    if illegal > 0 {
        return (illegal, f64::NAN);
    }
    illegal += usize::from(states[0] > 1 || states[frames - 1] < last - 1);
    illegal += states
        .windows(2)
        .filter(|w| match w[1] - w[0] {
            0 | 1 => false,
            2 => w[1] % 2 == 0 || labels[w[1] as usize / 2] == labels[w[1] as usize / 2 - 1],
            _ => true,
        })
        .count();
    let class = |k: i32| if k % 2 == 0 { 0 } else { labels[k as usize / 2] as usize };
    let score = states.iter().enumerate().map(|(t, &k)| lp[t * classes + class(k)] as f64).sum();
    (illegal, score)
}

fn check(b: &Backend, c: &Case) -> Checked<AlignError> {
    let mut rng = SplitMix64::new(c.seed);
    let tol = Tolerance { abs: 1e-4, rel: 1e-6 };
    match &c.task {
        Task::Mas { lens } => {
            let shape = MasShape {
                batch: lens.len(),
                text: lens.iter().map(|l| l.text).max().unwrap(),
                speech: lens.iter().map(|l| l.speech).max().unwrap(),
            };
            let value = values(&mut rng, shape.numel().unwrap(), c.integers);
            let cpu = maximum_path_batch(&mut value.clone(), shape, lens)?;
            let paths = match b {
                Backend::Cpu => cpu.clone(),
                Backend::Perturbed => {
                    let mut p = cpu.clone();
                    let n = p[0].len();
                    if n > 1 {
                        p[0][n / 2] += 1;
                    } else {
                        p[0][0] += 1;
                    }
                    p
                }
                Backend::Cuda(gpu) => match gpu.mas_batch(&value, shape, lens) {
                    Ok(p) => p,
                    Err(e) => return refused(e),
                },
            };
            let item = shape.text * shape.speech;
            let (mut illegal, mut got, mut best) = (0, Vec::new(), Vec::new());
            for (i, (len, path)) in lens.iter().zip(&paths).enumerate() {
                let v = &value[i * item..(i + 1) * item];
                let (bad, score) = mas_path(v, len.text, len.speech, shape.speech, path);
                illegal += bad;
                got.push(score);
                let dense: Vec<f64> = (0..len.text)
                    .flat_map(|x| v[x * shape.speech..x * shape.speech + len.speech].iter().map(|&s| s as f64))
                    .collect();
                best.push(maximum_path(&dense, len.text, len.speech)?.score);
            }
            let frames = lens.iter().map(|l| l.speech).sum();
            let mut m =
                vec![Measure::count("illegal steps", illegal, 0, frames), Measure::close("score", &got, &best, tol)];
            if !matches!(b, Backend::Cpu) {
                let (a, r): (Vec<i32>, Vec<i32>) = (paths.concat(), cpu.concat());
                m.push(Measure::mismatches("path ≠ CPU", &a, &r));
            }
            Ok(Outcome::Measured(m))
        }
        Task::Ctc { lens, classes, labels } => {
            let shape = CtcShape {
                batch: lens.len(),
                frames: lens.iter().map(|l| l.frames).max().unwrap(),
                classes: *classes,
                labels: lens.iter().map(|l| l.labels).max().unwrap().max(1),
            };
            let lp = values(&mut rng, shape.batch * shape.frames * shape.classes, c.integers);
            let mut flat = vec![1u32; shape.batch * shape.labels];
            for (i, l) in labels.iter().enumerate() {
                flat[i * shape.labels..i * shape.labels + l.len()].copy_from_slice(l);
            }
            let cpu = ctc_viterbi_batch(&lp, shape, &flat, lens, 0)?;
            let states: Vec<Vec<i32>> = match b {
                Backend::Cpu => cpu.iter().map(|a| a.states.clone()).collect(),
                Backend::Perturbed => {
                    let mut s: Vec<Vec<i32>> = cpu.iter().map(|a| a.states.clone()).collect();
                    let n = s[0].len();
                    s[0][n / 2] += 1;
                    s
                }
                Backend::Cuda(gpu) => match gpu.ctc_batch(&lp, shape, &flat, lens, 0) {
                    Ok(a) => a.into_iter().map(|a| a.states).collect(),
                    Err(e) => return refused(e),
                },
            };
            let item = shape.frames * shape.classes;
            let (mut illegal, mut got, mut best) = (0, Vec::new(), Vec::new());
            for (i, (len, s)) in lens.iter().zip(&states).enumerate() {
                let v = &lp[i * item..(i + 1) * item];
                let (bad, score) = ctc_path(v, len.frames, shape.classes, &labels[i], s);
                illegal += bad;
                got.push(score);
                best.push(ctc_optimum(v, len.frames, shape.classes, &labels[i]));
            }
            let frames = lens.iter().map(|l| l.frames).sum();
            let mut m =
                vec![Measure::count("illegal steps", illegal, 0, frames), Measure::close("score", &got, &best, tol)];
            if !matches!(b, Backend::Cpu) {
                let r: Vec<i32> = cpu.iter().flat_map(|a| a.states.clone()).collect();
                m.push(Measure::mismatches("path ≠ CPU", &states.concat(), &r));
            }
            Ok(Outcome::Measured(m))
        }
    }
}

fn run(suite: &Suite<Backend>) -> Report {
    suite.run(&cases(), |c| c.name.to_string(), check)
}

#[test]
fn every_aligner_conforms_to_its_reference() {
    let suite = Suite::new("aligners").backend("cpu", Backend::Cpu);
    let suite = match GpuAligner::new(0) {
        Ok(gpu) => {
            println!(
                "conformance aligners: CUDA device 0 is {} (compute {:?})",
                gpu.device_name(),
                gpu.compute_capability()
            );
            suite.backend("cuda", Backend::Cuda(gpu))
        }
        Err(e) => suite.skip("cuda", format!("no CUDA device ({e})")),
    };
    let report = run(&suite);
    report.assert_passed();
    assert_eq!(report.measured("cpu"), cases().len());
}

#[test]
fn a_perturbed_aligner_is_caught() {
    let report = run(&Suite::new("aligners (perturbed)").backend("cpu, one frame moved", Backend::Perturbed));
    // Every case fails: a moved frame breaks legality, the score, or the parity with the CPU.
    assert_eq!(report.failures().len(), cases().len(), "{:?}", report.lines);
}
