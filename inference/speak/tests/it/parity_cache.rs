//! The golden-parity verdict cache (`SpeakerOptions::parity_cache`): a
//! second load of a package takes its figures from the cache; another
//! package, a changed one, or a cache holding figures out of tolerance is
//! checked again; a corrupt package is refused whatever the cache holds; a
//! cache that cannot be written costs only the check.

use std::path::{Path, PathBuf};

use dv_speak::{Parity, SpeakError, Speaker, SpeakerOptions};
use dv_voice::Voice;

use crate::{save_package, text_voice};

/// A figure within tolerance that no check measures here, exact in f32.
const MARK: f64 = 1.0 / 8192.0;

fn options(cache: &Path) -> SpeakerOptions {
    SpeakerOptions { parity_cache: Some(cache.to_path_buf()), ..SpeakerOptions::default() }
}

/// The cache's file for the package in `dir`: named by its digest.
fn entry(cache: &Path, dir: &Path) -> PathBuf {
    let v = Voice::read(dir).unwrap();
    cache.join(format!("{}.json", v.digest().unwrap()))
}

/// Sets the cached duration/F0 figure of the package in `dir`.
fn plant_duration(cache: &Path, dir: &Path, figure: f64) {
    let path = entry(cache, dir);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["parity"]["duration"] = serde_json::json!(figure);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn a_second_load_takes_the_cached_verdict_until_the_package_changes() {
    let d = tempfile::tempdir().unwrap();
    let (dir, cache) = (d.path().join("voice"), d.path().join("cache"));
    save_package(&text_voice(None, 5), &dir, true);
    let first = Speaker::load(&dir, &options(&cache)).unwrap();
    assert!(!first.parity_cached(), "an empty cache: the checks run");
    let measured = *first.parity();
    assert_eq!(measured, Parity::check(&Voice::read(&dir).unwrap(), &dir).unwrap());
    assert!(entry(&cache, &dir).is_file(), "the verdict is cached under the package's digest");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1, "one file, no temporary left");

    // A figure only the cache holds: a load that reports it read the cache.
    plant_duration(&cache, &dir, MARK);
    let second = Speaker::load(&dir, &options(&cache)).unwrap();
    assert!(second.parity_cached());
    assert_eq!(second.parity().duration, Some(MARK as f32));
    assert_eq!(second.parity().wavenet, measured.wavenet);

    // Figures out of tolerance are not believed: checked again, and the cache mended.
    plant_duration(&cache, &dir, 0.5);
    let third = Speaker::load(&dir, &options(&cache)).unwrap();
    assert!(!third.parity_cached());
    assert_eq!(*third.parity(), measured);
    assert!(Speaker::load(&dir, &options(&cache)).unwrap().parity_cached());

    // Another package in the same directory: another digest, checked again.
    plant_duration(&cache, &dir, MARK);
    save_package(&text_voice(None, 6), &dir, true);
    let other = Speaker::load(&dir, &options(&cache)).unwrap();
    assert!(!other.parity_cached(), "a changed package was taken from the cache");
    assert_eq!(*other.parity(), Parity::check(&Voice::read(&dir).unwrap(), &dir).unwrap());
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 2);
    // Without a cache, every load checks.
    assert!(!Speaker::load(&dir, &SpeakerOptions::default()).unwrap().parity_cached());
}

#[test]
fn a_tampered_package_is_refused_whatever_the_cache_holds() {
    let d = tempfile::tempdir().unwrap();
    let (dir, cache) = (d.path().join("voice"), d.path().join("cache"));
    save_package(&text_voice(None, 5), &dir, true);
    Speaker::load(&dir, &options(&cache)).unwrap();
    assert!(Speaker::load(&dir, &options(&cache)).unwrap().parity_cached());
    // Golden logits edited and the package re-saved (a consistent SHA256SUMS).
    let v = Voice::read(&dir).unwrap();
    let mut g = v.golden().unwrap().clone();
    g.logits.data_mut()[17] += 0.5;
    v.with_golden(g).unwrap().save(&dir).unwrap();
    match Speaker::load(&dir, &options(&cache)) {
        Err(SpeakError::GoldenMismatch { model, .. }) => assert_eq!(model, "WaveNet"),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("a tampered package loaded through the cache"),
    }
}

#[test]
fn a_cache_that_cannot_be_written_costs_only_the_check() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("voice");
    save_package(&text_voice(None, 5), &dir, true);
    // A file where the cache directory should be.
    let cache = d.path().join("cache");
    std::fs::write(&cache, "not a directory").unwrap();
    for _ in 0..2 {
        let s = Speaker::load(&dir, &options(&cache)).unwrap();
        assert!(!s.parity_cached());
        assert_eq!(s.parity().duration, Some(0.0));
    }
}
