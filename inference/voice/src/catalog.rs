//! Finding voice packages by name: the search path, the default voice, and
//! the listing `dv voices` prints (the default first, demonstrations
//! marked: [`list_default_first`], [`is_demo`]).
//!
//! A voice is named by its directory: `--voice slt` finds the package
//! directory `slt` in the first folder of the search path that has one;
//! `--voice ./my/voice` (anything with a `/`, or an existing directory) is a
//! path. The search path, first match wins:
//!
//! 1. the folders in `DV_VOICES` (colon-separated), when set;
//! 2. `$DV_HOME/voices` (default `~/.cache/deepvoice-rs/voices`), where
//!    `dv export` puts the voices a user trains;
//! 3. `share/deepvoice-rs/voices` beside the binary's folder
//!    (`<prefix>/bin/dv` → `<prefix>/share/deepvoice-rs/voices`), the
//!    installed layout the container images use;
//! 4. the shipped voices of the source tree the binary was built from
//!    (`inference/voices`), given by the caller (a build-time path).
//!
//! The default voice, used when none is named, is `DV_VOICE` when set, else
//! [`SHIPPED_VOICE`]. Names are plain: letters, digits, `-`, `_` and `.`,
//! not starting with `.`, so a name never walks the file system
//! ([`valid_name`]; a server checks a request's voice with it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::VoiceConfig;
use crate::error::VoiceError;
use crate::package::{read_config, CONFIG_FILE};

/// The voice shipped in the repository (`inference/voices/slt`).
pub const SHIPPED_VOICE: &str = "slt";

/// A voice package found on the search path.
#[derive(Debug, Clone)]
pub struct VoiceEntry {
    /// The directory name, which `--voice` takes.
    pub name: String,
    pub dir: PathBuf,
    /// Its config, or why it could not be read (shared, so that the entry
    /// stays `Clone`).
    pub config: Result<VoiceConfig, Arc<VoiceError>>,
}

/// Whether `name` is a plain voice name (module docs).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The search path (module docs): `DV_VOICES`, `$DV_HOME/voices`, the
/// installed folder beside the running binary, then `shipped`.
pub fn search_path(shipped: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("DV_VOICES") {
        out.extend(std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()));
    }
    let home = std::env::var_os("DV_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/deepvoice-rs")));
    if let Some(h) = home {
        out.push(h.join("voices"));
    }
    if let Some(prefix) = std::env::current_exe().ok().and_then(|e| e.parent()?.parent().map(Path::to_path_buf)) {
        out.push(prefix.join("share/deepvoice-rs/voices"));
    }
    out.extend(shipped.map(Path::to_path_buf));
    out.dedup();
    out
}

/// The voice to use when none is named: `DV_VOICE`, else [`SHIPPED_VOICE`].
pub fn default_voice() -> String {
    std::env::var("DV_VOICE").ok().filter(|v| !v.is_empty()).unwrap_or_else(|| SHIPPED_VOICE.to_string())
}

/// The package directory `voice` names, as the command line takes it: a path
/// when it contains a `/`; else a name on `path` ([`resolve_name`]); else an
/// existing directory of that name (`--voice myvoice` in its parent).
pub fn resolve(voice: &str, path: &[PathBuf]) -> Result<PathBuf, VoiceError> {
    let p = Path::new(voice);
    if voice.contains('/') {
        return Ok(p.to_path_buf());
    }
    match resolve_name(voice, path) {
        Err(_) if p.join(CONFIG_FILE).is_file() => Ok(p.to_path_buf()),
        other => other,
    }
}

/// A voice as a server takes it (`dv-serve --voice`, `DV_VOICE`): a name on
/// the search path, or a package directory given as a path (it contains a
/// `/`, as `dv synth --voice` takes it). A directory is served under its own
/// name, the folder holding it going first on the search path: returns the
/// name and that folder. Errors name the directory that holds no package, or
/// a directory name that is not a voice name.
pub fn name_and_folder(voice: &str) -> Result<(String, Option<PathBuf>), VoiceError> {
    if !voice.contains('/') {
        return Ok((voice.to_string(), None));
    }
    let config = Path::new(voice).join(CONFIG_FILE);
    if !config.is_file() {
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no voice package here (dv export writes one)");
        return Err(VoiceError::Io { path: config, source });
    }
    let dir = Path::new(voice).canonicalize().map_err(|source| VoiceError::Io { path: voice.into(), source })?;
    let name = dir.file_name().and_then(|n| n.to_str()).filter(|n| valid_name(n));
    match (name, dir.parent()) {
        (Some(name), Some(folder)) => Ok((name.to_string(), Some(folder.to_path_buf()))),
        _ => Err(VoiceError::VoiceName { name: dir.display().to_string() }),
    }
}

/// The first `<folder>/<name>` on `path` that holds a `config.json`; `name`
/// must be a plain name ([`valid_name`]), never a path: what a server uses
/// for a request's voice.
pub fn resolve_name(name: &str, path: &[PathBuf]) -> Result<PathBuf, VoiceError> {
    if !valid_name(name) {
        return Err(VoiceError::VoiceName { name: name.to_string() });
    }
    path.iter().map(|d| d.join(name)).find(|d| d.join(CONFIG_FILE).is_file()).ok_or_else(|| VoiceError::VoiceNotFound {
        name: name.to_string(),
        searched: path.to_vec(),
        known: list(path).into_iter().map(|e| e.name).collect(),
    })
}

/// Whether the voice called `name` is a demonstration: a toy trained in
/// minutes on the CPU by `infra/run demo` (`demo-tiny-cpu`), not one to
/// judge the system by. The rule is the name: `demo-` and more. `dv voices`
/// marks these, and a server's voice list says so.
pub fn is_demo(name: &str) -> bool {
    name.starts_with("demo-") && name.len() > "demo-".len()
}

/// [`list`] with the voice called `default` first (when it is on `path`),
/// the others by name: the order `dv voices` and a server offer them in.
pub fn list_default_first(path: &[PathBuf], default: &str) -> Vec<VoiceEntry> {
    let mut out = list(path);
    if let Some(k) = out.iter().position(|e| e.name == default) {
        let d = out.remove(k);
        out.insert(0, d);
    }
    out
}

/// Every voice on `path`, by name (the first of each name wins), sorted.
pub fn list(path: &[PathBuf]) -> Vec<VoiceEntry> {
    let mut out: Vec<VoiceEntry> = Vec::new();
    for folder in path {
        let Ok(entries) = std::fs::read_dir(folder) else { continue };
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for dir in dirs {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
            if !valid_name(&name) || !dir.join(CONFIG_FILE).is_file() || out.iter().any(|e| e.name == name) {
                continue;
            }
            let config = read_config(&dir.join(CONFIG_FILE)).map_err(Arc::new);
            out.push(VoiceEntry { name, dir, config });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
