//! Forced alignment for Deep Voice (§3.2, §4.1): which frames of an utterance
//! belong to which phoneme, for the segmentation model's boundaries and the
//! duration model's targets.
//!
//! Two aligners, each with a CPU reference and a CUDA kernel:
//!
//! * **Monotonic alignment search** ([`maximum_path`], Glow-TTS's
//!   `maximum_path`): given a text×speech log-likelihood matrix, the
//!   monotonic path from the first token and frame to the last that visits
//!   every token and maximises the summed log-likelihood. Output: the text
//!   index of each frame and the frames per token ([`durations`]).
//! * **CTC Viterbi** ([`ctc_viterbi`]): given per-frame log-probabilities of
//!   a CTC model (the segmentation model of §3.2 is trained with CTC) and the
//!   phoneme sequence, the best path through the CTC lattice (blanks between
//!   labels, repeated labels separated by a blank). Output: the lattice
//!   state of each frame and each label's frame span.
//!
//! And, on the CPU only, what turns an alignment into training data:
//!
//! * **Phoneme boundaries** ([`phone_timing`]): the segmentation model of
//!   §3.2 emits phoneme *pairs* (`sil HH EH L OW sil` is aligned as `(sil,HH)
//!   (HH,EH) (EH,L) (L,OW) (OW,sil)`); the boundary between phonemes `k` and
//!   `k + 1` is the midpoint in time of pair `k`'s span (frames are centred:
//!   frame `y` covers `[y − ½, y + ½) · step`, clipped at 0). Output: `n` contiguous [`PhoneInterval`]s in
//!   seconds from 0 to the utterance's duration, each of positive length,
//!   and a confidence, the path's mean log-likelihood per frame.
//! * **TextGrids** ([`TextGrid`]): Praat's long text format, one
//!   `"phones"` interval tier with gaps as empty intervals; times round-trip
//!   exactly. The parser reads Praat's long and short text formats (what
//!   Praat and the Montreal Forced Aligner write).
//! * **Boundary error** ([`BoundaryErrors`]): mean absolute error of the
//!   internal boundaries in ms and the share within 10, 20 and 25 ms, pooled
//!   over utterances.
//! * **Quarantine** ([`quarantine()`]): utterances whose confidence is below
//!   the corpus median minus `k` (default 5) scaled MADs.
//!
//! # Contract
//!
//! * Scores are log-likelihoods (any base), `f32`; −∞ (probability zero) is
//!   allowed, NaN and +∞ are errors ([`AlignError::NonFinite`]). Impossible
//!   lengths, mismatched buffers and out-of-range labels are typed errors,
//!   never panics.
//! * Layouts are row-major and batched with padding: MAS `[batch, text,
//!   speech]` (speech contiguous, as Glow-TTS's `value[b, t_x, t_y]`), CTC
//!   `[batch, frames, classes]`, each item with its own lengths
//!   ([`MasLen`], [`CtcLen`]).
//! * Paths are `i32` (the kernels' type): MAS gives a text index per frame,
//!   CTC an extended-state index per frame (even = blank, `2k + 1` = label
//!   `k`). CTC spans are half-open frame ranges.
//! * Ties: MAS keeps Glow-TTS's rule (the backtrack stays on the same token);
//!   CTC prefers staying, then advancing, then skipping a blank, and ends on
//!   the last label unless the final blank is strictly better.
//! * The GPU gives the same paths as the CPU, bit for bit: both do the same
//!   f32 adds and comparisons in the same dependency order (the kernels are
//!   compiled with `--fmad=false`), and the CPU functions are the oracle the
//!   kernels are tested against (`examples/align_gpu.rs`). [`maximum_path`]
//!   is generic over `f32` and `f64`; the `f64` search is for checking
//!   precision, not for parity.
//!
//! # Why this design
//!
//! MAS is the Super-MAS design (Lee & Kim, 2024): the dynamic programme is
//! sequential in speech but parallel in text, so one thread block takes one
//! batch item, threads take text positions, and frames advance with a barrier
//! between them. The matrix is overwritten in place with the cumulative
//! scores (no second matrix, no host round trip), the backtrack runs on the
//! device, and only the int32 path crosses back to the host. Two changes to
//! the plain scheme pay on the GPU: frames are staged through shared memory
//! in tiles of 8, read while the previous tile is computed, so that global
//! reads and writes are coalesced although the layout is text-major; and the
//! backtrack walks windows of 64 frames that the whole block first copies to
//! shared memory, instead of one thread waiting on a global load per frame.
//! Out-of-band cells are true −∞: Super-MAS reports wrong paths with a large
//! negative constant instead.
//!
//! CTC Viterbi is the same scheme with threads along the `2L + 1` lattice
//! states; it keeps one backpointer byte per frame and state on the device
//! rather than overwriting the log-probabilities, which are `[frames,
//! classes]`, not `[frames, states]`.
//!
//! CUDA is loaded at run time (`cudarc` with `dynamic-loading`), kernels are
//! compiled by NVRTC from `kernels/*.cu` for the device at hand: the crate
//! builds and its CPU half runs on machines with no GPU, and
//! [`GpuAligner::new`] returns [`AlignError::CudaUnavailable`] there.
//!
//! # Limits on the GPU
//!
//! Text up to [`MAS_MAX_TEXT`] tokens per item (speech is bounded only by
//! `text × speech < 2^31` per item) and transcripts up to [`CTC_MAX_LABELS`]
//! labels, less on devices with under 72 KiB of shared memory per block.
#![deny(unsafe_code)]

mod beam;
mod boundary;
#[allow(unsafe_code)]
mod cuda;
mod error;
mod mas;
mod metrics;
mod pair_beam;
mod quarantine;
mod textgrid;
mod viterbi;

pub use beam::{ctc_prefix_beam, edit_distance};
pub use boundary::{
    clamp_edge_pauses, confine_labels, inner_within, phone_timing, speech_extent, speech_frames, PhoneInterval,
    PhoneTiming, CONFINE_PENALTY,
};
pub use cuda::{cuda_available, GpuAligner, MasDeviceBatch, CTC_MAX_LABELS, MAS_MAX_TEXT};
pub use error::AlignError;
pub use mas::{
    durations, maximum_path, maximum_path_batch, maximum_path_in_place, MasAlignment, MasLen, MasShape, Score,
};
pub use metrics::{BoundaryErrors, BoundarySummary, TOLERANCES_MS};
pub use pair_beam::{constrained_pair_beam, PairDecoding};
pub use quarantine::{quarantine, quarantine_by_group, Quarantine, DEFAULT_K, MAD_SCALE};
pub use textgrid::{Interval, IntervalTier, TextGrid, PHONES_TIER};
pub use viterbi::{ctc_viterbi, ctc_viterbi_batch, CtcAlignment, CtcLen, CtcShape, Span};
