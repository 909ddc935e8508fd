//! Timings of both kernels (device events around each launch, after a
//! warm-up launch), and the arithmetic floors they are compared with.

use dv_synth::Conditioning;

use crate::cuda::{MultiStream, SingleStream, StreamStart};
use crate::error::GpuError;
use crate::model::Sizes;
use crate::sampling::GpuSampling;

/// Audio samples per second (the real-time rate).
pub const SAMPLE_RATE: f64 = 16384.0;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Kernel 1: median kernel time of `repeats` launches of `n` samples.
#[derive(Debug, Clone)]
pub struct SingleTiming {
    pub samples: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    /// Audio seconds per second of kernel time.
    pub real_time_factor: f64,
    /// µs per sample.
    pub us_per_sample: f64,
}

pub fn time_single(
    gpu: &SingleStream,
    cond: &Conditioning,
    n: usize,
    sampling: GpuSampling,
    repeats: usize,
) -> Result<SingleTiming, GpuError> {
    gpu.run(cond, n.min(4096), sampling, 1, None, false)?; // warm-up
    let mut ms = Vec::with_capacity(repeats);
    for k in 0..repeats.max(1) {
        ms.push(gpu.run(cond, n, sampling, 100 + k as u64, None, false)?.kernel_ms as f64);
    }
    let min_ms = ms.iter().copied().fold(f64::INFINITY, f64::min);
    let median_ms = median(ms);
    Ok(SingleTiming {
        samples: n,
        median_ms,
        min_ms,
        real_time_factor: n as f64 / SAMPLE_RATE / (median_ms / 1e3),
        us_per_sample: median_ms * 1e3 / n as f64,
    })
}

/// Kernel 2 with every slot live: one launch of `steps` samples per stream.
#[derive(Debug, Clone)]
pub struct MultiTiming {
    pub streams: usize,
    pub steps: usize,
    pub median_ms: f64,
    /// Samples per second of one stream (÷ 16384 = its real-time factor).
    pub per_stream_rate: f64,
    pub real_time_factor: f64,
    /// Samples per second over all streams.
    pub total_rate: f64,
}

/// Times kernel 2 with every slot live: slot s reads the pool from frame
/// `s · stride` (modulo the frames left after one stream's): a small pool and
/// stride 7 share rows between streams, a pool of `slots · frames` and a
/// stride of one stream's frames gives each its own.
pub fn time_multi(
    gpu: &mut MultiStream,
    pool_frames: usize,
    hop: usize,
    steps: usize,
    sampling: GpuSampling,
    repeats: usize,
    stride: usize,
) -> Result<MultiTiming, GpuError> {
    let frames = (steps * (repeats.max(1) + 1)).div_ceil(hop);
    if frames > pool_frames {
        return Err(GpuError::Shape { what: "conditioning pool frames", expected: frames, got: pool_frames });
    }
    let distinct = (pool_frames - frames).max(1);
    let slots = gpu.slots();
    let starts: Vec<StreamStart> = (0..slots)
        .map(|s| StreamStart {
            slot: s,
            cond_frame: (s * stride) % distinct,
            samples: steps * (repeats.max(1) + 1),
            seed: s as u64,
            lead: 0,
        })
        .collect();
    gpu.start(&starts)?;
    gpu.advance(steps, sampling, None, false)?; // warm-up (and a first check below)
    let mut ms = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        let run = gpu.advance(steps, sampling, None, false)?;
        let unwritten = run.samples.iter().filter(|&&c| c < 0).count();
        if unwritten > 0 {
            return Err(GpuError::Unwritten { what: "wavenet_multi samples of live streams", count: unwritten });
        }
        ms.push(run.kernel_ms as f64);
    }
    let median_ms = median(ms);
    let per_stream_rate = steps as f64 / (median_ms / 1e3);
    Ok(MultiTiming {
        streams: slots,
        steps,
        median_ms,
        per_stream_rate,
        real_time_factor: per_stream_rate / SAMPLE_RATE,
        total_rate: per_stream_rate * slots as f64,
    })
}

/// METHOD.md's two numbers for `streams` streams in real time: the
/// arithmetic at `flops` FLOP/s and the device-memory traffic at
/// `bandwidth` bytes/s (each stream reads and writes every layer's history
/// row per sample, float32; weights are L2-resident and not counted).
#[derive(Debug, Clone)]
pub struct Floor {
    pub flop_per_sample: f64,
    pub dram_bytes_per_sample: f64,
    /// Largest number of real-time streams the arithmetic allows.
    pub streams_by_flops: f64,
    /// Largest number of real-time streams the memory traffic allows.
    pub streams_by_bytes: f64,
}

pub fn floor(sizes: &Sizes, flops: f64, bandwidth: f64) -> Floor {
    let flop = 2.0 * sizes.macs_per_sample() as f64;
    let bytes = (2 * sizes.layers * sizes.residual * 4) as f64;
    Floor {
        flop_per_sample: flop,
        dram_bytes_per_sample: bytes,
        streams_by_flops: flops / (flop * SAMPLE_RATE),
        streams_by_bytes: bandwidth / (bytes * SAMPLE_RATE),
    }
}
