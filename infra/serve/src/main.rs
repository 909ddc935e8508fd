//! `dv-serve` (also reached as `dv serve`): the speech server. See the
//! library's docs for the endpoints; `dv-serve --help` for the options.
#![forbid(unsafe_code)]

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use dv_serve::{serve, ServeConfig, SlotBackend, SlotConfig};
use dv_speak::{Device, SpeakerOptions};
use dv_synth::{Nonlinearity, Precision, Sampling};
use dv_voice::catalog;

/// Deep Voice voices over HTTP: OpenAI's /v1/audio/speech (streamed WAV,
/// PCM, SSE; FLAC), a timed endpoint with phoneme and word timings, voices,
/// models, health, Prometheus metrics and a web page at /.
#[derive(Parser)]
#[command(name = "dv-serve", version, about)]
struct Args {
    /// The address to bind. Anything but a loopback address needs --public.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// The port (0: any free one; the address is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Allow binding beyond loopback (use with --api-key).
    #[arg(long)]
    public: bool,
    /// Renders at once (default: the cores).
    #[arg(long)]
    workers: Option<usize>,
    /// Requests that may wait for a worker (default: 2 × workers); beyond them 429.
    #[arg(long)]
    queue: Option<usize>,
    /// Require `Authorization: Bearer KEY` on /v1/* (also from DV_API_KEY).
    #[arg(long, env = "DV_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The voice of requests that name none: a name, or a package directory (served under its
    /// directory's name); default: DV_VOICE, else the shipped voice. Refused at start when it
    /// is nowhere to be found (unless --no-preload).
    #[arg(long)]
    voice: Option<String>,
    /// Folders to find voices in, before DV_VOICES, $DV_HOME/voices, the installed and the shipped ones.
    #[arg(long = "voices")]
    voices: Vec<PathBuf>,
    /// Do not load the default voice at start (/readyz then waits for the first request).
    #[arg(long)]
    no_preload: bool,
    /// Voices kept loaded at once.
    #[arg(long, default_value_t = 8)]
    max_voices: usize,
    /// cpu (a worker pool, each request on its own thread), cuda (the
    /// multi-stream kernel on GPU 0, its slots shared by concurrent
    /// requests), or cpu-slots (the same slot scheduler on one CPU thread,
    /// for trying the GPU path without a GPU).
    #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
    device: DeviceArg,
    /// (cuda, cpu-slots) Slots per voice: requests rendering at once (default
    /// 2048 on cuda, the cores on cpu-slots). --workers is ignored. On cuda
    /// (Hopper, r = 64) they are spread over every multiprocessor: fewer per
    /// multiprocessor, faster streams (up to 40 per multiprocessor stay in one wave).
    #[arg(long)]
    slots: Option<usize>,
    /// (cuda, cpu-slots) Samples per launch, sent as one block (about 100 ms).
    #[arg(long, default_value_t = dv_speak::DEFAULT_BLOCK)]
    slot_block: usize,
    /// A streamed answer's first block, samples, for sooner first audio: on cpu
    /// a sentence's first block; on cuda and cpu-slots a new request's first
    /// launch, while the device has room to spare (its next launches grow to
    /// --slot-block as fast as its delivered audio allows). 0: whole blocks.
    #[arg(long, default_value_t = dv_speak::DEFAULT_FIRST_BLOCK)]
    first_block: usize,
    /// How every voice samples: voiced-temperature:T (temperature T on voiced frames, direct
    /// sampling elsewhere; the default, 0.7), direct (the paper's choice), temperature:T or mode.
    #[arg(long, default_value_t = dv_speak::DEFAULT_SAMPLING, value_parser = Sampling::from_str)]
    sampling: Sampling,
    /// (cuda, cpu-slots) The longest sentence a slot takes, seconds.
    #[arg(long, default_value_t = 120.0)]
    max_sentence_s: f64,
    /// (cpu) int16 weights (§5.1; needs AVX2/FMA): about 1.6x faster for 20x64x128.
    #[arg(long)]
    int16: bool,
    /// (cpu) App. C's approximate nonlinearities.
    #[arg(long)]
    approx: bool,
    /// (cuda) bfloat16 weights.
    #[arg(long)]
    bf16: bool,
    /// Seconds for a request's headers to arrive.
    #[arg(long, default_value_t = 10.0)]
    header_timeout: f64,
    /// Seconds for a request's body to arrive.
    #[arg(long, default_value_t = 10.0)]
    body_timeout: f64,
    /// Seconds a client may read nothing before its render is cancelled.
    #[arg(long, default_value_t = 30.0)]
    stall_timeout: f64,
    /// Seconds in-flight requests get to finish after SIGTERM or SIGINT.
    #[arg(long, default_value_t = 10.0)]
    shutdown_grace: f64,
}

/// `--device`: where requests are rendered (the flag's help says how).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DeviceArg {
    // A worker pool on the CPU, a request a thread.
    Cpu,
    // The slot scheduler on GPU 0's multi-stream kernel.
    Cuda,
    // The slot scheduler on one CPU thread.
    CpuSlots,
}

impl fmt::Display for DeviceArg {
    /// The spelling clap reads (`cpu`, `cuda`, `cpu-slots`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_possible_value() {
            Some(v) => f.write_str(v.get_name()),
            None => Ok(()),
        }
    }
}

/// The shipped voices of the source tree this binary was built from.
fn shipped_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inference/voices");
    dir.canonicalize().unwrap_or(dir)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn seconds(what: &str, s: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("--{what} {s}: not a number of seconds"))
}

/// SIGTERM or SIGINT.
async fn signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    eprintln!("dv-serve: signal received");
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if !a.host.is_loopback() && !a.public {
        bail!("--host {} is not a loopback address: add --public to serve beyond this machine", a.host);
    }
    // --voice DIR (as dv synth takes it) serves the package under its directory's name.
    let voice = a.voice.clone().unwrap_or_else(catalog::default_voice);
    let (default_voice, folder) = catalog::name_and_folder(&voice).with_context(|| format!("--voice {voice}"))?;
    let mut path: Vec<PathBuf> = folder.into_iter().collect();
    path.extend(a.voices.iter().cloned());
    path.extend(catalog::search_path(Some(&shipped_dir())));
    if !a.no_preload {
        // A voice that is not there will not appear: refuse to start, as for a bad flag.
        catalog::resolve_name(&default_voice, &path).with_context(|| format!("the default voice {voice:?}"))?;
    }
    let mut config = ServeConfig::new(path, default_voice);
    if let Some(w) = a.workers {
        config.workers = w.max(1);
        config.queue = 2 * config.workers;
    }
    if let Some(q) = a.queue {
        config.queue = q;
    }
    config.api_key = a.api_key.filter(|k| !k.is_empty());
    config.preload = !a.no_preload;
    config.max_voices = a.max_voices;
    config.sampling = a.sampling.validate()?;
    config.first_block = a.first_block;
    if matches!(a.device, DeviceArg::Cuda) {
        // Refused here, not when the first voice loads.
        dv_gpu::GpuSampling::new(config.sampling)
            .map_err(|e| anyhow::anyhow!("--sampling {}: {e}", config.sampling))?;
    }
    let (device, slots) = match a.device {
        DeviceArg::Cpu => (Device::Cpu, None),
        DeviceArg::Cuda => {
            (Device::Cpu, Some(SlotConfig::new(SlotBackend::Cuda { device: 0 }, a.slots.unwrap_or(2048))))
        }
        DeviceArg::CpuSlots => {
            (Device::Cpu, Some(SlotConfig::new(SlotBackend::Cpu, a.slots.unwrap_or(config.workers))))
        }
    };
    if let Some(mut sc) = slots {
        if a.slot_block == 0 || a.max_sentence_s.is_nan() || a.max_sentence_s <= 0.0 {
            bail!("--slot-block and --max-sentence-s must be positive");
        }
        sc.block = a.slot_block;
        sc.first_block = a.first_block;
        sc.max_sentence_s = a.max_sentence_s;
        if a.queue.is_none() {
            config.queue = 2 * sc.slots;
        }
        config.slots = Some(sc);
    }
    config.speaker = SpeakerOptions {
        device,
        precision: if a.int16 { Precision::Int16 } else { Precision::F32 },
        nonlinearity: if a.approx { Nonlinearity::Approximate } else { Nonlinearity::Exact },
        bf16: a.bf16,
        // A voice checked before by this build loads without its golden checks, as in `dv synth`.
        parity_cache: dv_speak::Parity::cache_dir(),
        ..SpeakerOptions::default()
    };
    config.header_timeout = seconds("header-timeout", a.header_timeout)?;
    config.body_timeout = seconds("body-timeout", a.body_timeout)?;
    config.stall_timeout = seconds("stall-timeout", a.stall_timeout)?;
    config.shutdown_grace = seconds("shutdown-grace", a.shutdown_grace)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        // On slots thousands of streams share the process: their HTTP gets up to 8 threads.
        .worker_threads(if config.slots.is_some() { cores().clamp(2, 8) } else { 2 })
        // On slots a blocking thread plans or runs the conditioning network for a moment, not a whole render.
        .max_blocking_threads(if config.slots.is_some() { 2 * cores() + 8 } else { config.workers + 8 })
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let addr = SocketAddr::new(a.host, a.port);
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
        let bound = listener.local_addr()?;
        println!("dv-serve: listening on http://{bound}");
        eprintln!(
            "dv-serve: {} {}, queue {}, voice {:?}, auth {}, device {}",
            config.slots.as_ref().map_or(config.workers, |s| s.slots),
            if config.slots.is_some() { "slot(s) per voice" } else { "worker(s)" },
            config.queue,
            config.default_voice,
            if config.api_key.is_some() { "on" } else { "off" },
            a.device
        );
        serve(listener, config, signal()).await?;
        eprintln!("dv-serve: stopped");
        anyhow::Ok(())
    })
}
