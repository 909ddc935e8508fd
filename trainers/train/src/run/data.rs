//! The datasets a run config names, and the lines rank 0 logs about them.

use dv_torch::tch::Device;

use super::config::{DataConfig, RunConfig};
use crate::data::chunks::Chunks;
use crate::data::dataset::{Dataset, Synthetic, SyntheticConfig};
use crate::data::features::{Features, FRAME_SECONDS};
use crate::data::pronunciation::Pronunciations;
use crate::data::prosody::Prosody;
use crate::TrainError;

/// The training set and the optional held-out set.
pub(super) type Datasets = (Box<dyn Dataset>, Option<Box<dyn Dataset>>);

/// The datasets of `cfg`, and lines for rank 0 to log about them.
pub(super) fn build_data(cfg: &RunConfig) -> Result<(Datasets, Vec<String>), TrainError> {
    match &cfg.data {
        DataConfig::Synthetic { data, validation_examples } => {
            let train = Box::new(Synthetic::new(data)?);
            let val: Option<Box<dyn Dataset>> = if *validation_examples > 0 {
                // Same classes and means, different examples: a held-out set.
                let v = SyntheticConfig { examples: *validation_examples, ..data.clone() };
                Some(Box::new(ValidationSlice { inner: Synthetic::new(&v)?, offset: data.examples }))
            } else {
                None
            };
            Ok(((train, val), Vec::new()))
        }
        DataConfig::Lexicon(c) => {
            let split = Pronunciations::load(c)?;
            let notes = vec![format!(
                "lexicon: {} training words, {} dev, {} test (held out), {} skipped for letters outside the grapheme set",
                split.train.len(),
                split.dev.len(),
                split.test.len(),
                split.skipped
            )];
            Ok((boxed(split.train, split.dev), notes))
        }
        DataConfig::Prosody(c) => {
            let k = cfg.duration_sizes("[model]")?.duration.f0_points;
            let split = Prosody::load(c, k)?;
            let notes = vec![format!(
                "prosody {}: {} training utterances, {} validation; {}",
                c.url,
                split.train.len(),
                split.validation.len(),
                split.skipped
            )];
            at_least_one_batch(cfg, &c.url, split.train.len(), "training utterances", "")?;
            Ok((boxed(split.train, split.validation), notes))
        }
        DataConfig::Chunks(c) => {
            let hop = cfg.wavenet_sizes("[model]")?.hop;
            let split = Chunks::load(c, hop)?;
            let notes = vec![format!(
                "chunks {}: {} shards, {} utterances, {} training chunks ({:.1} min of targets), {} validation; \
                 F0 normalization {:.1}-{:.1} Hz; {}",
                c.url,
                split.shards,
                split.utterances,
                split.train.len(),
                split.train.target_seconds() / 60.0,
                split.validation.len(),
                split.train.norm.min_hz,
                split.train.norm.max_hz,
                split.skipped
            )];
            at_least_one_batch(cfg, &c.url, split.train.len(), "training chunks", "")?;
            Ok((boxed(split.train, split.validation), notes))
        }
        DataConfig::Features(f) => {
            let split = Features::load(f)?;
            let mut notes = vec![format!(
                "features {}: {} shards, {} training utterances ({:.1} min), {} validation; {}",
                f.url,
                split.shards,
                split.train.len(),
                split.train.frames() as f64 * FRAME_SECONDS / 60.0,
                split.validation.len(),
                split.skipped
            )];
            if !split.complete {
                notes.push(format!(
                    "warning: {} has no manifest.json: featurize has not finished, training on the shards present",
                    f.url
                ));
            }
            let skipped = format!(" ({})", split.skipped);
            at_least_one_batch(cfg, &f.url, split.train.len(), "usable training utterances", &skipped)?;
            Ok((boxed(split.train, split.validation), notes))
        }
    }
}

/// Refuses a training set of fewer than one global batch: `"{url} has {len}
/// {what}, fewer than one batch of {batch}{why}: lower [train] batch, …"`.
fn at_least_one_batch(cfg: &RunConfig, url: &str, len: usize, what: &str, why: &str) -> Result<(), TrainError> {
    if len >= cfg.train.batch {
        return Ok(());
    }
    Err(TrainError::Config {
        path: "[data] url".into(),
        reason: format!(
            "{url} has {len} {what}, fewer than one batch of {}{why}: lower [train] batch, or bring more data",
            cfg.train.batch
        ),
    })
}

/// The training set, and the held-out set unless it is empty.
fn boxed(train: impl Dataset + 'static, validation: impl Dataset + 'static) -> Datasets {
    let val: Option<Box<dyn Dataset>> = if validation.is_empty() { None } else { Some(Box::new(validation)) };
    (Box::new(train), val)
}

/// Examples `offset..` of the same generator, never seen in training.
struct ValidationSlice {
    inner: Synthetic,
    offset: usize,
}

impl Dataset for ValidationSlice {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn batch(&self, indices: &[usize], device: Device) -> Result<crate::Batch, TrainError> {
        let shifted: Vec<usize> = indices.iter().map(|i| i + self.offset).collect();
        self.inner.batch(&shifted, device)
    }
}
