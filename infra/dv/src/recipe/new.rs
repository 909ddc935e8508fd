//! `dv recipe new`: a recipe file for a corpus of one's own, from a preset,
//! as ESPnet users copy a recipe directory and Piper users a training
//! command. The preset's text and comments are kept; `corpus`, `format` and
//! `out` are set (the embedded corpus's `make_default` dropped), and every
//! relative path the preset names (the run configs, the G2P model, `init`)
//! is made absolute, so that the new file works wherever it is written.
//! The file is checked as `dv recipe run` reads it before it is kept.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;

use super::config::Loaded;

#[derive(Args)]
pub(crate) struct NewArgs {
    /// The corpus: a directory of one of the layouts `dv corpus inspect` reads, a .tsv/.csv
    /// table, or an object-store URL.
    corpus: String,
    /// The preset: a name in infra/recipes/ (finetune: an hour of a new speaker from the shipped
    /// voice, on a GPU; ljspeech, vctk-p225, blizzard2013, embedded-gpu: from scratch; tiny-cpu:
    /// minutes on a CPU, a toy) or a recipe file.
    #[arg(long, default_value = "finetune")]
    preset: String,
    /// The corpus layout (ljspeech, arctic, blizzard2013, vctk, table); default: detected.
    #[arg(long)]
    format: Option<String>,
    /// Where the recipe's stages write; default: $DV_HOME/recipes/<the recipe file's name>.
    #[arg(long)]
    out: Option<String>,
    /// The recipe file to write; default: <the corpus's name>.toml here (the corpus folder's
    /// name, or the folder of a table file).
    #[arg(short = 'o', long = "recipe")]
    recipe: Option<PathBuf>,
    /// Replace the recipe file if it exists.
    #[arg(long)]
    force: bool,
}

/// The presets of the source tree this binary was built from.
fn presets_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes");
    dir.canonicalize().unwrap_or(dir)
}

/// The preset file `preset` names: a path, or a name in [`presets_dir`].
fn preset_file(preset: &str) -> anyhow::Result<PathBuf> {
    if preset.contains('/') || preset.ends_with(".toml") {
        return Ok(PathBuf::from(preset));
    }
    let file = presets_dir().join(format!("{preset}.toml"));
    if file.is_file() {
        return Ok(file);
    }
    let mut known: Vec<String> = std::fs::read_dir(presets_dir())
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".toml").map(str::to_string)).collect())
        .unwrap_or_default();
    known.sort();
    bail!("--preset {preset}: no such preset in {} (known: {})", presets_dir().display(), known.join(", "))
}

/// A relative path in a preset, absolute from `base`; `None` for what is not
/// a path relative to the preset's folder ([`super::config::relative_to_recipe`],
/// and `none`).
fn absolute(value: &str, base: &Path) -> Option<String> {
    (value != "none" && super::config::relative_to_recipe(value)).then(|| {
        let p = base.join(value);
        p.canonicalize().unwrap_or(p).display().to_string()
    })
}

/// A TOML basic string.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `text`, a preset, for `corpus` (with `format` when given) writing to
/// `out`, its relative paths made absolute from `base`.
pub(crate) fn rewrite(text: &str, base: &Path, corpus: &str, format: Option<&str>, out: &str) -> String {
    let mut top = vec![format!("corpus = {}", quoted(corpus))];
    if let Some(f) = format {
        top.push(format!("format = {}", quoted(f)));
    }
    top.push(format!("out = {}", quoted(out)));
    let mut lines: Vec<String> = Vec::new();
    let (mut in_table, mut placed) = (false, false);
    for line in text.lines() {
        let trimmed = line.trim_start();
        in_table |= trimmed.starts_with('[');
        let key = trimmed.split('=').next().unwrap_or("").trim();
        let is_assignment = trimmed.contains('=') && !trimmed.starts_with('#');
        if !in_table && is_assignment && ["corpus", "format", "out", "make_default"].contains(&key) {
            if !placed {
                lines.append(&mut top);
                placed = true;
            }
            continue;
        }
        if in_table && !placed {
            lines.append(&mut top);
            lines.push(String::new());
            placed = true;
        }
        let path_value = is_assignment && ["config", "model", "init"].contains(&key);
        let value = trimmed.split_once('=').map(|(_, v)| v.trim());
        match (path_value, value.and_then(|v| v.strip_prefix('"')?.split_once('"'))) {
            (true, Some((v, rest))) if absolute(v, base).is_some() => {
                let indent = &line[..line.len() - trimmed.len()];
                lines.push(format!("{indent}{key} = {}{rest}", quoted(&absolute(v, base).unwrap_or_default())));
            }
            _ => lines.push(line.to_string()),
        }
    }
    if !placed {
        lines.append(&mut top);
    }
    lines.join("\n") + "\n"
}

/// A name for the corpus at `corpus`: its folder's, or for a table file
/// (`…/my-voice/metadata.tsv`) the folder holding it.
fn corpus_name(corpus: &str) -> String {
    let p = Path::new(corpus.trim_end_matches('/'));
    let named = if p.extension().is_some() { p.parent().unwrap_or(p) } else { p };
    named.file_name().and_then(|n| n.to_str()).filter(|n| !n.is_empty()).unwrap_or("recipe").to_string()
}

pub(crate) fn new(a: NewArgs) -> anyhow::Result<()> {
    let preset = preset_file(&a.preset)?;
    let text = std::fs::read_to_string(&preset).with_context(|| format!("reading the preset {}", preset.display()))?;
    let base = preset.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let recipe = a.recipe.clone().unwrap_or_else(|| PathBuf::from(format!("{}.toml", corpus_name(&a.corpus))));
    if recipe.exists() && !a.force {
        bail!("{} exists: --force replaces it", recipe.display());
    }
    if let Some(f) = &a.format {
        f.parse::<dv_corpus::CorpusKind>().map_err(|e| anyhow::anyhow!("--format: {e}"))?;
    }
    // A local corpus is looked at now: a path or layout mistake is cheaper here than at the
    // recipe's first stage. An absolute path, since the recipe resolves from its own folder.
    let corpus = if a.corpus.contains("://") {
        a.corpus.clone()
    } else {
        let p = Path::new(&a.corpus);
        let p = p.canonicalize().with_context(|| format!("the corpus {}", p.display()))?;
        if a.format.is_none() {
            let (kind, _) = dv_corpus::detect(&p).with_context(|| format!("the corpus {}", p.display()))?;
            eprintln!("corpus {} (layout {kind}, detected)", p.display());
        }
        p.display().to_string()
    };
    let name = recipe.file_stem().and_then(|s| s.to_str()).unwrap_or("recipe");
    let out = match &a.out {
        None => format!("$DV_HOME/recipes/{name}"),
        // Relative to where the command runs, as the user meant it, not to the recipe's folder.
        Some(o) if super::config::relative_to_recipe(o) => std::path::absolute(o)?.display().to_string(),
        Some(o) => o.clone(),
    };
    let header = format!(
        "# Written by `dv recipe new` from the preset {} on {}, for the corpus {corpus}:\n\
         # the preset's settings and notes below, its relative paths made absolute.\n\n",
        preset.display(),
        crate::utc_now()
    );
    let written = header + &rewrite(&text, &base, &corpus, a.format.as_deref(), &out);
    // Checked under a name beside it (its relative paths resolve from the same folder), read
    // as `dv recipe run` reads it, each run config included; only then renamed over the target.
    let mut trial = recipe.as_os_str().to_owned();
    trial.push(".new");
    let trial = PathBuf::from(trial);
    crate::write_atomic(&trial, written.as_bytes())?;
    let check = Loaded::load(&trial).and_then(|l| {
        for (field, stage) in l.recipe.train_stages() {
            l.train_table(field, stage)?;
        }
        Ok(())
    });
    if let Err(e) = check {
        let _ = std::fs::remove_file(&trial);
        return Err(e.context(format!("the recipe written from {} does not load", preset.display())));
    }
    std::fs::rename(&trial, &recipe)
        .with_context(|| format!("renaming {} to {}", trial.display(), recipe.display()))?;
    println!("wrote {} (preset {}; out {out})", recipe.display(), preset.display());
    println!("next: dv recipe run {}   (dv recipe status {} says what would run)", recipe.display(), recipe.display());
    Ok(())
}
