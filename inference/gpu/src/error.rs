use thiserror::Error;

/// Everything the GPU samplers can refuse or fail with.
#[derive(Debug, Error)]
pub enum GpuError {
    /// The driver or NVRTC cannot be loaded, or there is no such device.
    #[error("CUDA is unavailable: {reason}")]
    CudaUnavailable { reason: String },
    /// A driver call failed.
    #[error("{call} failed: {reason}")]
    Driver { call: &'static str, reason: String },
    /// NVRTC rejected a kernel source (with its log).
    #[error("NVRTC could not compile {kernel}: {log}")]
    Compile { kernel: String, log: String },
    /// A size, option or plan the kernels do not take.
    #[error("unsupported: {what}")]
    Unsupported { what: String },
    /// An input of the wrong length.
    #[error("{what}: expected {expected} values, got {got}")]
    Shape { what: &'static str, expected: usize, got: usize },
    /// A kernel left outputs unwritten (they keep the poison value).
    #[error("{what}: {count} outputs were not written by the kernel")]
    Unwritten { what: &'static str, count: usize },
    #[error(transparent)]
    Voice(#[from] dv_voice::VoiceError),
    #[error(transparent)]
    Synth(#[from] dv_synth::SynthError),
}
