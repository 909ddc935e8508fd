//! Weight matrices laid out for the SIMD matrix-vector loop, built once at
//! load time.
//!
//! A row-major `W [out, in]` (`out` a multiple of 8) is cut into row chunks
//! of at most [`MAX_CHUNK_LANES`] · 8 rows, sized evenly. Chunk `c` with rows
//! `o0 .. o0 + m` is stored column by column: `data[o0·in + j·m + o] =
//! W[o0 + o, j]`, so the kernel keeps the chunk's `m` outputs in `m / 8`
//! vector registers, broadcasts `x[j]` and streams the weights linearly with
//! one FMA per eight weights.
//!
//! The int16 layout pairs inputs for `vpmaddwd`: `data[o0·in + p·2m + 2o + k]
//! = Wq[o0 + o, 2p + k]`, one 32-bit lane holding the two weights that meet
//! `x[2p]` and `x[2p + 1]`.

use crate::quant::{quantize_rows, QuantLimits};

/// Most accumulator registers a chunk uses (12 of the 16 ymm registers).
pub(crate) const MAX_CHUNK_LANES: usize = 12;

/// A `Vec` whose visible part starts on a 32-byte boundary (safe code: the
/// backing store is over-allocated and the view offset).
#[derive(Debug, Clone)]
pub(crate) struct Aligned<T: Copy + Default> {
    buf: Vec<T>,
    off: usize,
    len: usize,
}

impl<T: Copy + Default> Aligned<T> {
    pub fn zeros(len: usize) -> Self {
        let size = std::mem::size_of::<T>();
        let buf = vec![T::default(); len + 32 / size];
        let addr = buf.as_ptr() as usize;
        let off = ((32 - addr % 32) % 32) / size;
        Self { buf, off, len }
    }

    pub fn from_slice(v: &[T]) -> Self {
        let mut a = Self::zeros(v.len());
        a.as_mut_slice().copy_from_slice(v);
        a
    }

    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.buf[self.off..self.off + self.len]
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.off..self.off + self.len]
    }
}

/// Row chunks `(first row, rows)`, each a multiple of 8 rows, at most
/// `MAX_CHUNK_LANES · 8`, as even as possible.
pub(crate) fn chunk_plan(out: usize) -> Vec<(usize, usize)> {
    let lanes = out / 8;
    let n = lanes.div_ceil(MAX_CHUNK_LANES).max(1);
    let mut plan = Vec::with_capacity(n);
    let mut o0 = 0;
    for c in 0..n {
        let l = lanes / n + usize::from(c < lanes % n);
        plan.push((o0, l * 8));
        o0 += l * 8;
    }
    plan
}

/// A float32 matrix in the chunked column layout.
#[derive(Debug, Clone)]
pub(crate) struct PackedF32 {
    pub rows: usize,
    pub cols: usize,
    pub chunks: Vec<(usize, usize)>,
    pub data: Aligned<f32>,
}

impl PackedF32 {
    /// Packs row-major `w` (`[rows, cols]`, rows a multiple of 8).
    pub fn new(w: &[f32], rows: usize, cols: usize) -> Self {
        assert!(rows.is_multiple_of(8) && w.len() == rows * cols, "packing needs rows % 8 == 0 and a full matrix");
        let chunks = chunk_plan(rows);
        let mut data = Aligned::zeros(rows * cols);
        let d = data.as_mut_slice();
        for &(o0, m) in &chunks {
            for j in 0..cols {
                for o in 0..m {
                    d[o0 * cols + j * m + o] = w[(o0 + o) * cols + j];
                }
            }
        }
        Self { rows, cols, chunks, data }
    }
}

/// An int16 matrix (per-row scales) in the paired chunked layout.
#[derive(Debug, Clone)]
pub(crate) struct PackedI16 {
    pub rows: usize,
    pub cols: usize,
    pub chunks: Vec<(usize, usize)>,
    pub data: Aligned<i16>,
    /// `W[o, j] ≈ data · scale[o]`.
    pub scale: Aligned<f32>,
    /// Activation range the kernel may feed (no int32 overflow).
    pub limits: QuantLimits,
}

impl PackedI16 {
    /// Quantizes and packs row-major `w` (`[rows, cols]`, rows a multiple of
    /// 8, cols even).
    pub fn new(w: &[f32], rows: usize, cols: usize) -> Self {
        assert!(
            rows.is_multiple_of(8) && cols.is_multiple_of(2) && w.len() == rows * cols,
            "int16 packing needs rows % 8 == 0, even cols"
        );
        let limits = QuantLimits::for_inputs(cols);
        let (q, scale) = quantize_rows(w, rows, cols, limits.weight_max);
        let chunks = chunk_plan(rows);
        let mut data = Aligned::zeros(rows * cols);
        let d = data.as_mut_slice();
        for &(o0, m) in &chunks {
            for p in 0..cols / 2 {
                for o in 0..m {
                    for k in 0..2 {
                        d[o0 * cols + p * 2 * m + 2 * o + k] = q[(o0 + o) * cols + 2 * p + k];
                    }
                }
            }
        }
        Self { rows, cols, chunks, data, scale: Aligned::from_slice(&scale), limits }
    }
}

/// Columns per panel of [`PackedPanels`]: two 8-lane vectors.
pub(crate) const PANEL: usize = 16;

/// A float32 matrix laid out for the matrix-matrix product over many frames
/// at once (`C[M, out] += A[M, in] · Wᵀ`).
///
/// A row-major `W [out, in]` is cut into panels of [`PANEL`] rows (the last
/// zero-padded); panel `p` is stored input by input: `data[p·in·16 + j·16 +
/// o] = W[16p + o, j]`. The kernel keeps a tile of up to 6 frames × 16
/// outputs in registers, broadcasts `A[i, j]` and streams the panel
/// linearly, reusing it (from L1) for every tile of a block of frames.
#[derive(Debug, Clone)]
pub(crate) struct PackedPanels {
    pub rows: usize,
    pub cols: usize,
    pub data: Aligned<f32>, // [⌈rows/16⌉, cols, 16]
}

impl PackedPanels {
    /// Packs the row-major `w` (`[rows, cols]`).
    pub fn new(w: &[f32], rows: usize, cols: usize) -> Self {
        assert_eq!(w.len(), rows * cols, "PackedPanels::new: w is not rows × cols");
        let panels = rows.div_ceil(PANEL);
        let mut data = Aligned::zeros(panels * cols * PANEL);
        let d = data.as_mut_slice();
        for (o, row) in w.chunks_exact(cols.max(1)).enumerate().take(rows) {
            let (p, l) = (o / PANEL, o % PANEL);
            for (j, &v) in row.iter().enumerate() {
                d[p * cols * PANEL + j * PANEL + l] = v;
            }
        }
        Self { rows, cols, data }
    }

    /// `C += A · Wᵀ` in plain f32 loops: the oracle of the AVX2 kernel, and
    /// the product on CPUs without it.
    ///
    /// # Shapes
    /// `a`: `[M, cols]`, `c`: `[M, rows]`
    pub fn matmul_acc_scalar(&self, a: &[f32], c: &mut [f32]) {
        let (n, k) = (self.rows, self.cols);
        assert!(k > 0 && a.len().is_multiple_of(k) && c.len() == a.len() / k * n);
        let d = self.data.as_slice();
        for (ar, cr) in a.chunks_exact(k).zip(c.chunks_exact_mut(n)) {
            for (p, cp) in cr.chunks_mut(PANEL).enumerate() {
                let mut acc = [0.0f32; PANEL];
                for (j, &x) in ar.iter().enumerate() {
                    let w = &d[(p * k + j) * PANEL..(p * k + j + 1) * PANEL];
                    for (s, &wv) in acc.iter_mut().zip(w) {
                        *s += wv * x;
                    }
                }
                for (cv, s) in cp.iter_mut().zip(acc) {
                    *cv += s;
                }
            }
        }
    }
}
