//! `dv featurize`: corpus → sharded Parquet features on a disk or object store.

use std::io::{IsTerminal, Write};

use clap::Args;
use dv_featurize::{run, Job, ShardSpec};

#[derive(Args)]
pub(crate) struct FeaturizeArgs {
    /// Corpus directory or .tsv/.csv manifest, or either as a file://, s3://, gs:// or az:// URL
    /// (object-store corpora are mirrored to $DV_HOME/staging first).
    #[arg(long)]
    corpus: String,
    /// Output directory or object-store URL (file://, s3://, gs://, az://).
    #[arg(long)]
    out: String,
    /// Run only shard i of N (0-based), for cluster job arrays.
    #[arg(long)]
    shard: Option<ShardSpec>,
    /// Total shards when running them all (default: one per 256 utterances).
    #[arg(long)]
    shards: Option<usize>,
    /// DSP threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Model sample rate, Hz.
    #[arg(long, default_value_t = 16_384)]
    sample_rate: u32,
}

pub(crate) fn run_cli(a: FeaturizeArgs) -> anyhow::Result<()> {
    let jobs = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let staging = Some(crate::dv_home().join("staging"));
    let job = Job {
        corpus: a.corpus,
        out: a.out,
        staging,
        shards: a.shards,
        only: a.shard,
        jobs,
        sample_rate: a.sample_rate,
    };
    let tty = std::io::stderr().is_terminal();
    let mut last = std::time::Instant::now();
    let report = run(&job, &mut |p| {
        let every = if tty { 0.5 } else { 10.0 };
        if p.utterances_done == p.utterances_total || last.elapsed().as_secs_f64() >= every {
            last = std::time::Instant::now();
            let rate = p.audio_seconds / p.elapsed.max(1e-9);
            let eta = p.elapsed / p.utterances_done.max(1) as f64 * (p.utterances_total - p.utterances_done) as f64;
            let msg = format!(
                "featurizing {}/{} utterances, {:.2} h of audio, {:.1} audio-s/s ({:.4} h/s), ETA {:.0} s",
                p.utterances_done,
                p.utterances_total,
                p.audio_seconds / 3600.0,
                rate,
                rate / 3600.0,
                eta
            );
            if tty {
                eprint!("\r{msg}");
                let _ = std::io::stderr().flush();
            } else {
                eprintln!("{msg}");
            }
        }
    })?;
    if tty {
        eprintln!();
    }
    if let Some(s) = &report.staged {
        println!(
            "staged         {} objects of {} in {}, {} fetched ({:.1} MB)",
            s.files,
            job.corpus,
            s.local.display(),
            s.fetched,
            s.bytes_fetched as f64 / 1e6
        );
    }
    println!("output         {}", job.out);
    println!(
        "shards         {} of {} written, {} already complete and skipped",
        report.shards_written, report.shards_total, report.shards_skipped
    );
    println!("utterances     {} featurized ({:.3} h of audio)", report.utterances, report.audio_seconds / 3600.0);
    println!("chunks         {} kept, {} dropped as silence", report.chunks, report.silent_chunks);
    let skipped: usize = report.skipped.values().sum();
    println!("skipped        {skipped}");
    for (reason, n) in &report.skipped {
        println!("  {reason:<20} {n}");
    }
    // What the corpus reader passed and featurizing found wrong, by name (the reader's own bad
    // items are dv corpus inspect's to list; both are in the shards' bad/ tables).
    for b in &report.dropped {
        println!("  dropped: {} [{}]: {}", b.item, b.reason, b.detail);
    }
    println!(
        "throughput     {:.1} audio-s/s on {} thread(s) ({:.1} s)",
        report.audio_seconds / report.elapsed.max(1e-9),
        job.jobs,
        report.elapsed
    );
    println!(
        "manifest       {}",
        if report.manifest_written { "manifest.json written (all shards complete)" } else { "not yet: shards missing" }
    );
    Ok(())
}
