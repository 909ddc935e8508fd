//! `dv synth`: audio from a voice package without libtorch, through
//! `dv-speak` (the text front end, the golden-parity checks, the conditioning
//! network and the CPU or GPU sampler), streamed block by block into a
//! 16-bit WAV at 16384 Hz.
//!
//! Input: text (arguments or stdin lines), planned one sentence at a time
//! by [`dv_speak::Speaker::plan`]; or an utterance's phonemes with their
//! durations and F0 from a featurized corpus (`--features F --utterance ID`,
//! the ground-truth mode of the paper's Table 1, which separates WaveNet
//! quality from duration/F0 quality). Reading features needs `dv-train`, so
//! that mode stays here and hands its frames to the library.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use dv_speak::{CancelToken, Device, RenderOptions, Speaker, SpeakerOptions, WavWriter};
use dv_synth::{Kernel, Nonlinearity, Precision, Sampling};
use dv_text::F0Normalization;
use dv_train::{Chunks, ChunksConfig};

use crate::device;

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// The voice: a name (`dv voices`) or a package directory (`dv export`);
    /// default: $DV_VOICE, else the shipped voice.
    #[arg(long)]
    voice: Option<String>,
    /// Text to speak (needs the text-side models in the package).
    text: Vec<String>,
    /// A featurize output to take an utterance's phonemes, durations and F0 from.
    #[arg(long, requires = "utterance")]
    features: Option<String>,
    /// The utterance id in `--features`.
    #[arg(long, requires = "features")]
    utterance: Option<String>,
    /// The WAV file to write; `-` streams the WAV to standard output as it is sampled (its size
    /// fields 0xFFFFFFFF, as streamed WAV has them), for `dv synth ... -o - | aplay`.
    #[arg(short, long)]
    out: PathBuf,
    /// voiced-temperature:T (temperature on voiced frames only, direct elsewhere; the default,
    /// 0.7), direct (the paper's choice), temperature:T, mean, mode or top-k:K (App. A.4).
    #[arg(long, default_value_t = dv_speak::DEFAULT_SAMPLING, value_parser = Sampling::from_str)]
    sampling: Sampling,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Speaking rate, as OpenAI's `speed` (and `dv-serve`'s): 0.25 to 4, 1 the duration model's
    /// own; 0.9 speaks 11 % slower (Piper's `length_scale` 1.11).
    #[arg(long, default_value_t = 1.0)]
    speed: f32,
    /// Sampler threads (1, or 2 for the main + auxiliary split of §5.1); default: measured
    /// per voice and machine (`dv_speak::calibrate`, cached under $DV_HOME/calibration).
    #[arg(long)]
    threads: Option<usize>,
    /// int16 weights (§5.1); default: measured, int16 only when float32 is slower than 1.5x
    /// real time.
    #[arg(long, conflicts_with = "f32")]
    int16: bool,
    /// float32 weights, whatever the calibration says.
    #[arg(long)]
    f32: bool,
    /// Measure the sampler's speed again instead of using the cached calibration (after a
    /// change of machine load, say).
    #[arg(long)]
    recalibrate: bool,
    /// The approximate nonlinearities of App. C.
    #[arg(long)]
    approx: bool,
    /// scalar (the reference) or simd (AVX2/FMA when the CPU has it).
    #[arg(long, value_enum, default_value_t = KernelArg::Simd)]
    kernel: KernelArg,
    /// Stop after this many seconds of audio.
    #[arg(long)]
    max_seconds: Option<f64>,
    /// cpu, or cuda for the one-launch GPU kernel on GPU 0 (dv-gpu kernel 1:
    /// each sentence in one launch on a thread-block cluster; needs compute
    /// capability 9.0).
    #[arg(long, default_value = "cpu", value_parser = device::parse::<Device>)]
    device: Device,
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
    /// The pronunciation lexicon for text when the package has no
    /// lexicon.dict (default: $DV_CMUDICT, else the CMUDict built into dv).
    #[arg(long)]
    cmudict: Option<PathBuf>,
}

/// `--kernel`: the CPU sampler's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum KernelArg {
    /// The scalar reference.
    Scalar,
    /// AVX2/FMA when the CPU has it, else the scalar reference.
    Simd,
}

impl SynthArgs {
    fn speaker_options(&self) -> anyhow::Result<SpeakerOptions> {
        let kernel = match self.kernel {
            KernelArg::Scalar => Kernel::Scalar,
            KernelArg::Simd => Kernel::detect(),
        };
        Ok(SpeakerOptions {
            device: self.device,
            kernel,
            precision: if self.int16 { Precision::Int16 } else { Precision::F32 },
            nonlinearity: if self.approx { Nonlinearity::Approximate } else { Nonlinearity::Exact },
            threads: self.threads.unwrap_or(1),
            lexicon: self.cmudict.clone(),
            parity_cache: dv_speak::Parity::cache_dir(),
            bf16: self.bf16,
            cluster: self.cluster,
            helpers: self.helpers,
            layers_per_block: self.layers_per_block,
        })
    }
}

/// Prints the golden-parity figures measured at load (or cached by an
/// earlier load of the same package by this build).
fn print_parity(p: &dv_speak::Parity, cached: bool) {
    let from = if cached { " (cached)" } else { "" };
    if let Some(dd) = p.duration {
        eprintln!("golden parity of the duration/F0 model: max |Δ| {dd:.2e}{from}");
    }
    if let Some(g) = p.g2p {
        eprintln!("golden parity of the G2P model: {} of {} words decoded differently{from}", g.differ, g.words);
    }
    if let Some(w) = p.wavenet {
        eprintln!(
            "golden parity with the trainer: conditioning max |Δ| {:.2e}, logits max |Δ| {:.2e}{from}",
            w.conditioning, w.logits
        );
    }
}

/// The corpus utterance `id` of `features` as one sentence of conditioning frames.
fn utterance(speaker: &Speaker, features: &str, id: &str) -> anyhow::Result<dv_speak::Sentence> {
    let cfg = speaker.voice().config();
    let split = Chunks::load(
        &ChunksConfig {
            url: features.to_string(),
            validation_fraction: 0.0,
            seed: 0,
            f0_min_hz: Some(cfg.f0.min_hz as f32),
            f0_max_hz: Some(cfg.f0.max_hz as f32),
            f0_jitter: 0.0,
            f0_predicted: 0.0,
            f0_predicted_from: None,
            stress: cfg.conditioning.stress,
        },
        cfg.hop(),
    )?;
    let u = split
        .train
        .utterances()
        .iter()
        .find(|u| u.id == id)
        .with_context(|| format!("{features}: no usable utterance {id:?} (see its ids with dv corpus inspect)"))?;
    let norm = F0Normalization { min_hz: cfg.f0.min_hz as f32, max_hz: cfg.f0.max_hz as f32 };
    let mut sentence = speaker.sentence_from_frames(id, u.conditioning(&norm, cfg.sample_rate)?.0, 0)?;
    // the reference phone timings, so that the render treats the leading pause as text does
    sentence.phonemes = u
        .phones
        .iter()
        .map(|p| dv_speak::PhonemeTiming {
            phoneme: if p.phoneme.phoneme == dv_text::Phoneme::Sil {
                dv_speak::PAUSE.to_string()
            } else {
                p.phoneme.to_string()
            },
            start_s: p.start,
            end_s: p.end,
        })
        .collect();
    Ok(sentence)
}

fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::F32 => "float32",
        Precision::Int16 => "int16",
    }
}

/// Refuses flags that cannot work before the voice loads and the sampler is
/// calibrated: a user should not wait seconds to hear of a typo.
fn check_flags(a: &SynthArgs) -> anyhow::Result<()> {
    if let Some(t) = a.threads.filter(|t| !(1..=2).contains(t)) {
        bail!("--threads {t}: the CPU sampler runs on 1 thread or 2 (the main and auxiliary threads of §5.1)");
    }
    if !dv_speak::SPEED_RANGE.contains(&a.speed) {
        bail!(
            "--speed {}: outside {}..={} (1 is the duration model's own rate)",
            a.speed,
            dv_speak::SPEED_RANGE.start(),
            dv_speak::SPEED_RANGE.end()
        );
    }
    if let Some(s) = a.max_seconds.filter(|s| !(s.is_finite() && *s > 0.0)) {
        bail!("--max-seconds {s}: not a positive number of seconds");
    }
    if a.out.as_os_str() == "-" {
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            bail!("-o -: standard output is a terminal; pipe it (dv synth ... -o - | aplay) or give a file");
        }
        return Ok(());
    }
    if a.out.is_dir() {
        bail!("-o {}: is a folder; give the WAV file's name", a.out.display());
    }
    if let Some(parent) = a.out.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
        bail!("-o {}: the folder {} does not exist", a.out.display(), parent.display());
    }
    Ok(())
}

/// Where the audio goes: a file written under a `.partial` name and renamed
/// when complete (a crash leaves no half-written WAV under the asked name),
/// or standard output as a streamed WAV.
enum Sink {
    File { wav: WavWriter, tmp: Partial, out: PathBuf },
    Stdout(std::io::Stdout),
}

/// A `.partial` file, removed when dropped before it was renamed (a render
/// or write that failed leaves nothing behind).
struct Partial(Option<PathBuf>);

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Sink {
    fn open(out: &std::path::Path, rate: u32) -> anyhow::Result<Sink> {
        if out.as_os_str() == "-" {
            let mut stdout = std::io::stdout();
            stdout.write_all(&dv_speak::wav_header(rate, None)).context("writing the WAV header to standard output")?;
            return Ok(Sink::Stdout(stdout));
        }
        let mut tmp = out.as_os_str().to_owned();
        tmp.push(".partial");
        let tmp = PathBuf::from(tmp);
        let guard = Partial(Some(tmp.clone()));
        let wav = WavWriter::create(&tmp, rate)?;
        Ok(Sink::File { wav, tmp: guard, out: out.to_path_buf() })
    }

    fn push(&mut self, pcm: &[i16]) -> anyhow::Result<()> {
        match self {
            Sink::File { wav, .. } => Ok(wav.push(pcm)?),
            Sink::Stdout(stdout) => {
                let bytes: Vec<u8> = pcm.iter().flat_map(|v| v.to_le_bytes()).collect();
                match stdout.write_all(&bytes).and_then(|()| stdout.flush()) {
                    // The reader left (`| head -c`, a player closed): quiet, as main.rs ends on EPIPE.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
                    r => r.context("writing audio to standard output"),
                }
            }
        }
    }

    fn finish(self) -> anyhow::Result<()> {
        match self {
            Sink::File { wav, mut tmp, out } => {
                wav.finish()?;
                let path = tmp.0.clone().unwrap_or_default();
                std::fs::rename(&path, &out)
                    .with_context(|| format!("renaming {} to {}", path.display(), out.display()))?;
                tmp.0 = None;
                Ok(())
            }
            Sink::Stdout(mut stdout) => stdout.flush().context("writing audio to standard output"),
        }
    }
}

pub(crate) fn run(a: SynthArgs) -> anyhow::Result<()> {
    check_flags(&a)?;
    let mut options = a.speaker_options()?;
    let sampling = a.sampling;
    let dir = crate::voices::resolve(a.voice.as_deref())?;
    let voice = dv_voice::Voice::read(&dir).with_context(|| format!("reading the voice package {}", dir.display()))?;
    eprintln!("voice {}", dir.display());
    if options.device == Device::Cpu && (a.threads.is_none() || !(a.int16 || a.f32)) {
        let cache = dv_speak::calibrate::cache_dir();
        let (cal, cached) = dv_speak::calibrate::calibrate(&voice, &options, cache.as_deref(), a.recalibrate)?;
        let (precision, threads) = cal.choice();
        if !(a.int16 || a.f32) {
            options.precision = precision;
        }
        options.threads = a.threads.unwrap_or(threads);
        let figures: Vec<String> = cal
            .trials
            .iter()
            .map(|t| format!("{} x{} {:.2}x", if t.int16 { "int16" } else { "f32" }, t.threads, t.real_time))
            .collect();
        eprintln!(
            "calibration ({}): {}; using {}, {} thread(s)",
            if cached { "cached" } else { "measured now" },
            figures.join(", "),
            precision_name(options.precision),
            options.threads
        );
    }
    let speaker = Speaker::from_package(voice, &dir, &options)
        .with_context(|| format!("reading the voice package {}", dir.display()))?;
    print_parity(speaker.parity(), speaker.parity_cached());
    // One conditioning signal per sentence (or the one corpus utterance).
    let sentences = match (&a.features, &a.utterance) {
        (Some(f), Some(id)) => vec![utterance(&speaker, f, id)?],
        _ => {
            let text = if a.text.is_empty() {
                std::io::stdin().lines().collect::<Result<Vec<_>, _>>().context("reading text from stdin")?.join(" ")
            } else {
                a.text.join(" ")
            };
            if text.trim().is_empty() {
                bail!("nothing to say: give text (arguments or stdin), or --features F --utterance ID");
            }
            speaker.plan(&text, a.speed).map_err(|e| match e {
                dv_speak::SpeakError::NoDurationModel => anyhow::Error::new(e).context(
                    "this voice package has no duration/F0 model: export one into it, or give --features F --utterance ID",
                ),
                e => e.into(),
            })?
        }
    };
    let frames_total: usize = sentences.iter().map(|s| s.frames()).sum();
    let rate = speaker.sample_rate();
    if let Some(plan) = speaker.gpu_plan() {
        eprintln!("cuda: {plan:?}");
    }
    let t0 = Instant::now();
    let mut limit = a.max_seconds.map_or(usize::MAX, |s| (s * rate as f64) as usize);
    let total_s = (frames_total * speaker.hop()).min(limit) as f64 / rate as f64;
    let sampler = match (speaker.device(), speaker.cpu_sampler()) {
        (Device::Cpu, Some((kernel, o))) => format!(
            "CPU kernel {}, {}, {} thread(s), {} nonlinearities",
            match kernel {
                Kernel::Scalar => "scalar",
                Kernel::Avx2Fma => "avx2-fma",
            },
            precision_name(o.precision),
            o.threads,
            match o.nonlinearity {
                Nonlinearity::Exact => "exact",
                Nonlinearity::Approximate => "approximate",
            }
        ),
        _ => "cuda kernel 1".to_string(),
    };
    eprintln!(
        "{} sentence(s), {frames_total} frames ({total_s:.2} s), {sampler}, sampling {sampling}, seed {}",
        sentences.len(),
        a.seed
    );
    let mut wav = Sink::open(&a.out, rate)?;
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (mut cond_s, mut gen_s, mut done) = (0.0, 0.0, 0usize);
    let cancel = CancelToken::new();
    for sentence in &sentences {
        if limit == 0 {
            break;
        }
        let render = RenderOptions {
            sampling,
            seed: a.seed,
            max_samples: Some(limit),
            block: rate as usize / 4,
            ..RenderOptions::default()
        };
        let mut written: anyhow::Result<()> = Ok(());
        let t1 = Instant::now();
        let stats = speaker.render(sentence, &render, &cancel, &mut |pcm| {
            if let Err(e) = wav.push(pcm) {
                written = Err(e);
                return ControlFlow::Break(());
            }
            done += pcm.len();
            if progress {
                let el = gen_s + t1.elapsed().as_secs_f64();
                eprint!(
                    "\r{}: {:.2}/{total_s:.2} s of audio, {:.2}x real time   ",
                    sentence.text,
                    done as f64 / rate as f64,
                    done as f64 / rate as f64 / el.max(1e-9)
                );
            }
            ControlFlow::Continue(())
        })?;
        written?;
        limit -= stats.samples;
        cond_s += stats.conditioning_s;
        gen_s += stats.sampling_s;
    }
    if progress {
        eprintln!();
    }
    wav.finish()?;
    let summary = format!(
        "wrote {}: {:.2} s at {} Hz; conditioning {:.3} s, sampling {:.2} s ({:.2}x real time), total {:.2} s",
        if a.out.as_os_str() == "-" { "standard output".into() } else { a.out.display().to_string() },
        total_s,
        rate,
        cond_s,
        gen_s,
        total_s / gen_s.max(1e-9),
        t0.elapsed().as_secs_f64()
    );
    // Standard output carries the audio when asked to.
    if matches!(a.out.as_os_str().to_str(), Some("-")) {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    Ok(())
}
