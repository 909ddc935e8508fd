//! The sampling modes of App. A.4 as FORMAT.md specifies them.

use dv_synth::{direct, mode, Rng, Sampling, ALPHABET};

fn dist(pairs: &[(usize, f32)]) -> [f32; ALPHABET] {
    let mut p = [0.0f32; ALPHABET];
    for &(k, v) in pairs {
        p[k] = v;
    }
    p
}

#[test]
fn direct_takes_the_first_cumulative_sum_above_u() {
    let p = dist(&[(3, 0.25), (7, 0.5), (200, 0.25)]);
    assert_eq!(direct(&p, 0.0), 3);
    assert_eq!(direct(&p, 0.2499), 3);
    assert_eq!(direct(&p, 0.25), 7); // strictly greater
    assert_eq!(direct(&p, 0.7499), 7);
    assert_eq!(direct(&p, 0.75), 200);
    // Rounding leaves no sum above u: the last k with p_k > 0.
    let short = dist(&[(10, 0.3), (20, 0.3)]);
    assert_eq!(direct(&short, 0.9), 20);
}

#[test]
fn mode_prefers_the_lowest_index_on_ties() {
    assert_eq!(mode(&dist(&[(5, 0.4), (9, 0.4), (1, 0.2)])), 5);
    assert_eq!(mode(&dist(&[(250, 0.9), (0, 0.1)])), 250);
}

#[test]
fn direct_sampling_follows_the_distribution_and_the_seed() {
    let p = dist(&[(10, 0.1), (20, 0.6), (30, 0.3)]);
    let mut work = [0.0; ALPHABET];
    let mut rng = Rng::new(42);
    let mut counts = [0usize; ALPHABET];
    let n = 8_000;
    let mut first = Vec::new();
    for i in 0..n {
        let y = Sampling::Direct.sample(&p, &mut rng, &mut work);
        counts[y as usize] += 1;
        if i < 50 {
            first.push(y);
        }
    }
    assert_eq!(counts[10] + counts[20] + counts[30], n);
    for (k, want) in [(10, 0.1), (20, 0.6), (30, 0.3)] {
        let got = counts[k] as f64 / n as f64;
        assert!((got - want).abs() < 0.025, "code {k}: {got} vs {want}");
    }
    let mut rng = Rng::new(42);
    let again: Vec<u8> = (0..50).map(|_| Sampling::Direct.sample(&p, &mut rng, &mut work)).collect();
    assert_eq!(first, again);
}

#[test]
fn temperature_top_k_and_mean() {
    let p = dist(&[(1, 0.5), (2, 0.3), (3, 0.2)]);
    let mut work = [0.0; ALPHABET];
    // Temperature 1 is direct sampling, draw for draw.
    let (mut a, mut b) = (Rng::new(7), Rng::new(7));
    for _ in 0..200 {
        assert_eq!(
            Sampling::Temperature(1.0).sample(&p, &mut a, &mut work),
            Sampling::Direct.sample(&p, &mut b, &mut work)
        );
    }
    // A tiny temperature is the mode, even where p^(1/τ) underflows.
    let mut rng = Rng::new(1);
    for _ in 0..50 {
        assert_eq!(Sampling::Temperature(1e-3).sample(&p, &mut rng, &mut work), 1);
    }
    // Top-1 is the mode; top-2 never draws the third; ties keep the lower index.
    for _ in 0..200 {
        assert_eq!(Sampling::TopK(1).sample(&p, &mut rng, &mut work), 1);
        assert_ne!(Sampling::TopK(2).sample(&p, &mut rng, &mut work), 3);
    }
    let tied = dist(&[(4, 0.25), (8, 0.25), (9, 0.25), (2, 0.25)]);
    for _ in 0..100 {
        let y = Sampling::TopK(2).sample(&tied, &mut rng, &mut work);
        assert!(y == 2 || y == 4, "{y}");
    }
    // Mean of a point mass is that code; of two symmetric codes, silence-ish.
    assert_eq!(Sampling::Mean.sample(&dist(&[(77, 1.0)]), &mut rng, &mut work), 77);
    let sym = dist(&[(28, 0.5), (227, 0.5)]);
    let m = Sampling::Mean.sample(&sym, &mut rng, &mut work);
    assert!(m == 127 || m == 128, "{m}");
}

#[test]
fn every_spelling_parses_and_round_trips() {
    let cases = [
        ("direct", Sampling::Direct),
        ("mean", Sampling::Mean),
        ("mode", Sampling::Mode),
        ("temperature:0.5", Sampling::Temperature(0.5)),
        ("temperature:1", Sampling::Temperature(1.0)),
        ("temperature:0.9", Sampling::Temperature(0.9)),
        ("voiced-temperature:0.7", Sampling::VoicedTemperature(0.7)),
        ("top-k:1", Sampling::TopK(1)),
        ("top-k:3", Sampling::TopK(3)),
        ("top-k:256", Sampling::TopK(256)),
    ];
    for (text, want) in cases {
        assert_eq!(text.parse::<Sampling>().unwrap(), want, "{text}");
        assert_eq!(want.to_string(), text);
        assert_eq!(want.to_string().parse::<Sampling>().unwrap(), want);
    }
    // Other spellings of the same numbers read as before.
    assert_eq!("top-k:3.0".parse::<Sampling>().unwrap(), Sampling::TopK(3));
    assert_eq!("temperature:.25".parse::<Sampling>().unwrap(), Sampling::Temperature(0.25));
    // Any temperature round-trips through its text.
    for t in [1e-3f32, 0.1, 1.0 / 3.0, 2.5, 7.0e5] {
        let m = Sampling::Temperature(t);
        assert_eq!(m.to_string().parse::<Sampling>().unwrap(), m, "{m}");
    }
}

#[test]
fn bad_spellings_say_what_is_wrong() {
    let cases = [
        ("", "invalid sampling: : one of direct, temperature:T, voiced-temperature:T, mean, mode, top-k:K"),
        ("bogus", "invalid sampling: bogus: one of direct, temperature:T, voiced-temperature:T, mean, mode, top-k:K"),
        ("Direct", "invalid sampling: Direct: one of direct, temperature:T, voiced-temperature:T, mean, mode, top-k:K"),
        ("temperature", "invalid sampling: temperature needs a value: temperature:T"),
        ("top-k", "invalid sampling: top-k needs a value: top-k:K"),
        ("temperature:x", "invalid sampling: temperature:x: not a number"),
        ("top-k:", "invalid sampling: top-k:: not a number"),
        ("top-k:2.5", "invalid sampling: top-k:2.5: k must be a whole number"),
        ("top-k:-1", "invalid sampling: top-k:-1: k must be a whole number"),
        ("temperature:0", "invalid temperature: 0 is not a positive number"),
        ("temperature:-1", "invalid temperature: -1 is not a positive number"),
        ("voiced-temperature:0", "invalid temperature: 0 is not a positive number"),
        ("temperature:inf", "invalid temperature: inf is not a positive number"),
        ("top-k:0", "invalid top-k: k = 0 is outside 1..=256"),
        ("top-k:257", "invalid top-k: k = 257 is outside 1..=256"),
    ];
    for (text, want) in cases {
        let e = text.parse::<Sampling>().unwrap_err();
        assert!(matches!(e, dv_synth::SynthError::InvalidOption { .. }), "{text:?}: {e:?}");
        assert_eq!(e.to_string(), want, "{text:?}");
    }
}
