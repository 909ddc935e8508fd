//! The sampling modes map as documented.
use dv_gpu::{GpuError, GpuSampling};
use dv_synth::Sampling;

#[test]
fn sampling_modes_map_or_are_refused() {
    assert_eq!(GpuSampling::new(Sampling::Direct).unwrap(), GpuSampling { mode: 0, inv_tau: 1.0 });
    assert_eq!(GpuSampling::new(Sampling::Mode).unwrap(), GpuSampling { mode: 1, inv_tau: 1.0 });
    assert_eq!(GpuSampling::new(Sampling::Temperature(0.5)).unwrap(), GpuSampling { mode: 2, inv_tau: 2.0 });
    let voiced = GpuSampling::new(Sampling::VoicedTemperature(0.5)).unwrap();
    assert_eq!(voiced, GpuSampling { mode: dv_gpu::sampling::VOICED_TEMPERATURE, inv_tau: 2.0 });
    assert!(voiced.reads_voicing() && voiced.draws());
    assert_eq!((voiced.inv_tau_for(true), voiced.inv_tau_for(false)), (2.0, 1.0));
    assert!(!GpuSampling::new(Sampling::Temperature(0.5)).unwrap().reads_voicing());
    assert_eq!(GpuSampling::new(Sampling::Temperature(0.5)).unwrap().inv_tau_for(false), 2.0);
    assert!(!GpuSampling::new(Sampling::Mode).unwrap().draws());
    assert!(matches!(GpuSampling::new(Sampling::TopK(5)), Err(GpuError::Unsupported { .. })));
    assert!(matches!(GpuSampling::new(Sampling::Temperature(-1.0)), Err(GpuError::Synth(_))));
}

/// Softmax of `logits` in f64, as f32.
fn softmax(logits: &[f64]) -> Vec<f32> {
    let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
    let z: f64 = e.iter().sum();
    e.iter().map(|v| (v / z) as f32).collect()
}

/// Both draw rules sample the distribution they are given, and at
/// temperature 1/2 its sharpened softmax: over 200,000 draws from a fixed
/// 256-class softmax, the counts pass a chi-square test (classes with at
/// least 5 expected draws), and no class of p = 0 is drawn.
#[test]
fn both_draw_rules_sample_the_softmax() {
    use dv_gpu::sampling::DrawRule;
    use dv_synth::Rng;
    let mut g = Rng::new(11);
    // Logits spread over about 12 nats, with 16 classes impossible.
    let logits: Vec<f64> =
        (0..256).map(|k| if k % 16 == 5 { f64::NEG_INFINITY } else { 12.0 * g.uniform() as f64 }).collect();
    let p: [f32; 256] = softmax(&logits).try_into().unwrap();
    // At temperature 1/2 (inv_tau 2) the draws follow the softmax of 2 · logits.
    let sharp: [f32; 256] = softmax(&logits.iter().map(|l| 2.0 * l).collect::<Vec<_>>()).try_into().unwrap();
    const N: usize = 200_000;
    for (rule, inv_tau) in [
        (DrawRule::InverseCdf, 1.0),
        (DrawRule::GumbelMax, 1.0),
        (DrawRule::InverseCdf, 2.0),
        (DrawRule::GumbelMax, 2.0),
    ] {
        let mut rng = Rng::new(3);
        let mut counts = [0usize; 256];
        for _ in 0..N {
            counts[rule.draw_at(&p, &mut rng, inv_tau)] += 1;
        }
        let p = if inv_tau == 1.0 { &p } else { &sharp };
        let (mut chi2, mut df) = (0.0f64, 0usize);
        for (k, &c) in counts.iter().enumerate() {
            let e = p[k] as f64 * N as f64;
            if p[k] == 0.0 {
                assert_eq!(c, 0, "{rule:?} drew class {k} of probability 0");
            } else if e >= 5.0 {
                chi2 += (c as f64 - e).powi(2) / e;
                df += 1;
            }
        }
        let df = (df - 1) as f64;
        // About 4.5 standard deviations above the mean of the chi-square law.
        assert!(
            chi2 < df + 4.5 * (2.0 * df).sqrt(),
            "{rule:?} at 1/τ = {inv_tau}: chi-square {chi2:.1} with {df} degrees of freedom"
        );
    }
}

/// The Gumbel-max rule depends on the step's key: the same key draws the
/// same class, and over keys the noise has the Gumbel law's mean (Euler's γ).
#[test]
fn gumbel_noise_has_the_gumbel_mean() {
    use dv_gpu::sampling::gumbel;
    let n = 1 << 16;
    let mean: f64 =
        (0..n).map(|k| gumbel(0x1234_5678 + 977 * k as u64, (k % 256) as usize) as f64).sum::<f64>() / n as f64;
    assert!((mean - 0.577_215_66).abs() < 0.02, "mean {mean}");
    assert_eq!(gumbel(42, 7), gumbel(42, 7));
    assert_ne!(gumbel(42, 7), gumbel(42, 8));
    assert_ne!(gumbel(42, 7), gumbel(43, 7));
}
