//! Integration tests of dv-slots: the scheduler on its CPU backend with
//! voices made here from random weights (`dv_synth::random`), the GPU's
//! launch windows, conditioning arena and conditioning thread on the CPU
//! reference, and the engine against `Speaker::render`.

mod engine;
#[path = "../../../speak/tests/it/fixture.rs"]
mod fixture;
mod scheduler;
mod wait;

pub use fixture::{duration_config, save_package, FAST, TEXT};
pub use wait::eventually;
