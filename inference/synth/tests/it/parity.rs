//! The conformance suite: each fast configuration against the scalar
//! reference on random weights of every Table 2 size.

use dv_synth::random::{random_conditioning, random_voice};
use dv_synth::{Kernel, Nonlinearity, Precision, Rng, Sampler, SamplerOptions, Sampling, ALPHABET};
use dv_voice::PRESETS;

use crate::{avx2_or_note, max_abs_diff, opts};

const STEPS: usize = 96; // crosses a frame boundary (hop 64)

/// Per-step distributions and the mode-sampled stream.
fn run(
    voice: &dv_voice::Voice,
    kernel: Kernel,
    o: SamplerOptions,
    cond: &dv_synth::Conditioning,
) -> (Vec<f32>, Vec<u8>) {
    run_n(voice, kernel, o, cond, STEPS)
}

fn run_n(
    voice: &dv_voice::Voice,
    kernel: Kernel,
    o: SamplerOptions,
    cond: &dv_synth::Conditioning,
    steps: usize,
) -> (Vec<f32>, Vec<u8>) {
    let sampler = Sampler::new(voice, kernel, o).unwrap();
    let mut scratch = sampler.make_scratch();
    let mut probs = Vec::with_capacity(steps * ALPHABET);
    let mut out = vec![0u8; steps];
    sampler
        .generate_inspect(&mut scratch, cond, Sampling::Mode, &mut Rng::new(0), &mut out, |_, _, p| {
            probs.extend_from_slice(p)
        })
        .unwrap();
    (probs, out)
}

fn check_against_reference(nl: Nonlinearity, variants: &[(Precision, usize)], tol: f32, presets: &[&str]) {
    let Some(avx) = avx2_or_note("parity") else { return };
    for (name, cfg) in PRESETS.iter().filter(|(n, _)| presets.contains(n)) {
        let voice = random_voice(*cfg, 11).unwrap();
        let cond = random_conditioning(voice.config(), 2, 12);
        let (p_ref, y_ref) = run(&voice, Kernel::Scalar, opts(Precision::F32, nl, 1), &cond);
        // The stream must not be trivially constant, or identity proves little.
        assert!(y_ref.iter().any(|&y| y != y_ref[0]), "{name}: constant reference stream");
        let peak = p_ref.chunks(ALPHABET).map(|p| p.iter().fold(0.0f32, |a, &b| a.max(b))).fold(0.0f32, f32::max);
        assert!(peak > 0.05, "{name}: the distributions are too flat ({peak}) to test anything");
        for &(precision, threads) in variants {
            let (p, y) = run(&voice, avx, opts(precision, nl, threads), &cond);
            let d = max_abs_diff(&p, &p_ref);
            eprintln!("{name} {nl:?} {precision:?} threads={threads}: max |Δp| = {d:.2e}");
            assert!(d <= tol, "{name} {precision:?} threads={threads}: max |Δp| {d} > {tol}");
            assert_eq!(y, y_ref, "{name} {precision:?} threads={threads}: mode streams differ");
        }
    }
}

#[test]
fn avx2_matches_scalar_on_every_table2_size() {
    let all: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    check_against_reference(Nonlinearity::Exact, &[(Precision::F32, 1), (Precision::F32, 2)], 1e-4, &all);
}

/// 96 steps never reach back past dilation 64; this run goes past 512 (the
/// longest dilation of every Table 2 size) on the smallest size.
#[test]
fn avx2_matches_scalar_past_the_longest_dilation() {
    let Some(avx) = avx2_or_note("long parity") else { return };
    let voice = random_voice(dv_voice::WavenetConfig::preset("20x32x128").unwrap(), 13).unwrap();
    let steps: usize = 600;
    let cond = random_conditioning(voice.config(), steps.div_ceil(64), 14);
    let (p_ref, y_ref) = run_n(&voice, Kernel::Scalar, SamplerOptions::default(), &cond, steps);
    for threads in [1, 2] {
        let (p, y) = run_n(&voice, avx, opts(Precision::F32, Nonlinearity::Exact, threads), &cond, steps);
        let d = max_abs_diff(&p, &p_ref);
        assert!(d <= 1e-4, "threads={threads}: max |Δp| {d}");
        assert_eq!(y, y_ref, "threads={threads}: mode streams differ");
    }
}

#[test]
fn avx2_approximate_nonlinearities_match_scalar_approximations() {
    check_against_reference(
        Nonlinearity::Approximate,
        &[(Precision::F32, 1), (Precision::F32, 2)],
        1e-4,
        &["20x32x128", "40x64x256"],
    );
}

/// int16 is an approximation of the float32 model: measure its error
/// against the float32 reference (teacher-forced, so both see the same
/// inputs) and bound it.
#[test]
fn int16_logits_stay_close_to_float32() {
    let Some(avx) = avx2_or_note("int16") else { return };
    for (name, cfg) in PRESETS {
        let voice = random_voice(cfg, 21).unwrap();
        let cond = random_conditioning(voice.config(), 2, 22);
        let samples: Vec<u8> = {
            let mut rng = Rng::new(5);
            (0..STEPS).map(|_| (rng.next_u64() % 256) as u8).collect()
        };
        let logits = |kernel, o| {
            let s = Sampler::new(&voice, kernel, o).unwrap();
            let mut out = vec![0.0f32; STEPS * 256];
            s.logits(&mut s.make_scratch(), &cond, &samples, &mut out).unwrap();
            out
        };
        let f32_ref = logits(Kernel::Scalar, SamplerOptions::default());
        for threads in [1, 2] {
            let q = logits(avx, opts(Precision::Int16, Nonlinearity::Exact, threads));
            let d = max_abs_diff(&q, &f32_ref);
            let scale = f32_ref.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            eprintln!("{name} int16 threads={threads}: max |Δlogit| = {d:.2e} (max |logit| {scale:.2})");
            assert!(d <= 4e-3 * scale.max(1.0), "{name}: int16 logit error {d}");
        }
    }
}
