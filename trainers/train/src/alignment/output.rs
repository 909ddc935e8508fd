//! What an alignment run writes besides the TextGrids: `quarantine.tsv`,
//! `alignments.parquet` ([`ALIGNMENTS`], its columns named in
//! [`column`](mod@column)) and `report.json` ([`AlignReport`]; and
//! [`AlignReport::summary`], the lines `dv align` and the recipe's align
//! stage print).

use std::path::Path;

use dv_align::{BoundarySummary, PhoneInterval, Quarantine};
use polars::prelude::*;
use serde::Serialize;

use super::{AlignOptions, AlignmentError, Decoder, Plot};

/// The table of aligned utterances under [`AlignOptions::out`], one row per
/// aligned utterance in id order (the module docs of [`super`]).
pub const ALIGNMENTS: &str = "alignments.parquet";

/// The columns of [`ALIGNMENTS`]: its writer here and every reader (the
/// recipe's relabelling, the duration/F0 model's `[data] alignments`) name
/// them through these.
pub mod column {
    /// Utterance id (utf8).
    pub const ID: &str = "id";
    /// The aligned phones, with the reference's stress (`AH1`) where it had
    /// one (list\<utf8\>).
    pub const PHONES: &str = "phones";
    /// Each phone's start, seconds from the utterance's start (list\<f64\>).
    pub const STARTS: &str = "starts";
    /// Each phone's end, seconds (list\<f64\>).
    pub const ENDS: &str = "ends";
    /// Mean log-likelihood per frame (f64).
    pub const CONFIDENCE: &str = "confidence";
    /// Whether the quarantine set the utterance aside (bool).
    pub const QUARANTINED: &str = "quarantined";
}

/// One utterance's phones and their times.
pub(super) struct Aligned {
    pub id: String,
    pub phones: Vec<String>,
    pub timing: Vec<PhoneInterval>,
    /// Mean log-likelihood per frame.
    pub confidence: f64,
}

/// What [`super::align`] did, as written to `report.json` (keys in name
/// order); [`AlignReport::plots`] is not written.
#[derive(Clone, Debug, Serialize)]
pub struct AlignReport {
    /// The checkpoint's path.
    pub checkpoint: String,
    /// Steps its run had completed.
    pub checkpoint_step: u64,
    pub features: String,
    /// Utterances to align (those the loader could use).
    pub utterances: usize,
    pub held_out: bool,
    pub aligned: usize,
    pub failed: Vec<Failure>,
    /// What the features loader skipped, and why.
    pub skipped_by_loader: String,
    /// Median confidence (mean log-likelihood per frame) of the utterances
    /// the segmentation model trained on (of all, when its run held none out).
    pub confidence_median: f64,
    pub quarantine: QuarantineReport,
    /// Against the corpus's reference boundaries, when it has them.
    pub boundary_error: Option<BoundaryError>,
    /// Aligned utterances with no reference boundaries.
    pub without_reference: usize,
    pub decoder: Decoder,
    pub trim_db: f64,
    /// Edge boundaries moved to where speech starts or stops.
    pub edge_boundaries_trimmed: usize,
    /// Utterances whose pairs but the edge ones were decoded inside their
    /// speech (the frames within `trim_db` of the loudest but the first and
    /// the last: `dv_align::confine_labels`).
    pub edge_confined: usize,
    /// Utterances whose inner pairs could not all fit inside their speech
    /// and were decoded from the model's posteriors as they are.
    pub edge_confine_overruled: usize,
    pub viterbi: ViterbiBackend,
    /// Time spent in the Viterbi decoder.
    pub viterbi_seconds: f64,
    /// [`Decoder::Beam`]: utterances whose decoded pairs differ from the
    /// reference (their boundaries are not scored).
    pub decoded_other_pairs: usize,
    /// The phoneme-pair error rate, unless it was skipped.
    pub pper: Option<Pper>,
    /// Wall time up to the report.
    pub seconds: f64,
    /// The plots asked for, after the report was written.
    #[serde(skip)]
    pub plots: Vec<Plot>,
}

impl AlignReport {
    /// The report as `dv align` and the recipe's align stage print it, one
    /// line per item (no trailing newline): counts and the first failures,
    /// the confidence and the quarantine, the boundary error, the decoder,
    /// the PPER and the plots. `o` is what the run was asked to do.
    pub fn summary(&self, o: &AlignOptions) -> String {
        let mut out = vec![format!(
            "aligned        {} of {} utterances ({} failed)",
            self.aligned,
            self.utterances,
            self.failed.len()
        )];
        for f in self.failed.iter().take(5) {
            out.push(format!("  failed       {}: {}", f.id, f.reason));
        }
        let q = &self.quarantine;
        out.push(format!("confidence     median {:.3} (mean log-likelihood per frame)", self.confidence_median));
        out.push(format!("quarantined    {} below {:.3}: {}", q.ids.len(), q.threshold, q.ids.join(" ")));
        out.push(match &self.boundary_error {
            Some(s) => format!(
                "boundaries     {} in {} utterances vs reference: mean |error| {:.1} ms (mean shift {:+.1} ms), within 10/20/25 ms {:.1}% / {:.1}% / {:.1}%",
                s.boundaries,
                s.utterances,
                s.mean_abs_ms,
                s.mean_signed_ms,
                100.0 * s.within_10ms,
                100.0 * s.within_20ms,
                100.0 * s.within_25ms
            ),
            None => "boundaries     no reference boundaries to compare with".to_string(),
        });
        if self.trim_db > 0.0 {
            out.push(format!(
                "edges          {} boundaries moved to where speech starts or stops ({} dB); inner pairs kept inside speech in {} utterances, {} could not be",
                self.edge_boundaries_trimmed, self.trim_db, self.edge_confined, self.edge_confine_overruled
            ));
        }
        let gpu = self.viterbi == ViterbiBackend::Cuda;
        out.push(match o.decoder {
            Decoder::Viterbi => format!(
                "viterbi        {} s on the {}",
                format_args!("{:.3}", self.viterbi_seconds),
                if gpu { "GPU" } else { "CPU" }
            ),
            Decoder::Beam => format!(
                "decoder        beam of {} over chained pairs: {} utterance(s) decoded other pairs than the reference (their boundaries are not scored)",
                o.beam_width, self.decoded_other_pairs
            ),
        });
        if let Some(p) = &self.pper {
            out.push(format!(
                "PPER           {:.2}% (phoneme-pair error rate: the model's own best pairs against the \
                 transcript's, {} edits in {} reference pairs, above 100 % when it hears more pairs than there \
                 are; CTC prefix beam search, width {})",
                100.0 * p.error_rate,
                p.edits,
                p.reference_pairs,
                p.beam
            ));
        }
        for p in &self.plots {
            out.push(match p {
                Plot::Written { path, .. } => format!("plot           {}", path.display()),
                Plot::NotAligned { id } => format!("plot           {id}: not aligned (see the failures above)"),
            });
        }
        out.join("\n")
    }
}

/// An utterance that could not be aligned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Failure {
    pub id: String,
    pub reason: String,
}

/// The quarantine rule and the utterances it set aside.
#[derive(Clone, Debug, Serialize)]
pub struct QuarantineReport {
    /// The factor of the spread below the median.
    pub k: f64,
    /// 1.4826 × MAD of the confidences (or the mean-deviation fallback).
    pub spread: f64,
    /// Confidences strictly below this are quarantined.
    pub threshold: f64,
    /// Every quarantined id (of both groups), lowest confidence first.
    pub ids: Vec<String>,
    /// The group the segmentation model's run held out, judged on its own.
    pub held_out_by_segmentation: Option<HeldOutQuarantine>,
}

/// The quarantine of the utterances the segmentation model never trained on.
#[derive(Clone, Debug, Serialize)]
pub struct HeldOutQuarantine {
    pub utterances: usize,
    pub median: f64,
    pub spread: f64,
    pub threshold: f64,
    pub quarantined: usize,
}

/// Boundary error against the reference, pooled over utterances: the
/// aligner's own summary, serialized as it stands.
pub type BoundaryError = BoundarySummary;

/// Where the Viterbi decoder ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ViterbiBackend {
    Cpu,
    Cuda,
}

/// The phoneme-pair error rate (§3.2): edits of the prefix beam search's
/// pairs against the reference pairs.
#[derive(Clone, Debug, Serialize)]
pub struct Pper {
    pub beam: usize,
    pub error_rate: f64,
    pub edits: usize,
    pub reference_pairs: usize,
}

/// `quarantine.tsv`: id and confidence of each quarantined utterance.
pub(super) fn write_quarantine(
    out: &Path,
    q: &Quarantine<String>,
    conf: &[(String, f64)],
) -> Result<(), AlignmentError> {
    let mut tsv = String::from("id\tconfidence\n");
    for id in &q.ids {
        let c = conf.iter().find(|(i, _)| i == id).map(|(_, c)| *c).unwrap_or(f64::NAN);
        tsv.push_str(&format!("{id}\t{c:.4}\n"));
    }
    Ok(dv_util::write_atomic(&out.join("quarantine.tsv"), tsv.as_bytes())?)
}

/// [`ALIGNMENTS`]: one row per aligned utterance ([`column`](mod@column)).
pub(super) fn write_alignments(out: &Path, aligned: &[Aligned], quarantined: &[String]) -> Result<(), AlignmentError> {
    let list = |f: &dyn Fn(&Aligned) -> Series| -> Column {
        let rows: Vec<Series> = aligned.iter().map(f).collect();
        Series::new("".into(), rows).into_column()
    };
    let mut df = DataFrame::new(
        aligned.len(),
        vec![
            Column::new(column::ID.into(), aligned.iter().map(|u| u.id.as_str()).collect::<Vec<_>>()),
            list(&|u| Series::new("".into(), u.phones.clone())).with_name(column::PHONES.into()),
            list(&|u| Series::new("".into(), u.timing.iter().map(|t| t.start).collect::<Vec<f64>>()))
                .with_name(column::STARTS.into()),
            list(&|u| Series::new("".into(), u.timing.iter().map(|t| t.end).collect::<Vec<f64>>()))
                .with_name(column::ENDS.into()),
            Column::new(column::CONFIDENCE.into(), aligned.iter().map(|u| u.confidence).collect::<Vec<f64>>()),
            Column::new(
                column::QUARANTINED.into(),
                aligned.iter().map(|u| quarantined.contains(&u.id)).collect::<Vec<bool>>(),
            ),
        ],
    )?;
    Ok(dv_manifest::write_parquet(&mut df, &out.join(ALIGNMENTS))?)
}

/// `report.json`, pretty-printed with its keys in name order.
pub(super) fn write_report(out: &Path, report: &AlignReport) -> Result<(), AlignmentError> {
    let value = serde_json::to_value(report)?;
    Ok(dv_util::write_atomic(&out.join("report.json"), serde_json::to_string_pretty(&value)?.as_bytes())?)
}
