//! The recipe file (TOML): the corpus, the output directory and each
//! stage's settings. Relative paths are relative to the recipe file's
//! directory; a path that starts with `$DV_HOME/` is under `$DV_HOME`
//! (default `~/.cache/deepvoice-rs`); URLs (`s3://…`, `file://…`) are kept.
//! The file's keys and what is checked without reading anything else are
//! `dv-config`'s ([`dv_config::recipe`], fuzzed as `fuzz/`'s `recipe_file`);
//! this module reads the files it names.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use dv_config::recipe::{stage_run_config, stage_table};
pub(crate) use dv_config::recipe::{Gpus, Labels, Recipe, TrainStage};
use dv_train::RunConfig;

/// Whether `p`, a path in a recipe, is resolved from the recipe file's
/// folder: not a URL, not under `$DV_HOME`, not absolute.
pub fn relative_to_recipe(p: &str) -> bool {
    !(p.contains("://") || p.starts_with("$DV_HOME/") || p.starts_with("${DV_HOME}/") || Path::new(p).is_absolute())
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
        let recipe = Recipe::from_toml(&path.display().to_string(), &text)?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() { PathBuf::from(".") } else { base };
        Ok(Loaded { file: path.to_path_buf(), base, recipe })
    }

    /// A path or URL from the recipe, resolved (see the module docs).
    pub fn resolve(&self, p: &str) -> String {
        for prefix in ["$DV_HOME/", "${DV_HOME}/"] {
            if let Some(rest) = p.strip_prefix(prefix) {
                return crate::dv_home().join(rest).display().to_string();
            }
        }
        if relative_to_recipe(p) {
            self.base.join(p).display().to_string()
        } else {
            p.to_string()
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
        let text = std::fs::read_to_string(&path).with_context(|| {
            // A preset copied elsewhere keeps paths relative to where it was.
            let hint = if Path::new(&t.config).is_relative() {
                format!(" ({:?} is relative to the recipe file's folder, {})", t.config, self.base.display())
            } else {
                String::new()
            };
            format!("recipe {}: {field}.config: reading {path}{hint}", self.file.display())
        })?;
        let table: toml::Table = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("recipe {}: {field}.config = {path}: {e}", self.file.display()))?;
        Ok(stage_table(table, field, self.recipe.init.as_ref().map(|i| self.resolve(i)), t))
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
        let name = format!("recipe {}: {field}", self.file.display());
        let cfg = stage_run_config(&name, table, run_dir, features)?;
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
        let (theirs, ours) = (&voice.wavenet, (w.wavenet.layers, w.wavenet.residual_channels, w.wavenet.skip_channels));
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
