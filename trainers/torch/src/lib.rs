//! libtorch through `tch`: the runtime every trainer shares.
//!
//! This crate is the only door to libtorch for the rest of the workspace
//! (inference never links it): it re-exports [`tch`], and the trainers
//! (`dv-train`, `dv-nccl`, `dv-fused`) and the `dv` binary reach tch through
//! `dv_torch::tch`, never as a dependency of their own. So one crate names the
//! tch version, and every crate that uses tch depends on this one directly and
//! so receives the link arguments below. It also answers what a user needs to
//! know before a training run: which libtorch is loaded and from where,
//! whether it was built with CUDA, how many CUDA devices it sees, and cuDNN.
//!
//! # Linking
//!
//! libtorch comes from the `torch==2.11.0` wheel on PyPI
//! (`LIBTORCH_USE_PYTORCH=1`). Binaries that load it must carry an rpath to
//! libtorch's directory, and must load `libtorch_cuda`: linked by force, or
//! at run time ([`load_cuda`]). This crate's `build.rs` is the one place
//! that works out the link arguments: it applies them to this crate's tests
//! and hands them, through Cargo's `links` metadata, to the build script of
//! every crate that depends on this one (`DEP_DV_TORCH_RPATH_ARG`,
//! `DEP_DV_TORCH_CUDA_ARG`), which prints them for its own binaries. The
//! trainers' tests force-link `libtorch_cuda`; `dv` does not, and loads it
//! for the commands that run libtorch only ([`load_cuda`]: its CUDA
//! libraries would cost every process, `dv synth` too, a quarter of a
//! second and 350 MiB). Without either, a CUDA wheel still loads, but
//! [`LibtorchInfo::cuda_devices`] is 0 on a GPU machine.
//!
//! The crate's one `unsafe` block opens that library (`cuda.rs`).
#![deny(unsafe_code)]

mod cuda;
mod info;

pub use cuda::load_cuda;
pub use info::{LibtorchInfo, TorchError};
/// tch, the Rust bindings to libtorch, as every crate above this one uses it:
/// `use dv_torch::tch;` then `tch::Tensor`, `tch::no_grad`, ...
pub use tch;
