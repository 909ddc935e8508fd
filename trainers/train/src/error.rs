use dv_config::ConfigError;
use dv_store::StoreError;
use dv_torch::tch;

/// Errors of a training run. Each names what the user can act on.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A stop was requested ([`crate::stop_flag`], SIGTERM): every rank
    /// stopped after `step` and a checkpoint of it was written; running the
    /// same config again resumes there.
    #[error("stopped on request after step {step}, with a checkpoint of it: run again to resume")]
    Stopped { step: u64 },
    /// The run configuration is unreadable or inconsistent.
    #[error("config {path}: {reason}")]
    Config { path: String, reason: String },
    /// A featurize output could not be read: no shards, an unreadable
    /// shard, a missing column. Bad single utterances are skipped instead.
    #[error("features {path}: {reason}")]
    Features { path: String, reason: String },
    /// A collective operation failed: a rank died, stalled or disagreed.
    #[error(transparent)]
    Collective(#[from] crate::CollectiveError),
    /// A checkpoint could not be written, or none could be read back.
    #[error("checkpoint {name}: {reason}")]
    Checkpoint { name: String, reason: String },
    /// Reading or writing the checkpoint location failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A libtorch operation failed (shapes, devices, out of memory).
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
    /// A fused CUDA kernel could not be loaded or launched, or it disagreed
    /// with its libtorch reference.
    #[error("fused WaveNet gate: {0}")]
    Kernel(#[from] dv_fused::FusedError),
    /// A fused kernel's output differs from its reference beyond tolerance.
    #[error("fused WaveNet gate differs from the reference: {0}")]
    KernelParity(String),
    /// A model was given inputs of the wrong shape.
    #[error("{what}: expected {expected}, got {got}")]
    Shape { what: &'static str, expected: String, got: String },
    /// The loss became NaN or infinite.
    #[error("step {step}: loss is {loss}")]
    NonFiniteLoss { step: u64, loss: f64 },
    /// The tracking server refused a request, or the metrics file failed.
    #[error("tracking: {0}")]
    Tracking(String),
    /// A rank's thread panicked.
    #[error("rank {rank} panicked: {message}")]
    Panicked { rank: usize, message: String },
    /// A file (a checkpoint to export) could not be read.
    #[error("reading {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] dv_util::WriteError),
    /// The voice package at `path` could not be read.
    #[error("reading {path}")]
    ReadVoice {
        path: String,
        #[source]
        source: dv_voice::VoiceError,
    },
    /// A voice package could not be built or written: a weight, a golden
    /// output or the config the format refuses (`dv_voice`'s checks).
    #[error(transparent)]
    Voice(#[from] dv_voice::VoiceError),
    /// The checkpoint `name` holds another model than the one asked for
    /// (`model`: "WaveNet", "duration/F0", "G2P").
    #[error("{name} is not a {model} checkpoint")]
    NotModel {
        name: String,
        model: &'static str,
        #[source]
        source: ConfigError,
    },
    /// A checkpoint, voice package, weight or featurize output (`name`) that
    /// [`crate::export`] cannot make a voice package of, and why.
    #[error("{name}: {reason}")]
    Export { name: String, reason: String },
    /// The featurize output a WaveNet run trained on, which export reads
    /// again, is unreadable or gone (give its new location).
    #[error("reading the features {url} (pass --features if they moved)")]
    ExportFeatures {
        url: String,
        #[source]
        source: Box<TrainError>,
    },
    /// A G2P checkpoint that the libtorch-free G2P (`dv_synth::G2p`) cannot
    /// load.
    #[error("{path}: the G2P model in the voice format")]
    G2pFormat {
        path: String,
        #[source]
        source: dv_synth::SynthError,
    },
}

impl From<ConfigError> for TrainError {
    fn from(e: ConfigError) -> TrainError {
        TrainError::Config { path: e.path, reason: e.reason }
    }
}
