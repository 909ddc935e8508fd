//! The sampler a [`crate::Speaker`] renders with: the CPU sampler of
//! `dv-synth`, or kernel 1 of `dv-gpu` on GPU 0.

use std::sync::{Arc, Mutex};

use dv_gpu::{GpuDevice, SinglePlan, SingleStream, Weights};
use dv_synth::{Sampler, SamplerOptions};
use dv_voice::Voice;

use crate::error::SpeakError;
use crate::options::{Device, SpeakerOptions};

// One per speaker: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Backend {
    /// Immutable; each render makes its own scratch.
    Cpu(Sampler),
    /// One launch at a time: the kernel owns the device's buffers while it
    /// runs.
    Cuda(Mutex<SingleStream>, SinglePlan),
}

impl Backend {
    pub(crate) fn new(voice: &Voice, o: &SpeakerOptions) -> Result<Backend, SpeakError> {
        Ok(match o.device {
            Device::Cpu => Backend::Cpu(Sampler::new(
                voice,
                o.kernel,
                SamplerOptions { precision: o.precision, nonlinearity: o.nonlinearity, threads: o.threads },
            )?),
            Device::Cuda => {
                let gpu = cuda_sampler(voice, o)?;
                let plan = gpu.plan();
                Backend::Cuda(Mutex::new(gpu), plan)
            }
        })
    }
}

/// Kernel 1 for `voice` on GPU 0, with `o`'s GPU knobs (the fields marked
/// "(cuda)").
pub(crate) fn cuda_sampler(voice: &Voice, o: &SpeakerOptions) -> Result<SingleStream, SpeakError> {
    let dev = Arc::new(GpuDevice::new(0)?);
    let w = Weights::from_voice(voice)?;
    let r = w.sizes.residual;
    // The layer-split chain kernel in bfloat16 (benchmarks/gpu.md, runs v35-v37): 8 layers per chain
    // block and 4 chain warps for r = 64, 10 and 4 for r = 32; otherwise kernel 1 on the largest cluster.
    let smem = dev.shared_memory_limit();
    let (lpb, warps) = if r == 32 { (10, 4) } else { (8, 4) };
    let split = o.layers_per_block.or_else(|| {
        (o.bf16
            && o.cluster.is_none()
            && o.helpers.is_none()
            && SinglePlan::chain_split(&w.sizes, lpb, warps, smem).is_ok())
        .then_some(lpb)
    });
    let plan = match (split, o.helpers) {
        (Some(l), _) => SinglePlan::chain_split(&w.sizes, l, warps, smem)?,
        (None, Some(h)) => SinglePlan::chain_block(&w.sizes, h, 2, o.bf16, smem)?,
        (None, None) => {
            let cluster = o.cluster.unwrap_or_else(|| [16, 8, 4, 2, 1].into_iter().find(|c| r % c == 0).unwrap_or(1));
            SinglePlan::new(&w.sizes, cluster, o.bf16, smem)?
        }
    };
    Ok(SingleStream::new(dev, &w, plan)?)
}
