//! Loading: golden-parity checks that refuse a tampered package, and a
//! WaveNet-only package that renders given frames but cannot plan text.

use std::ops::ControlFlow;
use std::path::Path;

use dv_speak::{CancelToken, RenderOptions, SpeakError, Speaker, SpeakerOptions};
use dv_synth::random::{random_golden, random_voice};
use dv_text::CONDITIONING_DIM;
use dv_voice::{Golden, Voice};

use crate::{save_package, text_voice, FAST};

/// A golden output, the model its check names, and how to tamper with it.
type Tampering = (&'static str, &'static str, Box<dyn FnOnce(&mut Golden)>);

/// Re-saves the package in `from` into `to` with its golden outputs edited.
fn tamper(from: &Path, to: &Path, edit: impl FnOnce(&mut Golden)) {
    let v = Voice::read(from).unwrap();
    let mut g = v.golden().unwrap().clone();
    edit(&mut g);
    v.with_golden(g).unwrap().save(to).unwrap();
    std::fs::copy(from.join(dv_speak::LEXICON_FILE), to.join(dv_speak::LEXICON_FILE)).unwrap();
}

#[test]
fn a_package_reproducing_its_goldens_loads_with_its_figures() {
    let d = tempfile::tempdir().unwrap();
    save_package(&text_voice(None, 5), d.path(), true);
    let s = Speaker::load(d.path(), &SpeakerOptions::default()).unwrap();
    let p = s.parity();
    assert_eq!(p.duration, Some(0.0));
    assert!(p.g2p.is_none(), "no G2P model, no G2P figure");
    let w = p.wavenet.expect("WaveNet goldens are checked");
    assert!(w.conditioning == 0.0 && w.logits == 0.0, "{w:?}");
}

#[test]
fn a_package_with_tampered_golden_outputs_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good");
    save_package(&text_voice(None, 5), &good, true);
    let cases: [Tampering; 3] = [
        ("logits", "WaveNet", Box::new(|g: &mut Golden| g.logits.data_mut()[17] += 0.5)),
        ("conditioning", "conditioning network", Box::new(|g: &mut Golden| g.conditioning.data_mut()[3] -= 0.01)),
        (
            "duration",
            "duration/F0",
            Box::new(|g: &mut Golden| g.duration.as_mut().unwrap().output.data_mut()[0] += 0.01),
        ),
    ];
    for (name, model, edit) in cases {
        let bad = d.path().join(name);
        tamper(&good, &bad, edit);
        match Speaker::load(&bad, &SpeakerOptions::default()) {
            Err(e @ SpeakError::GoldenMismatch { .. }) => {
                let SpeakError::GoldenMismatch { dir, model: m, .. } = &e else { unreachable!() };
                assert_eq!((dir.as_path(), *m), (bad.as_path(), model), "{e}");
                let msg = e.to_string();
                assert!(msg.contains(bad.to_str().unwrap()) && msg.contains(model), "{msg}");
            }
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => panic!("{name}: a tampered package loaded"),
        }
    }
    // The same tampering in memory is refused too.
    let mut v = Voice::read(&good).unwrap();
    let mut g = v.golden().unwrap().clone();
    g.logits.data_mut()[0] += 1.0;
    v = v.with_golden(g).unwrap();
    let options = SpeakerOptions { lexicon: Some(good.join(dv_speak::LEXICON_FILE)), ..SpeakerOptions::default() };
    assert!(matches!(Speaker::from_voice(v, &options), Err(SpeakError::GoldenMismatch { model: "WaveNet", .. })));
}

#[test]
fn a_wavenet_only_package_renders_frames_but_cannot_plan_text() {
    let d = tempfile::tempdir().unwrap();
    let voice = random_voice(FAST, 8).unwrap();
    let golden = random_golden(&voice, 3, 1).unwrap();
    voice.with_golden(golden).unwrap().save(d.path()).unwrap();
    // No lexicon is needed (none is given, and none is looked for).
    let options = SpeakerOptions { lexicon: Some(d.path().join("absent.dict")), ..SpeakerOptions::default() };
    let s = Speaker::load(d.path(), &options).unwrap();
    assert!(s.lexicon_path().is_none());
    let e = s.plan("hello", 1.0).unwrap_err();
    assert!(matches!(e, SpeakError::NoDurationModel) && e.to_string().contains("duration/F0"), "{e}");
    let frames: Vec<f32> = (0..3 * CONDITIONING_DIM).map(|i| ((i * 7919) % 13) as f32 / 13.0).collect();
    let sentence = s.sentence_from_frames("frames", frames, 0).unwrap();
    assert_eq!((sentence.frames(), sentence.samples()), (3, 3 * 64));
    let mut n = 0;
    let stats = s
        .render(&sentence, &RenderOptions::default(), &CancelToken::new(), &mut |b| {
            n += b.len();
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!((n, stats.samples), (192, 192));
    for bad in [vec![], vec![0.0; 100]] {
        assert!(matches!(s.sentence_from_frames("x", bad, 0), Err(SpeakError::BadOption { .. })));
    }
}
