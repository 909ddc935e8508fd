use dv_audio::{chunks, ChunkConfig};

#[test]
fn chunks_cover_the_utterance_with_quarter_second_context() {
    let rate = 1000;
    let cfg = ChunkConfig::for_rate(rate);
    let audio: Vec<f32> = (0..2500).map(|i| ((i as f32) * 0.3).sin() * 0.5).collect();
    let c = chunks(&audio, &cfg).unwrap();
    assert_eq!(c.dropped, 0);
    let spans: Vec<(usize, i64, usize, usize)> =
        c.kept.iter().map(|k| (k.index, k.window_start, k.window_samples, k.target_samples)).collect();
    assert_eq!(spans, [(0, -250, 1250, 1000), (1, 750, 1250, 1000), (2, 1750, 1250, 500)]);
    let mut w = vec![9.0; 1250];
    c.kept[0].window_into(&audio, &mut w);
    assert!(w[..250].iter().all(|v| *v == 0.0), "the first context is the leading silence");
    assert_eq!(&w[250..], &audio[..1000]);
    c.kept[2].window_into(&audio, &mut w);
    assert_eq!(&w[..750], &audio[1750..]);
    assert!(w[750..].iter().all(|v| *v == 0.0), "the short last chunk is zero-padded");
}

#[test]
fn predominantly_silent_chunks_are_dropped() {
    let rate = 1000;
    let cfg = ChunkConfig::for_rate(rate);
    let loud = |n: usize| (0..n).map(|i| ((i as f32) * 0.7).sin() * 0.5).collect::<Vec<f32>>();
    let mut audio = loud(1000); // chunk 0: speech
    audio.extend(vec![0.001f32; 1000]); // chunk 1: 54 dB down: silent
    let mut mostly = vec![0.0f32; 850];
    mostly.extend(loud(150)); // chunk 2: 85% silent: dropped
    audio.extend(mostly);
    let mut half = vec![0.0f32; 700];
    half.extend(loud(300)); // chunk 3: 70% silent: kept
    audio.extend(half);
    let c = chunks(&audio, &cfg).unwrap();
    assert_eq!(c.kept.iter().map(|k| k.index).collect::<Vec<_>>(), [0, 3]);
    assert_eq!(c.dropped, 2);
    assert_eq!(chunks(&[0.0; 3000], &cfg).unwrap().kept.len(), 0, "all silence");
    assert!(chunks(&[], &cfg).unwrap().kept.is_empty());
    assert!(chunks(&audio, &ChunkConfig { len: 0.0, ..cfg }).is_err());
}
