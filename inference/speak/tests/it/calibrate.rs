//! Choosing the CPU sampler's precision and threads: the rule, the
//! measurement, the cache.

use dv_speak::calibrate::{cache_key, calibrate, Calibration, Trial, TARGET_SPEED};
use dv_speak::SpeakerOptions;
use dv_synth::Precision;

use dv_synth::random::random_text_voice;

use crate::{duration_config, text_voice, FAST};

fn cal(trials: &[(bool, usize, f64)]) -> Calibration {
    Calibration {
        key: "k".into(),
        trials: trials.iter().map(|&(int16, threads, real_time)| Trial { int16, threads, real_time }).collect(),
    }
}

#[test]
fn float32_when_fast_enough_else_the_fastest() {
    // float32 reaches the target: its fastest thread count, even if int16 is faster
    let c = cal(&[(false, 1, TARGET_SPEED + 0.1), (false, 2, 1.2), (true, 1, 3.0), (true, 2, 4.0)]);
    assert_eq!(c.choice(), (Precision::F32, 1));
    let c = cal(&[(false, 1, 1.6), (false, 2, 2.4), (true, 1, 3.0), (true, 2, 4.0)]);
    assert_eq!(c.choice(), (Precision::F32, 2));
    // float32 too slow: int16's fastest
    let c = cal(&[(false, 1, 0.9), (false, 2, 1.1), (true, 1, 1.7), (true, 2, 1.3)]);
    assert_eq!(c.choice(), (Precision::Int16, 1));
    // both too slow and int16 no faster: float32
    let c = cal(&[(false, 1, 0.5), (true, 1, 0.4)]);
    assert_eq!(c.choice(), (Precision::F32, 1));
    assert_eq!(cal(&[]).choice(), (Precision::F32, 1));
}

#[test]
fn a_measurement_is_cached_per_voice_and_refreshed_on_request() {
    let voice = text_voice(None, 3);
    let other = text_voice(None, 4);
    let options = SpeakerOptions::default();
    let dir = tempfile::tempdir().unwrap();
    let (first, cached) = calibrate(&voice, &options, Some(dir.path()), false).unwrap();
    assert!(!cached);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(first.trials.len(), if cores >= 2 { 4 } else { 2 });
    assert!(first.trials.iter().all(|t| t.real_time.is_finite() && t.real_time > 0.0), "{first:?}");
    assert_eq!(first.key, cache_key(&voice, options.kernel));
    let (again, cached) = calibrate(&voice, &options, Some(dir.path()), false).unwrap();
    assert!(cached);
    assert_eq!(again.key, first.key);
    assert_eq!(again.trials.len(), first.trials.len());
    for (a, b) in again.trials.iter().zip(&first.trials) {
        assert_eq!((a.int16, a.threads), (b.int16, b.threads));
        assert!((a.real_time - b.real_time).abs() <= 1e-12 * b.real_time, "{a:?} against {b:?}");
    }
    let (fresh, cached) = calibrate(&voice, &options, Some(dir.path()), true).unwrap();
    assert!(!cached);
    assert_eq!(fresh.key, first.key);
    // one file per WaveNet size and machine: a voice of the same size shares it
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert!(calibrate(&other, &options, Some(dir.path()), false).unwrap().1);
    let mut bigger = FAST;
    bigger.layers += 2;
    let big = random_text_voice(bigger, duration_config(), None, 5).unwrap();
    let (b, cached) = calibrate(&big, &options, Some(dir.path()), false).unwrap();
    assert!(!cached);
    assert_ne!(b.key, first.key);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}
