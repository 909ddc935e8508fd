//! [`SlotEngine`] against [`Speaker::render`]: a planned text's sentences,
//! prepared by the engine (length, lead fed as silence, seed) and sampled
//! together on CPU slots, are the CPU render's samples exactly; a sentence
//! longer than a slot takes fails with its length.

use std::ops::ControlFlow;

use dv_slots::{CpuSlots, Scheduler, SlotEngine, SlotError, SlotEvent};
use dv_speak::{lead_samples, CancelToken, RenderOptions, Speaker, SpeakerOptions};
use dv_synth::random::random_text_voice;
use dv_synth::ConditioningNetwork;

use crate::{duration_config, save_package, FAST, TEXT};

/// A random voice that can speak [`TEXT`], saved with golden outputs and
/// its lexicon, and loaded on the CPU.
fn speaker() -> (tempfile::TempDir, Speaker) {
    let voice = random_text_voice(FAST, duration_config(), None, 5).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("test");
    save_package(&voice, &out, true);
    let speaker = Speaker::load(&out, &SpeakerOptions::default()).unwrap();
    (dir, speaker)
}

fn engine(speaker: &Speaker, slots: usize, max_samples: usize) -> SlotEngine {
    let (kernel, options) = speaker.cpu_sampler().unwrap();
    let backend = CpuSlots::new(speaker.voice(), kernel, options, slots, max_samples).unwrap();
    SlotEngine::new(Scheduler::spawn(backend, 512).unwrap(), ConditioningNetwork::new(speaker.voice()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentences_prepared_by_the_engine_sound_as_speaker_render_renders_them() {
    let (_dir, speaker) = speaker();
    let plan = speaker.plan(TEXT, 1.0).unwrap();
    assert_eq!(plan.len(), 2);
    let engine = engine(&speaker, 2, 1 << 20);
    assert!(!engine.conditions_on_backend());
    for seed in [3, 4] {
        // What the worker pool sends: Speaker::render on the CPU, sentence by sentence.
        let options = RenderOptions { seed, ..RenderOptions::default() };
        let mut want = Vec::new();
        for s in &plan {
            speaker
                .render(s, &options, &CancelToken::new(), &mut |b| {
                    want.extend_from_slice(b);
                    ControlFlow::Continue(())
                })
                .unwrap();
        }
        // The same text on a slot.
        let (stream, mut events) = engine.scheduler().join(CancelToken::new()).unwrap();
        let mut leads = 0;
        for s in &plan {
            let prepared = engine.prepare(&speaker, s, seed).unwrap();
            assert_eq!(prepared.samples, s.samples());
            assert_eq!(prepared.seed, dv_speak::sentence_seed(seed, s.index()));
            assert_eq!(prepared.lead, lead_samples(s, speaker.sample_rate(), s.samples()));
            leads += prepared.lead;
            stream.push(prepared).unwrap();
        }
        stream.end().unwrap();
        let (mut got, mut done) = (Vec::new(), 0);
        while let Some(e) = events.recv().await {
            match e {
                SlotEvent::Audio(b) => got.extend(b),
                SlotEvent::SentenceDone => done += 1,
                SlotEvent::Failed(m) => panic!("{m}"),
                SlotEvent::Assigned => {}
            }
        }
        assert_eq!(done, plan.len());
        assert!(!want.is_empty());
        assert!(got == want, "seed {seed}: {} samples on the slot, {} from Speaker::render", got.len(), want.len());
        assert!(leads > 0, "no sentence of the text starts with a pause fed as silence");
    }
}

#[test]
fn a_sentence_longer_than_a_slot_takes_fails_with_its_length() {
    let (_dir, speaker) = speaker();
    let plan = speaker.plan(TEXT, 1.0).unwrap();
    let longest = plan.iter().map(|s| s.samples()).max().unwrap();
    let engine = engine(&speaker, 1, longest - 1);
    let s = plan.iter().find(|s| s.samples() == longest).unwrap();
    let e = engine.prepare(&speaker, s, 1).unwrap_err();
    assert!(matches!(e, SlotError::TooLong { sentence, .. } if sentence == s.index() + 1), "{e:?}");
    let rate = speaker.sample_rate() as f64;
    let want = format!(
        "sentence {} is {:.1} s long; a slot takes at most {:.1} s",
        s.index() + 1,
        longest as f64 / rate,
        (longest - 1) as f64 / rate
    );
    assert_eq!(e.to_string(), want);
}
