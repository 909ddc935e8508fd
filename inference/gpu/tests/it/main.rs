//! Integration tests of dv-gpu. The host-side ones run on machines without
//! a GPU (CI); the conformance suite runs every sampler this machine has
//! (the CPU ones always, the CUDA kernels on a device, else reported
//! skipped). Timings on a device are the example `gpu_bench`'s `gpu-single` /
//! `gpu-streams`.
mod compile;
mod conformance;
mod emulate;
mod layout;
mod sampling;
