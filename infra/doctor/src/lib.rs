//! Checks of the machine before a run, for `dv doctor`: the CUDA driver and
//! its devices, NVRTC and NCCL (loaded dynamically, exactly as the GPU
//! crates will load them, so a machine without CUDA still runs every other
//! command), the CPU's SIMD features, and external programs.
//!
//! This crate holds the workspace's `unsafe` for dynamic loading: each
//! foreign call goes through [`cuda`]'s one checked helper and names the
//! invariant it relies on.

pub mod cpu;
pub mod cuda;
pub mod tool;
