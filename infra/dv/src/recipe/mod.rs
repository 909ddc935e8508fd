//! `dv recipe`: a corpus to a voice package, stage by stage, content-addressed
//! and resumable (the ESPnet / icefall / DVC way).
//!
//! ```text
//! dv recipe run RECIPE.toml [--stage NAME] [--stop-stage NAME] [--dry-run] [--force] [--force-downstream]
//! dv recipe status RECIPE.toml          # the same as run --dry-run
//! dv recipe run RECIPE.toml --on slurm|kubernetes [--emit DIR]   # as cluster jobs ([`emit`])
//! ```
//!
//! # Stages
//!
//! `inspect → featurize → train-segmentation → align → train-duration → g2p →
//! train-wavenet → export → evaluate → report`, each called in-process through
//! the code paths of the `dv` verbs of the same names ([`stage::STAGES`]
//! names what each reads). Outputs go under the recipe's `out` directory:
//! `manifest.parquet` and `bad.tsv`, `features/`, `features-text/` (the
//! same with phones from the transcripts: `labels = "text"`, the default,
//! never reads the corpus's labels; CMUDict's pronunciations, and the
//! `[g2p] model`'s, default the shipped compact G2P, for words missing from
//! it, as `dv g2p` and `dv synth` pronounce them, the words it pronounced
//! named in the featurize log; only an utterance with nothing speakable is
//! left out), `corpus-cache/` (an object-store corpus, `s3://…` or any URL
//! dv-store opens, mirrored once: an object is fetched again only when its
//! size or ETag changed; [`corpus`]), `runs/<stage>/<key>/` (checkpoints,
//! metrics.jsonl), `aligned/` (with `quarantine.tsv`), `features-aligned/`
//! (phones and times from the aligner, quarantined utterances without: what
//! the duration/F0 model and the WaveNet train on), `g2p/`, `voice/`,
//! `evaluate/` (held-out duration/F0 error, pocketsphinx WER of held-out
//! recordings against the voice from text when python3 has pocketsphinx,
//! sample WAVs, loss and alignment PNGs), `report.md`,
//! `logs/<stage>.log` and `recipe.lock`.
//!
//! # When a stage runs
//!
//! A stage's key is the SHA-256 of three parts: its configuration (the
//! canonical JSON of its recipe section, with a training stage's run config
//! merged in), its inputs' content (the corpus tree's relative paths, sizes
//! and content hashes, or an object-store corpus's listing of names, sizes
//! and ETags, so an unchanged bucket is a no-op; featurize's also the G2P
//! model's digest; for every later stage the output digests that the
//! stages it reads recorded in the lock), and the code version (dv's version
//! and git revision). `out/recipe.lock` (JSON) holds, per finished stage,
//! the key, the three parts, the outputs and their digest, and the time it
//! finished; it is rewritten atomically after each stage. A stage is skipped
//! when its key is unchanged and its outputs exist. A stage's lock entry is
//! removed before it starts, so a stage killed midway reruns; a training
//! stage keeps its checkpoints under `runs/<stage>/<key>/` and resumes from
//! them, and featurize skips finished shards.
//!
//! `--stage`/`--stop-stage` select a range by name; `--force` reruns the
//! selected stages; `--force-downstream` also every stage after them.
//! `--dry-run` prints each stage and why it would run ("no lock entry",
//! "key changed: config", "outputs missing", "forced", "upstream runs") or
//! be skipped.
//!
//! # Not yet
//!
//! With `labels = "text"`
//! a corpus's own labels do not score the aligner. `features-text/` and
//! `features-aligned/` are full copies of the shards. A stage's log
//! holds the recipe's lines and the trainer's; what the in-process `dv
//! align`/`export`/`synth` paths print goes to the terminal only. Training
//! runs on one process (CPU ranks as threads, or one GPU), except as cluster
//! jobs (`--on`, [`emit`]), where a GPU stage trains one rank per GPU.

mod command;
mod config;
mod corpus;
mod emit;
mod kube;
mod listen;
mod lock;
mod relabel;
mod report;
mod run;
mod slurm;
mod stage;

pub(crate) use command::{run, RecipeCommand};
