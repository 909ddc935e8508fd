//! libtorch through `tch`: the runtime every trainer shares.
//!
//! This crate is the only door to libtorch for the rest of the workspace
//! (inference never links it). For now it answers what a user needs to know
//! before a training run: which libtorch is loaded and from where, whether
//! it was built with CUDA, how many CUDA devices it sees, and cuDNN.
//!
//! # Linking
//!
//! libtorch comes from the `torch==2.11.0` wheel on PyPI
//! (`LIBTORCH_USE_PYTORCH=1`). Binaries that use this crate must carry an
//! rpath to libtorch's directory and force-link `libtorch_cuda`; see this
//! crate's `build.rs` and `infra/dv/build.rs`. Without the forced link a CUDA
//! wheel still loads, but [`LibtorchInfo::cuda_devices`] is 0 on a GPU
//! machine.
#![forbid(unsafe_code)]

mod info;

pub use info::{LibtorchInfo, TorchError};
