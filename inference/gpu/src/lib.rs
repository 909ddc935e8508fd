//! WaveNet sampling on CUDA GPUs (Deep Voice §5.2, App. D), over the same
//! voice packages as the CPU sampler (`dv_synth`), whose scalar reference is
//! the oracle of every kernel here ([`parity`]).
//!
//! # The kernels
//!
//! Six CUDA sources in `kernels/` (with `common.cuh` and `wgmma.cuh`), in
//! two families. A plan ([`SinglePlan`], [`MultiPlan`]) picks the source
//! and its shape from the voice's sizes and the device; the source is
//! specialised to the plan (sizes and layout as constants) and compiled for
//! that voice at run time.
//!
//! **Kernel 1: one utterance per launch** ([`SingleStream`]; lowest latency;
//! `dv synth --device cuda`). The whole utterance is one launch on a
//! thread-block cluster (compute capability 9.0); the residual chain is the
//! critical path, and the three sources split it differently:
//!
//! | source | plan | how the chain is split |
//! | --- | --- | --- |
//! | `wavenet_single.cu` | [`SinglePlan::new`] | every layer's gate units split over the cluster's C blocks (C ≤ 16), one or two gate warps per block; each layer's residual sum crosses blocks through distributed shared memory behind a cluster barrier (ℓ + 2 barriers per sample); any size, float32 or bfloat16 weights |
//! | `wavenet_small.cu` | [`SinglePlan::chain_block`] | the whole chain in one block (r = 32, bfloat16), helper blocks for the skip, relu and output layers: 4 cluster barriers per sample |
//! | `wavenet_chain.cu` | [`SinglePlan::chain_split`] | the chain split by layers over chain blocks, `x` handed from block to block by `st.async` on the next block's `mbarrier` (no cluster barrier per sample); one block for the relu layer, one for the output layer and sampling (r = 32 or 64, bfloat16) |
//!
//! Every kernel-1 variant takes W_prev·x(t − d) off the chain (it is known
//! before the sample starts) and keeps the weights in shared memory when
//! they fit. `wavenet_chain` draws by the Gumbel-max rule
//! ([`sampling::DrawRule`]): the softmax's distribution, but other samples
//! for a seed than the CPU's inverse CDF.
//!
//! **Kernel 2: many streams** ([`MultiStream`]; highest throughput;
//! `dv serve --device cuda`). Each block owns a group of stream slots and
//! advances them one sample per step with no synchronisation between
//! blocks; each step's products are `[streams, K] × [K, N]` matrix
//! products on the tensor cores (bfloat16 weights; activations as two
//! bfloat16 terms or in half precision; float32 sums), weights streamed
//! through shared memory:
//!
//! | source | plan ([`MultiKernel`]) | products |
//! | --- | --- | --- |
//! | `wavenet_multi.cu` | [`MultiPlan::new`] (`Panels`) | weight panels by `cp.async`, panel by panel; float32 FMAs or tensor cores |
//! | `wavenet_tiles.cu` | [`MultiPlan::tiles`], [`MultiPlan::tiles_wg`] (`Tiles`) | tile grids whose warps own fixed output columns (`mma.sync`), or on sm_90a warpgroup MMAs (`wgmma`, 64 streams per block, weight chunks by TMA) |
//! | `wavenet_cols.cu` | [`MultiPlan::cols`] (`Cols`) | warpgroup MMAs with the weights as the 64-row A operand and the streams as N: any multiple of 8 streams per block (r = 64, sm_90a) |
//!
//! [`MultiPlan::fastest`] is the measured best for a size and device (the
//! most real-time streams); [`MultiPlan::for_streams`] spreads a given load
//! over every multiprocessor with the fewest streams per block (kernel 2e,
//! Hopper, r = 64; otherwise the fastest plan): what a server runs, each
//! stream getting the headroom the load leaves.
//! Slot state stays on the device between launches, so streams join
//! ([`MultiStream::start`]) and leave (at their length) between launches;
//! [`MultiStream::with_windows`] gives each slot a window of conditioning
//! rows refilled before each launch ([`MultiStream::set_windows`]), so
//! streams of any text join without a pool holding all of them;
//! [`Pipelined`] does the same with every host-side cost of a launch
//! overlapped with the launch before it (what `dv serve --device cuda`
//! runs).
//!
//! **The conditioning network** ([`GpuConditioner`], `kernels/conditioning.cu`):
//! a server's thousands of streams need more of it than a host's cores give,
//! so its QRNN layers run here, batched over the sentences that arrive
//! together, and leave each sentence's u rows in a device arena; each
//! launch's windows are projected from the arena into the pool on the
//! device ([`Pipelined::submit_projected`], [`Projector`]). [`CondLayout`]
//! holds the weights as the kernels read them and their CPU reference.
//!
//! # Units and invariants
//!
//! Audio is 8-bit mu-law at the voice's rate (16384 Hz); sample n reads
//! conditioning row n / hop (hop = 64); y(t) = 128 and every history is 0
//! before t = 0, as in `inference/voice/FORMAT.md` and the CPU sampler.
//! Direct, mode, temperature and voiced-only temperature sampling continue
//! the CPU's xoshiro256++ stream ([`sampling::rng_state`]), one uniform per
//! sample, the samples of a lead (fed as silence) included, where the CPU
//! draws none for them: after a lead the two streams are offset; voiced-only temperature reads one voicing byte per conditioning
//! row (`step_mode` in `kernels/common.cuh`), temperature where it is set
//! and direct sampling elsewhere, as `dv_synth::Sampling::for_frame`. Weight
//! matrices are float32 or bfloat16 ([`model::Stored`]); biases,
//! embeddings, sums and the residual stream are float32.
//!
//! # Dynamic loading
//!
//! `cudarc` loads the driver (`libcuda.so.1`) and NVRTC (`libnvrtc.so.13`)
//! with `dlopen` on first use, so this crate builds and links on any
//! machine and nothing here needs the CUDA toolkit at build time.
//! [`driver_available`] and [`nvrtc_available`] say whether each loads;
//! without them every entry point returns [`GpuError::CudaUnavailable`]
//! with the reason. The kernels are compiled by NVRTC to PTX
//! ([`compile_ptx`]) for the device's architecture (`compute_90`;
//! `compute_90a` for the warpgroup-MMA kernels) when a plan is opened on
//! it. All `unsafe` (launches, device memory) is in the `cuda` module.
//!
//! # CPU emulation
//!
//! [`emulate`] is a CPU model of the tile kernels' activation rounding: the
//! scalar reference step with the same four roundings the kernel makes. Its
//! [`emulate::drift`] predicts, without a GPU, how far a voice's
//! distributions will be from the reference in bfloat16 or half precision,
//! which is what the device's parity check then measures.
//!
//! # What is tested where
//!
//! - In CI (no GPU; `cargo test -p dv-gpu`): the weight layouts hold exactly
//!   the voice's weights where each kernel indexes them; the plans keep
//!   each kernel's invariants and refuse what it cannot run; serving
//!   windows hold every frame a launch reads; the conditioning layout's CPU
//!   reference equals `dv_synth`'s network in the pool's order; NVRTC compiles every source
//!   for every Table 2 size and variant (NVRTC from the torch wheel loads
//!   without a GPU), and a broken source is an error carrying the compiler
//!   log; the sampling modes and both draw rules; the emulation equals
//!   `dv_synth`'s scalar reference when it does not round.
//! - Everywhere, the conformance suite (`tests/it/conformance.rs`, one
//!   harness with `dv-align` and `dv-fused`): the CPU samplers always, and
//!   kernel 1 (f32, bf16, chain) and kernel 2 through [`parity`] where a
//!   device opens (else reported skipped); on the GPU machine as the test
//!   binary built here (`benchmarks/conformance/gpu.sh`).
//! - On the device (the example `gpu_bench gpu-single`, `gpu_bench gpu-streams`, and
//!   `benchmarks/gpu/*.sh`): [`parity`] with the CPU scalar reference,
//!   teacher-forced distributions (max |Δp|) and free-running mode samples
//!   (identical with float32 weights), for every plan, before any timing is
//!   taken; a plan that fails parity is not timed and fails the command
//!   (`--force-timing` times it anyway, for ablations). The figures and every
//!   variant tried: `benchmarks/gpu.md`.
//!
//! The developer switches `DV_GPU_DEFINES`, `DV_GPU_NO_SWIZZLE` and
//! `DV_GPU_DUMP_PTX` change how the kernels are compiled for experiments
//! (`docs/environment.md`).

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
    compile_ptx, conditioning_source, driver_available, nvrtc_available, window_frames, CondPhases, GpuConditioner,
    GpuDevice, MultiRun, MultiStream, PipeTimes, Pipelined, Projector, SingleRun, SingleStream, StreamStart,
    CHAIN_CLOCK, PROFILE_PHASES, PROFILE_PHASES_MULTI, PROFILE_PHASES_SMALL, PROFILE_PHASES_TILES,
};
pub use error::GpuError;
pub use model::{CondLayout, Sizes, Weights};
pub use sampling::GpuSampling;
pub use source::{MultiKernel, MultiPlan, SinglePlan};
