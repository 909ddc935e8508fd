//! The stage graph: names, order, what each stage reads, and the decision
//! to run or skip one.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;

use super::lock::{key_of, Entry};

/// The stages in order, each with the stages whose outputs it reads.
pub(crate) const STAGES: [(&str, &[&str]); 10] = [
    ("inspect", &[]),
    ("featurize", &[]),
    ("train-segmentation", &["featurize"]),
    ("align", &["featurize", "train-segmentation"]),
    ("train-duration", &["featurize", "align"]),
    ("g2p", &[]),
    ("train-wavenet", &["featurize", "align"]),
    ("export", &["featurize", "align", "train-wavenet", "train-duration", "g2p"]),
    ("evaluate", &["featurize", "align", "train-segmentation", "train-duration", "train-wavenet", "export"]),
    ("report", &["inspect", "featurize", "align", "evaluate"]),
];

/// The index of stage `name`; an unknown name is an error listing them.
pub(crate) fn index_of(name: &str) -> anyhow::Result<usize> {
    match STAGES.iter().position(|(n, _)| *n == name) {
        Some(i) => Ok(i),
        None => {
            let names: Vec<&str> = STAGES.iter().map(|(n, _)| *n).collect();
            bail!("no stage {name:?}; the stages are {}", names.join(", "))
        }
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
