//! What an alignment run writes besides the TextGrids: `quarantine.tsv`,
//! `alignments.parquet` and `report.json` ([`AlignReport`]).

use std::path::Path;

use dv_align::{BoundarySummary, PhoneInterval, Quarantine};
use polars::prelude::*;
use serde::Serialize;

use super::{AlignmentError, Decoder, Plot};

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

/// `alignments.parquet`: one row per aligned utterance (module docs).
pub(super) fn write_alignments(out: &Path, aligned: &[Aligned], quarantined: &[String]) -> Result<(), AlignmentError> {
    let list = |f: &dyn Fn(&Aligned) -> Series| -> Column {
        let rows: Vec<Series> = aligned.iter().map(f).collect();
        Series::new("".into(), rows).into_column()
    };
    let mut df = DataFrame::new(
        aligned.len(),
        vec![
            Column::new("id".into(), aligned.iter().map(|u| u.id.as_str()).collect::<Vec<_>>()),
            list(&|u| Series::new("".into(), u.phones.clone())).with_name("phones".into()),
            list(&|u| Series::new("".into(), u.timing.iter().map(|t| t.start).collect::<Vec<f64>>()))
                .with_name("starts".into()),
            list(&|u| Series::new("".into(), u.timing.iter().map(|t| t.end).collect::<Vec<f64>>()))
                .with_name("ends".into()),
            Column::new("confidence".into(), aligned.iter().map(|u| u.confidence).collect::<Vec<f64>>()),
            Column::new(
                "quarantined".into(),
                aligned.iter().map(|u| quarantined.contains(&u.id)).collect::<Vec<bool>>(),
            ),
        ],
    )?;
    Ok(dv_manifest::write_parquet(&mut df, &out.join("alignments.parquet"))?)
}

/// `report.json`, pretty-printed with its keys in name order.
pub(super) fn write_report(out: &Path, report: &AlignReport) -> Result<(), AlignmentError> {
    let value = serde_json::to_value(report)?;
    Ok(dv_util::write_atomic(&out.join("report.json"), serde_json::to_string_pretty(&value)?.as_bytes())?)
}
