use std::path::PathBuf;

use dv_torch::tch;

/// Why [`super::align`] stopped. Utterances that cannot be aligned are not
/// errors (they are [`super::Failure`]s in the report).
#[derive(Debug, thiserror::Error)]
pub enum AlignmentError {
    /// `batch` is 0.
    #[error("--batch must be at least 1")]
    Batch,
    /// `trim_db` is negative or not finite.
    #[error("--trim-db {db}: expected a level in dB, 0 or more")]
    TrimDb { db: f64 },
    /// `device` is neither the CPU nor a CUDA device.
    #[error("--device {device:?}: not a CPU or CUDA device")]
    Device { device: tch::Device },
    /// `held_out` with a checkpoint whose run did not train on features:
    /// there is no held-out split to align.
    #[error("--held-out: {checkpoint} was not trained on features")]
    NotFeaturesRun { checkpoint: String },
    /// A plot asked for an utterance that is not among those to align.
    #[error("--plot {id}: no such utterance among the {utterances} to align")]
    NoSuchUtterance { id: String, utterances: usize },
    /// The checkpoint's model does not predict phoneme pairs.
    #[error(
        "{checkpoint}: the model has {classes} output classes; aligning needs a model trained on phoneme pairs ({})",
        crate::PAIR_CLASSES
    )]
    NotPairModel { checkpoint: String, classes: i64 },
    /// The features hold no utterance the loader can use (`skipped` says why).
    #[error("{features}: no utterance can be aligned ({skipped})")]
    NothingToAlign { features: String, skipped: String },
    /// Every utterance failed (id, reason).
    #[error("no utterance aligned: {failed:?}")]
    NoneAligned { failed: Vec<(String, String)> },
    /// The audio of a plotted utterance is missing from its shard.
    #[error("{}: utterance {id} has no audio", shard.display())]
    NoAudio { shard: PathBuf, id: String },
    /// A plotted utterance is in no shard.
    #[error("{features}: no utterance {id} in the shards")]
    NotInShards { features: String, id: String },
    /// A directory or file could not be read, opened or created.
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The featurize output's shards could not be listed.
    #[error(transparent)]
    Features(#[from] dv_featurize::FeaturizeError),
    /// A decoding thread panicked (`what`).
    #[error("{what} panicked")]
    Panicked { what: &'static str },
    /// The checkpoint, the features or the model's forward pass.
    #[error(transparent)]
    Train(#[from] crate::TrainError),
    /// The checkpoint's run config does not describe a segmentation model.
    #[error(transparent)]
    Config(#[from] dv_config::ConfigError),
    /// A libtorch operation on the model's output.
    #[error(transparent)]
    Torch(#[from] tch::TchError),
    /// A decoder, the boundary scoring, the quarantine or a TextGrid.
    #[error(transparent)]
    Align(#[from] dv_align::AlignError),
    /// Writing an output file.
    #[error(transparent)]
    Write(#[from] dv_util::WriteError),
    /// Building or reading a Parquet table.
    #[error(transparent)]
    Polars(#[from] polars::prelude::PolarsError),
    /// Writing `alignments.parquet`.
    #[error(transparent)]
    Manifest(#[from] dv_manifest::ManifestError),
    /// The spectrogram of a plot.
    #[error(transparent)]
    Audio(#[from] dv_audio::AudioError),
    /// Drawing a plot.
    #[error(transparent)]
    Plot(#[from] dv_plot::PlotError),
    /// Serializing the report.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl AlignmentError {
    pub(super) fn io(action: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> AlignmentError {
        let path = path.to_path_buf();
        move |source| AlignmentError::Io { action, path, source }
    }
}
