//! The recipe file of `dv recipe` (TOML): the corpus, the output directory and
//! each stage's settings, parsed and checked here without reading anything
//! else; `dv` resolves its paths (relative to the recipe file's directory, or
//! under `$DV_HOME/`; URLs kept), reads each training stage's run config and
//! hands it to [`stage_table`] and [`stage_run_config`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{ConfigError, DataConfig, RunConfig};

/// A recipe that does not parse, or names an unknown corpus format.
#[derive(Debug, thiserror::Error)]
#[error("recipe {path}: {reason}")]
pub struct RecipeError {
    pub path: String,
    pub reason: String,
}

/// A `gpus` value that is not a count of GPUs, or one this process cannot
/// train a stage on ([`Gpus`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpusError {
    #[error("gpus must be at least 1, or \"all\"")]
    Zero,
    #[error("gpus = {given:?}: expected \"all\" or a count")]
    NotACount { given: String },
    #[error("gpus = {gpus}, but this process sees {visible} GPU(s)")]
    NotVisible { gpus: usize, visible: usize },
    #[error("gpus = {gpus} does not divide the global [train] batch {batch} equally")]
    Indivisible { gpus: usize, batch: usize },
}

/// One recipe file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// The corpus: a directory, a .tsv/.csv manifest, or an object-store URL.
    pub corpus: String,
    /// Its layout when detection should be overridden: ljspeech, arctic,
    /// blizzard2013, vctk, table.
    #[serde(default)]
    pub format: Option<String>,
    /// Where the phones that the segmentation model learns and the aligner
    /// aligns come from: `text` (default: the transcripts through CMUDict;
    /// the corpus's own labels are ignored) or `corpus` (its phone labels,
    /// e.g. the embedded corpus's exact ones; then the held-out duration/F0
    /// error is measured against them).
    #[serde(default)]
    pub labels: Labels,
    /// When the corpus directory is missing, generate the embedded default
    /// corpus (festival + hts_engine slt, `dv corpus make-default`) of this
    /// many utterances there first.
    #[serde(default)]
    pub make_default: Option<usize>,
    /// Where every stage writes (created when missing).
    pub out: String,
    /// A voice package (or its URL) to start the WaveNet and the duration/F0
    /// model from: fine-tuning. Their run configs get `[init] from`
    /// ([`InitConfig`](crate::InitConfig)); the model sizes must be the package's,
    /// unless the stage says `init = false` (it then trains from scratch).
    #[serde(default)]
    pub init: Option<String>,
    /// The GPUs each training stage whose run config says `[train] device =
    /// "cuda"` trains on, one rank (a `dv train` process, gradients
    /// all-reduced with NCCL) per GPU: `"all"` (default: every GPU this
    /// process sees, `CUDA_VISIBLE_DEVICES` respected; none: the CPU, with the
    /// stage's `ranks`) or a count. `dv recipe run --gpus` overrides it. Not
    /// part of any stage's key: `[train] batch` is the global batch, split
    /// equally among the ranks, and the learning rate does not change, so a
    /// preset trains the same model (up to float summation order) on 1, 2 or
    /// 8 GPUs, and a recipe resumed on a machine with another GPU count skips
    /// what is done. With `"all"`, a batch that the GPUs do not divide trains
    /// on the most GPUs that divide it; a count must divide it.
    #[serde(default)]
    pub gpus: Gpus,
    #[serde(default)]
    pub featurize: FeaturizeStage,
    /// The segmentation model (§3.2), trained on the featurized phones.
    pub train_segmentation: TrainStage,
    #[serde(default)]
    pub align: AlignStage,
    /// The duration/F0 model (§3.3), trained on the aligner's phone times.
    pub train_duration: TrainStage,
    #[serde(default)]
    pub g2p: G2pStage,
    /// The WaveNet (App. A), trained on the featurized chunks.
    pub train_wavenet: TrainStage,
    #[serde(default)]
    pub export: ExportStage,
    #[serde(default)]
    pub evaluate: EvaluateStage,
}

/// Where the phones come from (see [`Recipe::labels`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Labels {
    #[default]
    Text,
    Corpus,
}

/// How many GPUs a GPU training stage trains on (see [`Recipe::gpus`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Gpus {
    /// Every GPU this process sees.
    #[default]
    All,
    /// This many, at least 1.
    Count(usize),
}

impl std::str::FromStr for Gpus {
    type Err = GpusError;

    /// `all` or a count of at least 1.
    fn from_str(s: &str) -> Result<Gpus, GpusError> {
        match s.trim() {
            "all" => Ok(Gpus::All),
            n => match n.parse::<usize>() {
                Ok(0) => Err(GpusError::Zero),
                Ok(n) => Ok(Gpus::Count(n)),
                Err(_) => Err(GpusError::NotACount { given: s.to_string() }),
            },
        }
    }
}

impl std::fmt::Display for Gpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gpus::All => f.write_str("all"),
            Gpus::Count(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for Gpus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Gpus::All => s.serialize_str("all"),
            Gpus::Count(n) => s.serialize_u64(*n as u64),
        }
    }
}

impl<'de> Deserialize<'de> for Gpus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Gpus, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Count(i64),
            Word(String),
        }
        match Repr::deserialize(d)? {
            Repr::Count(n) if n >= 1 => Ok(Gpus::Count(n as usize)),
            Repr::Count(n) => Err(serde::de::Error::custom(format!("gpus = {n}: at least 1, or \"all\""))),
            Repr::Word(w) => w.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Gpus {
    /// The ranks a GPU stage of global batch `batch` trains on when this
    /// process sees `visible` GPUs: 0 when it sees none and `self` is
    /// [`Gpus::All`] (the stage then trains on the CPU). `All` takes the
    /// most GPUs that divide `batch`; a count must divide it and be visible.
    pub fn ranks(self, visible: usize, batch: usize) -> Result<usize, GpusError> {
        match self {
            Gpus::All => Ok((1..=visible).rev().find(|n| batch.is_multiple_of(*n)).unwrap_or(0)),
            Gpus::Count(n) if n > visible => Err(GpusError::NotVisible { gpus: n, visible }),
            Gpus::Count(n) if !batch.is_multiple_of(n) => {
                Err(GpusError::Indivisible { gpus: n, batch })
            }
            Gpus::Count(n) => Ok(n),
        }
    }
}

/// `[featurize]`: as `dv featurize`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeaturizeStage {
    /// Model sample rate, Hz (default 16,384).
    #[serde(default = "rate")]
    pub sample_rate: u32,
    /// Shards (default: one per 256 utterances).
    #[serde(default)]
    pub shards: Option<usize>,
    /// DSP threads (default: all cores). Not part of the stage's key.
    #[serde(default, skip_serializing)]
    pub jobs: Option<usize>,
}

impl Default for FeaturizeStage {
    fn default() -> Self {
        FeaturizeStage { sample_rate: rate(), shards: None, jobs: None }
    }
}

fn rate() -> u32 {
    16_384
}

/// A training stage: a `dv train` run config, with values changed by `set`.
/// The recipe replaces the config's `[data] url` (and drops `alignments`:
/// the duration/F0 model and the WaveNet read `features-aligned/`, whose
/// shards carry the aligner's phones and times),
/// `[checkpoint] url` and `[tracking] jsonl` with paths under `out`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainStage {
    /// The run config to start from (e.g. `trainers/train/configs/segmentation-embedded.toml`).
    pub config: String,
    /// Values merged into it, table by table: `set.train.steps = 40`.
    #[serde(default)]
    pub set: toml::Table,
    /// CPU data-parallel ranks, when the stage trains on the CPU: with its
    /// run config's `device = "cpu"`, one process each (as `dv train --procs`
    /// starts them, joined over TCP on the loopback); with `"cuda"` on a
    /// machine with no GPU, threads of the recipe's process. A GPU
    /// stage trains one rank per GPU instead ([`Recipe::gpus`]). Not part of
    /// the stage's key: `[train] batch` is global, split among the ranks.
    #[serde(default = "one")]
    pub ranks: usize,
    /// Whether the stage starts from the recipe's `init` (the duration/F0
    /// model and the WaveNet; default true). False trains it from scratch,
    /// as for a model of other sizes than the package's (a bidirectional
    /// duration/F0 model from a voice with a unidirectional one).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub init: bool,
}

fn one() -> usize {
    1
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// `[align]`: as `dv align`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlignStage {
    /// `cpu`, `cuda` or `cuda:N`.
    #[serde(default = "cpu")]
    pub device: String,
    /// Utterances per forward pass.
    #[serde(default = "sixteen")]
    pub batch: usize,
    /// Quarantine below median − k × 1.4826 × MAD (default: dv align's).
    #[serde(default)]
    pub quarantine_k: Option<f64>,
    /// Utterances whose spectrogram and boundaries are drawn (default: the first featurized one).
    #[serde(default)]
    pub plot: Vec<String>,
}

impl Default for AlignStage {
    fn default() -> Self {
        AlignStage { device: cpu(), batch: sixteen(), quarantine_k: None, plot: Vec::new() }
    }
}

fn cpu() -> String {
    "cpu".into()
}
fn sixteen() -> usize {
    16
}

/// `[g2p]`: the grapheme-to-phoneme model that pronounces the transcripts'
/// words missing from CMUDict (phones from text, in featurize) and that the
/// voice carries for words missing from its lexicon.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct G2pStage {
    /// A G2P checkpoint of `dv train` (default: the shipped
    /// `trainers/train/models/g2p-compact.safetensors`); `"none"`: no model,
    /// so an utterance with a word missing from CMUDict is left out and the
    /// voice speaks lexicon words only.
    #[serde(default = "shipped_g2p")]
    pub model: String,
}

impl Default for G2pStage {
    fn default() -> Self {
        G2pStage { model: shipped_g2p() }
    }
}

/// The shipped compact G2P model, in the source tree dv was built from.
fn shipped_g2p() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../trainers/train/models/g2p-compact.safetensors")
        .display()
        .to_string()
}

/// `[export]`: as `dv export`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportStage {
    /// Store the weights in half precision.
    #[serde(default)]
    pub half: bool,
}

/// `[evaluate]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluateStage {
    /// Sentences spoken from text by the exported voice into `evaluate/samples/`.
    #[serde(default = "sentences")]
    pub sentences: Vec<String>,
    /// Longest sample, seconds.
    #[serde(default = "ten")]
    pub max_seconds: f64,
    /// Held-out utterances (the WaveNet run's validation split) whose
    /// recordings, and the voice speaking their transcripts, are judged by
    /// ear (whisper, pocketsphinx and DNSMOS, each when python3 has its
    /// package; `listen.py`); 0: none.
    #[serde(default = "forty")]
    pub wer_utterances: usize,
    /// How many of the built-in novel sentences (`novel.txt`: 60 written for
    /// the project's records, held by no corpus) the voice speaks to be
    /// judged the same way; 0: none.
    #[serde(default = "sixty")]
    pub novel_sentences: usize,
}

fn forty() -> usize {
    40
}

fn sixty() -> usize {
    60
}

impl Default for EvaluateStage {
    fn default() -> Self {
        EvaluateStage { sentences: sentences(), max_seconds: ten(), wer_utterances: forty(), novel_sentences: sixty() }
    }
}

fn sentences() -> Vec<String> {
    vec!["The recipe trained this voice.".into(), "Deep Voice reads text and speaks it.".into()]
}
fn ten() -> f64 {
    10.0
}

impl Recipe {
    /// Parses and checks a recipe's text; `path` names it in errors.
    pub fn from_toml(path: &str, text: &str) -> Result<Recipe, RecipeError> {
        let bad = |reason: String| RecipeError { path: path.into(), reason };
        let recipe: Recipe = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if let Some(f) = &recipe.format {
            f.parse::<dv_corpus::CorpusKind>().map_err(|e| bad(format!("format: {e}")))?;
        }
        Ok(recipe)
    }

    /// The three training stages by field name, in the order they run.
    pub fn train_stages(&self) -> [(&'static str, &TrainStage); 3] {
        [
            ("train_segmentation", &self.train_segmentation),
            ("train_duration", &self.train_duration),
            ("train_wavenet", &self.train_wavenet),
        ]
    }
}

/// A training stage's run config as a TOML table: `base` (its `config`
/// file, parsed), `[init] from` = `init` (the recipe's `init`, resolved) for
/// the duration/F0 model and the WaveNet unless the stage says `init =
/// false`, then the stage's `set` merged in.
pub fn stage_table(mut base: toml::Table, field: &str, init: Option<String>, t: &TrainStage) -> toml::Table {
    if let (Some(init), "train_duration" | "train_wavenet", true) = (init, field, t.init) {
        let mut from = toml::Table::new();
        from.insert("from".into(), toml::Value::String(init));
        base.insert("init".into(), toml::Value::Table(from));
    }
    merge(&mut base, &t.set);
    base
}

/// The run config a training stage trains with: its table, validated as
/// `dv train` validates a config, reading the featurize output `features`,
/// with its checkpoints and metrics under `run_dir`. `name` names the stage
/// in errors.
pub fn stage_run_config(
    name: &str,
    table: &toml::Table,
    run_dir: &Path,
    features: &Path,
) -> Result<RunConfig, ConfigError> {
    let text = toml::to_string(table).map_err(|e| ConfigError { path: name.into(), reason: e.to_string() })?;
    let mut cfg = RunConfig::from_toml(name, &text)?;
    let features = features.display().to_string();
    match &mut cfg.data {
        DataConfig::Features(d) => d.url = features,
        DataConfig::Chunks(d) => d.url = features,
        DataConfig::Prosody(d) => {
            d.url = features;
            d.alignments = None;
        }
        _ => {
            return Err(ConfigError {
                path: name.into(),
                reason: "[data] kind must read the featurized corpus (features, chunks or prosody)".into(),
            })
        }
    }
    cfg.checkpoint.url = run_dir.join("checkpoints").display().to_string();
    cfg.tracking.jsonl = Some(run_dir.join("metrics.jsonl").display().to_string());
    Ok(cfg)
}

/// Merges `over` into `base`, table by table; other values replace.
fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Gpus;

    #[test]
    fn gpus_parse_and_pick_ranks_that_divide_the_global_batch() {
        let gpus = |t: &str| toml::from_str::<super::Recipe>(&format!("{t}\n{MIN}")).map(|r| r.gpus);
        assert_eq!(gpus("").unwrap(), Gpus::All);
        assert_eq!(gpus("gpus = \"all\"").unwrap(), Gpus::All);
        assert_eq!(gpus("gpus = 4").unwrap(), Gpus::Count(4));
        for bad in ["gpus = 0", "gpus = -1", "gpus = \"some\""] {
            assert!(gpus(bad).is_err(), "{bad}");
        }
        // "all": every visible GPU, else the most that divide the batch; none: the CPU (0).
        assert_eq!(Gpus::All.ranks(8, 16), Ok(8));
        assert_eq!(Gpus::All.ranks(3, 16), Ok(2));
        assert_eq!(Gpus::All.ranks(0, 16), Ok(0));
        assert_eq!(Gpus::Count(2).ranks(8, 16), Ok(2));
        assert!(Gpus::Count(3).ranks(8, 16).unwrap_err().to_string().contains("does not divide"));
        assert!(Gpus::Count(2).ranks(1, 16).unwrap_err().to_string().contains("sees 1 GPU(s)"));
    }

    const MIN: &str = r#"
corpus = "c"
out = "o"
[train_segmentation]
config = "s.toml"
[train_duration]
config = "d.toml"
[train_wavenet]
config = "w.toml"
"#;
}
