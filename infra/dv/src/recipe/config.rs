//! The recipe file (TOML): the corpus, the output directory and each
//! stage's settings. Relative paths are relative to the recipe file's
//! directory; a path that starts with `$DV_HOME/` is under `$DV_HOME`
//! (default `~/.cache/deepvoice-rs`); URLs (`s3://…`, `file://…`) are kept.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use dv_train::{DataConfig, RunConfig};
use serde::{Deserialize, Serialize};

/// One recipe file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Recipe {
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
    /// model from: fine-tuning. Their run configs get `[init] from` (dv-train's
    /// `InitConfig`); the model sizes must be the package's.
    #[serde(default)]
    pub init: Option<String>,
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
pub(crate) enum Labels {
    #[default]
    Text,
    Corpus,
}

/// `[featurize]`: as `dv featurize`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeaturizeStage {
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
pub(crate) struct TrainStage {
    /// The run config to start from (e.g. `trainers/train/configs/segmentation-embedded.toml`).
    pub config: String,
    /// Values merged into it, table by table: `set.train.steps = 40`.
    #[serde(default)]
    pub set: toml::Table,
    /// CPU data-parallel ranks (threads of this process).
    #[serde(default = "one")]
    pub ranks: usize,
}

fn one() -> usize {
    1
}

/// `[align]`: as `dv align`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AlignStage {
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
pub(crate) struct G2pStage {
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
pub(crate) struct ExportStage {
    /// Store the weights in half precision.
    #[serde(default)]
    pub half: bool,
}

/// `[evaluate]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvaluateStage {
    /// Sentences spoken from text by the exported voice into `evaluate/samples/`.
    #[serde(default = "sentences")]
    pub sentences: Vec<String>,
    /// Longest sample, seconds.
    #[serde(default = "ten")]
    pub max_seconds: f64,
    /// Held-out utterances (the WaveNet run's validation split) whose
    /// recordings and the voice's rendering of their transcripts
    /// pocketsphinx recognises, when python3 has it (0: none).
    #[serde(default = "ten_utterances")]
    pub wer_utterances: usize,
}

fn ten_utterances() -> usize {
    10
}

impl Default for EvaluateStage {
    fn default() -> Self {
        EvaluateStage { sentences: sentences(), max_seconds: ten(), wer_utterances: ten_utterances() }
    }
}

fn sentences() -> Vec<String> {
    vec!["The recipe trained this voice.".into(), "Deep Voice reads text and speaks it.".into()]
}
fn ten() -> f64 {
    10.0
}

/// A loaded recipe with the directory its relative paths start from.
pub(crate) struct Loaded {
    pub file: PathBuf,
    pub base: PathBuf,
    pub recipe: Recipe,
}

impl Loaded {
    /// Reads and checks `path`; errors name the file and the field.
    pub fn load(path: &Path) -> anyhow::Result<Loaded> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading recipe {}", path.display()))?;
        let recipe: Recipe = toml::from_str(&text).map_err(|e| anyhow::anyhow!("recipe {}: {e}", path.display()))?;
        if let Some(f) = &recipe.format {
            f.parse::<dv_corpus::CorpusKind>()
                .map_err(|e| anyhow::anyhow!("recipe {}: format: {e}", path.display()))?;
        }
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() { PathBuf::from(".") } else { base };
        Ok(Loaded { file: path.to_path_buf(), base, recipe })
    }

    /// A path or URL from the recipe, resolved (see the module docs).
    pub fn resolve(&self, p: &str) -> String {
        if p.contains("://") {
            return p.to_string();
        }
        for prefix in ["$DV_HOME/", "${DV_HOME}/"] {
            if let Some(rest) = p.strip_prefix(prefix) {
                return crate::dv_home().join(rest).display().to_string();
            }
        }
        let path = Path::new(p);
        if path.is_absolute() {
            p.to_string()
        } else {
            self.base.join(path).display().to_string()
        }
    }

    /// The `[g2p] model` resolved, `None` for `"none"`.
    pub fn g2p_model(&self) -> Option<String> {
        let m = self.recipe.g2p.model.as_str();
        (m != "none").then(|| self.resolve(m))
    }

    /// The output directory.
    pub fn out(&self) -> PathBuf {
        PathBuf::from(self.resolve(&self.recipe.out))
    }

    /// A training stage's run config as a TOML table: the file, `[init] from`
    /// the recipe's `init` (duration/F0 and WaveNet), then `set` merged in.
    pub fn train_table(&self, field: &str, t: &TrainStage) -> anyhow::Result<toml::Table> {
        let path = self.resolve(&t.config);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("recipe {}: {field}.config: reading {path}", self.file.display()))?;
        let mut table: toml::Table = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("recipe {}: {field}.config = {path}: {e}", self.file.display()))?;
        if let (Some(init), "train_duration" | "train_wavenet") = (&self.recipe.init, field) {
            let mut from = toml::Table::new();
            from.insert("from".into(), toml::Value::String(self.resolve(init)));
            table.insert("init".into(), toml::Value::Table(from));
        }
        merge(&mut table, &t.set);
        Ok(table)
    }

    /// The run config a training stage trains with: its table with the data,
    /// checkpoint and tracking paths under `out`.
    pub fn run_config(
        &self,
        field: &str,
        table: &toml::Table,
        run_dir: &Path,
        features: &Path,
    ) -> anyhow::Result<RunConfig> {
        let text = toml::to_string(table)?;
        let name = format!("recipe {}: {field}", self.file.display());
        let mut cfg = RunConfig::from_toml(&name, &text)?;
        let features = features.display().to_string();
        match &mut cfg.data {
            DataConfig::Features(d) => d.url = features,
            DataConfig::Chunks(d) => d.url = features,
            DataConfig::Prosody(d) => {
                d.url = features;
                d.alignments = None;
            }
            _ => bail!("{name}: [data] kind must read the featurized corpus (features, chunks or prosody)"),
        }
        cfg.checkpoint.url = run_dir.join("checkpoints").display().to_string();
        cfg.tracking.jsonl = Some(run_dir.join("metrics.jsonl").display().to_string());
        if let Some(init) = &cfg.init {
            check_init(&name, &init.from, &cfg)?;
        }
        Ok(cfg)
    }
}

/// Before anything runs: a local voice package to fine-tune from has the
/// model this stage trains, at this size (the trainer checks every tensor
/// again when it loads them).
fn check_init(name: &str, from: &str, cfg: &RunConfig) -> anyhow::Result<()> {
    let dir = Path::new(from);
    if from.contains("://") || !dir.is_dir() {
        return Ok(()); // a .safetensors file or a URL: checked when loaded
    }
    let file = dir.join("config.json");
    let text = std::fs::read_to_string(&file).with_context(|| format!("{name}: init: reading {}", file.display()))?;
    let voice: dv_voice::VoiceConfig = serde_json::from_str(&text)
        .with_context(|| format!("{name}: init: {} is not a voice config", file.display()))?;
    if let Ok(w) = cfg.wavenet_sizes(name) {
        let (theirs, ours) =
            (&voice.wavenet, (w.layers as usize, w.residual_channels as usize, w.skip_channels as usize));
        if (theirs.layers, theirs.residual_channels, theirs.skip_channels) != ours {
            bail!(
                "{name}: init = {from} holds a ({}, {}, {}) WaveNet, this stage trains a {ours:?} one: \
                 set [train_wavenet] set.model.preset to the voice's size",
                theirs.layers,
                theirs.residual_channels,
                theirs.skip_channels
            );
        }
    }
    if cfg.duration_sizes(name).is_ok() && voice.duration.is_none() {
        bail!("{name}: init = {from} has no duration/F0 model to start from");
    }
    Ok(())
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
