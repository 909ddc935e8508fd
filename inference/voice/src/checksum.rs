//! `SHA256SUMS`: the SHA-256 of each file of a package, in `sha256sum`'s
//! format (`<64 hex digits>  <file name>` a line), so that
//! `sha256sum -c SHA256SUMS` checks a package by hand too. The writers
//! refresh it after every file they write; [`verify`] refuses a package
//! whose listed file differs or is gone. A package without the file (one
//! written before it existed) is read unchecked. [`verify`] also gives the
//! package's digest, which names its contents for caches of verdicts on
//! them (`dv-speak`'s golden-parity cache).
//!
//! Why: the golden outputs check what the models compute on a few inputs,
//! and a corrupt weight that those inputs do not reach passes them (a G2P
//! weight that moves no argmax, a conditioning weight of a zero input).

use std::fs;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::VoiceError;
use crate::package::{write_atomic, CONFIG_FILE, GOLDEN_FILE, MODEL_FILE};

/// The checksum file's name.
pub const CHECKSUM_FILE: &str = "SHA256SUMS";

fn sha256(path: &Path) -> Result<String, VoiceError> {
    let bytes = fs::read(path).map_err(|source| VoiceError::Io { path: path.to_path_buf(), source })?;
    Ok(hex(&Sha256::digest(&bytes)))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `dir/SHA256SUMS` for the package files present in `dir`.
pub(crate) fn write(dir: &Path) -> Result<(), VoiceError> {
    let mut text = String::new();
    for name in [CONFIG_FILE, MODEL_FILE, GOLDEN_FILE] {
        let path = dir.join(name);
        if path.exists() {
            text.push_str(&format!("{}  {name}\n", sha256(&path)?));
        }
    }
    write_atomic(&dir.join(CHECKSUM_FILE), text.as_bytes())
}

/// Digests every package file present in `dir` and checks them against
/// `dir/SHA256SUMS` when it exists: every file it lists must have its digest.
/// Returns the package's digest ([`crate::Voice::digest`]): the SHA-256 of
/// the `SHA256SUMS` lines of the files present, as [`write`] would write them,
/// so it changes with any byte of any of them.
pub(crate) fn verify(dir: &Path) -> Result<String, VoiceError> {
    let mut lines = String::new();
    let mut digests = Vec::new();
    for name in [CONFIG_FILE, MODEL_FILE, GOLDEN_FILE] {
        let path = dir.join(name);
        if path.exists() {
            let digest = sha256(&path)?;
            lines.push_str(&format!("{digest}  {name}\n"));
            digests.push((name, digest));
        }
    }
    let sums = dir.join(CHECKSUM_FILE);
    if sums.exists() {
        let text = fs::read_to_string(&sums).map_err(|source| VoiceError::Io { path: sums.clone(), source })?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let bad = || VoiceError::Config { path: sums.clone(), reason: format!("line {}: {line:?}", i + 1) };
            let (expected, name) = line.split_once("  ").ok_or_else(bad)?;
            if expected.len() != 64 || ![CONFIG_FILE, MODEL_FILE, GOLDEN_FILE].contains(&name) {
                return Err(bad());
            }
            let path = dir.join(name);
            let got = match digests.iter().find(|(n, _)| *n == name) {
                Some((_, d)) => d.clone(),
                // listed but gone: the read error names it
                None => sha256(&path)?,
            };
            if got != expected {
                return Err(VoiceError::Checksum { path, expected: expected.to_string(), got });
            }
        }
    }
    Ok(hex(&Sha256::digest(lines.as_bytes())))
}
