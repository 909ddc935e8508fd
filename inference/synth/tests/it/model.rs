//! Contracts of the sampler: teacher forcing equals stepping, the receptive
//! field, streaming, seeds, and input checks.

use dv_synth::random::{random_conditioning, random_voice};
use dv_synth::{Conditioning, Kernel, Nonlinearity, Precision, Rng, Sampler, Sampling, SynthError};
use dv_voice::WavenetConfig;

use crate::{avx2_or_note, opts};

fn kernels() -> Vec<(Kernel, usize)> {
    let mut k = vec![(Kernel::Scalar, 1)];
    if let Some(a) = avx2_or_note("model") {
        k.push((a, 1));
        k.push((a, 2));
    }
    k
}

#[test]
fn teacher_forced_logits_equal_stepwise_sampling() {
    let small = WavenetConfig { layers: 6, residual_channels: 16, skip_channels: 32, dilation_cycle: 3 };
    let voice = random_voice(small, 3).unwrap();
    let cond = random_conditioning(voice.config(), 3, 4);
    let n = 150;
    for (kernel, threads) in kernels() {
        let s = Sampler::new(&voice, kernel, opts(Precision::F32, Nonlinearity::Exact, threads)).unwrap();
        let mut scratch = s.make_scratch();
        let mut stepped = Vec::new();
        let mut out = vec![0u8; n];
        s.generate_inspect(&mut scratch, &cond, Sampling::Direct, &mut Rng::new(9), &mut out, |_, l, _| {
            stepped.extend_from_slice(l)
        })
        .unwrap();
        let mut forced = vec![0.0f32; n * 256];
        s.logits(&mut scratch, &cond, &out, &mut forced).unwrap();
        // The same model fed the same samples: bit-identical logits.
        for t in 0..n {
            assert_eq!(
                forced[t * 256..(t + 1) * 256],
                stepped[t * 256..(t + 1) * 256],
                "{kernel:?}/{threads}: step {t}"
            );
        }
        assert_eq!(stepped.len(), n * 256);
    }
}

/// Logits at t depend on y(t−1) … y(t − (2 + Σd)) and on nothing older.
fn check_receptive_field(cfg: WavenetConfig, kernel: Kernel) {
    let voice = random_voice(cfg, 5).unwrap();
    let rf = cfg.receptive_field();
    let n = rf + 40;
    let cond = random_conditioning(voice.config(), n.div_ceil(64), 6);
    let mut rng = Rng::new(1);
    let base: Vec<u8> = (0..n).map(|_| (rng.next_u64() % 256) as u8).collect();
    let s = Sampler::new(&voice, kernel, Default::default()).unwrap();
    let mut scratch = s.make_scratch();
    let mut l0 = vec![0.0f32; n * 256];
    s.logits(&mut scratch, &cond, &base, &mut l0).unwrap();
    let u = 20; // the changed sample
    let mut changed = base.clone();
    changed[u] = changed[u].wrapping_add(97);
    let mut l1 = vec![0.0f32; n * 256];
    s.logits(&mut scratch, &cond, &changed, &mut l1).unwrap();
    let row = |l: &[f32], t: usize| l[t * 256..(t + 1) * 256].to_vec();
    // Inside the field (t − u ≤ rf) the change is seen ...
    assert_ne!(row(&l0, u + rf), row(&l1, u + rf), "{kernel:?} {}: sample {u} must reach t = {}", cfg.name(), u + rf);
    assert_ne!(row(&l0, u + 1), row(&l1, u + 1));
    // ... and beyond it, bit for bit nothing changes.
    for t in u + rf + 1..n {
        assert_eq!(row(&l0, t), row(&l1, t), "{kernel:?} {}: t = {t} sees sample {u} (rf {rf})", cfg.name());
    }
    // Before u, nothing changes either (causality).
    for t in 0..=u {
        assert_eq!(row(&l0, t), row(&l1, t), "{kernel:?}: t = {t} sees the future");
    }
}

#[test]
fn receptive_field_is_two_plus_sum_of_dilations() {
    let small = WavenetConfig { layers: 7, residual_channels: 8, skip_channels: 16, dilation_cycle: 3 };
    assert_eq!(small.receptive_field(), 2 + (1 + 2 + 4) * 2 + 1);
    check_receptive_field(small, Kernel::Scalar);
    if let Some(a) = avx2_or_note("receptive field") {
        check_receptive_field(small, a);
        check_receptive_field(WavenetConfig::preset("20x32x128").unwrap(), a);
    }
}

#[test]
fn streaming_in_blocks_equals_one_call_and_seeds_reproduce() {
    let cfg = WavenetConfig { layers: 8, residual_channels: 16, skip_channels: 32, dilation_cycle: 4 };
    let voice = random_voice(cfg, 8).unwrap();
    let cond = random_conditioning(voice.config(), 4, 9);
    for (kernel, threads) in kernels() {
        let s = Sampler::new(&voice, kernel, opts(Precision::F32, Nonlinearity::Exact, threads)).unwrap();
        let whole = s.synthesize(&cond, Sampling::Direct, 77).unwrap();
        assert_eq!(whole.len(), 4 * 64);
        assert_eq!(whole, s.synthesize(&cond, Sampling::Direct, 77).unwrap(), "seed must reproduce");
        assert_ne!(whole, s.synthesize(&cond, Sampling::Direct, 78).unwrap(), "another seed, other audio");
        let mut stream = s.stream(&cond, whole.len(), Sampling::Direct, Rng::new(77));
        let mut got = Vec::new();
        let mut block = [0u8; 37];
        loop {
            let k = stream.next_block(&mut block).unwrap();
            if k == 0 {
                break;
            }
            got.extend_from_slice(&block[..k]);
        }
        assert_eq!(got, whole, "{kernel:?}/{threads}: blocks differ from one call");
    }
}

/// Forced samples condition what follows exactly as teacher forcing does:
/// a stream that is fed codes and then samples in mode gives what the
/// sampler gives after `logits` was run on the same codes.
#[test]
fn forced_samples_condition_the_rest_as_teacher_forcing() {
    let cfg = WavenetConfig { layers: 8, residual_channels: 16, skip_channels: 32, dilation_cycle: 4 };
    let voice = random_voice(cfg, 11).unwrap();
    let cond = random_conditioning(voice.config(), 4, 12);
    let forced: Vec<u8> = (0..100).map(|i| (128 + (i % 7) * 3) as u8).collect();
    let rest = 4 * 64 - forced.len();
    for (kernel, threads) in kernels() {
        let s = Sampler::new(&voice, kernel, opts(Precision::F32, Nonlinearity::Exact, threads)).unwrap();
        let mut scratch = s.make_scratch();
        let mut logits = vec![0.0f32; forced.len() * 256];
        s.logits(&mut scratch, &cond, &forced, &mut logits).unwrap();
        let mut want = vec![0u8; rest];
        s.generate(&mut scratch, &cond, Sampling::Mode, &mut Rng::new(1), &mut want).unwrap();
        let mut stream = s.stream(&cond, 4 * 64, Sampling::Mode, Rng::new(1));
        assert_eq!(stream.force(&forced[..60]).unwrap(), 60);
        assert_eq!(stream.force(&forced[60..]).unwrap(), 40);
        assert_eq!(stream.remaining(), rest);
        let mut got = vec![0u8; rest];
        assert_eq!(stream.next_block(&mut got).unwrap(), rest);
        assert_eq!(got, want, "{kernel:?}/{threads}");
        // forcing other codes changes what follows
        let mut other = s.stream(&cond, 4 * 64, Sampling::Mode, Rng::new(1));
        other.force(&vec![200u8; forced.len()]).unwrap();
        let mut got2 = vec![0u8; rest];
        other.next_block(&mut got2).unwrap();
        assert_ne!(got2, want);
    }
}

#[test]
fn voiced_temperature_sharpens_voiced_frames_only() {
    let cfg = WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };
    let voice = random_voice(cfg, 3).unwrap();
    let frames = 6;
    let cond = random_conditioning(voice.config(), frames, 4);
    let hop = 64;
    let exact = |threads| opts(Precision::F32, Nonlinearity::Exact, threads);
    for (kernel, options) in [(Kernel::Scalar, exact(1)), (Kernel::Avx2Fma, exact(1)), (Kernel::Avx2Fma, exact(2))] {
        // Without AVX2 and FMA the fast kernel is refused: the scalar one is the test.
        let Ok(s) = Sampler::new(&voice, kernel, options) else { continue };
        let run = |cond: &Conditioning, sampling: Sampling| {
            let mut out = vec![0u8; frames * hop];
            s.generate(&mut s.make_scratch(), cond, sampling, &mut Rng::new(9), &mut out).unwrap();
            out
        };
        let (direct, sharp) = (run(&cond, Sampling::Direct), run(&cond, Sampling::Temperature(0.5)));
        assert_ne!(direct, sharp);
        // No mask: every frame is voiced. All unvoiced: direct. All voiced: temperature.
        assert_eq!(run(&cond, Sampling::VoicedTemperature(0.5)), sharp);
        let mask = |v: bool| cond.clone().with_voiced(vec![v; frames]).unwrap();
        assert_eq!(run(&mask(false), Sampling::VoicedTemperature(0.5)), direct);
        assert_eq!(run(&mask(true), Sampling::VoicedTemperature(0.5)), sharp);
        // Unvoiced first frames sample as direct sampling does, draw for draw, until the
        // first voiced frame.
        let half = cond.clone().with_voiced((0..frames).map(|f| f >= 3).collect()).unwrap();
        let mixed = run(&half, Sampling::VoicedTemperature(0.5));
        assert_eq!(mixed[..3 * hop], direct[..3 * hop]);
        assert_ne!(mixed[3 * hop..], direct[3 * hop..]);
    }
    assert!(matches!(
        random_conditioning(voice.config(), frames, 4).with_voiced(vec![true; 5]),
        Err(SynthError::Shape { what: "voicing mask", expected: 6, got: 5 })
    ));
}

#[test]
fn bad_inputs_are_errors() {
    let cfg = WavenetConfig { layers: 2, residual_channels: 8, skip_channels: 8, dilation_cycle: 2 };
    let voice = random_voice(cfg, 1).unwrap();
    let cond = random_conditioning(voice.config(), 1, 2);
    let s = Sampler::new(&voice, Kernel::Scalar, Default::default()).unwrap();
    let mut scratch = s.make_scratch();
    let mut out = vec![0u8; 65];
    assert!(matches!(
        s.generate(&mut scratch, &cond, Sampling::Direct, &mut Rng::new(0), &mut out),
        Err(SynthError::TooLong { n_samples: 65, frames: 1, covered: 64 })
    ));
    let mut out = vec![0u8; 8];
    assert!(matches!(
        s.generate(&mut scratch, &cond, Sampling::Temperature(0.0), &mut Rng::new(0), &mut out),
        Err(SynthError::InvalidOption { what: "temperature", .. })
    ));
    assert!(matches!(
        s.generate(&mut scratch, &cond, Sampling::TopK(0), &mut Rng::new(0), &mut out),
        Err(SynthError::InvalidOption { what: "top-k", .. })
    ));
    let other = random_conditioning(random_voice(WavenetConfig { layers: 3, ..cfg }, 1).unwrap().config(), 1, 2);
    assert!(matches!(
        s.generate(&mut scratch, &other, Sampling::Direct, &mut Rng::new(0), &mut out),
        Err(SynthError::Shape { .. })
    ));
    assert!(matches!(
        Sampler::new(&voice, Kernel::Scalar, opts(Precision::Int16, Nonlinearity::Exact, 1)),
        Err(SynthError::Unsupported { .. })
    ));
    assert!(matches!(
        Sampler::new(&voice, Kernel::Scalar, opts(Precision::F32, Nonlinearity::Exact, 3)),
        Err(SynthError::InvalidOption { what: "threads", .. })
    ));
    assert!(dv_synth::Conditioning::new(1, 2, vec![0.0, f32::NAN]).is_err());
}
