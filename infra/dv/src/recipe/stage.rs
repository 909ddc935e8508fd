//! The stage graph: the stages in order, each one's name, what it reads and
//! its configuration; the context a stage runs in and its log; the decision
//! to run or skip one.
//!
//! What each stage's key is made of is [`super::key`]'s, and how each
//! stage runs is [`Stage::run`], in [`super::run`]: both read the graph,
//! which reads neither.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::Context;
use serde_json::json;

use super::config::{Gpus, Labels, Loaded, Recipe, TrainStage};
use super::lock::{key_of, Entry, Lock};

/// A stage of the recipe. Its name (`Display`, `FromStr`) is what
/// `recipe.lock`, the logs, `--stage` and the cluster jobs call it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    Inspect,
    Featurize,
    Train(Model),
    Align,
    G2p,
    Export,
    Evaluate,
    Report,
}

/// The models a training stage trains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Model {
    /// The segmentation model the aligner reads.
    Segmentation,
    /// The duration/F0 model.
    Duration,
    /// The WaveNet vocoder.
    Wavenet,
}

impl Stage {
    /// The stages in the order they run.
    pub const ALL: [Stage; 10] = [
        Stage::Inspect,
        Stage::Featurize,
        Stage::Train(Model::Segmentation),
        Stage::Align,
        Stage::Train(Model::Duration),
        Stage::G2p,
        Stage::Train(Model::Wavenet),
        Stage::Export,
        Stage::Evaluate,
        Stage::Report,
    ];

    /// The stage's name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Inspect => "inspect",
            Stage::Featurize => "featurize",
            Stage::Train(Model::Segmentation) => "train-segmentation",
            Stage::Align => "align",
            Stage::Train(Model::Duration) => "train-duration",
            Stage::G2p => "g2p",
            Stage::Train(Model::Wavenet) => "train-wavenet",
            Stage::Export => "export",
            Stage::Evaluate => "evaluate",
            Stage::Report => "report",
        }
    }

    /// Its place in [`Stage::ALL`].
    pub fn index(self) -> usize {
        Stage::ALL.iter().position(|s| *s == self).unwrap_or_default()
    }

    /// The stages whose outputs it reads. A WaveNet conditioned on
    /// predicted F0 reads the duration/F0 model too ([`predicts_f0`]).
    pub fn reads(self) -> &'static [Stage] {
        use Model::*;
        use Stage::*;
        match self {
            Inspect | Featurize | G2p => &[],
            Train(Segmentation) => &[Featurize],
            Align => &[Featurize, Train(Segmentation)],
            Train(Duration) | Train(Wavenet) => &[Featurize, Align],
            Export => &[Featurize, Align, Train(Wavenet), Train(Duration), G2p],
            Evaluate => &[Featurize, Align, Train(Segmentation), Train(Duration), Train(Wavenet), Export],
            Report => &[Inspect, Featurize, Align, Evaluate],
        }
    }

    /// Its configuration, the `config` part of its key: its recipe section
    /// (a training stage's run config as a table).
    pub fn config(self, loaded: &Loaded) -> anyhow::Result<serde_json::Value> {
        let r = &loaded.recipe;
        Ok(match self {
            Stage::Inspect => json!({ "corpus": r.corpus, "format": r.format }),
            Stage::Featurize => json!({ "corpus": r.corpus, "format": r.format, "featurize": r.featurize }),
            Stage::Train(m) => json!({ "run": m.table(loaded)? }),
            Stage::Align => json!(r.align),
            Stage::G2p => json!(loaded.g2p_model()),
            Stage::Export => json!(r.export),
            Stage::Evaluate => json!(r.evaluate),
            Stage::Report => json!({}),
        })
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Stage {
    type Err = anyhow::Error;

    /// A stage by name; an unknown name is an error listing them.
    fn from_str(name: &str) -> anyhow::Result<Stage> {
        match Stage::ALL.iter().find(|s| s.name() == name) {
            Some(s) => Ok(*s),
            None => {
                let names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
                anyhow::bail!("no stage {name:?}; the stages are {}", names.join(", "))
            }
        }
    }
}

impl Model {
    /// The models in the order their stages run.
    pub const ALL: [Model; 3] = [Model::Segmentation, Model::Duration, Model::Wavenet];

    /// Its section of the recipe file.
    pub fn field(self) -> &'static str {
        match self {
            Model::Segmentation => "train_segmentation",
            Model::Duration => "train_duration",
            Model::Wavenet => "train_wavenet",
        }
    }

    /// Its settings in the recipe.
    pub fn section(self, r: &Recipe) -> &TrainStage {
        match self {
            Model::Segmentation => &r.train_segmentation,
            Model::Duration => &r.train_duration,
            Model::Wavenet => &r.train_wavenet,
        }
    }

    /// Its run config as a TOML table ([`Loaded::train_table`]).
    pub fn table(self, loaded: &Loaded) -> anyhow::Result<toml::Table> {
        loaded.train_table(self.field(), self.section(&loaded.recipe))
    }
}

/// Whether a WaveNet stage's table asks for chunks conditioned on predicted
/// F0 (`[data] f0_predicted` > 0) without naming the duration/F0 checkpoint:
/// the recipe's own train-duration output is then an input of the stage.
pub(crate) fn predicts_f0(table: &toml::Table) -> bool {
    let data = table.get("data").and_then(|d| d.as_table());
    let share =
        data.and_then(|d| d.get("f0_predicted")).and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)));
    share.is_some_and(|p| p > 0.0) && data.is_some_and(|d| !d.contains_key("f0_predicted_from"))
}

/// The directory of a training stage's run: its checkpoints and metrics,
/// named by the stage's key so that a changed config starts afresh and a
/// killed run resumes.
pub(crate) fn run_dir(out: &Path, model: Model, key: &str) -> PathBuf {
    out.join("runs").join(Stage::Train(model).name()).join(&key[..12])
}

/// A stage's log: `out/logs/<stage>.log`, each line also on stderr.
pub(crate) struct StageLog {
    file: File,
}

impl StageLog {
    pub fn open(path: &Path) -> anyhow::Result<StageLog> {
        let file = File::options()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(StageLog { file })
    }

    pub fn line(&mut self, line: &str) {
        eprintln!("{line}");
        let _ = writeln!(self.file, "{} {line}", crate::utc_now());
    }
}

/// What one stage needs: the recipe, its output directory, the lock (for
/// the outputs of the stages before), the stage's key and the GPUs its
/// training may use (the recipe's `gpus`, or `--gpus`).
pub(crate) struct Ctx<'a> {
    pub loaded: &'a Loaded,
    pub out: PathBuf,
    pub lock: &'a Lock,
    pub key: &'a str,
    pub gpus: Gpus,
    /// The last stage this run goes to (`--stop-stage`).
    pub last: Stage,
}

impl Ctx<'_> {
    /// The first output of an earlier stage (a training stage's checkpoint).
    pub fn output(&self, stage: Stage) -> anyhow::Result<PathBuf> {
        let e = self.lock.stages.get(stage.name()).with_context(|| format!("stage {stage} has not run"))?;
        let first = e.outputs.first().with_context(|| format!("stage {stage} wrote nothing"))?;
        Ok(self.out.join(first))
    }

    pub fn features(&self) -> String {
        self.out.join("features").display().to_string()
    }

    /// The featurize output whose phones the segmentation model and the aligner read.
    pub fn phones(&self) -> PathBuf {
        match self.loaded.recipe.labels {
            Labels::Text => self.out.join("features-text"),
            Labels::Corpus => self.out.join("features"),
        }
    }

    /// The featurize output with the aligner's phones and times.
    pub fn aligned(&self) -> PathBuf {
        self.out.join("features-aligned")
    }

    /// The featurize output a training stage trains on: the phones for the
    /// segmentation model, the aligner's phones and times for the others.
    pub fn training_data(&self, model: Model) -> PathBuf {
        match model {
            Model::Segmentation => self.phones(),
            Model::Duration | Model::Wavenet => self.aligned(),
        }
    }

    pub fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.out).unwrap_or(p).display().to_string()
    }
}

/// Why a stage runs, or `None` when it is skipped.
pub(crate) fn why_run(
    out: &Path,
    old: Option<&Entry>,
    parts: &BTreeMap<String, String>,
    forced: bool,
) -> Option<String> {
    if forced {
        return Some("forced".into());
    }
    let Some(old) = old else { return Some("no lock entry".into()) };
    if old.key != key_of(parts) {
        let changed: Vec<&str> =
            parts.iter().filter(|(k, v)| old.parts.get(*k) != Some(v)).map(|(k, _)| k.as_str()).collect();
        return Some(format!("key changed: {}", changed.join(", ")));
    }
    let missing: Vec<&str> = old.outputs.iter().filter(|o| !out.join(o).exists()).map(String::as_str).collect();
    if !missing.is_empty() {
        return Some(format!("outputs missing: {}", missing.join(", ")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_lock_files_and_read_back() {
        let names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "inspect",
                "featurize",
                "train-segmentation",
                "align",
                "train-duration",
                "g2p",
                "train-wavenet",
                "export",
                "evaluate",
                "report"
            ]
        );
        for (i, s) in Stage::ALL.iter().enumerate() {
            assert_eq!(s.name().parse::<Stage>().unwrap(), *s);
            assert_eq!(s.to_string(), s.name());
            assert_eq!(s.index(), i);
        }
        let e = "train-tacotron".parse::<Stage>().unwrap_err().to_string();
        assert!(e.starts_with("no stage \"train-tacotron\"; the stages are inspect, featurize,"), "{e}");
    }

    #[test]
    fn a_stage_reads_only_stages_before_it() {
        for s in Stage::ALL {
            for r in s.reads() {
                assert!(r.index() < s.index(), "{s} reads {r}, which runs after it");
            }
        }
        assert_eq!(Stage::Train(Model::Wavenet).reads(), [Stage::Featurize, Stage::Align]);
    }
}
