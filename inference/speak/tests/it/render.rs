//! Sentence → PCM: lengths, seeds, blocks, cancellation, threads, WAV.

use std::ops::ControlFlow;

use dv_speak::{
    sentence_seed, wav_header, CancelToken, RenderOptions, SpeakError, Speaker, WavWriter, LEAD_SAMPLED_S, PAUSE,
    SILENCE, STREAMING_SIZE,
};
use dv_synth::{ConditioningNetwork, Rng, Sampler, Sampling};

use crate::{speaker, TEXT};

/// Renders `sentence` whole; the PCM and the size of every block.
fn collect(s: &Speaker, sentence: &dv_speak::Sentence, o: &RenderOptions) -> (Vec<i16>, Vec<usize>) {
    let (mut pcm, mut blocks) = (Vec::new(), Vec::new());
    let stats = s
        .render(sentence, o, &CancelToken::new(), &mut |b| {
            pcm.extend_from_slice(b);
            blocks.push(b.len());
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(stats.samples, pcm.len());
    assert!(!stats.stopped);
    (pcm, blocks)
}

#[test]
fn render_length_is_the_planned_duration_and_a_seed_reproduces_it() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let rate = s.sample_rate() as f64;
    assert_eq!(rate, 16384.0);
    for sentence in s.plan(TEXT, 1.0).unwrap() {
        let o = RenderOptions { seed: 7, block: 1000, first_block: 0, ..RenderOptions::default() };
        let (pcm, blocks) = collect(&s, &sentence, &o);
        assert_eq!(pcm.len(), sentence.samples());
        let want = sentence.duration_s * rate;
        assert!(pcm.len() as f64 >= want && pcm.len() as f64 - want < 64.0, "{} samples for {want}", pcm.len());
        assert!(blocks.iter().all(|&b| b > 0 && b <= 1000) && blocks.len() == pcm.len().div_ceil(1000));
        assert!(pcm.iter().any(|&v| v != pcm[0]), "constant audio");
        // The same seed gives the same samples, whatever the block size.
        assert_eq!(collect(&s, &sentence, &RenderOptions { block: 4096, ..o }).0, pcm);
        // A short first hand-over (a stream's first audio sooner) changes no sample.
        let (short, short_blocks) = collect(&s, &sentence, &RenderOptions { first_block: 256, ..o });
        assert_eq!(short, pcm, "the first block changed the samples");
        assert_eq!(short_blocks[0], 256.min(pcm.len()), "{short_blocks:?}");
        assert!(short_blocks[1..].iter().all(|&b| b > 0 && b <= 1000), "{short_blocks:?}");
        assert_ne!(collect(&s, &sentence, &RenderOptions { seed: 8, ..o }).0, pcm, "the seed is ignored");
        // max_samples cuts the sentence.
        assert_eq!(collect(&s, &sentence, &RenderOptions { max_samples: Some(1234), ..o }).0, pcm[..1234]);
    }
}

#[test]
fn render_is_the_sampler_with_the_sentence_seed() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let plan = s.plan(TEXT, 1.0).unwrap();
    let (kernel, options) = s.cpu_sampler().unwrap();
    let sampler = Sampler::new(s.voice(), kernel, options).unwrap();
    let network = ConditioningNetwork::new(s.voice()).unwrap();
    let o = RenderOptions { seed: 11, sampling: Sampling::Temperature(0.9), ..RenderOptions::default() };
    for (k, sentence) in plan.iter().enumerate() {
        // Sentence k renders with seed ^ k · 0x9e3779b97f4a7c15.
        assert_eq!(sentence_seed(11, k), 11 ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (got, _) = collect(&s, sentence, &o);
        let cond = network.forward(sentence.conditioning_frames()).unwrap();
        let to_pcm = |codes: &[u8]| -> Vec<i16> {
            codes
                .iter()
                .map(|&c| (dv_audio::mulaw::decode(c) * 32767.0).round().clamp(-32768.0, 32767.0) as i16)
                .collect()
        };
        // The leading pause, all but its last LEAD_SAMPLED_S, is fed as silence; the rest is sampled.
        let first = &sentence.phonemes[0];
        assert_eq!(first.phoneme, PAUSE);
        let n = sentence.samples();
        let lead = (((first.end_s - LEAD_SAMPLED_S).max(0.0) * s.sample_rate() as f64) as usize).min(n);
        assert!(lead > 0, "the test voice's leading pause is longer than {LEAD_SAMPLED_S} s");
        let mut stream = sampler.stream(&cond, n, o.sampling, Rng::new(sentence_seed(11, k)));
        let mut codes = vec![SILENCE; lead];
        stream.force(&codes).unwrap();
        let mut rest = vec![0u8; n - lead];
        stream.next_block(&mut rest).unwrap();
        codes.extend_from_slice(&rest);
        assert_eq!(got, to_pcm(&codes), "sentence {k}");
        // The same frames as a sentence of given frames (no phoneme timings, so nothing is
        // forced), with the same index: the sampler alone.
        let again = s.sentence_from_frames(&sentence.text, sentence.conditioning_frames().to_vec(), k).unwrap();
        let plain = sampler.synthesize(&cond, o.sampling, sentence_seed(11, k)).unwrap();
        assert_eq!(collect(&s, &again, &o).0, to_pcm(&plain), "sentence {k} from its frames");
    }
}

#[test]
fn cancelling_stops_the_render_between_blocks() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let sentence = &s.plan(TEXT, 1.0).unwrap()[0];
    let o = RenderOptions { block: 500, first_block: 0, ..RenderOptions::default() };
    let cancel = CancelToken::new();
    let mut got = 0;
    let r = s.render(sentence, &o, &cancel, &mut |b| {
        got += b.len();
        cancel.cancel(); // a client that goes away after the first block
        ControlFlow::Continue(())
    });
    assert!(matches!(r, Err(SpeakError::Cancelled)), "{r:?}");
    assert_eq!(got, 500);
    assert!(sentence.samples() > 2 * 500);
    // A token cancelled before the render: nothing is produced.
    let mut any = false;
    let r = s.render(sentence, &o, &cancel, &mut |_| {
        any = true;
        ControlFlow::Continue(())
    });
    assert!(matches!(r, Err(SpeakError::Cancelled)) && !any);
    // Clones share the flag.
    let t = CancelToken::new();
    let u = t.clone();
    assert!(!t.is_cancelled());
    u.cancel();
    assert!(t.is_cancelled());
}

#[test]
fn a_sink_that_breaks_stops_the_render() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let sentence = &s.plan(TEXT, 1.0).unwrap()[0];
    let o = RenderOptions { block: 300, first_block: 0, ..RenderOptions::default() };
    let mut calls = 0;
    let stats = s
        .render(sentence, &o, &CancelToken::new(), &mut |_| {
            calls += 1;
            if calls == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!((calls, stats.samples, stats.stopped), (2, 600, true));
    let r =
        s.render(sentence, &RenderOptions { block: 0, ..o }, &CancelToken::new(), &mut |_| ControlFlow::Continue(()));
    assert!(matches!(r, Err(SpeakError::BadOption { what: "block", .. })));
}

#[test]
fn one_speaker_renders_on_several_threads() {
    let d = tempfile::tempdir().unwrap();
    let s = speaker(d.path());
    let plan = s.plan(TEXT, 1.0).unwrap();
    let o = RenderOptions { seed: 3, ..RenderOptions::default() };
    let alone: Vec<Vec<i16>> = plan.iter().map(|p| collect(&s, p, &o).0).collect();
    let (shared, o) = (&s, &o);
    let together: Vec<Vec<i16>> = std::thread::scope(|scope| {
        let handles: Vec<_> = plan.iter().map(|p| scope.spawn(move || collect(shared, p, o).0)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(alone, together);
}

#[test]
fn wav_headers_and_files() {
    let h = wav_header(16384, None);
    assert_eq!(&h[0..4], b"RIFF");
    assert_eq!(&h[8..16], b"WAVEfmt ");
    assert_eq!(&h[36..40], b"data");
    assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), STREAMING_SIZE);
    assert_eq!(u32::from_le_bytes(h[40..44].try_into().unwrap()), 0xFFFF_FFFF);
    assert_eq!(u32::from_le_bytes(h[24..28].try_into().unwrap()), 16384);
    assert_eq!(u32::from_le_bytes(h[28..32].try_into().unwrap()), 32768);
    let h = wav_header(16384, Some(10));
    assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), 56);
    assert_eq!(u32::from_le_bytes(h[40..44].try_into().unwrap()), 20);

    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("a.wav");
    let mut w = WavWriter::create(&path, 8000).unwrap();
    w.push(&[1, -2, 300]).unwrap();
    w.push(&[i16::MIN, i16::MAX]).unwrap();
    assert_eq!(w.samples(), 5);
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut want = wav_header(8000, Some(5)).to_vec();
    for v in [1i16, -2, 300, i16::MIN, i16::MAX] {
        want.extend_from_slice(&v.to_le_bytes());
    }
    assert_eq!(bytes, want);
    let e = WavWriter::create(&d.path().join("no/such/dir.wav"), 8000).err().unwrap();
    assert!(e.to_string().contains("no/such/dir.wav"), "{e}");
}

#[test]
fn devices_parse() {
    use dv_speak::Device;
    assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
    assert_eq!("cuda".parse::<Device>().unwrap(), Device::Cuda);
    assert!(matches!("gpu".parse::<Device>(), Err(SpeakError::BadOption { what: "device", .. })));
}
