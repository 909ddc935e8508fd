//! The WaveNet's weights as the kernels read them: taken from a voice
//! package by `dv_synth::WavenetWeights` (FORMAT.md "WaveNet"), then laid
//! out for each kernel.
//!
//! * Kernel 1 ([`SingleLayout`]) splits every matrix by thread block: block
//!   c of a cluster of C gets gate units `[c·U, (c+1)·U)` (U = r / C) and
//!   output rows `[c·A/C, (c+1)·A/C)`, each block's slice contiguous.
//! * Kernel 2 ([`MultiLayout`]) keeps whole matrices: row-major `[out, in]`
//!   for the tensor cores, or transposed `[in, out]` for the float32 path
//!   (consecutive threads read consecutive outputs).
//!
//! Matrices may be stored as bfloat16 (round to nearest even); biases,
//! embeddings and the conditioning stay float32.

use dv_voice::Voice;

use crate::error::GpuError;

/// Output classes (8-bit mu-law).
pub const A: usize = 256;

/// Sizes of one WaveNet and its dilations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    /// ℓ
    pub layers: usize,
    /// r
    pub residual: usize,
    /// s
    pub skip: usize,
    /// Samples per conditioning frame.
    pub hop: usize,
    pub dilations: Vec<usize>,
}

impl Sizes {
    /// Where each layer's ring starts, in rows of r, and the rows in all.
    pub fn history_offsets(&self) -> (Vec<usize>, usize) {
        let mut offsets = Vec::with_capacity(self.layers);
        let mut total = 0;
        for &d in &self.dilations {
            offsets.push(total);
            total += d;
        }
        (offsets, total)
    }

    /// Conditioning values per frame: ℓ · 2r.
    pub fn conditioning_width(&self) -> usize {
        self.layers * 2 * self.residual
    }

    /// `"{ℓ}x{r}x{s}"`.
    pub fn name(&self) -> String {
        format!("{}x{}x{}", self.layers, self.residual, self.skip)
    }

    /// Multiply-adds of one sample (the arithmetic floor's numerator).
    pub fn macs_per_sample(&self) -> usize {
        let (l, r, s) = (self.layers, self.residual, self.skip);
        l * (2 * r * 2 * r + s * r) + (l - 1) * r * r + A * s + A * A
    }

    /// Bytes of the weight matrices at `bytes_per_weight`.
    pub fn weight_bytes(&self, bytes_per_weight: usize) -> usize {
        let (l, r, s) = (self.layers, self.residual, self.skip);
        bytes_per_weight * (l * (4 * r * r + s * r) + (l - 1) * r * r + A * s + A * A)
    }
}

/// The WaveNet's tensors in FORMAT.md's layout (row-major `[out, in]`).
#[derive(Debug, Clone)]
pub struct Weights {
    pub sizes: Sizes,
    pub embed_cur: Vec<f32>,   // [A, r]
    pub embed_prev: Vec<f32>,  // [A, r]
    pub embed_bias: Vec<f32>,  // [r]
    pub w_prev: Vec<Vec<f32>>, // ℓ × [2r, r]
    pub w_cur: Vec<Vec<f32>>,  // ℓ × [2r, r]
    pub gate_b: Vec<f32>,      // [ℓ, 2r]
    pub w_res: Vec<Vec<f32>>,  // (ℓ−1) × [r, r]
    pub res_b: Vec<f32>,       // [ℓ−1, r]
    pub skip_w: Vec<f32>,      // [s, ℓ·r]
    pub skip_b: Vec<f32>,      // [s]
    pub relu_w: Vec<f32>,      // [A, s]
    pub relu_b: Vec<f32>,      // [A]
    pub out_w: Vec<f32>,       // [A, A]
    pub out_b: Vec<f32>,       // [A]
}

impl Weights {
    /// Reads the WaveNet of `voice` (every tensor checked by name and shape
    /// when the voice was loaded).
    pub fn from_voice(voice: &Voice) -> Result<Self, GpuError> {
        let cfg = voice.config();
        if cfg.quantization_channels != A {
            return Err(GpuError::Unsupported {
                what: format!("{} output classes (only {A})", cfg.quantization_channels),
            });
        }
        // The tensors as dv-synth reads them (by name, shapes checked at load).
        let ww = dv_synth::WavenetWeights::new(voice)?;
        let l = ww.layers.len();
        let mut w_prev = Vec::with_capacity(l);
        let mut w_cur = Vec::with_capacity(l);
        let mut gate_b = Vec::with_capacity(l * 2 * ww.r);
        let mut w_res = Vec::with_capacity(l);
        let mut res_b = Vec::with_capacity(l * ww.r);
        let mut dilations = Vec::with_capacity(l);
        for layer in ww.layers {
            dilations.push(layer.dilation);
            w_prev.push(layer.w_prev);
            w_cur.push(layer.w_cur);
            gate_b.extend(layer.bias);
            if let Some((wr, br)) = layer.res {
                w_res.push(wr);
                res_b.extend(br);
            }
        }
        Ok(Self {
            sizes: Sizes { layers: l, residual: ww.r, skip: ww.s, hop: cfg.hop(), dilations },
            embed_cur: ww.embed_cur,
            embed_prev: ww.embed_prev,
            embed_bias: ww.embed_bias,
            w_prev,
            w_cur,
            gate_b,
            w_res,
            res_b,
            skip_w: ww.skip_w,
            skip_b: ww.skip_b,
            relu_w: ww.relu_w,
            relu_b: ww.relu_b,
            out_w: ww.out_w,
            out_b: ww.out_b,
        })
    }
}

/// float32 → bfloat16 bits, rounding to nearest even (NaN stays NaN).
pub fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// bfloat16 bits → float32 (exact).
pub fn bf16_value(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// A matrix set in float32 or bfloat16 storage.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
    /// IEEE half precision (the tile kernel's fp16 path), already scaled.
    F16(Vec<u16>),
}

impl Stored {
    pub fn new(values: Vec<f32>, bf16: bool) -> Self {
        if bf16 {
            Stored::Bf16(values.iter().map(|&v| bf16_bits(v)).collect())
        } else {
            Stored::F32(values)
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Stored::F32(v) => v.len(),
            Stored::Bf16(v) | Stored::F16(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `k` as float32 (for checks).
    pub fn get(&self, k: usize) -> f32 {
        match self {
            Stored::F32(v) => v[k],
            Stored::Bf16(v) => bf16_value(v[k]),
            Stored::F16(v) => half::f16::from_bits(v[k]).to_f32(),
        }
    }
}

/// The column of the warpgroup tile kernel's gate output (and so the input
/// of [W_res; W_skip]) that holds gate unit `j`: within each group of 8, units
/// q and q + 4 side by side (2q, 2q + 1), which one thread computes.
pub fn wg_unit_column(j: usize) -> usize {
    j / 8 * 8 + (j % 4) * 2 + (j / 4) % 2
}

/// Where the column kernel (`wavenet_cols.cu`, `PI`) stores input c of a
/// 16-aligned group: c and c + 8 side by side (0 → 0, 8 → 1, 1 → 2, …), so
/// that a thread's two accumulator rows are one 32-bit pair.
pub fn cols_input(c: usize) -> usize {
    c / 16 * 16 + (c % 8) * 2 + (c / 8) % 2
}

/// The unit and gate (0 tanh, 1 sigmoid) of row `p` of the column kernel's
/// W_dil (r = 64): in 64-row tile k, rows 16·w + g and 16·w + g + 8 are the
/// tanh and sigmoid rows of unit 32·k + 8·w + g, which one thread gates.
pub fn cols_gate_row(p: usize) -> (usize, usize) {
    let (tile, within) = (p / 64, p % 64);
    (32 * tile + 8 * (within / 16) + within % 8, (within % 16) / 8)
}

/// `mats` row-major `[rows, cols]` matrices in chunks of `chunk_rows` rows,
/// each chunk in the 128-byte-swizzled K-major layout (`SW_OFF` in
/// `kernels/wgmma.cuh`): input k = col(k') of row r of a chunk at
/// (k / 64) · chunk_rows · 64 + r · 64 + ((k / 8 % 8) ^ (r % 8)) · 8 + k % 8.
/// Cols are a multiple of 64.
pub fn sw128_tiled(
    m: &Stored,
    mats: usize,
    rows: usize,
    cols: usize,
    chunk_rows: usize,
    col: impl Fn(usize) -> usize,
) -> Stored {
    assert!(
        cols.is_multiple_of(64)
            && chunk_rows.is_multiple_of(8)
            && rows.is_multiple_of(chunk_rows)
            && m.len() == mats * rows * cols,
        "128-byte swizzle of {mats} x [{rows}, {cols}] in chunks of {chunk_rows} rows"
    );
    let index = |i: usize| {
        let (mat, rem) = (i / (rows * cols), i % (rows * cols));
        let (row, k) = (rem / cols, col(rem % cols));
        let (chunk, r) = (row / chunk_rows, row % chunk_rows);
        mat * rows * cols
            + chunk * chunk_rows * cols
            + (k / 64) * chunk_rows * 64
            + r * 64
            + (((k / 8) % 8) ^ (r % 8)) * 8
            + k % 8
    };
    permute_stored(m, index)
}

fn permute_stored(m: &Stored, index: impl Fn(usize) -> usize) -> Stored {
    fn permute<T: Copy + Default>(v: &[T], index: impl Fn(usize) -> usize) -> Vec<T> {
        let mut out = vec![T::default(); v.len()];
        for (i, &x) in v.iter().enumerate() {
            out[index(i)] = x;
        }
        out
    }
    match m {
        Stored::F32(v) => Stored::F32(permute(v, index)),
        Stored::Bf16(v) => Stored::Bf16(permute(v, index)),
        Stored::F16(v) => Stored::F16(permute(v, index)),
    }
}

/// `mats` row-major `[rows, cols]` matrices, each reordered into 8 × 8
/// core matrices: value (row, k) moves to
/// ((row / 8) · (cols / 8) + c / 8) · 64 + (row % 8) · 8 + c % 8 of its
/// matrix, c = `col(k)` (`WG_OFF` in `kernels/wgmma.cuh`; `col` permutes
/// the inputs within groups of 8). Rows and cols are multiples of 8.
pub fn core_tiled(m: &Stored, mats: usize, rows: usize, cols: usize, col: impl Fn(usize) -> usize) -> Stored {
    assert!(
        rows.is_multiple_of(8) && cols.is_multiple_of(8) && m.len() == mats * rows * cols,
        "core tiling of {mats} x [{rows}, {cols}]"
    );
    let index = |i: usize| {
        let (mat, rem) = (i / (rows * cols), i % (rows * cols));
        let (row, k) = (rem / cols, col(rem % cols));
        mat * rows * cols + ((row / 8) * (cols / 8) + k / 8) * 64 + (row % 8) * 8 + k % 8
    };
    permute_stored(m, index)
}

/// Kernel 1's per-block slices (see `kernels/wavenet_single.cu`).
#[derive(Debug, Clone)]
pub struct SingleLayout {
    /// `[C][ℓ][2U][r]`: rows q < U are tanh units c·U + q, the rest their sigmoids.
    pub wc: Stored,
    /// `[C][ℓ][2U][r]`, rows as `wc`.
    pub wp: Stored,
    /// `[C][ℓ−1][U][r]`: `wr[c][i][j][o] = W_res_i[o, c·U + j]`.
    pub wr: Stored,
    /// `[C][ℓ·U][s]`: `wsk[c][i·U + j][o] = W_skip[o, i·r + c·U + j]`.
    pub wsk: Stored,
    /// `[C][A/C][s]`: relu-layer rows of block c.
    pub wz: Stored,
    /// `[C][A/C][A]`: output-layer rows of block c.
    pub wo: Stored,
}

/// A row-major `[rows][k]` matrix (rows and k multiples of 16) as the A
/// fragments of `mma.sync.m16n8k16` over its 16 × 16 tiles: tile (mt, kt)
/// (`kt` fastest) holds, for each lane (g = lane / 4, c = lane % 4), four
/// registers q of two values each: row 16·mt + g + 8·(q & 1), columns
/// 16·kt + 2c + 8·(q >> 1) and the next (the first in the low half). So
/// element `((tile · 32 + lane) · 4 + q) · 2 + h` of the result is
/// `m[row][col + h]`, and a lane reads its fragment as one 16-byte word.
pub fn mma_fragments(m: &[f32], rows: usize, k: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * k);
    for mt in 0..rows / 16 {
        for kt in 0..k / 16 {
            for lane in 0..32 {
                for q in 0..4 {
                    let row = 16 * mt + lane / 4 + 8 * (q & 1);
                    let col = 16 * kt + 2 * (lane % 4) + 8 * (q >> 1);
                    out.push(m[row * k + col]);
                    out.push(m[row * k + col + 1]);
                }
            }
        }
    }
    out
}

/// The row of the gate matrix behind block c's slice row q.
pub fn gate_row(r: usize, u: usize, c: usize, q: usize) -> usize {
    if q < u {
        c * u + q
    } else {
        r + c * u + (q - u)
    }
}

impl SingleLayout {
    /// The layout of `wavenet_small`: W_cur as `[ℓ][k][j][2]` pairs
    /// (W_cur[j, k], W_cur[r + j, k]) so that lane j reads both gate rows
    /// of unit j in one 32-bit load; W_prev row-major; W_res transposed
    /// (`[ℓ−1][k][o]`); skip, relu and output row-major as stored.
    pub fn chain_block(w: &Weights, bf16: bool) -> Self {
        let Sizes { layers: l, residual: r, .. } = w.sizes;
        let mut wc = Vec::with_capacity(2 * l * r * r);
        for i in 0..l {
            for k in 0..r {
                for j in 0..r {
                    wc.push(w.w_cur[i][j * r + k]);
                    wc.push(w.w_cur[i][(r + j) * r + k]);
                }
            }
        }
        let wp: Vec<f32> = w.w_prev.iter().flatten().copied().collect();
        let mut wr = Vec::with_capacity(l * r * r);
        for m in &w.w_res {
            for k in 0..r {
                wr.extend((0..r).map(|o| m[o * r + k]));
            }
        }
        Self {
            wc: Stored::new(wc, bf16),
            wp: Stored::new(wp, bf16),
            wr: Stored::new(wr, bf16),
            wsk: Stored::new(w.skip_w.clone(), bf16),
            wz: Stored::new(w.relu_w.clone(), bf16),
            wo: Stored::new(w.out_w.clone(), bf16),
        }
    }

    /// The layout of `wavenet_chain`: as [`SingleLayout::chain_block`], with
    /// W_skip as `[ℓ][r/2][s][2]` pairs (W_skip[o, i·r + 2m], W_skip[o,
    /// i·r + 2m + 1]) so that the threads owning consecutive skip rows read
    /// consecutive words of one layer's columns, and the relu and output
    /// layers as `mma.sync` A fragments ([`mma_fragments`]).
    pub fn chain_split(w: &Weights) -> Self {
        let Sizes { layers: l, residual: r, skip: s, .. } = w.sizes;
        let mut wsk = Vec::with_capacity(s * l * r);
        for i in 0..l {
            for m in 0..r / 2 {
                for o in 0..s {
                    wsk.push(w.skip_w[o * l * r + i * r + 2 * m]);
                    wsk.push(w.skip_w[o * l * r + i * r + 2 * m + 1]);
                }
            }
        }
        Self {
            wsk: Stored::new(wsk, true),
            wz: Stored::new(mma_fragments(&w.relu_w, A, s), true),
            wo: Stored::new(mma_fragments(&w.out_w, A, A), true),
            ..Self::chain_block(w, true)
        }
    }

    /// Slices `w` over a cluster of `cluster` blocks (which must divide r and A).
    pub fn new(w: &Weights, cluster: usize, bf16: bool) -> Result<Self, GpuError> {
        let Sizes { layers: l, residual: r, skip: s, .. } = w.sizes;
        if cluster == 0 || r % cluster != 0 || !A.is_multiple_of(cluster) {
            return Err(GpuError::Unsupported { what: format!("a cluster of {cluster} blocks for r = {r}") });
        }
        let (u, ac) = (r / cluster, A / cluster);
        let mut wc = Vec::with_capacity(2 * l * r * r);
        let mut wp = Vec::with_capacity(2 * l * r * r);
        let mut wr = Vec::with_capacity(l * r * r);
        let mut wsk = Vec::with_capacity(s * l * r);
        let mut wz = Vec::with_capacity(A * s);
        let mut wo = Vec::with_capacity(A * A);
        for c in 0..cluster {
            for i in 0..l {
                for q in 0..2 * u {
                    let o = gate_row(r, u, c, q);
                    wc.extend_from_slice(&w.w_cur[i][o * r..(o + 1) * r]);
                    wp.extend_from_slice(&w.w_prev[i][o * r..(o + 1) * r]);
                }
            }
            for res in &w.w_res {
                for j in 0..u {
                    wr.extend((0..r).map(|o| res[o * r + c * u + j]));
                }
            }
            for i in 0..l {
                for j in 0..u {
                    let col = i * r + c * u + j;
                    wsk.extend((0..s).map(|o| w.skip_w[o * l * r + col]));
                }
            }
            wz.extend_from_slice(&w.relu_w[c * ac * s..(c + 1) * ac * s]);
            wo.extend_from_slice(&w.out_w[c * ac * A..(c + 1) * ac * A]);
        }
        Ok(Self {
            wc: Stored::new(wc, bf16),
            wp: Stored::new(wp, bf16),
            wr: Stored::new(wr, bf16),
            wsk: Stored::new(wsk, bf16),
            wz: Stored::new(wz, bf16),
            wo: Stored::new(wo, bf16),
        })
    }
}

/// Kernel 2's whole matrices (see `kernels/wavenet_multi.cu`).
#[derive(Debug, Clone)]
pub struct MultiLayout {
    /// ℓ × `[2r, 2r]` = `[W_prev | W_cur]` (transposed when not `row_major`).
    pub dil: Stored,
    /// (ℓ−1) × `[r, r]`.
    pub res: Stored,
    /// ℓ × `[s, r]`: layer i's columns of the skip matrix.
    pub skip: Stored,
    /// `[A, s]`.
    pub relu: Stored,
    /// `[A, A]`.
    pub out: Stored,
}

/// `m` (`[rows, cols]` row-major) as is, or transposed to `[cols, rows]`.
fn oriented(m: &[f32], rows: usize, cols: usize, row_major: bool, dst: &mut Vec<f32>) {
    if row_major {
        dst.extend_from_slice(&m[..rows * cols]);
    } else {
        for k in 0..cols {
            dst.extend((0..rows).map(|o| m[o * cols + k]));
        }
    }
}

impl MultiLayout {
    /// The tile kernel's layout (`wavenet_tiles.cu`), row-major `[out, in]`:
    /// `dil` holds each layer's `[W_prev | W_cur]` rows interleaved as
    /// tanh unit 0, sigmoid unit 0, tanh unit 1, … (so a thread's pair of
    /// product columns is one unit's gate); `res` holds per layer
    /// `[W_res; W_skip_i]` (`[r + s, r]`, the last layer's residual rows
    /// zero: it has none); `skip` is unused (one zero).
    pub fn tiles(w: &Weights, bf16: bool) -> Self {
        let Sizes { layers: l, residual: r, skip: s, .. } = w.sizes;
        let mut dil = Vec::with_capacity(4 * l * r * r);
        let mut rs = Vec::with_capacity(l * (r + s) * r);
        for i in 0..l {
            for j in 0..r {
                for o in [j, r + j] {
                    dil.extend_from_slice(&w.w_prev[i][o * r..(o + 1) * r]);
                    dil.extend_from_slice(&w.w_cur[i][o * r..(o + 1) * r]);
                }
            }
            match w.w_res.get(i) {
                Some(m) => rs.extend_from_slice(&m[..r * r]),
                None => rs.extend(std::iter::repeat_n(0.0, r * r)),
            }
            for o in 0..s {
                rs.extend_from_slice(&w.skip_w[o * l * r + i * r..o * l * r + (i + 1) * r]);
            }
        }
        Self {
            dil: Stored::new(dil, bf16),
            res: Stored::new(rs, bf16),
            skip: Stored::new(vec![0.0], bf16),
            relu: Stored::new(w.relu_w[..A * s].to_vec(), bf16),
            out: Stored::new(w.out_w[..A * A].to_vec(), bf16),
        }
    }

    /// The tile layout for the fp16 path: every weight rounded to bfloat16
    /// (the model the kernel is checked against), then scaled by a power of
    /// two per matrix set (all W_dil, all [W_res; W_skip], W_relu, W_out)
    /// so the largest magnitude lies in [2^14, 2^15), then stored in IEEE
    /// half precision. A bfloat16 value in half's normal range is exact
    /// there (8 significant bits of 11), so only weights below 2^-28 of
    /// their set's largest change (they become subnormal or zero). Returns
    /// the layout and the four scales the kernel multiplies its sums by.
    pub fn tiles_f16(w: &Weights) -> (Self, [f32; 4]) {
        let t = Self::tiles(w, false);
        let mut scales = [1.0f32; 4];
        let mut half = |m: &Stored, k: usize| -> Stored {
            let v: Vec<f32> = (0..m.len()).map(|i| bf16_value(bf16_bits(m.get(i)))).collect();
            let max = v.iter().fold(0.0f32, |a, &x| a.max(x.abs()));
            let e = if max > 0.0 && max.is_finite() { 14 - max.log2().floor() as i32 } else { 0 };
            let up = 2f32.powi(e);
            scales[k] = 2f32.powi(-e);
            Stored::F16(v.iter().map(|&x| half::f16::from_f32(x * up).to_bits()).collect())
        };
        let lay = Self {
            dil: half(&t.dil, 0),
            res: half(&t.res, 1),
            skip: Stored::F16(vec![0]),
            relu: half(&t.relu, 2),
            out: half(&t.out, 3),
        };
        (lay, scales)
    }

    /// The tile layout (bfloat16, or the fp16 path's with its scales) with
    /// every matrix stored as the warpgroup MMA reads it (`WGMMA = 1`,
    /// `kernels/wgmma.cuh`): rows of K inputs tiled into 8 × 8 core
    /// matrices of 64 contiguous values, row group by row group, each row
    /// group's core matrices in input order. Each matrix (W_dil and
    /// [W_res; W_skip] of each layer, W_relu, W_out) is tiled on its own, so
    /// a chunk of whole 8-row groups is a contiguous copy. [W_res; W_skip]'s
    /// inputs (gate units) are reordered by [`wg_unit_column`], as the kernel
    /// stores the gate's outputs.
    ///
    /// `swizzle`: the relu and output layers' chunk rows when the plan uses
    /// the 128-byte-swizzled layout instead (`WG_SW`, [`sw128_tiled`]; every
    /// chunk swizzled on its own).
    pub fn tiles_wg(w: &Weights, f16: bool, swizzle: Option<[usize; 2]>) -> (Self, [f32; 4]) {
        let Sizes { layers: l, residual: r, skip: s, .. } = w.sizes;
        let (t, sc) = if f16 { Self::tiles_f16(w) } else { (Self::tiles(w, true), [1.0; 4]) };
        let lay = match swizzle {
            None => Self {
                dil: core_tiled(&t.dil, l, 2 * r, 2 * r, |k| k),
                res: core_tiled(&t.res, l, r + s, r, wg_unit_column),
                skip: t.skip,
                relu: core_tiled(&t.relu, 1, A, s, |k| k),
                out: core_tiled(&t.out, 1, A, A, |k| k),
            },
            Some([cr1, cr2]) => Self {
                dil: sw128_tiled(&t.dil, l, 2 * r, 2 * r, 2 * r, |k| k),
                res: sw128_tiled(&t.res, l, r + s, r, r + s, wg_unit_column),
                skip: t.skip,
                relu: sw128_tiled(&t.relu, 1, A, s, cr1, |k| k),
                out: sw128_tiled(&t.out, 1, A, A, cr2, |k| k),
            },
        };
        (lay, sc)
    }

    /// The conditioning pool (`[frames, ℓ·2r]`, each layer's tanh terms then
    /// its sigmoid terms) as the warpgroup tile kernel reads it with `warps_n`
    /// warpgroups: the gate biases added, and per layer each thread's
    /// (tanh, sigmoid) pairs of units j = (wn·T + t)·4 + tq, t < T = 2r / 8 /
    /// warps_n, adjacent at ((wn·4 + tq)·T + t)·2.
    pub fn tiles_wg_pool(w: &Weights, pool: &[f32], warps_n: usize) -> Vec<f32> {
        let Sizes { layers: l, residual: r, .. } = w.sizes;
        let width = l * 2 * r;
        let nt = 2 * r / 8 / warps_n;
        let mut out = vec![0.0; pool.len()];
        for (src, dst) in pool.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
            for i in 0..l {
                for wn in 0..warps_n {
                    for tq in 0..4 {
                        for t in 0..nt {
                            let j = (wn * nt + t) * 4 + tq;
                            for g in 0..2 {
                                let k = i * 2 * r + g * r + j;
                                dst[i * 2 * r + ((wn * 4 + tq) * nt + t) * 2 + g] = src[k] + w.gate_b[k];
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The column kernel's layout (`wavenet_cols.cu`, r = 64), every
    /// matrix core-matrix tiled as a warpgroup MMA's K-major A operand
    /// ([`core_tiled`]): W_dil's rows `[W_prev | W_cur]` ordered by
    /// [`cols_gate_row`] and its inputs (x(t − d), then x(t)) permuted by
    /// [`cols_input`]; per layer `[W_res; W_skip_i]` (the last layer's
    /// residual rows zero) on the gate units in order; W_relu and W_out with
    /// their inputs permuted by [`cols_input`].
    pub fn cols(w: &Weights) -> Self {
        let Sizes { layers: l, residual: r, skip: s, .. } = w.sizes;
        assert_eq!(r, 64, "the column kernel takes r = 64");
        let t = Self::tiles(w, true);
        let mut dil = Vec::with_capacity(4 * l * r * r);
        for i in 0..l {
            for p in 0..2 * r {
                let (unit, gate) = cols_gate_row(p);
                let o = gate * r + unit;
                dil.extend_from_slice(&w.w_prev[i][o * r..(o + 1) * r]);
                dil.extend_from_slice(&w.w_cur[i][o * r..(o + 1) * r]);
            }
        }
        let half = |k: usize| if k < r { cols_input(k) } else { r + cols_input(k - r) };
        Self {
            dil: core_tiled(&Stored::new(dil, true), l, 2 * r, 2 * r, half),
            res: core_tiled(&t.res, l, r + s, r, |k| k),
            skip: t.skip,
            relu: core_tiled(&t.relu, 1, A, s, cols_input),
            out: core_tiled(&t.out, 1, A, A, cols_input),
        }
    }

    /// The conditioning pool (`[frames, ℓ·2r]`, each layer's tanh terms then
    /// its sigmoid terms) as the column kernel reads it: the gate biases
    /// added, and per layer unit j's (tanh, sigmoid) pair at 2j, 2j + 1.
    pub fn cols_pool(w: &Weights, pool: &[f32]) -> Vec<f32> {
        let Sizes { layers: l, residual: r, .. } = w.sizes;
        let width = l * 2 * r;
        let mut out = vec![0.0; pool.len()];
        for (src, dst) in pool.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
            for i in 0..l {
                for j in 0..r {
                    for g in 0..2 {
                        let k = i * 2 * r + g * r + j;
                        dst[i * 2 * r + 2 * j + g] = src[k] + w.gate_b[k];
                    }
                }
            }
        }
        out
    }

    /// `row_major` for the tensor-core path, transposed for the float32 one.
    pub fn new(w: &Weights, row_major: bool, bf16: bool) -> Self {
        let Sizes { layers: l, residual: r, skip: s, .. } = w.sizes;
        let mut dil = Vec::with_capacity(4 * l * r * r);
        let mut res = Vec::with_capacity(l * r * r);
        let mut skip = Vec::with_capacity(l * s * r);
        for i in 0..l {
            let mut joined = Vec::with_capacity(4 * r * r); // [2r, 2r]
            for o in 0..2 * r {
                joined.extend_from_slice(&w.w_prev[i][o * r..(o + 1) * r]);
                joined.extend_from_slice(&w.w_cur[i][o * r..(o + 1) * r]);
            }
            oriented(&joined, 2 * r, 2 * r, row_major, &mut dil);
            let mut cols = Vec::with_capacity(s * r); // [s, r]
            for o in 0..s {
                cols.extend_from_slice(&w.skip_w[o * l * r + i * r..o * l * r + (i + 1) * r]);
            }
            oriented(&cols, s, r, row_major, &mut skip);
        }
        for m in &w.w_res {
            oriented(m, r, r, row_major, &mut res);
        }
        let mut relu = Vec::with_capacity(A * s);
        oriented(&w.relu_w, A, s, row_major, &mut relu);
        let mut out = Vec::with_capacity(A * A);
        oriented(&w.out_w, A, A, row_major, &mut out);
        Self {
            dil: Stored::new(dil, bf16),
            res: Stored::new(res, bf16),
            skip: Stored::new(skip, bf16),
            relu: Stored::new(relu, bf16),
            out: Stored::new(out, bf16),
        }
    }
}

/// The conditioning network (`cond.*`, FORMAT.md) as the GPU runs it
/// (`kernels/conditioning.cu`): per QRNN layer the four gate matrices
/// stacked `[fwd.w_cur; fwd.w_prev; bwd.w_cur; bwd.w_prev]` (`[12H, D]`, as
/// `dv_synth::ConditioningNetwork` stacks them) and the biases `[fwd; bwd]`
/// (`[6H]`); the projection with its inputs in the layers' output order
/// (`[z_fwd; z_bwd]`, the interleaving folded in) and its outputs in a
/// multi-stream plan's pool order ([`crate::MultiStream::pool_rows`]), the
/// gate biases the pool carries added to its bias. A frame's projected row
/// is then exactly what the plan's kernel reads from its pool.
#[derive(Debug, Clone)]
pub struct CondLayout {
    /// H, and the width of the first layer's input.
    pub hidden: usize,
    pub input_dim: usize,
    /// Per layer: `[12H, D_k]` and `[6H]`.
    pub gates: Vec<Vec<f32>>,
    pub biases: Vec<Vec<f32>>,
    /// The width of u, the projection's input: 2H (the input width without
    /// QRNN layers).
    pub u_width: usize,
    /// `[ℓ·2r, u_width]` in pool order, and its bias.
    pub proj: Vec<f32>,
    pub proj_b: Vec<f32>,
}

impl CondLayout {
    /// The `cond.*` tensors of `voice` for `plan`'s pool (`w` the voice's
    /// WaveNet, for the pool's order and gate biases).
    pub fn new(voice: &Voice, plan: &crate::MultiPlan, w: &Weights) -> Result<Self, GpuError> {
        let c = voice.config().conditioning;
        let h = c.hidden;
        let t = |name: String| -> Result<Vec<f32>, GpuError> { Ok(voice.tensor(&name)?.data().to_vec()) };
        let mut gates = Vec::with_capacity(c.qrnn_layers);
        let mut biases = Vec::with_capacity(c.qrnn_layers);
        for k in 0..c.qrnn_layers {
            let mut g = Vec::new();
            for d in ["fwd", "bwd"] {
                g.extend(t(format!("cond.qrnn.{k}.{d}.w_cur"))?);
                g.extend(t(format!("cond.qrnn.{k}.{d}.w_prev"))?);
            }
            let d_k = if k == 0 { c.input_dim } else { 2 * h };
            if g.len() != 12 * h * d_k {
                return Err(GpuError::Shape { what: "cond.qrnn gate weights", expected: 12 * h * d_k, got: g.len() });
            }
            gates.push(g);
            let mut b = t(format!("cond.qrnn.{k}.fwd.bias"))?;
            b.extend(t(format!("cond.qrnn.{k}.bwd.bias"))?);
            biases.push(b);
        }
        let u_width = if c.qrnn_layers == 0 { c.input_dim } else { 2 * h };
        let out = w.sizes.conditioning_width();
        let proj_w = t("cond.proj.weight".into())?;
        let proj_bias = t("cond.proj.bias".into())?;
        if proj_w.len() != out * u_width || proj_bias.len() != out {
            return Err(GpuError::Shape { what: "cond.proj.weight", expected: out * u_width, got: proj_w.len() });
        }
        // The pool's column order (a permutation, read off index codes) and the bias it adds.
        let unbiased = Weights { gate_b: vec![0.0; w.gate_b.len()], ..w.clone() };
        let codes: Vec<f32> = (0..out).map(|k| k as f32).collect();
        let order = crate::MultiStream::pool_rows(plan, &unbiased, &codes);
        let added = crate::MultiStream::pool_rows(plan, w, &vec![0.0; out]);
        let mut proj = Vec::with_capacity(out * u_width);
        let mut proj_b = Vec::with_capacity(out);
        for (p, &k) in order.iter().enumerate() {
            let k = k as usize;
            let row = &proj_w[k * u_width..(k + 1) * u_width];
            if c.qrnn_layers == 0 {
                proj.extend_from_slice(row);
            } else {
                // u[2j] = z_fwd[j], u[2j + 1] = z_bwd[j]: column j meets z_fwd[j], H + j z_bwd[j].
                proj.extend((0..h).map(|j| row[2 * j]));
                proj.extend((0..h).map(|j| row[2 * j + 1]));
            }
            proj_b.push(proj_bias[k] + added[p]);
        }
        Ok(Self { hidden: h, input_dim: c.input_dim, gates, biases, u_width, proj, proj_b })
    }

    /// u, the last layer's output (`[F, u_width]`), for `features` (`[F,
    /// input_dim]`), computed as the kernels compute it (float32 products
    /// and gates, the cell state in float64): the CPU reference of
    /// `cond_gemm` and `cond_fo_pool`.
    pub fn u_reference(&self, features: &[f32]) -> Vec<f32> {
        let h = self.hidden;
        let mut x = features.to_vec();
        for (g, b) in self.gates.iter().zip(&self.biases) {
            let d = g.len() / (12 * h);
            let f = x.len() / d;
            let prod: Vec<f32> = (0..f)
                .flat_map(|t| {
                    let xr = &x[t * d..(t + 1) * d];
                    (0..12 * h)
                        .map(move |n| xr.iter().zip(&g[n * d..(n + 1) * d]).fold(0.0f32, |s, (a, w)| a.mul_add(*w, s)))
                })
                .collect();
            let mut y = vec![0.0f32; f * 2 * h];
            for dir in 0..2 {
                let at = 6 * h * dir;
                for j in 0..h {
                    let mut c = 0.0f64;
                    for step in 0..f {
                        let t = if dir == 1 { f - 1 - step } else { step };
                        let cur = &prod[t * 12 * h + at..];
                        let mut a = [0usize, h, 2 * h].map(|q| b[3 * h * dir + q + j] + cur[q + j]);
                        if step > 0 {
                            let tp = if dir == 1 { t + 1 } else { t - 1 };
                            let prev = &prod[tp * 12 * h + at + 3 * h..];
                            for (q, av) in a.iter_mut().enumerate() {
                                *av += prev[q * h + j];
                            }
                        }
                        let sig = |v: f32| 1.0 / (1.0 + (-v).exp());
                        let (cand, o, fg) = (a[0].tanh() as f64, sig(a[1]) as f64, sig(a[2]) as f64);
                        c = fg * c + (1.0 - fg) * cand;
                        y[t * 2 * h + dir * h + j] = (o * c) as f32;
                    }
                }
            }
            x = y;
        }
        x
    }

    /// The projected rows (`[F, ℓ·2r]` in pool order) of u: the CPU
    /// reference of `cond_project`.
    pub fn project_reference(&self, u: &[f32]) -> Vec<f32> {
        let k = self.u_width;
        u.chunks_exact(k)
            .flat_map(|ur| {
                self.proj
                    .chunks_exact(k)
                    .zip(&self.proj_b)
                    .map(move |(w, &b)| b + ur.iter().zip(w).fold(0.0f32, |s, (a, w)| a.mul_add(*w, s)))
            })
            .collect()
    }
}
