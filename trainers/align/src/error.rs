//! The one error type of this crate.

/// Why an alignment could not be computed.
///
/// `item` is the index of the offending batch item (0 for single-item calls);
/// for MAS `row` is the text index and `col` the speech frame, for CTC `row`
/// is the frame and `col` the class.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AlignError {
    /// A buffer does not have the length its declared shape implies.
    #[error("{what}: expected {expected} values, got {got}")]
    ShapeMismatch { what: &'static str, expected: usize, got: usize },
    /// A length is zero where at least one element is needed.
    #[error("item {item}: {what} length is 0")]
    Empty { item: usize, what: &'static str },
    /// A per-item length exceeds the padded dimension of the batch buffer.
    #[error("item {item}: {what} length {len} exceeds the padded dimension {max}")]
    LengthExceedsPadding { item: usize, what: &'static str, len: usize, max: usize },
    /// MAS needs at least one speech frame per text token.
    #[error(
        "item {item}: text length {text} exceeds speech length {speech}; a monotonic path cannot visit every token"
    )]
    TextLongerThanSpeech { item: usize, text: usize, speech: usize },
    /// A score is NaN or +∞ (−∞, a zero probability, is allowed).
    #[error("item {item}: NaN or +inf at ({row}, {col}); scores must be log-likelihoods below +inf")]
    NonFinite { item: usize, row: usize, col: usize },
    /// A MAS path entry is not a text index of the item.
    #[error("path frame {frame}: text index {index} outside 0..{text}")]
    InvalidPath { frame: usize, index: i64, text: usize },
    /// CTC: the frames cannot hold the labels (one frame per label, plus a
    /// blank between each pair of equal neighbours).
    #[error(
        "item {item}: {frames} frames cannot hold {labels} labels with {repeats} repeated neighbours (need {needed})"
    )]
    SequenceTooLong { item: usize, frames: usize, labels: usize, repeats: usize, needed: usize },
    /// CTC: a label is outside `0..classes` or is the blank.
    #[error("item {item}: label {label} at position {position} is invalid for {classes} classes with blank {blank}")]
    InvalidLabel { item: usize, position: usize, label: i64, classes: usize, blank: usize },
    /// CTC: the blank index is outside `0..classes`.
    #[error("blank index {blank} outside 0..{classes}")]
    BlankOutOfRange { blank: usize, classes: usize },
    /// Every admissible path has probability zero (its score is −∞), so no
    /// alignment is better than another.
    #[error("item {item}: every admissible alignment has log-probability -inf")]
    NoPath { item: usize },
    /// A number outside its domain: a frame step or duration that is not
    /// finite and positive, a NaN or infinite score, confidence or time, a
    /// negative quarantine factor.
    #[error("{what}: invalid value {value}")]
    InvalidValue { what: &'static str, value: f64 },
    /// A phoneme-pair span that cannot be turned into a boundary: empty (or
    /// never visited), past the last frame, or not after the previous pair.
    #[error("pair {index}: span {start}..{end} is invalid: {reason}")]
    InvalidSpan { index: usize, start: usize, end: usize, reason: &'static str },
    /// The last phoneme boundary does not fall before the utterance's end,
    /// so the last phoneme would have no duration.
    #[error("last phoneme boundary {boundary} s is not before the utterance end {duration} s")]
    BoundaryPastEnd { boundary: f64, duration: f64 },
    /// A TextGrid interval (or a phone given to become one) that breaks the
    /// tier's order: empty, reversed, overlapping, outside the tier or
    /// leaving a gap where the tier must be covered.
    #[error("tier {tier}, interval {index} [{xmin}, {xmax}]: {reason}")]
    InvalidInterval { tier: usize, index: usize, xmin: f64, xmax: f64, reason: &'static str },
    /// A TextGrid text that does not follow Praat's text format.
    #[error("TextGrid line {line}: expected {expected}, found {found}")]
    TextGridSyntax { line: usize, expected: &'static str, found: String },
    /// Predicted and reference alignments of one utterance have different
    /// numbers of phones, so their boundaries cannot be paired.
    #[error("predicted alignment has {predicted} phones, the reference {reference}")]
    PhoneCountMismatch { predicted: usize, reference: usize },
    /// A size beyond what the GPU kernels support.
    #[error("unsupported: {what}")]
    Unsupported { what: String },
    /// The CUDA driver or NVRTC cannot be loaded, or there is no such device.
    #[error("CUDA unavailable: {reason}")]
    CudaUnavailable { reason: String },
    /// A CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {reason}")]
    Driver { call: &'static str, reason: String },
    /// NVRTC rejected a kernel source.
    #[error("NVRTC could not compile {kernel}: {log}")]
    Compile { kernel: &'static str, log: String },
}
