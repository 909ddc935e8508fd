//! Monotonic alignment search on the CPU: Glow-TTS `maximum_path`, the oracle
//! of the CUDA kernel.
//!
//! For a text×speech log-likelihood matrix `L[x][y]` (text index `x < t`,
//! speech frame `y < s`, `t <= s`) the search finds the monotonic path that
//! starts at `(0, 0)`, ends at `(t - 1, s - 1)`, and advances the text index
//! by 0 or 1 per frame, maximising the sum of `L` along the path:
//!
//! ```text
//! Q[x][y] = L[x][y] + max(Q[x - 1][y - 1], Q[x][y - 1])      (cells in the band)
//! Q[x][y] = -inf                                             (cells outside it)
//! ```
//!
//! The band is the cells a complete path can cross: `x <= y` and
//! `t - 1 - x <= s - 1 - y`. Outside it is true −∞, never a large negative
//! number (Super-MAS found −1e9 gives wrong paths for long inputs). The
//! backtrack starts at `(t - 1, s - 1)` and, frame by frame downwards, steps to
//! the previous token when `x == y` or `Q[x][y - 1] < Q[x - 1][y - 1]`; on a
//! tie it stays on the same token (Glow-TTS's rule).
//!
//! Every cell costs one comparison `diag > stay ? diag : stay` and one add,
//! column after column, exactly as `kernels/mas.cu` computes it, so in `f32`
//! the CPU and GPU give bitwise equal scores and identical paths.
use crate::AlignError;

/// Padded dimensions of a batch buffer `[batch, text, speech]` (row-major:
/// speech frames are contiguous).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MasShape {
    /// Items in the batch.
    pub batch: usize,
    /// Padded text length (rows of each item).
    pub text: usize,
    /// Padded speech length (columns of each item).
    pub speech: usize,
}

impl MasShape {
    /// Values in the padded buffer, `None` on overflow.
    pub fn numel(&self) -> Option<usize> {
        self.batch.checked_mul(self.text)?.checked_mul(self.speech)
    }
}

/// The true lengths of one batch item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MasLen {
    /// Tokens, `1..=speech`.
    pub text: usize,
    /// Frames, at least `text`.
    pub speech: usize,
}

/// One item's monotonic alignment.
#[derive(Clone, Debug, PartialEq)]
pub struct MasAlignment<F> {
    /// Text index of each speech frame: `path.len() == speech`, starts at 0,
    /// ends at `text - 1`, and grows by 0 or 1 per frame.
    pub path: Vec<i32>,
    /// Frames per token: `durations.len() == text`, each at least 1, summing
    /// to `speech`.
    pub durations: Vec<u32>,
    /// The path's log-likelihood, `Q[text - 1][speech - 1]` (−∞ only when
    /// every path crosses a −∞ cell).
    pub score: F,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A float the search runs in: `f32` (bitwise equal to the GPU) or `f64`.
pub trait Score: sealed::Sealed + Copy + PartialOrd + std::ops::Add<Output = Self> + std::fmt::Debug {
    /// −∞, the score of cells no path crosses.
    const NEG_INFINITY: Self;
    /// 0, the score before the first frame.
    const ZERO: Self;
    /// NaN and +∞ are rejected; −∞ (probability zero) is allowed.
    fn is_admissible(self) -> bool;
}

impl Score for f32 {
    const NEG_INFINITY: Self = f32::NEG_INFINITY;
    const ZERO: Self = 0.0;
    fn is_admissible(self) -> bool {
        self < f32::INFINITY
    }
}

impl Score for f64 {
    const NEG_INFINITY: Self = f64::NEG_INFINITY;
    const ZERO: Self = 0.0;
    fn is_admissible(self) -> bool {
        self < f64::INFINITY
    }
}

/// Best monotonic path through one `[text, speech]` matrix; `value` is not
/// modified (allocating convenience over [`maximum_path_in_place`]).
///
/// # Shapes
/// * `value`: `[text, speech]`, row-major.
/// * returned `path`: `[speech]`; `durations`: `[text]`.
pub fn maximum_path<F: Score>(value: &[F], text: usize, speech: usize) -> Result<MasAlignment<F>, AlignError> {
    let expected = text.checked_mul(speech).ok_or(AlignError::ShapeMismatch {
        what: "MAS matrix",
        expected: usize::MAX,
        got: value.len(),
    })?;
    if value.len() != expected {
        return Err(AlignError::ShapeMismatch { what: "MAS matrix [text, speech]", expected, got: value.len() });
    }
    let mut work = value.to_vec();
    let mut path = vec![0i32; speech];
    let score = maximum_path_in_place(&mut work, MasLen { text, speech }, speech, &mut path)?;
    let durations = durations(&path, text)?;
    Ok(MasAlignment { path, durations, score })
}

/// Best monotonic path of one item held in a row-strided buffer; overwrites
/// the item's `[text, speech]` cells with `Q` (−∞ outside the band) and
/// returns the path's score. Allocates nothing.
///
/// # Shapes
/// * `value`: at least `[len.text, stride]` row-major, `stride >= len.speech`;
///   only the first `len.speech` columns of the first `len.text` rows are read.
/// * `path`: at least `[len.speech]`; the first `len.speech` entries are written.
pub fn maximum_path_in_place<F: Score>(
    value: &mut [F],
    len: MasLen,
    stride: usize,
    path: &mut [i32],
) -> Result<F, AlignError> {
    check_len(0, len, MasLen { text: usize::MAX, speech: stride })?;
    let needed = len.text.checked_mul(stride).ok_or(AlignError::ShapeMismatch {
        what: "MAS matrix",
        expected: usize::MAX,
        got: value.len(),
    })?;
    if value.len() < needed {
        return Err(AlignError::ShapeMismatch {
            what: "MAS matrix [text, stride]",
            expected: needed,
            got: value.len(),
        });
    }
    if path.len() < len.speech {
        return Err(AlignError::ShapeMismatch { what: "MAS path [speech]", expected: len.speech, got: path.len() });
    }
    check_finite(0, value, len, stride)?;
    Ok(search(value, len.text, len.speech, stride, path))
}

/// Best monotonic paths of a padded batch, in place: each item's cells become
/// `Q` (−∞ outside its band), padding is untouched. The same contract as
/// `GpuAligner::mas_batch`. Every item is validated before any is modified.
///
/// # Shapes
/// * `value`: `[shape.batch, shape.text, shape.speech]`, row-major.
/// * `lens`: `[shape.batch]`.
/// * returns `shape.batch` paths, item `i` of length `lens[i].speech`.
pub fn maximum_path_batch<F: Score>(
    value: &mut [F],
    shape: MasShape,
    lens: &[MasLen],
) -> Result<Vec<Vec<i32>>, AlignError> {
    check_batch(shape, lens, value.len())?;
    let item = shape.text * shape.speech;
    for (i, &len) in lens.iter().enumerate() {
        check_finite(i, &value[i * item..(i + 1) * item], len, shape.speech)?;
    }
    let mut paths = Vec::with_capacity(shape.batch);
    for (i, &len) in lens.iter().enumerate() {
        let mut path = vec![0i32; len.speech];
        search(&mut value[i * item..(i + 1) * item], len.text, len.speech, shape.speech, &mut path);
        paths.push(path);
    }
    Ok(paths)
}

/// Frames per token of a path: `durations[x]` counts the frames aligned to
/// token `x`. Errors if an entry is outside `0..text`.
///
/// # Shapes
/// * `path`: `[speech]`; returns `[text]`.
pub fn durations(path: &[i32], text: usize) -> Result<Vec<u32>, AlignError> {
    let mut d = vec![0u32; text];
    for (frame, &x) in path.iter().enumerate() {
        match usize::try_from(x).ok().and_then(|x| d.get_mut(x)) {
            Some(slot) => *slot += 1,
            None => return Err(AlignError::InvalidPath { frame, index: x as i64, text }),
        }
    }
    Ok(d)
}

/// Validates a batch's shape and lengths (shared with the GPU path).
pub(crate) fn check_batch(shape: MasShape, lens: &[MasLen], got: usize) -> Result<(), AlignError> {
    let expected = shape.numel().ok_or(AlignError::ShapeMismatch {
        what: "MAS batch [batch, text, speech]",
        expected: usize::MAX,
        got,
    })?;
    if got != expected {
        return Err(AlignError::ShapeMismatch { what: "MAS batch [batch, text, speech]", expected, got });
    }
    if lens.len() != shape.batch {
        return Err(AlignError::ShapeMismatch { what: "MAS lengths [batch]", expected: shape.batch, got: lens.len() });
    }
    for (i, &len) in lens.iter().enumerate() {
        check_len(i, len, MasLen { text: shape.text, speech: shape.speech })?;
    }
    Ok(())
}

fn check_len(item: usize, len: MasLen, max: MasLen) -> Result<(), AlignError> {
    if len.text == 0 {
        return Err(AlignError::Empty { item, what: "text" });
    }
    if len.speech == 0 {
        return Err(AlignError::Empty { item, what: "speech" });
    }
    if len.text > max.text {
        return Err(AlignError::LengthExceedsPadding { item, what: "text", len: len.text, max: max.text });
    }
    if len.speech > max.speech {
        return Err(AlignError::LengthExceedsPadding { item, what: "speech", len: len.speech, max: max.speech });
    }
    if len.text > len.speech {
        return Err(AlignError::TextLongerThanSpeech { item, text: len.text, speech: len.speech });
    }
    Ok(())
}

/// First NaN or +∞ in row-major order (the order the GPU reports too).
fn check_finite<F: Score>(item: usize, value: &[F], len: MasLen, stride: usize) -> Result<(), AlignError> {
    for x in 0..len.text {
        for (y, &v) in value[x * stride..x * stride + len.speech].iter().enumerate() {
            if !v.is_admissible() {
                return Err(AlignError::NonFinite { item, row: x, col: y });
            }
        }
    }
    Ok(())
}

/// The forward pass and backtrack on a validated item; returns `Q[t-1][s-1]`.
fn search<F: Score>(v: &mut [F], t: usize, s: usize, stride: usize, path: &mut [i32]) -> F {
    // Column by column, as the kernel does (any order that finishes column
    // y - 1 before column y gives the same bits: each cell is one add).
    for y in 0..s {
        for x in 0..t {
            let i = x * stride + y;
            let q = if x <= y && t - 1 - x <= s - 1 - y {
                let stay = if y == 0 { F::NEG_INFINITY } else { v[i - 1] }; // Q[x][y-1]
                let diag = match (x, y) {
                    (0, 0) => F::ZERO,
                    (0, _) | (_, 0) => F::NEG_INFINITY,
                    _ => v[i - stride - 1], // Q[x-1][y-1]
                };
                let m = if diag > stay { diag } else { stay };
                v[i] + m
            } else {
                F::NEG_INFINITY
            };
            v[i] = q;
        }
    }
    // x <= y holds throughout (forced step when x == y), so x == 0 at y == 0
    // and `y - 1` is never evaluated at y == 0.
    let mut x = t - 1;
    for y in (0..s).rev() {
        path[y] = x as i32;
        if x != 0 && (x == y || v[x * stride + y - 1] < v[(x - 1) * stride + y - 1]) {
            x -= 1;
        }
    }
    v[(t - 1) * stride + s - 1]
}
