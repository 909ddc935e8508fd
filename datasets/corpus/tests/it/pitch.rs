//! Pitch parity with real Praat on the embedded corpus, and the error of
//! both against the exact F0 the corpus was rendered with.

use std::path::PathBuf;

use dv_audio::{decode, Pitch, PitchConfig};
use dv_corpus::embedded::{make, Request, Tools};
use dv_corpus::{read, F0Track};

fn golden_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run under cargo test")).join("tests/golden")
}

fn read_f32(path: &PathBuf) -> Vec<f32> {
    std::fs::read(path).unwrap().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The exact F0 at time `t` (linear between frame centres, 0 if either
/// neighbour is unvoiced).
fn exact_at(track: &F0Track, t: f64) -> f32 {
    let x = (t - track.start) / track.step;
    if x < 0.0 {
        return 0.0;
    }
    let i = x.floor() as usize;
    match (track.hz.get(i), track.hz.get(i + 1)) {
        (Some(a), Some(b)) if *a > 0.0 && *b > 0.0 => a + (b - a) * (x - i as f64) as f32,
        _ => 0.0,
    }
}

#[derive(Default)]
struct Tally {
    frames: usize,
    agree: usize,
    both: usize,
    within: usize,
    max_rel: f64,
}

impl Tally {
    fn add(&mut self, a: f32, b: f32) {
        self.frames += 1;
        if (a > 0.0) == (b > 0.0) {
            self.agree += 1;
        }
        if a > 0.0 && b > 0.0 {
            self.both += 1;
            let rel = ((a - b) / b).abs() as f64;
            self.max_rel = self.max_rel.max(rel);
            if rel <= 0.02 {
                self.within += 1;
            }
        }
    }
    fn voicing(&self) -> f64 {
        self.agree as f64 / self.frames.max(1) as f64
    }
    fn accuracy(&self) -> f64 {
        self.within as f64 / self.both.max(1) as f64
    }
}

/// Praat 6.1.38 (parselmouth 0.4.7) "To Pitch (ac)" with Deep Voice's settings on the
/// first 12 utterances of the embedded corpus (golden files from
/// tests/golden/make_pitch.py): voicing agrees on at least 97% of frames, and
/// at least 98% of frames both call voiced are within 2% of Praat.
#[test]
fn pitch_matches_praat_on_the_embedded_corpus() {
    let d = tempfile::tempdir().unwrap();
    let req = Request {
        out: d.path().join("c"),
        utterances: 12,
        seed: 2017,
        jobs: 2,
        labels_only: false,
        tools: Tools::default(),
    };
    make(&req, &mut |_, _| {}).expect("the recipe's Debian packages are installed");
    let corpus = read(req.out.to_str().unwrap(), None).unwrap();
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden_dir().join("pitch.json")).unwrap()).unwrap();
    let tracker = Pitch::new(&PitchConfig::default(), 16_000).unwrap();
    let (mut vs_praat, mut ours_vs_exact, mut praat_vs_exact) = (Tally::default(), Tally::default(), Tally::default());
    for u in &corpus.utterances {
        let m = &meta["utterances"][&u.id];
        let want = read_f32(&golden_dir().join(format!("pitch/{}.f32", u.id)));
        let audio = decode(&PathBuf::from(&u.audio)).unwrap();
        let got = tracker.track(&audio.samples).unwrap();
        assert_eq!(got.hz.len(), want.len(), "{}: frame count", u.id);
        assert!((got.start - m["start"].as_f64().unwrap()).abs() < 1e-9, "{}: first frame time", u.id);
        let exact = u.reference.as_ref().and_then(|r| r.f0.as_ref()).expect("exact F0");
        for (i, (a, b)) in got.hz.iter().zip(&want).enumerate() {
            vs_praat.add(*a, *b);
            let e = exact_at(exact, got.start + i as f64 * got.step);
            ours_vs_exact.add(*a, e);
            praat_vs_exact.add(*b, e);
        }
    }
    eprintln!(
        "vs Praat: {} frames, voicing agrees {:.2}%, {:.2}% of {} both-voiced frames within 2%, largest difference {:.2e}",
        vs_praat.frames,
        100.0 * vs_praat.voicing(),
        100.0 * vs_praat.accuracy(),
        vs_praat.both,
        vs_praat.max_rel
    );
    for (name, t) in [("ours", &ours_vs_exact), ("Praat", &praat_vs_exact)] {
        eprintln!(
            "{name} vs exact F0: voicing agrees {:.2}%, {:.2}% of {} both-voiced frames within 2%",
            100.0 * t.voicing(),
            100.0 * t.accuracy(),
            t.both
        );
    }
    assert!(vs_praat.voicing() >= 0.97, "voicing agreement {:.4}", vs_praat.voicing());
    assert!(vs_praat.accuracy() >= 0.98, "F0 within 2%: {:.4}", vs_praat.accuracy());
}
