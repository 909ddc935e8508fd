//! `dv evaluate`: held-out accuracy of a trained model in the paper's terms.
//! Duration/F0 (§3.3): mean absolute duration error per phoneme (ms), mean
//! absolute F0 error over the points the reference has voiced (Hz), and
//! voicing accuracy, on the validation utterances of the run's split. G2P
//! (§3.1): phoneme and word error rates with beam search on the test words
//! of the run's hash split.

use std::path::PathBuf;

use clap::Args;
use dv_train::checkpoint::{open, Opened};
use dv_train::{DataConfig, Prosody, RunConfig};

use crate::device::DeviceArg;

#[derive(Args, Debug)]
pub struct EvaluateArgs {
    /// A duration/F0 checkpoint written by `dv train`.
    #[arg(long)]
    checkpoint: PathBuf,
    /// The featurize output (default: the run config's `[data] url`).
    #[arg(long)]
    features: Option<String>,
    /// Evaluate the training utterances instead of the held-out ones.
    #[arg(long)]
    train_split: bool,
    /// G2P: decode the dev words instead of the test words (to choose a checkpoint without
    /// looking at the test split).
    #[arg(long, conflicts_with = "train_split")]
    dev: bool,
    /// G2P: beam width (default: the model's, 5).
    #[arg(long)]
    beam: Option<usize>,
    /// G2P: decode at most this many test words.
    #[arg(long, default_value_t = usize::MAX)]
    limit: usize,
    /// G2P: more checkpoints decoded with `--checkpoint` as an ensemble (each step's
    /// log-probabilities averaged over the models); all must be G2P runs on the same lexicon
    /// split. Repeat the flag for each.
    #[arg(long = "with", value_name = "CHECKPOINT")]
    with: Vec<PathBuf>,
    /// G2P: write every word decoded wrongly here, one per line (TSV: word, reference,
    /// hypothesis, edits, edits with stress ignored), worst first.
    #[arg(long)]
    errors: Option<PathBuf>,
    /// G2P: right-to-left checkpoints (`[data] reverse = true`, the same split)
    /// that rescore each word's n-best list: the hypothesis with the highest
    /// left-to-right score plus `--rescore-weight` times their mean score of it
    /// reversed wins. Repeat the flag for each.
    #[arg(long = "rescore-with", value_name = "CHECKPOINT")]
    rescore_with: Vec<PathBuf>,
    /// G2P: the weight of the right-to-left score; several, comma-separated
    /// (`0,0.25,0.5,1`), decode and score the n-best lists once and report
    /// each weight (0 is the left-to-right ensemble alone; `--errors` lists
    /// the first weight's errors).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    rescore_weight: Vec<f64>,
    /// G2P: where to decode (`cpu`, `cuda`, `cuda:N`).
    #[arg(long, default_value = "cpu")]
    device: DeviceArg,
}

/// PER and WER of a G2P checkpoint (or of an ensemble with `--with`) on the test split of its
/// run's lexicon.
fn run_g2p(a: &EvaluateArgs, name: &str, cfg: &RunConfig, ck: &dv_train::CheckpointData) -> anyhow::Result<()> {
    let DataConfig::Lexicon(data) = cfg.data.clone() else { anyhow::bail!("{name}: not a G2P run") };
    let device = a.device.into();
    let load = |name: &str, cfg: &RunConfig, ck: &dv_train::CheckpointData| -> anyhow::Result<dv_train::G2p> {
        let model = dv_train::G2p::new(&cfg.g2p_sizes(name)?, device)?;
        dv_train::checkpoint::load_model_weights(name, ck, &model)?;
        Ok(model)
    };
    let mut models = vec![load(name, cfg, ck)?];
    for path in &a.with {
        let Opened { name: other, data: ck, config: cfg } = open(path)?;
        match &cfg.data {
            DataConfig::Lexicon(d) if *d == data => {}
            _ => anyhow::bail!("{other}: not a G2P run on {name}'s lexicon split (its [data] differs)"),
        }
        models.push(load(&other, &cfg, &ck)?);
    }
    let mut r2l = Vec::with_capacity(a.rescore_with.len());
    for path in &a.rescore_with {
        let Opened { name: other, data: ck, config: cfg } = open(path)?;
        match &cfg.data {
            DataConfig::Lexicon(d) if d.reverse && dv_train::LexiconConfig { reverse: false, ..d.clone() } == data => {}
            _ => anyhow::bail!("{other}: not a right-to-left G2P run on {name}'s lexicon split ([data] reverse = true, the rest equal)"),
        }
        r2l.push(load(&other, &cfg, &ck)?);
    }
    let split = dv_train::Pronunciations::load(&data)?;
    let (set, what) = match (a.train_split, a.dev) {
        (true, _) => (&split.train, "training"),
        (_, true) => (&split.dev, "held-out dev"),
        _ => (&split.test, "held-out test"),
    };
    let width = a.beam.unwrap_or(models[0].config.g2p.beam);
    let t0 = std::time::Instant::now();
    let refs: Vec<&dv_train::G2p> = models.iter().collect();
    let r2l_refs: Vec<&dv_train::G2p> = r2l.iter().collect();
    let rescore = (!r2l_refs.is_empty()).then_some((&r2l_refs[..], &a.rescore_weight[..]));
    // Progress on stderr every 10 % (an ensemble of paper-size models takes minutes).
    let decoded = dv_train::pronunciation::decode_with_progress(&refs, set, width, a.limit, rescore, |done, n| {
        if n >= 1000 && done % (n / 10) == 0 && done < n {
            eprintln!("decoded {done} of {n} words ({:.0} s)", t0.elapsed().as_secs_f64());
        }
    })?;
    if let Some(path) = &a.errors {
        let n = write_errors(path, set, &decoded[0])?;
        eprintln!("{n} words decoded wrongly → {}", path.display());
    }
    let seconds = t0.elapsed().as_secs_f64();
    for (way, decoded) in decoded.iter().enumerate() {
        let m = dv_train::pronunciation::score(decoded, set, width);
        let mut ensemble = if models.len() > 1 { format!(", ensemble of {}", models.len()) } else { String::new() };
        if !r2l.is_empty() {
            ensemble += &format!(", rescored by {} right-to-left (weight {})", r2l.len(), a.rescore_weight[way]);
        }
        println!(
            "{} {} words at step {}{ensemble}, beam {width}: PER {:.2}%, WER {:.2}% ({seconds:.1} s); stress ignored: PER {:.2}%, WER {:.2}%",
            m.words,
            what,
            ck.state.step,
            100.0 * m.per,
            100.0 * m.wer,
            100.0 * m.per_no_stress,
            100.0 * m.wer_no_stress
        );
        println!("{}", serde_json::to_string(&m)?);
    }
    Ok(())
}

/// The wrongly decoded words as TSV (`--errors`), most edits first, then by word; returns how
/// many. Written beside and renamed, so a crash leaves no half-written file.
fn write_errors(
    path: &std::path::Path,
    set: &dv_train::Pronunciations,
    decoded: &[dv_train::pronunciation::Decoded],
) -> anyhow::Result<usize> {
    use dv_train::pronunciation::{edit_distance, phonemes};
    let text = |tokens: &[i64]| {
        tokens
            .iter()
            .map(|&k| {
                let (p, s) = dv_train::g2p::untoken(k);
                dv_speak::stressed(p, s).map_or_else(|| format!("?{k}"), |x| x.to_string())
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut rows: Vec<(usize, usize, &str, String, String)> = decoded
        .iter()
        .zip(&set.tokens)
        .zip(&set.words)
        .filter_map(|(((hyp, _), reference), word)| {
            let e = edit_distance(hyp, reference);
            (e > 0).then(|| {
                let e_ns = edit_distance(&phonemes(hyp), &phonemes(reference));
                (e, e_ns, word.as_str(), text(reference), text(hyp))
            })
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(b.2)));
    let mut out = String::from("word\treference\thypothesis\tedits\tedits_no_stress\n");
    for (e, e_ns, w, r, h) in &rows {
        out.push_str(&format!("{w}\t{r}\t{h}\t{e}\t{e_ns}\n"));
    }
    crate::write_atomic(path, out.as_bytes())?;
    Ok(rows.len())
}

pub(crate) fn run(a: EvaluateArgs) -> anyhow::Result<()> {
    let Opened { name, data: ck, config: cfg } = open(&a.checkpoint)?;
    if matches!(cfg.data, DataConfig::Lexicon(_)) {
        return run_g2p(&a, &name, &cfg, &ck);
    }
    if !a.with.is_empty() || a.errors.is_some() || !a.rescore_with.is_empty() {
        anyhow::bail!("{name}: --with, --rescore-with and --errors are for G2P checkpoints");
    }
    if a.dev {
        anyhow::bail!(
            "{name}: --dev is for G2P checkpoints (a duration/F0 run's held-out set is its validation split)"
        );
    }
    let DataConfig::Prosody(mut data) = cfg.data.clone() else {
        anyhow::bail!("{name}: not a duration/F0 run ([data] kind = \"prosody\")");
    };
    if let Some(f) = a.features {
        data.url = f;
    }
    // Scored against the corpus's labels, also where the run trained on aligner times.
    data.alignments = None;
    let (model, step) = dv_train::export::load_duration(&a.checkpoint)?;
    let split = Prosody::load(&data, model.config.duration.f0_points)?;
    let set = if a.train_split { &split.train } else { &split.validation };
    let m = dv_train::prosody::evaluate(&model, set)?;
    println!(
        "{} utterances ({} phonemes, {} split) at step {step}: duration MAE {:.1} ms, F0 MAE {:.1} Hz (voiced reference points), voicing accuracy {:.1}%",
        m.utterances,
        m.phonemes,
        if a.train_split { "training" } else { "held-out" },
        m.duration_mae_ms,
        m.f0_mae_hz,
        100.0 * m.voicing_accuracy
    );
    println!("{}", serde_json::to_string(&m)?);
    Ok(())
}
