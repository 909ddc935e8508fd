//! What a stage's key is made of: its configuration, its inputs' content
//! and the code version (the module docs of [`super`]).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use super::config::{Labels, Loaded};
use super::lock::{code_version, path_digest, sha256_hex, Lock};
use super::stage::{predicts_f0, Model, Stage};

/// The three parts of `stage`'s key: `config`, `inputs`, `code`. A
/// training stage's config is its run config alone: neither its CPU `ranks`
/// nor the GPU count enter it, since `[train] batch` is the global batch
/// split among the ranks (the same updates up to float summation order), so
/// a recipe resumed with another number of ranks or GPUs skips what is done
/// and resumes a killed run from its checkpoints.
pub(crate) fn parts_of(loaded: &Loaded, stage: Stage, lock: &Lock) -> anyhow::Result<BTreeMap<String, String>> {
    let config = stage.config(loaded)?;
    let mut parts = BTreeMap::new();
    parts.insert("config".to_string(), sha256_hex(serde_json::to_string(&config)?.as_bytes()));
    parts.insert("inputs".to_string(), inputs(loaded, stage, lock)?);
    parts.insert("code".to_string(), sha256_hex(code_version().as_bytes()));
    Ok(parts)
}

/// The digest of what `stage` reads: the corpus for inspect and featurize,
/// the G2P model for g2p, else the output digests of the stages it reads.
fn inputs(loaded: &Loaded, stage: Stage, lock: &Lock) -> anyhow::Result<String> {
    let r = &loaded.recipe;
    Ok(match stage {
        Stage::Inspect => super::corpus::digest(loaded)?,
        // Phones from the transcripts ask the G2P model for words missing
        // from CMUDict: a changed model reruns featurize (its finished
        // shards are kept) and every stage after it.
        Stage::Featurize => match (r.labels, loaded.g2p_model()) {
            (Labels::Text, Some(m)) => {
                let text =
                    format!("corpus\t{}\ng2p\t{}\n", super::corpus::digest(loaded)?, path_digest(Path::new(&m))?);
                sha256_hex(text.as_bytes())
            }
            _ => super::corpus::digest(loaded)?,
        },
        Stage::G2p => match loaded.g2p_model() {
            Some(m) => path_digest(Path::new(&m))?,
            None => "none".into(),
        },
        Stage::Train(_) | Stage::Align | Stage::Export | Stage::Evaluate | Stage::Report => {
            let mut s = String::new();
            // A fine-tuned model's starting weights are an input too (not for a stage with
            // `init = false`, which trains from scratch).
            if let (Some(init), Stage::Train(m @ (Model::Duration | Model::Wavenet))) = (&r.init, stage) {
                if m.section(r).init {
                    let from = loaded.resolve(init);
                    let digest =
                        if from.contains("://") { sha256_hex(from.as_bytes()) } else { path_digest(Path::new(&from))? };
                    s.push_str(&format!("init\t{digest}\n"));
                }
            }
            let mut reads = stage.reads().to_vec();
            // A WaveNet conditioned on predicted F0 reads the duration/F0 model too.
            if stage == Stage::Train(Model::Wavenet) && predicts_f0(&Model::Wavenet.table(loaded)?) {
                reads.push(Stage::Train(Model::Duration));
            }
            for d in reads {
                let e = lock.stages.get(d.name()).with_context(|| format!("stage {d} has not run"))?;
                s.push_str(&format!("{d}\t{}\n", e.output_digest));
            }
            sha256_hex(s.as_bytes())
        }
    })
}
