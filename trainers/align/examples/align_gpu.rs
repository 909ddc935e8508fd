//! GPU parity and benchmark for dv-align; run on a machine with an NVIDIA GPU.
//!
//! ```text
//! cargo build -p dv-align --examples --release
//! LD_LIBRARY_PATH=$SITE_PACKAGES/nvidia/cu13/lib target/release/examples/align_gpu [bench.json] [--parity-only | --bench-only]
//! ```
//!
//! (a) Parity: the CUDA kernels against the CPU references, every frame of
//! every item, on seeded random batches of many shapes (random, integer and
//! constant scores for ties, −∞ cells, NaN in padding and in data, T == S,
//! T == 1, S == 1, text past 1024 so threads stride); MAS and CTC Viterbi.
//! Exits 1 on any mismatch.
//!
//! (b) Benchmark: MAS for batch 16 and 32, T in {128 .. 2048}, S = 4T (the
//! Super-MAS setting): the kernel alone (CUDA events, input restored on the
//! device between runs, median after a warm-up), the whole call with the
//! host-to-device copy of the matrix and the device-to-host copy of the
//! paths, and the single-threaded CPU reference on the same data (whose
//! paths must equal the GPU's). Prints a Markdown table, and writes JSON to
//! the path given.
use std::time::Instant;

use anyhow::{bail, Context, Result};
use dv_align::{ctc_viterbi_batch, maximum_path_batch, AlignError, CtcLen, CtcShape, GpuAligner, MasLen, MasShape};

#[path = "../tests/it/rng.rs"]
mod rng;
use rng::SplitMix64;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().find(|a| !a.starts_with("--")).cloned();
    let parity_only = args.iter().any(|a| a == "--parity-only");
    // For profilers: the benchmark's launches first, without the parity suite
    // (the benchmark still checks its own paths against the CPU).
    let bench_only = args.iter().any(|a| a == "--bench-only");
    // For profilers and kernel experiments: no CPU reference in the benchmark.
    let gpu_only = args.iter().any(|a| a == "--gpu-only");
    let gpu = GpuAligner::new(0).context("opening CUDA device 0")?;
    let (major, minor) = gpu.compute_capability();
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!("device: {} (compute {major}.{minor}), build profile: {profile}", gpu.device_name());

    let started = Instant::now();
    let mut tally = Tally::default();
    if !bench_only {
        mas_parity(&gpu, &mut tally)?;
        ctc_parity(&gpu, &mut tally)?;
    }
    println!(
        "parity: {} MAS batches ({} items), {} CTC batches ({} items), {} mismatches, {:.1} s",
        tally.mas_batches,
        tally.mas_items,
        tally.ctc_batches,
        tally.ctc_items,
        tally.failures,
        started.elapsed().as_secs_f64()
    );
    if !parity_only {
        let rows = bench(&gpu, &mut tally, !gpu_only)?;
        print_table(&rows);
        if let Some(path) = json {
            std::fs::write(&path, to_json(&gpu, profile, &rows)).with_context(|| format!("writing {path}"))?;
            println!("wrote {path}");
        }
    }
    if tally.failures > 0 {
        println!("FAIL: {} mismatches between GPU and CPU", tally.failures);
        std::process::exit(1);
    }
    println!("PASS: GPU paths equal the CPU references on every frame");
    Ok(())
}

#[derive(Default)]
struct Tally {
    mas_batches: usize,
    mas_items: usize,
    ctc_batches: usize,
    ctc_items: usize,
    failures: usize,
}

impl Tally {
    fn fail(&mut self, what: String) {
        self.failures += 1;
        if self.failures <= 20 {
            println!("MISMATCH {what}");
        }
    }
}

/// How scores are drawn: ties are frequent with small integers and constants.
#[derive(Clone, Copy, Debug)]
enum Fill {
    Random,
    Integer,
    Constant,
    RowConstant,
    IntegerWithMinusInf,
}

const FILLS: [Fill; 5] = [Fill::Random, Fill::Integer, Fill::Constant, Fill::RowConstant, Fill::IntegerWithMinusInf];

fn draw(rng: &mut SplitMix64, fill: Fill, row: usize) -> f32 {
    match fill {
        Fill::Random => rng.log_like(),
        Fill::Integer => rng.int(3),
        Fill::Constant => -1.0,
        Fill::RowConstant => -((row % 3) as f32),
        Fill::IntegerWithMinusInf => {
            if rng.range(0, 15) == 0 {
                f32::NEG_INFINITY
            } else {
                rng.int(2)
            }
        }
    }
}

/// A padded MAS batch with NaN in the padding (which must never be read).
fn mas_batch(rng: &mut SplitMix64, fill: Fill, lens: &[MasLen]) -> (Vec<f32>, MasShape) {
    let shape = MasShape {
        batch: lens.len(),
        text: lens.iter().map(|l| l.text).max().unwrap_or(1),
        speech: lens.iter().map(|l| l.speech).max().unwrap_or(1),
    };
    let mut v = vec![f32::NAN; shape.batch * shape.text * shape.speech];
    for (i, l) in lens.iter().enumerate() {
        for x in 0..l.text {
            for y in 0..l.speech {
                v[(i * shape.text + x) * shape.speech + y] = draw(rng, fill, x);
            }
        }
    }
    (v, shape)
}

fn compare_mas(
    gpu: &GpuAligner,
    tally: &mut Tally,
    what: &str,
    value: &[f32],
    shape: MasShape,
    lens: &[MasLen],
) -> Result<()> {
    tally.mas_batches += 1;
    tally.mas_items += lens.len();
    let g = gpu.mas_batch(value, shape, lens);
    let mut work = value.to_vec();
    let c = maximum_path_batch(&mut work, shape, lens);
    match (&g, &c) {
        (Ok(g), Ok(c)) => {
            for (i, (gp, cp)) in g.iter().zip(c).enumerate() {
                if gp != cp {
                    let y = gp.iter().zip(cp).position(|(a, b)| a != b).unwrap_or(gp.len().min(cp.len()));
                    tally.fail(format!(
                        "MAS {what} item {i} {:?}: first differing frame {y}: gpu {:?} cpu {:?}",
                        lens[i],
                        gp.get(y),
                        cp.get(y)
                    ));
                }
            }
        }
        (Err(a), Err(b)) if a == b => {}
        _ => tally.fail(format!("MAS {what}: gpu {:?} vs cpu {:?}", g.as_ref().err(), c.as_ref().err())),
    }
    Ok(())
}

fn mas_parity(gpu: &GpuAligner, tally: &mut Tally) -> Result<()> {
    let mut rng = SplitMix64::new(0x5eed_0001);
    // Many small and medium batches with variable lengths.
    for case in 0..400 {
        let fill = FILLS[case % FILLS.len()];
        let b = rng.range(1, 8);
        let t_hi = if case % 10 == 0 { 300 } else { 40 };
        let lens: Vec<MasLen> = (0..b)
            .map(|_| {
                let text = rng.range(1, t_hi);
                let speech = match rng.range(0, 4) {
                    0 => text,                   // T == S
                    1 => text + rng.range(0, 3), // nearly diagonal
                    _ => rng.range(text, 4 * text + 5),
                };
                MasLen { text, speech }
            })
            .collect();
        let (v, shape) = mas_batch(&mut rng, fill, &lens);
        compare_mas(gpu, tally, &format!("case {case} {fill:?}"), &v, shape, &lens)?;
    }
    // More items than multiprocessors: blocks sized to the text instead.
    for fill in [Fill::Random, Fill::Integer] {
        let lens: Vec<MasLen> = (0..300)
            .map(|_| {
                let text = rng.range(1, 150);
                MasLen { text, speech: rng.range(text, 3 * text + 4) }
            })
            .collect();
        let (v, shape) = mas_batch(&mut rng, fill, &lens);
        compare_mas(gpu, tally, &format!("wide batch {fill:?}"), &v, shape, &lens)?;
    }
    // Degenerate items side by side.
    let lens = [MasLen { text: 1, speech: 1 }, MasLen { text: 1, speech: 50 }, MasLen { text: 50, speech: 50 }];
    for fill in FILLS {
        let (v, shape) = mas_batch(&mut rng, fill, &lens);
        compare_mas(gpu, tally, &format!("degenerate {fill:?}"), &v, shape, &lens)?;
    }
    // Text past one block of threads (threads stride over text positions),
    // up to the kernel's limit, and speech past one tile boundary by one.
    let big = [
        vec![MasLen { text: 1025, speech: 1025 }, MasLen { text: 1024, speech: 4097 }],
        vec![
            MasLen { text: 2048, speech: 8192 },
            MasLen { text: 1500, speech: 2049 },
            MasLen { text: 3, speech: 8191 },
        ],
        vec![MasLen { text: 2048, speech: 2048 }, MasLen { text: 2047, speech: 2049 }],
    ];
    for (k, lens) in big.iter().enumerate() {
        for fill in [Fill::Random, Fill::Integer, Fill::Constant] {
            let (v, shape) = mas_batch(&mut rng, fill, lens);
            compare_mas(gpu, tally, &format!("big {k} {fill:?}"), &v, shape, lens)?;
        }
    }
    // NaN and +inf inside the data: the same error, at the same cell.
    for (k, bad) in [f32::NAN, f32::INFINITY].into_iter().enumerate() {
        let lens = [MasLen { text: 30, speech: 70 }, MasLen { text: 20, speech: 40 }];
        let (mut v, shape) = mas_batch(&mut rng, Fill::Random, &lens);
        v[(shape.text + 7) * shape.speech + 13] = bad; // item 1, (7, 13)
        v[(shape.text + 9) * shape.speech + 2] = bad; // later in row-major order
        compare_mas(gpu, tally, &format!("non-finite {k}"), &v, shape, &lens)?;
        let got = gpu.mas_batch(&v, shape, &lens);
        if got != Err(AlignError::NonFinite { item: 1, row: 7, col: 13 }) {
            tally.fail(format!("MAS non-finite {k}: {got:?}"));
        }
    }
    // The device-resident API gives the same paths as the host one.
    let lens = [MasLen { text: 100, speech: 333 }, MasLen { text: 7, speech: 9 }];
    let (v, shape) = mas_batch(&mut rng, Fill::Integer, &lens);
    let mut dev = gpu.mas_upload(&v, shape, &lens)?;
    let pristine = gpu.mas_upload(&v, shape, &lens)?;
    gpu.mas_launch(&mut dev)?;
    gpu.mas_copy_values(&pristine, &mut dev)?;
    gpu.mas_launch_timed(&mut dev)?;
    let mut work = v.clone();
    if gpu.mas_paths(&dev)? != maximum_path_batch(&mut work, shape, &lens)? {
        tally.fail("MAS device-resident API".into());
    }
    Ok(())
}

/// A padded CTC batch (blank 0) with NaN in the padding frames.
fn ctc_batch(
    rng: &mut SplitMix64,
    fill: Fill,
    classes: usize,
    lens: &[CtcLen],
    item_labels: &[Vec<u32>],
) -> (Vec<f32>, Vec<u32>, CtcShape) {
    let shape = CtcShape {
        batch: lens.len(),
        frames: lens.iter().map(|l| l.frames).max().unwrap_or(1),
        classes,
        labels: lens.iter().map(|l| l.labels).max().unwrap_or(0),
    };
    let mut lp = vec![f32::NAN; shape.batch * shape.frames * classes];
    let mut labels = vec![u32::MAX; shape.batch * shape.labels];
    for (i, l) in lens.iter().enumerate() {
        for y in 0..l.frames {
            for c in 0..classes {
                lp[(i * shape.frames + y) * classes + c] = draw(rng, fill, c);
            }
        }
        labels[i * shape.labels..i * shape.labels + l.labels].copy_from_slice(&item_labels[i]);
    }
    (lp, labels, shape)
}

/// Labels for item lengths, non-blank (blank is 0), with repeats, and frames
/// enough to hold them.
fn ctc_lens(rng: &mut SplitMix64, b: usize, classes: usize, l_hi: usize) -> (Vec<CtcLen>, Vec<Vec<u32>>) {
    let mut lens = Vec::new();
    let mut labels = Vec::new();
    for _ in 0..b {
        let l = rng.range(0, l_hi);
        let lab: Vec<u32> = (0..l).map(|_| rng.range(1, classes - 1) as u32).collect();
        let repeats = lab.windows(2).filter(|w| w[0] == w[1]).count();
        let need = (l + repeats).max(1);
        let frames = if rng.range(0, 3) == 0 { need } else { rng.range(need, 3 * need + 8) };
        lens.push(CtcLen { frames, labels: l });
        labels.push(lab);
    }
    (lens, labels)
}

fn compare_ctc(
    gpu: &GpuAligner,
    tally: &mut Tally,
    what: &str,
    lp: &[f32],
    shape: CtcShape,
    labels: &[u32],
    lens: &[CtcLen],
) {
    tally.ctc_batches += 1;
    tally.ctc_items += lens.len();
    let g = gpu.ctc_batch(lp, shape, labels, lens, 0);
    let c = ctc_viterbi_batch(lp, shape, labels, lens, 0);
    match (&g, &c) {
        (Ok(g), Ok(c)) => {
            for (i, (ga, ca)) in g.iter().zip(c).enumerate() {
                if ga != ca {
                    let y = ga.states.iter().zip(&ca.states).position(|(a, b)| a != b);
                    tally.fail(format!(
                        "CTC {what} item {i} {:?}: scores gpu {} cpu {}, first differing frame {y:?}",
                        lens[i], ga.score, ca.score
                    ));
                }
            }
        }
        (Err(a), Err(b)) if a == b => {}
        _ => tally.fail(format!("CTC {what}: gpu {:?} vs cpu {:?}", g.as_ref().err(), c.as_ref().err())),
    }
}

fn ctc_parity(gpu: &GpuAligner, tally: &mut Tally) -> Result<()> {
    let mut rng = SplitMix64::new(0x5eed_0002);
    for case in 0..300 {
        let fill = FILLS[case % FILLS.len()];
        let classes = rng.range(2, 60);
        let b = rng.range(1, 6);
        let l_hi = if case % 10 == 0 { 200 } else { 20 };
        let (lens, labels) = ctc_lens(&mut rng, b, classes, l_hi);
        let (lp, labels, shape) = ctc_batch(&mut rng, fill, classes, &lens, &labels);
        compare_ctc(gpu, tally, &format!("case {case} {fill:?}"), &lp, shape, &labels, &lens);
    }
    // More states than threads in a block (n = 2L + 1 up to 4097).
    for fill in [Fill::Random, Fill::Integer, Fill::IntegerWithMinusInf] {
        let classes = 80;
        let mut labels = Vec::new();
        let mut lens = Vec::new();
        for l in [gpu.ctc_max_labels(), 600, 1] {
            let lab: Vec<u32> = (0..l).map(|k| 1 + (k * 7 % (classes - 1)) as u32).collect();
            lens.push(CtcLen { frames: 2 * l + 3, labels: l });
            labels.push(lab);
        }
        let (lp, labels, shape) = ctc_batch(&mut rng, fill, classes, &lens, &labels);
        compare_ctc(gpu, tally, &format!("big {fill:?}"), &lp, shape, &labels, &lens);
    }
    Ok(())
}

struct Row {
    batch: usize,
    text: usize,
    speech: usize,
    kernel_ms: f64,
    kernel_min_ms: f64,
    e2e_ms: f64,
    cpu_ms: f64,
    kernel_reps: usize,
    cpu_reps: usize,
    parity: bool,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn bench(gpu: &GpuAligner, tally: &mut Tally, with_cpu: bool) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut rng = SplitMix64::new(0x5eed_0003);
    for batch in [16usize, 32] {
        for text in [128usize, 256, 512, 1024, 2048] {
            let speech = 4 * text;
            let shape = MasShape { batch, text, speech };
            let lens = vec![MasLen { text, speech }; batch];
            let value: Vec<f32> = (0..batch * text * speech).map(|_| rng.log_like()).collect();

            let pristine = gpu.mas_upload(&value, shape, &lens)?;
            let mut work = gpu.mas_upload(&value, shape, &lens)?;
            let kernel_reps = if text >= 1024 { 5 } else { 10 };
            let mut kernel = Vec::new();
            for rep in 0..2 + kernel_reps {
                gpu.mas_copy_values(&pristine, &mut work)?;
                let ms = gpu.mas_launch_timed(&mut work)? as f64;
                if rep >= 2 {
                    kernel.push(ms);
                }
            }
            let gpu_paths = gpu.mas_paths(&work)?;
            drop((pristine, work));

            let e2e_reps = if text >= 1024 { 3 } else { 5 };
            let mut e2e = Vec::new();
            for rep in 0..1 + e2e_reps {
                let t0 = Instant::now();
                let p = gpu.mas_batch(&value, shape, &lens)?;
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                if rep == 0 && p != gpu_paths {
                    tally.fail(format!("bench b={batch} T={text}: mas_batch differs from the device-resident run"));
                }
                if rep >= 1 {
                    e2e.push(ms);
                }
            }

            let cpu_reps = if !with_cpu {
                0
            } else if text >= 512 {
                1
            } else {
                3
            };
            let mut cpu = Vec::new();
            let mut cpu_paths = Vec::new();
            for _ in 0..cpu_reps {
                let mut v = value.clone();
                let t0 = Instant::now();
                cpu_paths = maximum_path_batch(&mut v, shape, &lens)?;
                cpu.push(t0.elapsed().as_secs_f64() * 1e3);
            }
            let parity = !with_cpu || cpu_paths == gpu_paths;
            tally.mas_batches += with_cpu as usize;
            tally.mas_items += batch * with_cpu as usize;
            if !parity {
                tally.fail(format!("bench b={batch} T={text} S={speech}: GPU and CPU paths differ"));
            }
            let row = Row {
                batch,
                text,
                speech,
                kernel_min_ms: kernel.iter().cloned().fold(f64::INFINITY, f64::min),
                kernel_ms: median(kernel),
                e2e_ms: median(e2e),
                cpu_ms: if cpu.is_empty() { f64::NAN } else { median(cpu) },
                kernel_reps,
                cpu_reps,
                parity,
            };
            println!(
                "b={batch:2} T={text:4} S={speech:4}: kernel {:.3} ms, with copies {:.3} ms, CPU {:.1} ms",
                row.kernel_ms, row.e2e_ms, row.cpu_ms
            );
            rows.push(row);
        }
    }
    if rows.is_empty() {
        bail!("no benchmark rows");
    }
    Ok(rows)
}

fn cells(r: &Row) -> f64 {
    (r.batch * r.text * r.speech) as f64
}

fn print_table(rows: &[Row]) {
    println!();
    println!("| batch | T | S | kernel ms (median) | kernel Gcells/s | GPU incl. copies ms | CPU ms (1 thread) | CPU Gcells/s | kernel speed-up | incl. copies speed-up | parity |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|");
    for r in rows {
        let c = cells(r);
        println!(
            "| {} | {} | {} | {:.3} | {:.2} | {:.3} | {:.1} | {:.3} | {:.0}x | {:.0}x | {} |",
            r.batch,
            r.text,
            r.speech,
            r.kernel_ms,
            c / r.kernel_ms / 1e6,
            r.e2e_ms,
            r.cpu_ms,
            c / r.cpu_ms / 1e6,
            r.cpu_ms / r.kernel_ms,
            r.cpu_ms / r.e2e_ms,
            if r.parity { "ok" } else { "FAIL" }
        );
    }
}

fn to_json(gpu: &GpuAligner, profile: &str, rows: &[Row]) -> String {
    let name = gpu.device_name().replace('\\', "\\\\").replace('"', "\\\"");
    let mut s = format!(
        "{{\n  \"device\": \"{name}\",\n  \"compute_capability\": \"{}.{}\",\n  \"profile\": \"{profile}\",\n  \"kernel_timing\": \"CUDA events around the launch, input restored on the device between runs, median after 2 warm-ups\",\n  \"e2e_timing\": \"wall clock of GpuAligner::mas_batch: allocation, host-to-device copy of the matrix, kernel, device-to-host copy of the int32 paths\",\n  \"cpu_timing\": \"wall clock of maximum_path_batch, one thread, in place on a fresh copy\",\n  \"rows\": [\n",
        gpu.compute_capability().0,
        gpu.compute_capability().1
    );
    // JSON has no NaN: a value not measured (`--gpu-only`) is null.
    let num = |x: f64| if x.is_finite() { format!("{x:.6e}") } else { "null".to_string() };
    for (i, r) in rows.iter().enumerate() {
        let c = cells(r);
        let fields = [
            ("batch", r.batch.to_string()),
            ("text", r.text.to_string()),
            ("speech", r.speech.to_string()),
            ("cells", (c as u64).to_string()),
            ("kernel_ms", num(r.kernel_ms)),
            ("kernel_min_ms", num(r.kernel_min_ms)),
            ("kernel_reps", r.kernel_reps.to_string()),
            ("kernel_cells_per_s", num(c / r.kernel_ms * 1e3)),
            ("e2e_ms", num(r.e2e_ms)),
            ("e2e_cells_per_s", num(c / r.e2e_ms * 1e3)),
            ("cpu_ms", num(r.cpu_ms)),
            ("cpu_reps", r.cpu_reps.to_string()),
            ("cpu_cells_per_s", num(c / r.cpu_ms * 1e3)),
            ("kernel_speedup", num(r.cpu_ms / r.kernel_ms)),
            ("e2e_speedup", num(r.cpu_ms / r.e2e_ms)),
            ("parity", r.parity.to_string()),
        ];
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        s.push_str(&format!("    {{{}}}{}\n", body.join(", "), if i + 1 < rows.len() { "," } else { "" }));
    }
    s.push_str("  ]\n}\n");
    s
}
