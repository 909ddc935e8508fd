//! Phoneme boundaries for a featurized corpus from a trained segmentation
//! model (Deep Voice §3.2): the model's phoneme-pair posteriors, CTC Viterbi
//! over each utterance's known pair sequence (exact dynamic programming, no
//! beam, so long files never fail for a narrow beam; on the CPU or, a batch
//! per launch, on a GPU), and each phoneme boundary at its pair's position.
//! `dv align` is a thin wrapper over [`align`]; the recipe's align stage and
//! the tests call it directly.
//!
//! # Units and outputs
//!
//! Times are seconds from the utterance's start, at the features' frame rate
//! ([`crate::FRAME_SECONDS`]). [`align`] writes under [`AlignOptions::out`]:
//!
//! * `alignments.parquet` ([`ALIGNMENTS`]): id, phones, starts, ends
//!   (seconds), confidence (mean log-likelihood per frame), quarantined
//!   (named in [`column`](mod@column), which its readers use too); one row
//!   per aligned utterance, in id order;
//! * `textgrid/<id>.TextGrid`: Praat long text, one "phones" tier covering
//!   the whole utterance;
//! * `quarantine.tsv`: utterances whose confidence is far below their peers'
//!   median (bad transcripts are the usual cause;
//!   [`dv_align::quarantine_by_group`]: the segmentation model's training
//!   utterances and those its run held out are judged apart);
//! * `report.json`: [`AlignReport`] (counts, failures with reasons, the
//!   quarantine rule, the boundary error against the corpus's reference
//!   boundaries when it has them, the phoneme-pair error rate);
//! * `plots/<id>.png` for each id of [`AlignOptions::plots`].
//!
//! An utterance that cannot be aligned (too short for its pairs, say) is a
//! failure in the report, not an error; the run fails only when none aligns.
//!
//! # Layout
//!
//! [`options`](AlignOptions) what to align and how, `pipeline` the run from
//! checkpoint to report, `decode` the batch-wide decoders (CUDA Viterbi, the
//! PPER's beam search) and label conversions, `output` the report (and its
//! printed [`AlignReport::summary`]) and the Parquet table, `plot` the
//! spectrogram pictures, [`AlignmentError`] what can go wrong.

mod decode;
mod error;
mod options;
mod output;
mod pipeline;
mod plot;

pub use error::AlignmentError;
pub use options::{AlignOptions, Decoder, ViterbiOn};
pub use output::{
    column, AlignReport, BoundaryError, Failure, HeldOutQuarantine, Pper, QuarantineReport, ViterbiBackend, ALIGNMENTS,
};
pub use pipeline::align;
pub use plot::Plot;
