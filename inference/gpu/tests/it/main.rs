//! Host-side tests of dv-gpu: these run on machines without a GPU (CI).
//! Kernel parity on a device is `dv bench gpu-single` / `gpu-streams`.
mod compile;
mod emulate;
mod layout;
mod sampling;
