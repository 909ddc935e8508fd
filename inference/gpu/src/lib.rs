//! WaveNet sampling on CUDA GPUs (Deep Voice §5.2, App. D; issue 9), over
//! the same voice packages as the CPU sampler (`dv_synth`), whose scalar
//! reference is the oracle of both kernels ([`parity`]).
//!
//! # Two kinds of kernel
//!
//! 1. [`SingleStream`] (`kernels/wavenet_single.cu`): one utterance in one
//!    launch, lowest latency. A thread-block cluster of C blocks (one per
//!    multiprocessor, C ≤ 16 on Hopper) splits every layer's gate units,
//!    one or two gate warps per block ([`SinglePlan::with_gate_warps`]);
//!    each layer's residual sum crosses blocks through distributed shared
//!    memory behind one cluster barrier, ℓ + 2 barriers per sample. The
//!    W_cur/W_prev/W_res slices stay in shared memory for the whole launch
//!    when they fit ([`SinglePlan::smem_weights`]); every W_prev product
//!    is taken off the layer chain (x_i(t − d_i) is known before the sample
//!    starts). Needs compute capability 9.0.
//!    For r = 32 in bfloat16 (Table 2's (20, 32, 128)) the chain fits one
//!    SM: [`SinglePlan::chain_block`] selects `kernels/wavenet_small.cu`,
//!    where one to four warps run the whole chain (lane j = unit j, each
//!    product split over the warps by input), the block's other warps
//!    compute the next sample's W_prev rows meanwhile, and helper blocks
//!    take the skip and output layers: 4 cluster barriers per sample.
//!    For r = 64 in bfloat16, [`SinglePlan::chain_split`] selects
//!    `kernels/wavenet_chain.cu`: the chain split by layers over several
//!    blocks, each holding its layers' W_cur and W_res, x handed from block
//!    to block by `st.async` on the next block's `mbarrier` (no cluster
//!    barrier per sample), one block for the relu layer and one for the
//!    output layer and sampling; those two layers run on `mma.sync` with
//!    their weights in registers, and the output block draws by the
//!    Gumbel-max rule ([`sampling::DrawRule`]: the softmax's distribution,
//!    other samples for a seed than the inverse CDF of the CPU sampler).
//! 2. [`MultiStream`] (`kernels/wavenet_multi.cu`): many independent
//!    streams, highest throughput. Each block owns a group of stream slots
//!    and advances them one sample per step with no inter-block
//!    synchronization; each step's products are `[streams, K] × [K, N]`
//!    matrix products (tensor cores with bfloat16 weights and split hi + lo
//!    bfloat16 activations, float32 accumulation; or float32 FMAs), the
//!    weights streamed through shared memory in `cp.async` panels.
//!    [`MultiPlan::tiles`] selects `kernels/wavenet_tiles.cu` instead (the
//!    faster one, bfloat16 weights only): every product a tensor-core tile
//!    grid whose warps own fixed output columns (`ldmatrix` fragments, the
//!    gate, the residual stream and the skip sum in registers), weights in
//!    chunks through 2–3 shared-memory slots, activations as two bfloat16
//!    terms or, with `f16`, in half precision. On Hopper (sm_90),
//!    [`MultiPlan::tiles_wg`] is the fastest: the same kernel with every
//!    product a warpgroup MMA (`wgmma`, both operands from shared memory
//!    tiled into core matrices, 64 streams per block), weight chunks by TMA
//!    bulk copies, and the conditioning pool and history rings in per-thread
//!    vector order. [`MultiPlan::cols`] (`kernels/wavenet_cols.cu`, r = 64)
//!    swaps the MMA operands: the weights are the 64-row A operand and a
//!    block's streams the N dimension, so a block holds any multiple of 8
//!    streams (40 by [`MultiPlan::fastest`]); it is the one whose streams
//!    each run in real time at 5,000 streams of (20, 64, 128) on an H100.
//!    Slot state stays on the device between
//!    launches, so streams join ([`MultiStream::start`]) and leave (reaching
//!    their length) between launches. For serving,
//!    [`MultiStream::with_windows`] gives each slot a window of conditioning
//!    rows refilled before every launch ([`MultiStream::set_windows`]), so
//!    streams of any text join without a pool holding all of them.
//!
//! # Units and invariants
//!
//! Audio is 8-bit mu-law at the voice's rate (16384 Hz), sample n reads
//! conditioning row n / hop (hop = 64), y(t) = 128 and every history is 0
//! before t = 0, exactly as FORMAT.md and the CPU sampler. Direct, mode and
//! temperature sampling use the CPU's xoshiro256++ stream
//! ([`sampling::rng_state`]), one uniform per sample. Weight matrices are
//! float32 or bfloat16 ([`model::Stored`]); biases, embeddings, activations
//! and sums are float32.
//!
//! Figures, floors and every variant tried, measured on an H200:
//! `benchmarks/gpu.md`.
//!
//! # Without a GPU
//!
//! The driver and NVRTC are loaded with `dlopen` when first used, so this
//! crate builds everywhere; the layouts, plans, sources and sampling state
//! are plain host code tested in CI, and NVRTC compiles both kernels there
//! whenever its library can be loaded (it needs no GPU).

mod bench;
mod cuda;
pub mod emulate;
mod error;
pub mod model;
pub mod parity;
pub mod sampling;
mod source;

pub use bench::{floor, time_multi, time_single, Floor, MultiTiming, SingleTiming, SAMPLE_RATE};
pub use cuda::{
    compile_ptx, driver_available, nvrtc_available, window_frames, GpuDevice, MultiRun, MultiStream, PipeTimes, Pipelined, SingleRun,
    SingleStream, StreamStart, CHAIN_CLOCK, PROFILE_PHASES, PROFILE_PHASES_MULTI, PROFILE_PHASES_SMALL, PROFILE_PHASES_TILES,
};
pub use error::GpuError;
pub use model::{Sizes, Weights};
pub use sampling::GpuSampling;
pub use source::{MultiKernel, MultiPlan, SinglePlan};
