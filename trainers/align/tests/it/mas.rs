use dv_align::{durations, maximum_path, maximum_path_batch, maximum_path_in_place, AlignError, MasLen, MasShape};

use crate::rng::SplitMix64;

/// Every monotonic path from (0, 0) to (t - 1, s - 1), by recursion.
fn all_paths(t: usize, s: usize) -> Vec<Vec<i32>> {
    fn go(t: usize, s: usize, path: &mut Vec<i32>, out: &mut Vec<Vec<i32>>) {
        let y = path.len();
        if y == s {
            if *path.last().unwrap() as usize == t - 1 {
                out.push(path.clone());
            }
            return;
        }
        let last = *path.last().unwrap();
        for next in [last, last + 1] {
            if (next as usize) < t {
                path.push(next);
                go(t, s, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    go(t, s, &mut vec![0], &mut out);
    out
}

/// A path's score summed in the DP's order: L[y] + (L[y-1] + (... + (L[0] + 0))).
fn path_score<F: Copy + std::ops::Add<Output = F>>(value: &[F], s: usize, path: &[i32], zero: F) -> F {
    let mut acc = zero;
    for (y, &x) in path.iter().enumerate() {
        acc = value[x as usize * s + y] + acc;
    }
    acc
}

fn is_monotonic(path: &[i32], t: usize) -> bool {
    path[0] == 0 && *path.last().unwrap() as usize == t - 1 && path.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1)
}

#[test]
fn path_count_is_binomial() {
    // C(s - 1, t - 1): checks the enumerator the other tests trust.
    assert_eq!(all_paths(3, 5).len(), 6);
    assert_eq!(all_paths(1, 4).len(), 1);
    assert_eq!(all_paths(4, 4).len(), 1);
    assert_eq!(all_paths(4, 7).len(), 20);
}

#[test]
fn matches_brute_force_f32_and_f64() {
    let mut rng = SplitMix64::new(7);
    for case in 0..300 {
        let t = rng.range(1, 5);
        let s = rng.range(t, 8);
        let value: Vec<f32> = (0..t * s).map(|_| if case % 2 == 0 { rng.log_like() } else { rng.int(3) }).collect();
        let paths = all_paths(t, s);
        let best = paths.iter().map(|p| path_score(&value, s, p, 0.0f32)).fold(f32::NEG_INFINITY, f32::max);
        let a = maximum_path(&value, t, s).unwrap();
        // Rounding is monotone, so the DP's max equals the best nested sum exactly.
        assert_eq!(a.score, best, "case {case}: t={t} s={s}");
        assert!(is_monotonic(&a.path, t), "case {case}: {:?}", a.path);
        assert_eq!(path_score(&value, s, &a.path, 0.0f32), best, "case {case}: the returned path is not a best one");
        assert!(paths.contains(&a.path));

        let v64: Vec<f64> = value.iter().map(|&v| v as f64).collect();
        let best64 = paths.iter().map(|p| path_score(&v64, s, p, 0.0f64)).fold(f64::NEG_INFINITY, f64::max);
        let b = maximum_path(&v64, t, s).unwrap();
        assert_eq!(b.score, best64, "case {case}");
        assert_eq!(path_score(&v64, s, &b.path, 0.0f64), best64);
        if case % 2 == 1 {
            // Integer scores: f32 and f64 see the same ties and agree exactly.
            assert_eq!(a.path, b.path, "case {case}");
        }
    }
}

#[test]
fn ties_stay_on_the_same_token() {
    // Every path scores 0; Glow-TTS's backtrack stays on the last token as
    // long as it can, so the extra frames go to the end.
    let a = maximum_path(&[0.0f32; 15], 3, 5).unwrap();
    assert_eq!(a.path, vec![0, 1, 2, 2, 2]);
    assert_eq!(a.durations, vec![1, 1, 3]);
    assert_eq!(a.score, 0.0);

    // t = 2, s = 4. Q row 0: -1 -2 -3 -inf; row 1: -inf -2 -4 -4. At (1, 3):
    // Q[1][2] = -4 < Q[0][2] = -3, a strict preference for stepping down.
    #[rustfmt::skip]
    let value = [
        -1.0f32, -1.0, -1.0, -5.0,
        -5.0,    -1.0, -2.0, -1.0,
    ];
    let a = maximum_path(&value, 2, 4).unwrap();
    assert_eq!(a.path, vec![0, 0, 0, 1]);
    assert_eq!(a.score, -4.0);
    // Now Q row 1: -inf -2 -3 -4, ties at (1, 3) (-3 vs -3) and (1, 2) (-2 vs
    // -2): the backtrack stays on token 1 both times.
    #[rustfmt::skip]
    let value = [
        -1.0f32, -1.0, -1.0, -5.0,
        -5.0,    -1.0, -1.0, -1.0,
    ];
    let a = maximum_path(&value, 2, 4).unwrap();
    assert_eq!(a.path, vec![0, 1, 1, 1]);
    assert_eq!(a.score, -4.0);
}

#[test]
fn degenerate_lengths() {
    let mut rng = SplitMix64::new(11);
    // T == S: the diagonal, whatever the scores.
    let v: Vec<f32> = (0..36).map(|_| rng.log_like()).collect();
    let a = maximum_path(&v, 6, 6).unwrap();
    assert_eq!(a.path, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(a.durations, vec![1; 6]);
    // T == 1: every frame on token 0, score the nested row sum.
    let v: Vec<f32> = (0..9).map(|_| rng.log_like()).collect();
    let a = maximum_path(&v, 1, 9).unwrap();
    assert_eq!(a.path, vec![0; 9]);
    assert_eq!(a.durations, vec![9]);
    assert_eq!(a.score, path_score(&v, 9, &[0; 9], 0.0));
    // S == 1 (so T == 1).
    let a = maximum_path(&[-3.5f32], 1, 1).unwrap();
    assert_eq!((a.path, a.durations, a.score), (vec![0], vec![1], -3.5));
}

#[test]
fn in_place_leaves_q_in_the_band_and_minus_infinity_outside() {
    let (t, s) = (3, 6);
    let value: Vec<f32> = (0..t * s).map(|i| -(i as f32)).collect();
    let mut q = value.clone();
    let mut path = vec![9; s + 2];
    let score = maximum_path_in_place(&mut q, MasLen { text: t, speech: s }, s, &mut path).unwrap();
    assert_eq!(&path[s..], &[9, 9], "frames past `speech` are not written");
    assert_eq!(score, q[(t - 1) * s + s - 1]);
    for x in 0..t {
        for y in 0..s {
            let band = x <= y && t - 1 - x <= s - 1 - y;
            assert_eq!(q[x * s + y] == f32::NEG_INFINITY, !band, "({x}, {y}) = {}", q[x * s + y]);
        }
    }
    // Q[0][y] is the running row sum.
    assert_eq!(q[2], value[2] + (value[1] + (value[0] + 0.0)));
}

#[test]
fn minus_infinity_is_a_zero_probability_not_an_error() {
    // Forbid (1, 1): the path must stay on token 0 until frame 2.
    let mut v = vec![-1.0f32; 2 * 4];
    v[4 + 1] = f32::NEG_INFINITY;
    v[2] = f32::NEG_INFINITY; // and (0, 2): token 1 must start at frame 2
    let a = maximum_path(&v, 2, 4).unwrap();
    assert_eq!(a.path, vec![0, 0, 1, 1]);
    assert_eq!(a.score, -4.0);
    // Every path through -inf: a valid path with score -inf.
    let a = maximum_path(&[f32::NEG_INFINITY; 6], 2, 3).unwrap();
    assert_eq!(a.score, f32::NEG_INFINITY);
    assert_eq!(a.path, vec![0, 1, 1]);
}

#[test]
fn batch_with_variable_lengths_matches_single_items_and_ignores_padding() {
    let mut rng = SplitMix64::new(3);
    let shape = MasShape { batch: 5, text: 6, speech: 11 };
    let lens = [
        MasLen { text: 6, speech: 11 },
        MasLen { text: 1, speech: 4 },
        MasLen { text: 3, speech: 3 },
        MasLen { text: 4, speech: 9 },
        MasLen { text: 2, speech: 11 },
    ];
    // NaN in every padding cell: it must be neither read nor modified.
    let mut value = vec![f32::NAN; shape.numel().unwrap()];
    let mut singles = Vec::new();
    for (i, l) in lens.iter().enumerate() {
        let item: Vec<f32> = (0..l.text * l.speech).map(|_| rng.int(2)).collect();
        for x in 0..l.text {
            for y in 0..l.speech {
                value[i * 66 + x * 11 + y] = item[x * l.speech + y];
            }
        }
        singles.push(maximum_path(&item, l.text, l.speech).unwrap().path);
    }
    let paths = maximum_path_batch(&mut value, shape, &lens).unwrap();
    assert_eq!(paths, singles);
    for (i, l) in lens.iter().enumerate() {
        for x in 0..6 {
            for y in 0..11 {
                if x >= l.text || y >= l.speech {
                    assert!(value[i * 66 + x * 11 + y].is_nan(), "padding ({i}, {x}, {y}) modified");
                }
            }
        }
    }
}

#[test]
fn errors_are_typed() {
    let mut v = vec![0.0f32; 12];
    assert_eq!(maximum_path(&v, 4, 3).unwrap_err(), AlignError::TextLongerThanSpeech { item: 0, text: 4, speech: 3 });
    assert_eq!(
        maximum_path(&v, 2, 5).unwrap_err(),
        AlignError::ShapeMismatch { what: "MAS matrix [text, speech]", expected: 10, got: 12 }
    );
    assert_eq!(maximum_path(&[0.0f32; 0], 0, 3).unwrap_err(), AlignError::Empty { item: 0, what: "text" });
    assert_eq!(maximum_path(&[0.0f32; 0], 2, 0).unwrap_err(), AlignError::Empty { item: 0, what: "speech" });
    v[7] = f32::NAN;
    v[9] = f32::INFINITY;
    assert_eq!(maximum_path(&v, 3, 4).unwrap_err(), AlignError::NonFinite { item: 0, row: 1, col: 3 });
    v[7] = 0.0;
    assert_eq!(maximum_path(&v, 3, 4).unwrap_err(), AlignError::NonFinite { item: 0, row: 2, col: 1 });

    let shape = MasShape { batch: 2, text: 3, speech: 4 };
    let mut v = vec![0.0f32; 24];
    let ok = MasLen { text: 2, speech: 4 };
    assert_eq!(
        maximum_path_batch(&mut v, shape, &[ok]).unwrap_err(),
        AlignError::ShapeMismatch { what: "MAS lengths [batch]", expected: 2, got: 1 }
    );
    assert_eq!(
        maximum_path_batch(&mut v, shape, &[ok, MasLen { text: 2, speech: 5 }]).unwrap_err(),
        AlignError::LengthExceedsPadding { item: 1, what: "speech", len: 5, max: 4 }
    );
    assert_eq!(
        maximum_path_batch(&mut v, shape, &[ok, MasLen { text: 3, speech: 2 }]).unwrap_err(),
        AlignError::TextLongerThanSpeech { item: 1, text: 3, speech: 2 }
    );
    // A NaN in item 1 is reported before item 0 is touched.
    v[12 + 4 + 1] = f32::NAN;
    assert_eq!(
        maximum_path_batch(&mut v, shape, &[ok, ok]).unwrap_err(),
        AlignError::NonFinite { item: 1, row: 1, col: 1 }
    );
    assert!(v[..12].iter().all(|&x| x == 0.0), "item 0 modified before the batch was validated");
    let mut short = vec![0i32; 2];
    assert!(matches!(
        maximum_path_in_place(&mut [0.0f32; 12], MasLen { text: 3, speech: 4 }, 4, &mut short),
        Err(AlignError::ShapeMismatch { what: "MAS path [speech]", .. })
    ));
}

#[test]
fn durations_count_frames_and_reject_foreign_indices() {
    assert_eq!(durations(&[0, 0, 1, 2, 2, 2], 3).unwrap(), vec![2, 1, 3]);
    assert_eq!(durations(&[0, 3], 3).unwrap_err(), AlignError::InvalidPath { frame: 1, index: 3, text: 3 });
    assert_eq!(durations(&[-1], 3).unwrap_err(), AlignError::InvalidPath { frame: 0, index: -1, text: 3 });
    let mut rng = SplitMix64::new(5);
    for _ in 0..50 {
        let t = rng.range(1, 20);
        let s = rng.range(t, 60);
        let v: Vec<f32> = (0..t * s).map(|_| rng.log_like()).collect();
        let a = maximum_path(&v, t, s).unwrap();
        assert!(is_monotonic(&a.path, t));
        assert_eq!(a.durations.iter().sum::<u32>() as usize, s);
        assert!(a.durations.iter().all(|&d| d >= 1));
    }
}
