//! The sampling modes map as documented.
use dv_gpu::{GpuError, GpuSampling};
use dv_synth::Sampling;

#[test]
fn sampling_modes_map_or_are_refused() {
    assert_eq!(GpuSampling::new(Sampling::Direct).unwrap(), GpuSampling { mode: 0, inv_tau: 1.0 });
    assert_eq!(GpuSampling::new(Sampling::Mode).unwrap(), GpuSampling { mode: 1, inv_tau: 1.0 });
    assert_eq!(GpuSampling::new(Sampling::Temperature(0.5)).unwrap(), GpuSampling { mode: 2, inv_tau: 2.0 });
    assert!(!GpuSampling::new(Sampling::Mode).unwrap().draws());
    assert!(matches!(GpuSampling::new(Sampling::TopK(5)), Err(GpuError::Unsupported { .. })));
    assert!(matches!(GpuSampling::new(Sampling::Temperature(-1.0)), Err(GpuError::Synth(_))));
}
