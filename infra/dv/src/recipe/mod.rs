//! `dv recipe`: a corpus to a voice package, stage by stage, content-addressed
//! and resumable (the ESPnet / icefall / DVC way).
//!
//! ```text
//! dv recipe run RECIPE.toml [--stage NAME] [--stop-stage NAME] [--dry-run] [--force] [--force-downstream] [--gpus N|all]
//! dv recipe status RECIPE.toml          # the same as run --dry-run
//! dv recipe run RECIPE.toml --on slurm|kubernetes [--emit DIR]   # as cluster jobs ([`emit`])
//! ```
//!
//! # Stages
//!
//! `inspect → featurize → train-segmentation → align → train-duration → g2p →
//! train-wavenet → export → evaluate → report`, each called in-process through
//! the code paths of the `dv` verbs of the same names ([`stage::Stage`]
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
//! canonical JSON of its recipe section; a training stage's is its run
//! config, without its rank or GPU count: see below), its inputs' content (the corpus tree's relative paths, sizes
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
//! # Training on several ranks
//!
//! A training stage whose run config says `[train] device = "cuda"` trains
//! one rank per GPU, as `dv train --config RUN --gpus N` does and through
//! the same launcher (`crate::train::launch`: one `dv train` process per
//! GPU, gradients all-reduced with NCCL, the run config written to
//! `runs/<stage>/<key>/run.toml`): on the recipe's `gpus` (`"all"`, the
//! default: every GPU this process sees, `CUDA_VISIBLE_DEVICES` respected,
//! or a count), which `--gpus N|all` overrides. One GPU trains in this
//! process; none (under `"all"`) trains on the CPU. A CPU stage (`device =
//! "cpu"`) trains its `ranks` as processes, joined over TCP on the
//! loopback, as `dv train --procs N` does; `cuda:N`, or `cuda` with no GPU,
//! as threads of this process, as `dv train --ranks N` does.
//!
//! Batch and learning rate: `[train] batch` is the global batch, split
//! equally among the ranks, and the learning rate is the run config's
//! whatever the count, as in `dv train` (the `dv-train` crate docs: each
//! rank's loss is its sum over the global batch, the gradients are summed
//! over ranks), so a preset makes the same updates, up to float summation
//! order, on 1, 2 or 8 GPUs. A count must divide the batch; under `"all"` a
//! stage trains on the most visible GPUs that divide it. Neither the GPU
//! count nor `ranks` enters a stage's key: a recipe resumed on a machine
//! with another number of GPUs skips the stages that are done and resumes
//! a killed training stage from its checkpoints on the ranks it has now.
//! A rank that fails fails the stage, naming the rank (`rank 3 of 8
//! failed`); the others get the collective timeout to fail on their own,
//! then are killed, and a rerun resumes from the last checkpoint.
//!
//! # Not yet
//!
//! With `labels = "text"`
//! a corpus's own labels do not score the aligner. `features-text/` and
//! `features-aligned/` are full copies of the shards. A stage's log
//! holds the recipe's lines and the trainer's; what the in-process `dv
//! align`/`export`/`synth` paths print, and what the ranks of a stage on
//! several GPUs print, goes to the terminal only (their metrics are in the
//! run's `metrics.jsonl`). A CPU stage with `ranks = N` trains its ranks as
//! processes, as `dv train --procs N` does (the TCP collective on the
//! loopback, bit for bit the parameters of thread ranks). GPU ranks are on
//! this machine; several machines are the cluster jobs' (`--on`, [`emit`]).

mod command;
mod config;
mod corpus;
mod emit;
mod key;
mod kube;
mod listen;
mod lock;
mod new;
mod plan;
mod relabel;
mod report;
mod run;
mod slurm;
mod stage;
mod train;
mod yaml;

pub(crate) use command::{run, RecipeCommand};
