//! Without CUDA the aligner must refuse with a typed error; with it, a small
//! parity check (the full one is `examples/align_gpu.rs`).
use dv_align::{
    ctc_viterbi_batch, cuda_available, maximum_path_batch, AlignError, CtcLen, CtcShape, GpuAligner, MasLen, MasShape,
};

use crate::rng::SplitMix64;

#[test]
fn gpu_aligner_is_an_error_without_cuda_and_exact_with_it() {
    let gpu = match GpuAligner::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            assert!(matches!(e, AlignError::CudaUnavailable { .. }), "unexpected error without a usable GPU: {e}");
            if !cuda_available() {
                assert!(e.to_string().contains("cannot be loaded"), "{e}");
            }
            return;
        }
    };
    let mut rng = SplitMix64::new(1);
    let shape = MasShape { batch: 3, text: 40, speech: 90 };
    let lens = [MasLen { text: 40, speech: 90 }, MasLen { text: 1, speech: 7 }, MasLen { text: 33, speech: 33 }];
    let mut value: Vec<f32> = (0..shape.numel().unwrap()).map(|_| rng.int(2)).collect();
    let gpu_paths = gpu.mas_batch(&value, shape, &lens).unwrap();
    assert_eq!(gpu_paths, maximum_path_batch(&mut value, shape, &lens).unwrap());

    // Longer texts take the kernel's other entry points (more staged rows per
    // thread, two text positions per thread past 1024).
    for lens in [
        [MasLen { text: 300, speech: 700 }, MasLen { text: 17, speech: 20 }],
        [MasLen { text: 1100, speech: 1150 }, MasLen { text: 600, speech: 1000 }],
    ] {
        let shape = MasShape { batch: 2, text: lens[0].text, speech: lens.iter().map(|l| l.speech).max().unwrap() };
        let mut value: Vec<f32> = (0..shape.numel().unwrap()).map(|_| rng.int(2)).collect();
        let gpu_paths = gpu.mas_batch(&value, shape, &lens).unwrap();
        assert_eq!(gpu_paths, maximum_path_batch(&mut value, shape, &lens).unwrap());
    }

    let shape = CtcShape { batch: 2, frames: 30, classes: 6, labels: 5 };
    let lens = [CtcLen { frames: 30, labels: 5 }, CtcLen { frames: 9, labels: 2 }];
    let lp: Vec<f32> = (0..2 * 30 * 6).map(|_| rng.int(2)).collect();
    let labels = [1, 2, 2, 5, 3, 4, 4, 0, 0, 0];
    let labels: Vec<u32> = labels.iter().map(|&l| if l == 0 { 1 } else { l }).collect();
    assert_eq!(
        gpu.ctc_batch(&lp, shape, &labels, &lens, 0).unwrap(),
        ctc_viterbi_batch(&lp, shape, &labels, &lens, 0).unwrap()
    );
}
