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
