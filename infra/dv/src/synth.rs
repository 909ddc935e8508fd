//! `dv synth`: audio from a voice package, on the CPU, without libtorch
//! (`dv-synth`): conditioning network over the whole utterance, then the
//! autoregressive WaveNet sampler, streamed block by block into a 16-bit
//! WAV at 16384 Hz.
//!
//! Input: phonemes with their durations and F0 from a featurized corpus
//! utterance (`--features F --utterance ID`, the ground-truth mode of the
//! paper's Table 1, which separates WaveNet quality from duration/F0
//! quality). Text input needs the duration/F0 and G2P models in the package
//! (not exported yet) and is refused with that reason.
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
    if let Some((c, l)) = golden_parity(&voice)? {
        eprintln!("golden parity with the trainer: conditioning max |Δ| {c:.2e}, logits max |Δ| {l:.2e}");
        if !(l < 1e-2 && c < 1e-3) {
            bail!("{}: the package's golden outputs do not match this sampler (logits off by {l:.3e})", a.voice.display());
        }
    }
    let sampling = parse_sampling(&a.sampling)?;
    let frames: Vec<f32> = match (&a.features, &a.utterance) {
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
            u.conditioning(&norm, cfg.sample_rate)?.0
        }
        _ if !a.text.is_empty() => bail!(
            "{}: synthesizing text needs the grapheme-to-phoneme and duration/F0 models, which this voice package \
             does not contain yet; give --features F --utterance ID to speak an utterance's phonemes, durations and F0",
            a.voice.display()
        ),
        _ => bail!("nothing to say: give text, or --features F --utterance ID"),
    };
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
    let cond = ConditioningNetwork::new(&voice)?.forward(&frames)?;
    let cond_s = t0.elapsed().as_secs_f64();
    let sampler = Sampler::new(&voice, kernel, options)?;
    let mut n = cond.frames() * cfg.hop();
    if let Some(s) = a.max_seconds {
        n = n.min((s * cfg.sample_rate as f64) as usize);
    }
    let total_s = n as f64 / cfg.sample_rate as f64;
    eprintln!(
        "{} frames ({:.2} s) of {} conditioning, kernel {kernel:?}, {options:?}, sampling {sampling:?}, seed {}",
        frames.len() / CONDITIONING_DIM,
        total_s,
        a.utterance.as_deref().unwrap_or("text"),
        a.seed
    );
    let mut tmp = a.out.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let mut wav = WavWriter::create(&tmp, cfg.sample_rate)?;
    let mut stream = sampler.stream(&cond, n, sampling, Rng::new(a.seed));
    let mut block = vec![0u8; cfg.sample_rate as usize / 4];
    let t1 = Instant::now();
    loop {
        let k = stream.next_block(&mut block)?;
        if k == 0 {
            break;
        }
        wav.push(&block[..k])?;
        let done = n - stream.remaining();
        let el = t1.elapsed().as_secs_f64();
        eprint!("\r{:.2}/{:.2} s of audio, {:.2}x real time   ", done as f64 / cfg.sample_rate as f64, total_s, done as f64 / cfg.sample_rate as f64 / el.max(1e-9));
    }
    eprintln!();
    wav.finish()?;
    std::fs::rename(&tmp, &a.out).with_context(|| format!("renaming {} to {}", tmp.display(), a.out.display()))?;
    let gen_s = t1.elapsed().as_secs_f64();
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
