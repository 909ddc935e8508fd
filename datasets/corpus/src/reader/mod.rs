//! One reader per corpus layout, and layout detection.

mod arctic;
mod blizzard;
mod ljspeech;
mod table;
mod vctk;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::{Corpus, CorpusError};

/// The corpus layouts this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CorpusKind {
    LjSpeech,
    Arctic,
    Blizzard2013,
    Vctk,
    Table,
}

impl CorpusKind {
    pub const ALL: [CorpusKind; 5] =
        [CorpusKind::LjSpeech, CorpusKind::Arctic, CorpusKind::Blizzard2013, CorpusKind::Vctk, CorpusKind::Table];

    pub fn as_str(self) -> &'static str {
        match self {
            CorpusKind::LjSpeech => "ljspeech",
            CorpusKind::Arctic => "arctic",
            CorpusKind::Blizzard2013 => "blizzard2013",
            CorpusKind::Vctk => "vctk",
            CorpusKind::Table => "table",
        }
    }
}

impl fmt::Display for CorpusKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CorpusKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CorpusKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown corpus format {s:?} (one of ljspeech, arctic, blizzard2013, vctk, table)"))
    }
}

/// Resolves a `file://` URL or a plain path to a local path. Object-store
/// URLs are refused here with a clear error.
fn local_path(location: &str) -> Result<PathBuf, CorpusError> {
    if let Some(rest) = location.strip_prefix("file://") {
        return Ok(PathBuf::from(rest));
    }
    if let Some((scheme, _)) = location.split_once("://") {
        return Err(CorpusError::UnsupportedUrl {
            url: location.to_string(),
            reason: format!("{scheme}:// corpora are not read yet; copy the corpus to a local directory"),
        });
    }
    Ok(PathBuf::from(location))
}

/// Finds the layout of a corpus at `root` (a directory, or a `.tsv`/`.csv`
/// file), and the directory the reader should start from (Blizzard's
/// `train/segmented/` may lie below the given root).
pub fn detect(root: &Path) -> Result<(CorpusKind, PathBuf), CorpusError> {
    if !root.exists() {
        return Err(CorpusError::NotFound { path: root.to_path_buf() });
    }
    if root.is_file() {
        let ext = root.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        return match ext.as_str() {
            "tsv" | "csv" | "txt" => Ok((CorpusKind::Table, root.to_path_buf())),
            _ => Err(CorpusError::Unrecognized {
                path: root.to_path_buf(),
                looked_for: "a .tsv or .csv manifest file".into(),
            }),
        };
    }
    if root.join("metadata.csv").is_file() && root.join("wavs").is_dir() {
        return Ok((CorpusKind::LjSpeech, root.to_path_buf()));
    }
    if root.join("etc/txt.done.data").is_file() {
        return Ok((CorpusKind::Arctic, root.to_path_buf()));
    }
    for sub in ["", "segmented", "train/segmented"] {
        let dir = root.join(sub);
        if dir.join("prompts.gui").is_file() {
            return Ok((CorpusKind::Blizzard2013, dir));
        }
    }
    if root.join("txt").is_dir() && (root.join("wav48_silence_trimmed").is_dir() || root.join("wav48").is_dir()) {
        return Ok((CorpusKind::Vctk, root.to_path_buf()));
    }
    Err(CorpusError::Unrecognized {
        path: root.to_path_buf(),
        looked_for: "metadata.csv + wavs/ (LJSpeech), etc/txt.done.data (CMU ARCTIC), prompts.gui (Blizzard 2013), \
                     txt/ + wav48*/ (VCTK), or a .tsv/.csv file"
            .into(),
    })
}

/// Reads the corpus at `location` (a path or `file://` URL), detecting its
/// layout unless `kind` is given.
pub fn read(location: &str, kind: Option<CorpusKind>) -> Result<Corpus, CorpusError> {
    let root = local_path(location)?;
    let (kind, dir) = match kind {
        Some(k) => {
            if !root.exists() {
                return Err(CorpusError::NotFound { path: root });
            }
            let dir = match detect(&root) {
                Ok((found, dir)) if found == k => dir,
                _ => root.clone(),
            };
            (k, dir)
        }
        None => detect(&root)?,
    };
    let mut c = match kind {
        CorpusKind::LjSpeech => ljspeech::read(&dir)?,
        CorpusKind::Arctic => arctic::read(&dir)?,
        CorpusKind::Blizzard2013 => blizzard::read(&dir)?,
        CorpusKind::Vctk => vctk::read(&dir)?,
        CorpusKind::Table => table::read(&dir)?,
    };
    Ok(Corpus { kind, root: dir, utterances: std::mem::take(&mut c.utterances), bad: std::mem::take(&mut c.bad) })
}

/// Reads a whole index file, as bytes.
fn read_index(path: &Path, kind: &'static str) -> Result<Vec<u8>, CorpusError> {
    if !path.is_file() {
        return Err(CorpusError::WrongLayout { path: path.to_path_buf(), kind, reason: "index file missing".into() });
    }
    let mut bytes = std::fs::read(path).map_err(CorpusError::io(path))?;
    // A UTF-8 byte order mark (what some Windows editors write) is not part of the first id.
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    Ok(bytes)
}

/// The sorted entries of a directory (files or subdirectories).
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, CorpusError> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(CorpusError::io(dir))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort();
    Ok(v)
}
