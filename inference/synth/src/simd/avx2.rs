//! AVX2 + FMA kernels, 8 f32 lanes. The scalar oracle is `reference.rs`
//! (and `quant::matvec_i16_reference` for the int16 product); every kernel
//! here computes the same formula with a different summation order.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::nonlinear::{Nonlinearity, EXP_APPROX_MIN};
use crate::packed::{PackedF32, PackedI16, PackedPanels, PANEL};

/// Proof that the CPU has AVX2 and FMA: only [`Avx2::detect`] makes one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx2 {
    _private: (),
}

impl Avx2 {
    /// `Some` when the running CPU supports AVX2 and FMA.
    pub fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Some(Self { _private: () });
            }
        }
        None
    }

    /// `y += W x`.
    ///
    /// # Shapes
    /// `x`: `[W.cols]`, `y`: `[W.rows]`
    #[inline]
    pub fn matvec(self, w: &PackedF32, x: &[f32], y: &mut [f32]) {
        assert!(x.len() == w.cols && y.len() == w.rows);
        // SAFETY: `self` proves AVX2+FMA; lengths checked above, and every
        // chunk lies inside `w.data` (rows · cols floats) and `y`.
        unsafe { matvec_f32(w, x, y, None) }
    }

    /// `y += Σ_{j ∈ idx} W[:, j] x[j]`: the product skipping inputs known to
    /// be zero (relu outputs). `idx` must be increasing and `< cols`.
    #[inline]
    pub fn matvec_sparse(self, w: &PackedF32, x: &[f32], idx: &[u16], y: &mut [f32]) {
        assert!(x.len() == w.cols && y.len() == w.rows && idx.iter().all(|&j| (j as usize) < w.cols));
        // SAFETY: as `matvec`; every index is below `cols` (checked).
        unsafe { matvec_f32(w, x, y, Some(idx)) }
    }

    /// `C += A · Wᵀ` over many frames at once (the same sums as
    /// [`PackedPanels::matmul_acc_scalar`], in the same order per output).
    ///
    /// # Shapes
    /// `a`: `[M, W.cols]`, `c`: `[M, W.rows]`
    #[inline]
    pub fn matmul_acc(self, w: &PackedPanels, a: &[f32], c: &mut [f32]) {
        let k = w.cols;
        assert!(k > 0 && a.len().is_multiple_of(k) && c.len() == a.len() / k * w.rows);
        // SAFETY: `self` proves AVX2+FMA; `a` is `[M, cols]` and `c` `[M, rows]`
        // (checked), and `w.data` holds ⌈rows/16⌉ · cols · 16 floats.
        unsafe { matmul_f32(w, a, a.len() / k, c) }
    }

    /// `y[o] += scale[o] · sx · Σ_j Wq[o, j] xq[j]`.
    #[inline]
    pub fn matvec_i16(self, w: &PackedI16, xq: &[i16], sx: f32, y: &mut [f32]) {
        assert!(xq.len() == w.cols && y.len() == w.rows && w.cols.is_multiple_of(2));
        // SAFETY: `self` proves AVX2; lengths checked, chunks inside `w.data`.
        unsafe { matvec_i16(w, xq, sx, y) }
    }

    /// `quant::quantize_into`, bit for bit: `q = round(x · max / max|x|)`;
    /// returns the scale `max|x| / max`.
    #[inline]
    pub fn quantize(self, x: &[f32], max: i32, q: &mut [i16]) -> f32 {
        assert!(x.len() == q.len() && x.len().is_multiple_of(8));
        // SAFETY: `self` proves AVX2; equal lengths, multiples of 8.
        unsafe { quantize(x, max, q) }
    }

    /// `h = tanh(a[0:r]) ⊙ σ(a[r:2r])`.
    #[inline]
    pub fn gate(self, a: &[f32], h: &mut [f32], nl: Nonlinearity) {
        assert!(a.len() == 2 * h.len() && h.len().is_multiple_of(8));
        // SAFETY: `self` proves AVX2+FMA; `a` holds 2·len(h) floats, len(h) % 8 == 0.
        unsafe { gate(a, h, nl) }
    }

    /// The QRNN gates in place: `a[0:H] = tanh(a[0:H])`, `a[H:3H] = σ(a[H:3H])`
    /// (candidate; output and forget gates).
    #[inline]
    pub fn qrnn_gates(self, a: &mut [f32], nl: Nonlinearity) {
        assert!(a.len().is_multiple_of(3 * 8));
        // SAFETY: `self` proves AVX2+FMA; len(a) = 3H with H % 8 == 0.
        unsafe { qrnn_gates(a, nl) }
    }

    /// `p = softmax(logits)`, max subtracted first.
    #[inline]
    pub fn softmax(self, logits: &[f32], p: &mut [f32], nl: Nonlinearity) {
        assert!(logits.len() == p.len() && p.len().is_multiple_of(8));
        // SAFETY: `self` proves AVX2+FMA; equal lengths, multiples of 8.
        unsafe { softmax(logits, p, nl) }
    }

    /// `v = relu(v)`; writes the indices of the nonzero entries to `idx` and
    /// returns how many there are.
    #[inline]
    pub fn relu_nonzero(self, v: &mut [f32], idx: &mut [u16]) -> usize {
        assert!(v.len() == idx.len() && v.len().is_multiple_of(8) && v.len() <= u16::MAX as usize);
        // SAFETY: `self` proves AVX2; `idx` has room for every index of `v`.
        unsafe { relu_nonzero(v, idx) }
    }
}

// ---------------------------------------------------------------- matmul f32

/// Frames per block: their inputs (≤ 96 · 256 floats) stay in L2 while every
/// panel passes over them, each panel reused from L1 by 16 tiles.
const MATMUL_BLOCK: usize = 96;
/// Frames per register tile: 6 × 2 accumulators + 2 panel vectors + 1 broadcast.
const MATMUL_TILE: usize = 6;

#[target_feature(enable = "avx2,fma")]
unsafe fn matmul_f32(w: &PackedPanels, a: &[f32], m: usize, c: &mut [f32]) {
    let (n, k) = (w.rows, w.cols);
    let (wp, ap, cp) = (w.data.as_slice().as_ptr(), a.as_ptr(), c.as_mut_ptr());
    for i0 in (0..m).step_by(MATMUL_BLOCK) {
        let i1 = (i0 + MATMUL_BLOCK).min(m);
        for p in 0..n.div_ceil(PANEL) {
            let n0 = p * PANEL;
            let width = (n - n0).min(PANEL);
            // The panel: `cols · 16` floats at a 64-byte multiple of an
            // aligned base (so every 8-float load is aligned).
            let bp = wp.add(p * k * PANEL);
            let mut i = i0;
            while i < i1 {
                let r = (i1 - i).min(MATMUL_TILE);
                // SAFETY (for both calls): rows `i .. i + r < m` of `a` (k
                // floats each) and of `c` (columns `n0 .. n0 + width ≤ n`).
                let (at, ct) = (ap.add(i * k), cp.add(i * n + n0));
                if width == PANEL {
                    tile_dispatch(r, at, k, bp, ct, n);
                } else {
                    // A partial last panel: run the tile on a full-width copy.
                    let mut tmp = [0.0f32; MATMUL_TILE * PANEL];
                    for row in 0..r {
                        std::ptr::copy_nonoverlapping(ct.add(row * n), tmp.as_mut_ptr().add(row * PANEL), width);
                    }
                    tile_dispatch(r, at, k, bp, tmp.as_mut_ptr(), PANEL);
                    for row in 0..r {
                        std::ptr::copy_nonoverlapping(tmp.as_ptr().add(row * PANEL), ct.add(row * n), width);
                    }
                }
                i += r;
            }
        }
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn tile_dispatch(r: usize, a: *const f32, k: usize, b: *const f32, c: *mut f32, ldc: usize) {
    match r {
        1 => tile::<1>(a, k, b, c, ldc),
        2 => tile::<2>(a, k, b, c, ldc),
        3 => tile::<3>(a, k, b, c, ldc),
        4 => tile::<4>(a, k, b, c, ldc),
        5 => tile::<5>(a, k, b, c, ldc),
        6 => tile::<6>(a, k, b, c, ldc),
        _ => unreachable!("tiles have 1..=6 frames"),
    }
}

/// `c[r, 0..16] += Σ_j a[r, j] · b[j, 0..16]` for `R` frames: `a` rows of
/// `k` floats, `b` a panel (`k · 16` floats, 32-byte aligned), `c` rows
/// `ldc` floats apart.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn tile<const R: usize>(a: *const f32, k: usize, b: *const f32, c: *mut f32, ldc: usize) {
    let mut lo = [_mm256_setzero_ps(); R];
    let mut hi = [_mm256_setzero_ps(); R];
    for j in 0..k {
        let (b0, b1) = (_mm256_load_ps(b.add(j * PANEL)), _mm256_load_ps(b.add(j * PANEL + 8)));
        for r in 0..R {
            let x = _mm256_broadcast_ss(&*a.add(r * k + j));
            lo[r] = _mm256_fmadd_ps(b0, x, lo[r]);
            hi[r] = _mm256_fmadd_ps(b1, x, hi[r]);
        }
    }
    for r in 0..R {
        let cr = c.add(r * ldc);
        _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), lo[r]));
        _mm256_storeu_ps(cr.add(8), _mm256_add_ps(_mm256_loadu_ps(cr.add(8)), hi[r]));
    }
}

// ---------------------------------------------------------------- matvec f32

#[target_feature(enable = "avx2,fma")]
unsafe fn matvec_f32(w: &PackedF32, x: &[f32], y: &mut [f32], idx: Option<&[u16]>) {
    let base = w.data.as_slice().as_ptr();
    let yp = y.as_mut_ptr();
    for &(o0, m) in &w.chunks {
        // SAFETY (for all calls): the chunk's weights are `m · cols` floats at
        // `o0 · cols`, its outputs `m` floats at `o0`, both inside their slices.
        let (wc, yc) = (base.add(o0 * w.cols), yp.add(o0));
        match idx {
            None => dense_dispatch(m / 8, wc, x, yc),
            Some(idx) => sparse_dispatch(m / 8, wc, x, idx, yc),
        }
    }
}

macro_rules! dispatch {
    ($n:expr, $f:ident, $($arg:expr),*) => {
        match $n {
            1 => $f::<1>($($arg),*), 2 => $f::<2>($($arg),*), 3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*), 5 => $f::<5>($($arg),*), 6 => $f::<6>($($arg),*),
            7 => $f::<7>($($arg),*), 8 => $f::<8>($($arg),*), 9 => $f::<9>($($arg),*),
            10 => $f::<10>($($arg),*), 11 => $f::<11>($($arg),*), 12 => $f::<12>($($arg),*),
            _ => unreachable!("chunk_plan makes 1..=12 lanes"),
        }
    };
}

#[target_feature(enable = "avx2,fma")]
unsafe fn dense_dispatch(lanes: usize, w: *const f32, x: &[f32], y: *mut f32) {
    // Fewer than 6 accumulators cannot hide the FMA latency (4 cycles × 2
    // ports): split the inputs in two halves with their own accumulators.
    if lanes <= 4 {
        dispatch!(lanes, dense_split, w, x, y)
    } else {
        dispatch!(lanes, dense, w, x, y)
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn sparse_dispatch(lanes: usize, w: *const f32, x: &[f32], idx: &[u16], y: *mut f32) {
    dispatch!(lanes, sparse, w, x, idx, y)
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn dense<const N: usize>(w: *const f32, x: &[f32], y: *mut f32) {
    let mut acc = [_mm256_setzero_ps(); N];
    for (k, a) in acc.iter_mut().enumerate() {
        *a = _mm256_loadu_ps(y.add(8 * k));
    }
    let mut p = w;
    for &xj in x {
        let xb = _mm256_set1_ps(xj);
        for (k, a) in acc.iter_mut().enumerate() {
            *a = _mm256_fmadd_ps(_mm256_load_ps(p.add(8 * k)), xb, *a);
        }
        p = p.add(8 * N);
    }
    for (k, a) in acc.iter().enumerate() {
        _mm256_storeu_ps(y.add(8 * k), *a);
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn dense_split<const N: usize>(w: *const f32, x: &[f32], y: *mut f32) {
    let mut acc0 = [_mm256_setzero_ps(); N];
    let mut acc1 = [_mm256_setzero_ps(); N];
    for (k, a) in acc0.iter_mut().enumerate() {
        *a = _mm256_loadu_ps(y.add(8 * k));
    }
    let half = x.len() / 2;
    let (x0, x1) = x.split_at(half);
    let (mut p0, mut p1) = (w, w.add(half * 8 * N));
    for (&a, &b) in x0.iter().zip(x1) {
        let (xa, xb) = (_mm256_set1_ps(a), _mm256_set1_ps(b));
        for k in 0..N {
            acc0[k] = _mm256_fmadd_ps(_mm256_load_ps(p0.add(8 * k)), xa, acc0[k]);
            acc1[k] = _mm256_fmadd_ps(_mm256_load_ps(p1.add(8 * k)), xb, acc1[k]);
        }
        p0 = p0.add(8 * N);
        p1 = p1.add(8 * N);
    }
    if x1.len() > x0.len() {
        let xb = _mm256_set1_ps(x1[x1.len() - 1]);
        for (k, a) in acc1.iter_mut().enumerate() {
            *a = _mm256_fmadd_ps(_mm256_load_ps(p1.add(8 * k)), xb, *a);
        }
    }
    for k in 0..N {
        _mm256_storeu_ps(y.add(8 * k), _mm256_add_ps(acc0[k], acc1[k]));
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn sparse<const N: usize>(w: *const f32, x: &[f32], idx: &[u16], y: *mut f32) {
    let mut acc = [_mm256_setzero_ps(); N];
    for (k, a) in acc.iter_mut().enumerate() {
        *a = _mm256_loadu_ps(y.add(8 * k));
    }
    for &j in idx {
        let j = j as usize;
        let xb = _mm256_set1_ps(*x.get_unchecked(j));
        let p = w.add(j * 8 * N);
        for (k, a) in acc.iter_mut().enumerate() {
            *a = _mm256_fmadd_ps(_mm256_load_ps(p.add(8 * k)), xb, *a);
        }
    }
    for (k, a) in acc.iter().enumerate() {
        _mm256_storeu_ps(y.add(8 * k), *a);
    }
}

// ---------------------------------------------------------------- matvec i16

#[target_feature(enable = "avx2,fma")]
unsafe fn matvec_i16(w: &PackedI16, xq: &[i16], sx: f32, y: &mut [f32]) {
    let base = w.data.as_slice().as_ptr();
    let scale = w.scale.as_slice().as_ptr();
    for &(o0, m) in &w.chunks {
        // SAFETY: chunk weights are `m · cols` int16 at `o0 · cols`; outputs
        // and scales `m` floats at `o0`; all inside their slices.
        let (wc, yc, sc) = (base.add(o0 * w.cols), y.as_mut_ptr().add(o0), scale.add(o0));
        dispatch!(m / 8, dense_i16, wc, xq, sx, sc, yc)
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn dense_i16<const N: usize>(w: *const i16, xq: &[i16], sx: f32, scale: *const f32, y: *mut f32) {
    let mut acc = [_mm256_setzero_si256(); N];
    let mut p = w as *const __m256i;
    for pair in xq.chunks_exact(2) {
        let xb = _mm256_set1_epi32(((pair[1] as u16 as u32) << 16 | pair[0] as u16 as u32) as i32);
        for (k, a) in acc.iter_mut().enumerate() {
            *a = _mm256_add_epi32(*a, _mm256_madd_epi16(_mm256_load_si256(p.add(k)), xb));
        }
        p = p.add(N);
    }
    let sxv = _mm256_set1_ps(sx);
    for (k, a) in acc.iter().enumerate() {
        let s = _mm256_mul_ps(_mm256_loadu_ps(scale.add(8 * k)), sxv);
        let v = _mm256_mul_ps(_mm256_cvtepi32_ps(*a), s);
        _mm256_storeu_ps(y.add(8 * k), _mm256_add_ps(_mm256_loadu_ps(y.add(8 * k)), v));
    }
}

// ---------------------------------------------------------- nonlinearities

/// e^x to within a few ulp (Cephes `expf`): x = n ln 2 + f, a degree-6
/// polynomial in f, 2^n through the exponent bits. Inputs clamped to
/// [−87.3, 88.37] (results stay normal floats).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn exp_exact(x: __m256) -> __m256 {
    let x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3)), _mm256_set1_ps(88.37));
    let fx = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
        x,
        _mm256_set1_ps(std::f32::consts::LOG2_E),
    ));
    let f = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693_359_4), x);
    let f = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.121_944_4e-4), f);
    let mut y = _mm256_set1_ps(1.987_569_1e-4);
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.398_199_9e-3));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(8.333_452e-3));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(4.166_579_6e-2));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.666_666_5e-1));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(5e-1));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(f, f), _mm256_add_ps(f, _mm256_set1_ps(1.0)));
    let n = _mm256_cvtps_epi32(fx);
    let pow2n = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n, _mm256_set1_epi32(127))));
    _mm256_mul_ps(y, pow2n)
}

/// App. C.2's e^x, lane for lane the scalar `nonlinear::exp_approx`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn exp_approx(x: __m256) -> __m256 {
    let t = _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E));
    let z = _mm256_sub_ps(t, _mm256_floor_ps(t));
    let g = _mm256_add_ps(
        _mm256_set1_ps(-4.725_916_2),
        _mm256_div_ps(_mm256_set1_ps(27.728_023), _mm256_sub_ps(_mm256_set1_ps(4.842_525_7), z)),
    );
    let g = _mm256_sub_ps(g, _mm256_mul_ps(_mm256_set1_ps(1.490_129_1), z));
    let v =
        _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(t, _mm256_set1_ps(126.0)), g), _mm256_set1_ps((1u32 << 23) as f32));
    let r = _mm256_castsi256_ps(_mm256_cvttps_epi32(v));
    let keep = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(EXP_APPROX_MIN));
    _mm256_and_ps(r, keep)
}

/// ẽ(x) of App. C eq. 30 (x already clamped).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn e_tilde(x: __m256) -> __m256 {
    let ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0), x);
    let x2 = _mm256_mul_ps(x, x);
    // 1 + |x| + 0.5658 x² + 0.143 x⁴, evaluated as in the scalar code.
    let t = _mm256_add_ps(_mm256_add_ps(_mm256_set1_ps(1.0), ax), _mm256_mul_ps(_mm256_set1_ps(0.5658), x2));
    _mm256_add_ps(t, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.143), x2), x2))
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn tanh_v(x: __m256, nl: Nonlinearity) -> __m256 {
    let sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0));
    let one = _mm256_set1_ps(1.0);
    match nl {
        Nonlinearity::Exact => {
            // 1 − 2 / (e^{2|x|} + 1), sign restored.
            let ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0), x);
            let e = exp_exact(_mm256_add_ps(ax, ax));
            let t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0), _mm256_add_ps(e, one)));
            _mm256_or_ps(t, sign)
        }
        Nonlinearity::Approximate => {
            let xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-20.0)), _mm256_set1_ps(20.0));
            let e = e_tilde(xc);
            let e2 = _mm256_mul_ps(e, e);
            let t = _mm256_div_ps(_mm256_sub_ps(e2, one), _mm256_add_ps(e2, one));
            _mm256_or_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0), t), sign)
        }
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn sigmoid_v(x: __m256, nl: Nonlinearity) -> __m256 {
    let one = _mm256_set1_ps(1.0);
    match nl {
        Nonlinearity::Exact => {
            let e = exp_exact(_mm256_sub_ps(_mm256_setzero_ps(), x));
            _mm256_div_ps(one, _mm256_add_ps(one, e))
        }
        Nonlinearity::Approximate => {
            let xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-20.0)), _mm256_set1_ps(20.0));
            let e = e_tilde(xc);
            let num = _mm256_blendv_ps(one, e, _mm256_cmp_ps::<_CMP_GE_OQ>(xc, _mm256_setzero_ps()));
            _mm256_div_ps(num, _mm256_add_ps(one, e))
        }
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn gate(a: &[f32], h: &mut [f32], nl: Nonlinearity) {
    let r = h.len();
    let (ap, hp) = (a.as_ptr(), h.as_mut_ptr());
    for j in (0..r).step_by(8) {
        let t = tanh_v(_mm256_loadu_ps(ap.add(j)), nl);
        let s = sigmoid_v(_mm256_loadu_ps(ap.add(r + j)), nl);
        _mm256_storeu_ps(hp.add(j), _mm256_mul_ps(t, s));
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn qrnn_gates(a: &mut [f32], nl: Nonlinearity) {
    let h = a.len() / 3;
    let ap = a.as_mut_ptr();
    for j in (0..h).step_by(8) {
        _mm256_storeu_ps(ap.add(j), tanh_v(_mm256_loadu_ps(ap.add(j)), nl));
    }
    for j in (h..3 * h).step_by(8) {
        _mm256_storeu_ps(ap.add(j), sigmoid_v(_mm256_loadu_ps(ap.add(j)), nl));
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn softmax(logits: &[f32], p: &mut [f32], nl: Nonlinearity) {
    let n = logits.len();
    let (lp, pp) = (logits.as_ptr(), p.as_mut_ptr());
    let mut m = _mm256_set1_ps(f32::NEG_INFINITY);
    for j in (0..n).step_by(8) {
        m = _mm256_max_ps(m, _mm256_loadu_ps(lp.add(j)));
    }
    let mut lanes = [0.0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), m);
    let mv = _mm256_set1_ps(lanes.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)));
    let mut sum = _mm256_setzero_ps();
    for j in (0..n).step_by(8) {
        let d = _mm256_sub_ps(_mm256_loadu_ps(lp.add(j)), mv);
        let e = match nl {
            Nonlinearity::Exact => exp_exact(d),
            Nonlinearity::Approximate => exp_approx(d),
        };
        sum = _mm256_add_ps(sum, e);
        _mm256_storeu_ps(pp.add(j), e);
    }
    _mm256_storeu_ps(lanes.as_mut_ptr(), sum);
    let inv = _mm256_set1_ps(1.0 / lanes.iter().sum::<f32>());
    for j in (0..n).step_by(8) {
        _mm256_storeu_ps(pp.add(j), _mm256_mul_ps(_mm256_loadu_ps(pp.add(j)), inv));
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn relu_nonzero(v: &mut [f32], idx: &mut [u16]) -> usize {
    let mut count = 0;
    let vp = v.as_mut_ptr();
    let zero = _mm256_setzero_ps();
    for j in (0..v.len()).step_by(8) {
        let x = _mm256_max_ps(_mm256_loadu_ps(vp.add(j)), zero);
        _mm256_storeu_ps(vp.add(j), x);
        let mut mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(x, zero)) as u32;
        while mask != 0 {
            *idx.get_unchecked_mut(count) = (j + mask.trailing_zeros() as usize) as u16;
            count += 1;
            mask &= mask - 1;
        }
    }
    count
}

#[target_feature(enable = "avx2,fma")]
unsafe fn quantize(x: &[f32], max: i32, q: &mut [i16]) -> f32 {
    let n = x.len();
    let (xp, qp) = (x.as_ptr(), q.as_mut_ptr());
    let sign = _mm256_set1_ps(-0.0);
    let mut m = _mm256_setzero_ps();
    for j in (0..n).step_by(8) {
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(xp.add(j))));
    }
    let mut lanes = [0.0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), m);
    let amax = lanes.iter().fold(0.0f32, |a, &b| a.max(b));
    if amax == 0.0 {
        q.fill(0);
        return 0.0;
    }
    let inv = _mm256_set1_ps(max as f32 / amax);
    let (lo, hi) = (_mm256_set1_epi32(-max), _mm256_set1_epi32(max));
    let conv = |j: usize| {
        let v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xp.add(j)), inv));
        _mm256_min_epi32(_mm256_max_epi32(v, lo), hi)
    };
    let mut j = 0;
    while j + 16 <= n {
        // packs works per 128-bit lane: [a0-3 b0-3 a4-7 b4-7] → reorder.
        let packed = _mm256_packs_epi32(conv(j), conv(j + 8));
        let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
        _mm256_storeu_si256(qp.add(j) as *mut __m256i, ordered);
        j += 16;
    }
    if j < n {
        let v = conv(j);
        let packed = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        _mm_storeu_si128(qp.add(j) as *mut __m128i, packed);
    }
    amax / max as f32
}
