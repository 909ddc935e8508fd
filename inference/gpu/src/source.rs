//! Launch plans and the NVRTC sources they specialize: every size is a
//! compile-time constant of the kernel (a voice is compiled for once, when
//! it is loaded), so loops unroll and register arrays stay in registers.

use crate::error::GpuError;
use crate::model::{Sizes, A};
use crate::sampling::DrawRule;

const COMMON: &str = include_str!("../kernels/common.cuh");
const SINGLE: &str = include_str!("../kernels/wavenet_single.cu");
const SMALL: &str = include_str!("../kernels/wavenet_small.cu");
const CHAIN: &str = include_str!("../kernels/wavenet_chain.cu");
const MULTI: &str = include_str!("../kernels/wavenet_multi.cu");
const TILES: &str = include_str!("../kernels/wavenet_tiles.cu");
const COLS: &str = include_str!("../kernels/wavenet_cols.cu");
const WGMMA: &str = include_str!("../kernels/wgmma.cuh");

/// The largest power of two at most `n` (1 for 0).
fn floor_pow2(n: usize) -> usize {
    if n <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - n.leading_zeros())
    }
}

/// How kernel 1 runs one voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinglePlan {
    /// Thread blocks in the cluster, one per multiprocessor (1–16, dividing r).
    pub cluster: usize,
    /// Threads per block.
    pub threads: usize,
    /// Threads per gate row, per W_prev row, per output-layer row.
    pub tpr: usize,
    pub tpp: usize,
    pub tpz: usize,
    /// W_cur, W_prev and W_res slices held in shared memory for the launch.
    pub smem_weights: bool,
    pub bf16: bool,
    /// Dynamic shared memory per block, bytes.
    pub smem_bytes: usize,
    /// 0: `wavenet_single` (every layer split over the cluster). H > 0:
    /// `wavenet_small`, block 0 runs the whole residual chain and H helper
    /// blocks the skip and output layers (`cluster` = H + 1).
    pub helpers: usize,
    /// Warps sharing each layer's products: the gate warps of
    /// `wavenet_single` (1 or 2), the chain warps of `wavenet_small` (1, 2 or 4),
    /// the chain warps of `wavenet_chain` (r / 32 times 1, 2 or 4).
    pub chain_warps: usize,
    /// 0, or `wavenet_chain`: the layers of each chain block (the cluster
    /// is ⌈ℓ / this⌉ chain blocks, a relu block and an output block).
    pub layers_per_block: usize,
}

impl SinglePlan {
    /// A plan for `wavenet_small`: the residual chain in one block (its
    /// W_cur, W_prev and W_res in that block's shared memory), `helpers`
    /// blocks for the skip, relu and output layers.
    pub fn chain_block(
        sizes: &Sizes,
        helpers: usize,
        chain_warps: usize,
        bf16: bool,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        let (l, r, s) = (sizes.layers, sizes.residual, sizes.skip);
        let bad = |why: String| {
            Err(GpuError::Unsupported { what: format!("the chain-block kernel for {}: {why}", sizes.name()) })
        };
        check_dilations(sizes)?;
        if helpers == 0 || helpers > 15 || s % helpers != 0 || !A.is_multiple_of(helpers) {
            return bad(format!("{helpers} helper blocks (1 to 15, dividing s = {s} and {A})"));
        }
        let threads = 8 * r;
        if r != 32 || l < 2 || !bf16 {
            return bad(format!("r = {r} (the chain's lanes are its units: r = 32, bfloat16 weights)"));
        }
        if ![1, 2, 4].contains(&chain_warps) {
            return bad(format!("{chain_warps} chain warps (1, 2 or 4)"));
        }
        let (sh, ah) = (s / helpers, A / helpers);
        if threads % sh != 0
            || threads % ah != 0
            || !(threads / sh).is_power_of_two()
            || !(threads / ah).is_power_of_two()
            || threads / sh > 32
            || threads / ah > 32
        {
            return bad(format!(
                "{helpers} helpers: {sh} skip and {ah} output rows per helper do not split {threads} threads"
            ));
        }
        let wbytes = if bf16 { 2 } else { 4 };
        let gp = (chain_warps * 2 * r).max(A);
        let block0 = wbytes * (2 * l * 2 * r * r + (l - 1) * r * r)
            + 16
            + 4 * (3 * l * 2 * r + 3 * l * r + (l - 1) * r + gp + 3 * chain_warps * r + A)
            + 8;
        let helper = wbytes * (sh * l * r + ah * s + ah * A) + 16 + 4 * (l * r + s + A);
        let smem_bytes = block0.max(helper);
        if smem_bytes > smem_limit {
            return bad(format!("{smem_bytes} bytes of shared memory per block (the device allows {smem_limit})"));
        }
        Ok(Self {
            cluster: helpers + 1,
            threads,
            tpr: threads / (2 * r),
            tpp: 4,
            tpz: threads / ah,
            smem_weights: true,
            bf16,
            smem_bytes,
            helpers,
            chain_warps,
            layers_per_block: 0,
        })
    }

    /// A plan for `wavenet_chain` (r = 32 or 64, bfloat16 weights): the residual
    /// chain split by layers over ⌈ℓ / `layers_per_block`⌉ chain blocks,
    /// each holding its layers' W_cur and W_res in shared memory and handing
    /// x to the next block point to point; `chain_warps` (r / 32 × 1, 2 or 4) warps run
    /// each block's layers, the other warps its skip rows and the next
    /// sample's W_prev rows; one block takes the relu layer, one the output
    /// layer and sampling.
    pub fn chain_split(
        sizes: &Sizes,
        layers_per_block: usize,
        chain_warps: usize,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        let (l, r, s) = (sizes.layers, sizes.residual, sizes.skip);
        let bad = |why: String| {
            Err(GpuError::Unsupported { what: format!("the layer-split chain kernel for {}: {why}", sizes.name()) })
        };
        check_dilations(sizes)?;
        const NT: usize = 512;
        if (r != 64 && r != 32) || l < 2 {
            return bad(format!("r = {r} (the chain warps' lanes are 32 units: r = 32 or 64)"));
        }
        let uh = r / 32;
        if !chain_warps.is_multiple_of(uh) || ![1, 2, 4].contains(&(chain_warps / uh)) || r / (chain_warps / uh) > 32 {
            return bad(format!("{chain_warps} chain warps (r / 32 times 1, 2 or 4, at most 32 inputs each)"));
        }
        if s % 32 != 0 || !NT.is_multiple_of(s) || s > NT - 32 * chain_warps {
            return bad(format!("s = {s} (one thread per skip row among the {} others)", NT - 32 * chain_warps));
        }
        if layers_per_block == 0 {
            return bad("0 layers per chain block".into());
        }
        let chain_blocks = l.div_ceil(layers_per_block);
        let cluster = chain_blocks + 2;
        if cluster > 16 {
            return bad(format!("{cluster} blocks in the cluster (at most 16)"));
        }
        let (lpb, cq) = (layers_per_block, chain_warps / uh);
        let bars = (8 * (3 + lpb)).div_ceil(16) * 16;
        let chain = bars
            + lpb * r * r * (4 + 2)
            + 4 * (r + 2 * r * lpb + 2 * r * cq + r * cq + 2 * chain_warps * (r / cq) + 4 * r * lpb);
        let relu = bars + 4 * (chain_blocks * s + s + 2 * A + lpb * r);
        let output = bars + 4 * (A * r + 5 * A);
        let smem_bytes = chain.max(relu).max(output);
        if smem_bytes > smem_limit {
            return bad(format!(
                "{smem_bytes} bytes of shared memory per block with {lpb} layers per chain block (the device allows {smem_limit})"
            ));
        }
        Ok(Self {
            cluster,
            threads: NT,
            tpr: 1,
            tpp: 1,
            tpz: 2,
            smem_weights: true,
            bf16: true,
            smem_bytes,
            helpers: 0,
            chain_warps,
            layers_per_block,
        })
    }

    /// A plan for `sizes` on a cluster of `cluster` blocks (32·gate warps + s
    /// threads each: the gate warps, then one thread per skip output), with
    /// weights in shared memory when they fit `smem_limit` bytes per block.
    pub fn new(sizes: &Sizes, cluster: usize, bf16: bool, smem_limit: usize) -> Result<Self, GpuError> {
        // Two gate warps where r allows it: 12-13 % faster on an H200 (benchmarks/gpu.md, v21).
        let gate_warps = if sizes.residual >= 64 { 2 } else { 1 };
        Self::with_gate_warps(sizes, cluster, gate_warps, bf16, smem_limit)
    }

    /// [`SinglePlan::new`] with `gate_warps` (1 or 2) sharing each layer's
    /// gate and residual share (32·gate_warps + s threads).
    pub fn with_gate_warps(
        sizes: &Sizes,
        cluster: usize,
        gate_warps: usize,
        bf16: bool,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        let (l, r, s) = (sizes.layers, sizes.residual, sizes.skip);
        let bad = |why: String| Err(GpuError::Unsupported { what: format!("kernel 1 for {}: {why}", sizes.name()) });
        if !cluster.is_power_of_two() || cluster > 16 || r % cluster != 0 || !A.is_multiple_of(cluster) {
            return bad(format!("a cluster of {cluster} (a power of two up to 16 dividing r = {r})"));
        }
        if !r.is_power_of_two() || l < 2 || s % 32 != 0 || s < r || r < 32 {
            return bad("r must be a power of two of at least 32, s a multiple of 32 at least r, ℓ at least 2".into());
        }
        check_dilations(sizes)?;
        if ![1, 2, 4].contains(&gate_warps) || r / gate_warps < 16 {
            return bad(format!("{gate_warps} gate warps (1, 2 or 4, at least 16 inputs each)"));
        }
        let threads = 32 * gate_warps + s;
        if threads > 1024 {
            return bad(format!("{threads} threads per block"));
        }
        let u = r / cluster;
        let ac = A / cluster;
        if 2 * u > 32 {
            return bad(format!("{} gate rows per block (one warp takes at most 32)", 2 * u));
        }
        let tpr = 32 / (2 * u);
        if !(r / gate_warps).is_multiple_of(2 * tpr) {
            return bad(format!("{gate_warps} gate warps of {} inputs with {tpr} threads per row", r / gate_warps));
        }
        let tpp = (32 / (2 * u).min(32)).clamp(8, 32);
        let tpz = floor_pow2(threads / ac).min(32);
        if (s + A) / tpz > 128 {
            return bad(format!("{} output-layer weights per thread in registers (at most 128)", (s + A) / tpz));
        }
        debug_assert!((2 * u * tpp).is_multiple_of(32) && (ac * tpz).is_multiple_of(32) && r % (2 * tpr) == 0);
        let wbytes = if bf16 { 2 } else { 4 };
        let weights = wbytes * (2 * l * 2 * u * r + (l - 1) * u * r);
        let buffers = 4
            * (r + 2 * l * 2 * u + l * r + l * u + 2 * cluster * r + 2 * s + 2 * ac + 3 * A + gate_warps * 2 * u)
            + 16
            + 16;
        let smem_weights = weights + buffers <= smem_limit;
        let smem_bytes = if smem_weights { weights + buffers } else { buffers };
        if smem_bytes > smem_limit {
            return bad(format!("{smem_bytes} bytes of shared memory per block (the device allows {smem_limit})"));
        }
        Ok(Self {
            cluster,
            threads,
            tpr,
            tpp,
            tpz,
            smem_weights,
            bf16,
            smem_bytes,
            helpers: 0,
            chain_warps: gate_warps,
            layers_per_block: 0,
        })
    }

    /// How the kernel draws under direct sampling: `wavenet_chain` by the
    /// Gumbel-max rule, the others by the inverse CDF.
    pub fn draw_rule(&self) -> DrawRule {
        if self.layers_per_block > 0 {
            DrawRule::GumbelMax
        } else {
            DrawRule::InverseCdf
        }
    }

    /// The kernel's entry point.
    pub fn entry(&self) -> &'static str {
        if self.layers_per_block > 0 {
            "wavenet_chain"
        } else if self.helpers > 0 {
            "wavenet_small"
        } else {
            "wavenet_single"
        }
    }

    /// The kernel source for `sizes` under this plan.
    pub fn source(&self, sizes: &Sizes) -> String {
        if self.layers_per_block > 0 {
            let defines = format!(
                "#define NT {}\n#define CQ {}\n#define LPB {}\n",
                self.threads,
                self.chain_warps / (sizes.residual / 32),
                self.layers_per_block
            );
            return format!("{}{defines}{COMMON}\n{CHAIN}", common_defines(sizes, self.bf16));
        }
        if self.helpers > 0 {
            let s = sizes.skip;
            let defines = format!(
                "#define H {}\n#define CW {}\n#define NT {}\n#define TPP 4\n#define TPS {}\n#define TPZ {}\n",
                self.helpers,
                self.chain_warps,
                self.threads,
                self.threads / (s / self.helpers),
                self.threads / (A / self.helpers)
            );
            return format!("{}{defines}{COMMON}\n{SMALL}", common_defines(sizes, self.bf16));
        }
        let defines = format!(
            "#define C {}\n#define NT {}\n#define TPR {}\n#define TPP {}\n#define TPZ {}\n#define SMEM_W {}\n#define CW {}\n",
            self.cluster, self.threads, self.tpr, self.tpp, self.tpz, self.smem_weights as u8, self.chain_warps
        );
        format!("{}{defines}{COMMON}\n{SINGLE}", common_defines(sizes, self.bf16))
    }
}

/// Which kernel-2 source a [`MultiPlan`] compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultiKernel {
    /// `wavenet_multi.cu`: weight panels multiplied panel by panel
    /// (tensor cores or float32 FMAs).
    Panels,
    /// `wavenet_tiles.cu`: every product a tensor-core tile grid, warps
    /// owning fixed output columns (x, the gate and the skip sum in
    /// registers); bfloat16 weights only.
    Tiles,
    /// `wavenet_cols.cu` (sm_90a): the streams as the warpgroup MMA's N
    /// dimension (any multiple of 8 per block), the weights its 64-row A
    /// operand ([`MultiPlan::cols`]).
    Cols,
}

/// How kernel 2 runs one voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultiPlan {
    pub kernel: MultiKernel,
    /// Stream slots per block (a multiple of 16).
    pub streams_per_block: usize,
    pub threads: usize,
    /// Tensor cores with bfloat16 weights; float32 weights and FMAs otherwise.
    pub mma: bool,
    pub bf16: bool,
    /// Weight-panel buffers (NSTAGE − 1 panels in flight) and their bytes;
    /// for [`MultiKernel::Tiles`], the weight-chunk slots and their bytes.
    pub stages: usize,
    pub panel_bytes: usize,
    /// [`MultiKernel::Tiles`]: warps side by side along each product's
    /// outputs (the block has streams / 16 × this many warps), and the rows
    /// per weight chunk of the relu and output layers.
    pub warps_n: usize,
    pub chunk_rows: [usize; 2],
    /// [`MultiKernel::Tiles`]: activations in IEEE half precision, one
    /// tensor-core pass (weights rounded to bfloat16, then scaled into half;
    /// `MultiLayout::tiles_f16`), instead of two bfloat16 terms (hi + lo).
    /// Faster, but less exact: max |Δp| 6.8e-4 for random (20, 64, 128)
    /// weights, over the 1e-3 bound for random (40, 64, 256) weights and for
    /// trained voices of both sizes (1.9–2.1e-3, benchmarks/gpu.md); an
    /// activation beyond half's range (65504) would become infinite. Not for
    /// serving a voice the parity harness has not passed.
    pub f16: bool,
    /// [`MultiKernel::Tiles`] with warpgroup MMAs (`WGMMA = 1`, sm_90a,
    /// [`MultiPlan::tiles_wg`]).
    pub wgmma: bool,
    /// With `wgmma`: operands in the 128-byte-swizzled layout (`WG_SW`;
    /// r and s multiples of 64) instead of unswizzled core matrices. The
    /// environment variable `DV_GPU_NO_SWIZZLE` (a developer switch, as
    /// `DV_GPU_DEFINES`: `docs/environment.md`) turns it off.
    pub wg_swizzle: bool,
    pub smem_bytes: usize,
}

impl MultiPlan {
    /// `bf16` picks the tensor-core path (bfloat16 weights, split-bfloat16
    /// activations); float32 runs on FMAs.
    pub fn new(
        sizes: &Sizes,
        streams_per_block: usize,
        threads: usize,
        bf16: bool,
        stages: usize,
        panel_bytes: usize,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        let (r, s) = (sizes.residual, sizes.skip);
        let bad = |why: String| Err(GpuError::Unsupported { what: format!("kernel 2 for {}: {why}", sizes.name()) });
        check_dilations(sizes)?;
        let bs = streams_per_block;
        if bs == 0 || !bs.is_multiple_of(16) {
            return bad(format!("{bs} streams per block (a multiple of 16)"));
        }
        if !threads.is_multiple_of(32) || threads == 0 || threads > 1024 || !(bs * r).is_multiple_of(threads) {
            return bad(format!("{threads} threads per block (a multiple of 32 dividing streams × r = {})", bs * r));
        }
        if !r.is_power_of_two() || !s.is_power_of_two() || r < 16 || s < 16 {
            return bad("r and s must be powers of two, at least 16".into());
        }
        let wbytes = if bf16 { 2 } else { 4 };
        let wpad = if bf16 { 8 } else { 4 };
        // The widest panel row (K = 256 at most) must leave room for 8 rows.
        let widest = (2 * r).max(s).max(A);
        if !panel_bytes.is_multiple_of(16) || panel_bytes < 8 * (widest + wpad) * wbytes {
            return bad(format!("{panel_bytes}-byte weight panels (a multiple of 16 holding 8 rows of {widest})"));
        }
        let maxw = (2 * r).max(A).max(s);
        let floats = 3 * bs * (r + 8) + 2 * bs * (maxw + 8) + bs * (s + 8) + threads / 32 * A;
        if !(2..=8).contains(&stages) {
            return bad(format!("{stages} panel buffers (2 to 8)"));
        }
        // The tensor-core path also holds its input split into two bfloat16 terms.
        let split = if bf16 { 2 * 2 * bs * (maxw + 8) } else { 0 };
        if bf16 && !(threads / 32).is_multiple_of(bs / 16) {
            return bad(format!("{} warps do not divide into {} row tiles", threads / 32, bs / 16));
        }
        let smem_bytes = stages * panel_bytes + 4 * floats + split + 4 * 4 * bs + 8 * bs + 16;
        if smem_bytes > smem_limit {
            return bad(format!("{smem_bytes} bytes of shared memory per block (the device allows {smem_limit})"));
        }
        Ok(Self {
            kernel: MultiKernel::Panels,
            streams_per_block,
            threads,
            mma: bf16,
            bf16,
            stages,
            panel_bytes,
            warps_n: 0,
            chunk_rows: [0, 0],
            f16: false,
            wgmma: false,
            wg_swizzle: false,
            smem_bytes,
        })
    }

    /// A plan for `wavenet_tiles` (bfloat16 weights on the tensor cores):
    /// `streams_per_block` = 16 · WM stream rows, `threads` = 32 · WM · WN
    /// warps, `stages` weight-chunk slots (2 or 3) of at least
    /// `min_slot_bytes`, grown to hold a layer's W_dil and [W_res; W_skip]
    /// and 16 · WN rows of the output layer; `f16` for half-precision
    /// activations in one pass ([`MultiPlan::f16`]).
    pub fn tiles(
        sizes: &Sizes,
        streams_per_block: usize,
        threads: usize,
        stages: usize,
        min_slot_bytes: usize,
        f16: bool,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        Self::tiles_impl(sizes, streams_per_block, threads, stages, min_slot_bytes, f16, false, smem_limit)
    }

    /// [`MultiPlan::tiles`] with the products as warpgroup MMAs
    /// (`wgmma.mma_async`, compiled for sm_90a; Hopper only): 64 streams per
    /// block (one 64-row warpgroup tile), `threads` = 128 · WN, warpgroup wn
    /// taking 1/WN of each product's outputs. Buffers are unpadded (tiled
    /// into core matrices), so more fits in shared memory than with
    /// [`MultiPlan::tiles`].
    pub fn tiles_wg(
        sizes: &Sizes,
        threads: usize,
        stages: usize,
        min_slot_bytes: usize,
        f16: bool,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        Self::tiles_impl(sizes, 64, threads, stages, min_slot_bytes, f16, true, smem_limit)
    }

    #[allow(clippy::too_many_arguments)]
    fn tiles_impl(
        sizes: &Sizes,
        streams_per_block: usize,
        threads: usize,
        stages: usize,
        min_slot_bytes: usize,
        f16: bool,
        wgmma: bool,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        let (r, s) = (sizes.residual, sizes.skip);
        let bad =
            |why: String| Err(GpuError::Unsupported { what: format!("the tile kernel for {}: {why}", sizes.name()) });
        check_dilations(sizes)?;
        let bs = streams_per_block;
        if bs == 0 || !bs.is_multiple_of(16) {
            return bad(format!("{bs} streams per block (a multiple of 16)"));
        }
        let wm = bs / 16;
        if threads == 0 || threads > 1024 || !threads.is_multiple_of(32 * wm) {
            return bad(format!("{threads} threads (a multiple of 32 × {wm} row tiles, at most 1024)"));
        }
        let wn = threads / (32 * wm);
        if !wn.is_power_of_two() || wn > 16 {
            return bad(format!(
                "{wn} warps per row tile (a power of two: sampling takes 2 × that many threads per stream)"
            ));
        }
        // Every warp owns a whole number of n-tile pairs of each product
        // (ldmatrix loads B in pairs of tiles; a wgmma takes single tiles).
        let tile = if wgmma { 8 } else { 16 };
        for (what, n) in [("2r", 2 * r), ("r", r), ("s", s)] {
            if n % (tile * wn) != 0 {
                return bad(format!("{what} = {n} outputs over {wn} warps ({tile} per warp at least, in tiles of 8)"));
            }
        }
        if !(2..=3).contains(&stages) {
            return bad(format!("{stages} weight-chunk slots (2 or 3)"));
        }
        if wgmma && (bs != 64 || !(1..=4).contains(&wn)) {
            return bad(format!(
                "{bs} streams and {threads} threads for warpgroup MMAs (64 streams, 128, 256 or 512 threads)"
            ));
        }
        // The swizzled layout needs every K a multiple of 64 (and 1024-byte
        // aligned buffers); DV_GPU_NO_SWIZZLE (an experiment switch, as
        // DV_GPU_DEFINES) keeps the unswizzled core matrices.
        let wg_swizzle = wgmma && r % 64 == 0 && s % 64 == 0 && std::env::var_os("DV_GPU_NO_SWIZZLE").is_none();
        // Bytes of one 16-bit row of k inputs: padded for ldmatrix, tiled for wgmma.
        let pad = if wgmma { 0 } else { 8 };
        let row = |k: usize| (k + pad) * 2;
        let slot = [min_slot_bytes, 2 * r * row(2 * r), (r + s) * row(r), 16 * wn * row(A)]
            .into_iter()
            .max()
            .unwrap_or(0)
            .next_multiple_of(if wg_swizzle { 1024 } else { 128 });
        // The most rows of K inputs a slot holds: a multiple of 16 · WN dividing A.
        let rows = |k: usize| {
            let mut n = A;
            while n > 16 * wn && (n * row(k) > slot || !A.is_multiple_of(n)) {
                n -= 16 * wn;
            }
            n
        };
        let chunk_rows = [rows(s), rows(A)];
        // Activation buffers: one or two 16-bit terms; then the logits, the
        // warps' probabilities, 5 ints and 4 random-state words per stream.
        let terms = if f16 { 1 } else { 2 };
        // The logits' rows are padded by 4 floats with warpgroup MMAs, 8 otherwise.
        let lk = if wgmma { A + 4 } else { A + 8 };
        let reg1 = (terms * bs * row(2 * r)).max(terms * bs * row(s)).max(bs * lk * 4);
        let reg2 = (terms * bs * row(r)).max(terms * bs * row(A));
        if wg_swizzle && !reg1.is_multiple_of(1024) {
            return bad(format!("{reg1} bytes of activations (the swizzled layout keeps 1024-byte alignment)"));
        }
        // The warpgroup kernel keeps the warps' probabilities in reg2 and the
        // random states in device memory, and adds an mbarrier per slot, the
        // profile's ten sums and the residual biases.
        let (probs, states, mbars) = if wgmma {
            (0, 0, 8 * stages + 80 + 4 * sizes.layers * r)
        } else {
            (4 * (threads / 32) * A, 8 * 4 * bs, 0)
        };
        let smem_bytes = stages * slot + reg1 + reg2 + probs + 5 * 4 * bs + states + mbars;
        if smem_bytes > smem_limit {
            return bad(format!("{smem_bytes} bytes of shared memory per block (the device allows {smem_limit})"));
        }
        Ok(Self {
            kernel: MultiKernel::Tiles,
            streams_per_block,
            threads,
            mma: true,
            bf16: true,
            stages,
            panel_bytes: slot,
            warps_n: wn,
            chunk_rows,
            f16,
            wgmma,
            wg_swizzle,
            smem_bytes,
        })
    }

    /// The fastest measured plan for `sizes` on a device of compute
    /// capability `cc` (benchmarks/gpu.md): kernel 2e with 40 streams per
    /// block and 3 weight slots for r = 64 on Hopper (1.04x real time at
    /// 5,280 streams of (20, 64, 128) on an H100; 32 per block where 40 do not fit);
    /// kernel 2c (64 streams per block) for other sizes on Hopper; kernel 2b
    /// (32 per block) elsewhere.
    pub fn fastest(sizes: &Sizes, cc: (i32, i32), smem_limit: usize) -> Result<Self, GpuError> {
        if cc == (9, 0) {
            if sizes.residual == 64 && sizes.skip.is_multiple_of(64) {
                if let Ok(p) =
                    Self::cols(sizes, 40, 3, 0, smem_limit).or_else(|_| Self::cols(sizes, 32, 2, 0, smem_limit))
                {
                    return Ok(p);
                }
            }
            if let Ok(p) = Self::tiles_wg(sizes, 256, 2, 0, false, smem_limit) {
                return Ok(p);
            }
        }
        Self::tiles(sizes, 32, 256, 2, 0, false, smem_limit)
    }

    /// The plan for `streams` concurrent streams on a device of compute
    /// capability `cc` with `multiprocessors` SMs (what `dv serve --device
    /// cuda` runs for its slots): kernel 2e with the fewest streams per block,
    /// a multiple of 8 from 8 to 40, that still holds every stream in one wave
    /// of a block per multiprocessor. A block's step is a latency chain whose
    /// products, gate and residual update shorten with its streams (run v66,
    /// H100: 512 steps take 26.7 ms at 32 per block against 30.0 ms at 40), so
    /// spreading a load over every multiprocessor buys each stream headroom
    /// over real time; beyond 40 per multiprocessor, [`MultiPlan::fastest`].
    pub fn for_streams(
        sizes: &Sizes,
        cc: (i32, i32),
        smem_limit: usize,
        streams: usize,
        multiprocessors: usize,
    ) -> Result<Self, GpuError> {
        let per_block = streams.max(1).div_ceil(multiprocessors.max(1)).next_multiple_of(8);
        if cc == (9, 0) && sizes.residual == 64 && sizes.skip.is_multiple_of(64) && per_block <= 40 {
            if let Ok(p) = Self::cols(sizes, per_block, 3, 0, smem_limit)
                .or_else(|_| Self::cols(sizes, per_block, 2, 0, smem_limit))
            {
                return Ok(p);
            }
        }
        Self::fastest(sizes, cc, smem_limit)
    }

    /// A plan for `wavenet_cols` (kernel 2e; sm_90a, Hopper only): the
    /// streams are the warpgroup MMAs' N dimension, so a block holds any
    /// multiple of 8 streams up to 64 (kernel 2c: 64 exactly); 256 threads,
    /// two warpgroups; r = 64 and s a multiple of 64. `stages` weight-chunk
    /// slots (2 to 6) of at least `min_slot_bytes`, grown to hold a layer's
    /// W_dil and [W_res; W_skip] and 64 rows of the relu and output layers;
    /// the relu and output layers go in chunks of as many 64-row tiles as a
    /// slot holds.
    pub fn cols(
        sizes: &Sizes,
        streams_per_block: usize,
        stages: usize,
        min_slot_bytes: usize,
        smem_limit: usize,
    ) -> Result<Self, GpuError> {
        let (r, s, l) = (sizes.residual, sizes.skip, sizes.layers);
        let bad = |why: String| {
            Err(GpuError::Unsupported { what: format!("the column kernel (cols) for {}: {why}", sizes.name()) })
        };
        check_dilations(sizes)?;
        let bs = streams_per_block;
        if bs == 0 || !bs.is_multiple_of(8) || bs > 64 {
            return bad(format!("{bs} streams per block (a multiple of 8, at most 64)"));
        }
        if r != 64 || s % 64 != 0 {
            return bad("r = 64 and s a multiple of 64".into());
        }
        if !(2..=6).contains(&stages) {
            return bad(format!("{stages} weight-chunk slots (2 to 6)"));
        }
        let threads = 256;
        let slot = [min_slot_bytes, 2 * r * 2 * r * 2, (r + s) * r * 2, 64 * s * 2, 64 * A * 2]
            .into_iter()
            .max()
            .unwrap_or(0)
            .next_multiple_of(128);
        // The most rows of K inputs a slot holds: a multiple of 64 dividing A.
        let rows = |k: usize| {
            let mut n = A;
            while n > 64 && (n * k * 2 > slot || !A.is_multiple_of(n)) {
                n -= 64;
            }
            n
        };
        let chunk_rows = [rows(s), rows(A)];
        let lk = A + 4;
        let reg1 = (2 * bs * 2 * r * 2).max(2 * bs * s * 2).max(bs * lk * 4);
        let reg2 = (2 * bs * r * 2).max(2 * bs * A * 2).max(threads / 32 * A * 4);
        // 5 ints, one conditioning offset per stream; an mbarrier per slot, the
        // profile's ten sums, the residual biases.
        let smem_bytes = stages * slot + reg1 + reg2 + 5 * 4 * bs + 8 * stages + 8 * bs + 80 + 4 * l * r;
        if smem_bytes > smem_limit {
            return bad(format!("{smem_bytes} bytes of shared memory per block (the device allows {smem_limit})"));
        }
        Ok(Self {
            kernel: MultiKernel::Cols,
            streams_per_block: bs,
            threads,
            mma: true,
            bf16: true,
            stages,
            panel_bytes: slot,
            warps_n: 2,
            chunk_rows,
            f16: false,
            wgmma: true,
            wg_swizzle: false,
            smem_bytes,
        })
    }

    /// The NVRTC target for a device of compute capability `cc`: the
    /// architecture-specific sm_90a features (wgmma) need `compute_90a`.
    pub fn arch(&self, cc: (i32, i32)) -> String {
        format!("compute_{}{}{}", cc.0, cc.1, if self.wgmma { "a" } else { "" })
    }

    /// The kernel's entry point.
    pub fn entry(&self) -> &'static str {
        match self.kernel {
            MultiKernel::Panels => "wavenet_multi",
            MultiKernel::Tiles => "wavenet_tiles",
            MultiKernel::Cols => "wavenet_cols",
        }
    }

    pub fn source(&self, sizes: &Sizes) -> String {
        if self.kernel == MultiKernel::Cols {
            let defines = format!(
                "#define BS {}\n#define NT {}\n#define SLOT {}\n#define NSLOT {}\n#define CR1 {}\n#define CR2 {}\n\
                 #define WG_TYPES \"bf16.bf16\"\n",
                self.streams_per_block,
                self.threads,
                self.panel_bytes,
                self.stages,
                self.chunk_rows[0],
                self.chunk_rows[1]
            );
            return format!("{}{defines}{COMMON}\n{WGMMA}\n{COLS}", common_defines(sizes, true));
        }
        if self.kernel == MultiKernel::Tiles {
            let defines = format!(
                "#define BS {}\n#define NT {}\n#define WN {}\n#define SLOT {}\n#define NSLOT {}\n#define CR1 {}\n#define CR2 {}\n#define F16 {}\n#define WGMMA {}\n#define WG_SW {}\n",
                self.streams_per_block,
                self.threads,
                self.warps_n,
                self.panel_bytes,
                self.stages,
                self.chunk_rows[0],
                self.chunk_rows[1],
                self.f16 as u8,
                self.wgmma as u8,
                self.wg_swizzle as u8
            );
            let wg = if self.wgmma {
                let types = if self.f16 { "f16.f16" } else { "bf16.bf16" };
                format!("#define WG_TYPES \"{types}\"\n{WGMMA}\n")
            } else {
                String::new()
            };
            return format!("{}{defines}{COMMON}\n{wg}{TILES}", common_defines(sizes, true));
        }
        let defines = format!(
            "#define BS {}\n#define NT {}\n#define MMA {}\n#define PANEL_BYTES {}\n#define NSTAGE {}\n",
            self.streams_per_block, self.threads, self.mma as u8, self.panel_bytes, self.stages
        );
        format!("{}{defines}{COMMON}\n{MULTI}", common_defines(sizes, self.bf16))
    }
}

/// Both kernels index the history rings with `t & (d − 1)`.
fn check_dilations(sizes: &Sizes) -> Result<(), GpuError> {
    if sizes.dilations.len() != sizes.layers || !sizes.dilations.iter().all(|d| d.is_power_of_two()) {
        return Err(GpuError::Unsupported {
            what: format!("dilations {:?} (powers of two, one per layer)", sizes.dilations),
        });
    }
    Ok(())
}

fn common_defines(sizes: &Sizes, bf16: bool) -> String {
    let (offsets, rows) = sizes.history_offsets();
    let list = |v: &[usize]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    format!(
        "#define R {}\n#define S {}\n#define A {A}\n#define NL {}\n#define HOP {}\n#define DILS {{{}}}\n\
         #define HOFFS {{{}}}\n#define HIST_ROWS {rows}\n#define WBF16 {}\n",
        sizes.residual,
        sizes.skip,
        sizes.layers,
        sizes.hop,
        list(&sizes.dilations),
        list(&offsets),
        bf16 as u8
    )
}
