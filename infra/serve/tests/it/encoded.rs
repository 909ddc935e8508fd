//! mp3 and opus answers from the test voice: the stream is the whole
//! answer's bytes for a seed (MP3 frames) or its packets (Ogg pages), SSE
//! deltas carry the same bytes, each format says its rate, and the decoded
//! audio (Symphonia for MP3, libopus through the `ogg` crate for Opus) has
//! the pcm answer's length and level.

use base64::Engine;
use futures::StreamExt;
use serde_json::{json, Value};
use symphonia::core::audio::SampleBuffer;

use crate::{body, samples, voices, Server};

async fn post(s: &Server, b: Value) -> reqwest::Response {
    let r = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&b).send().await.unwrap();
    assert_eq!(r.status(), 200, "{b}");
    r
}

/// The body and the chunks it came in.
async fn chunks(r: reqwest::Response) -> (Vec<u8>, usize) {
    let (mut all, mut n) = (Vec::new(), 0);
    let mut stream = r.bytes_stream();
    while let Some(c) = stream.next().await {
        all.extend_from_slice(&c.unwrap());
        n += 1;
    }
    (all, n)
}

/// The audio of `speech.audio.delta` events, concatenated.
fn sse_audio(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for e in text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")) {
        let e: Value = serde_json::from_str(e).unwrap();
        if e["type"] == "speech.audio.delta" {
            out.extend(base64::engine::general_purpose::STANDARD.decode(e["audio"].as_str().unwrap()).unwrap());
        }
    }
    out
}

fn rms(x: &[i16]) -> f64 {
    (x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / x.len().max(1) as f64).sqrt()
}

/// Symphonia's decoding of an MP3: the rate its frames say, the samples.
fn decode_mp3(bytes: Vec<u8>) -> (u32, Vec<i16>) {
    use symphonia::core::{codecs, formats, io, meta, probe};
    let mss = io::MediaSourceStream::new(Box::new(std::io::Cursor::new(bytes)), Default::default());
    let mut hint = probe::Hint::new();
    hint.with_extension("mp3");
    let probed = symphonia::default::get_probe()
        .format(&hint, mss, &formats::FormatOptions::default(), &meta::MetadataOptions::default())
        .unwrap();
    let mut format = probed.format;
    let track = format.default_track().unwrap();
    let rate = track.codec_params.sample_rate.unwrap();
    let mut decoder =
        symphonia::default::get_codecs().make(&track.codec_params, &codecs::DecoderOptions::default()).unwrap();
    let mut out = Vec::new();
    while let Ok(packet) = format.next_packet() {
        let decoded = decoder.decode(&packet).unwrap();
        let mut buf = SampleBuffer::<i16>::new(decoded.capacity() as u64, *decoded.spec());
        buf.copy_interleaved_ref(decoded);
        out.extend_from_slice(buf.samples());
    }
    (rate, out)
}

/// An Ogg Opus stream's audio packets and its last granule position less
/// the pre-skip (the samples it says it holds), and libopus's decoding of
/// it trimmed as RFC 7845 says.
fn decode_opus(bytes: &[u8]) -> (Vec<Vec<u8>>, u64, Vec<i16>) {
    let mut reader = ogg::PacketReader::new(std::io::Cursor::new(bytes));
    let head = reader.read_packet_expected().unwrap();
    assert_eq!(&head.data[..8], b"OpusHead");
    let pre_skip = u16::from_le_bytes([head.data[10], head.data[11]]) as u64;
    assert_eq!(&reader.read_packet_expected().unwrap().data[..8], b"OpusTags");
    let mut decoder = opus::Decoder::new(48000, opus::Channels::Mono).unwrap();
    let (mut packets, mut pcm, mut frame, mut end) = (Vec::new(), Vec::new(), vec![0i16; 5760], 0);
    while let Some(p) = reader.read_packet().unwrap() {
        let n = decoder.decode(&p.data, &mut frame, false).unwrap();
        pcm.extend_from_slice(&frame[..n]);
        end = p.absgp_page();
        let last = p.last_in_stream();
        packets.push(p.data);
        if last {
            break;
        }
    }
    pcm.truncate(end as usize);
    (packets, end - pre_skip, pcm.split_off(pre_skip as usize))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mp3_streams_the_frames_of_the_whole_answer() {
    let s = Server::start(voices(false), |_| {}).await;
    let pcm = samples(&post(&s, body(json!({ "response_format": "pcm" }))).await.bytes().await.unwrap());
    let r = post(&s, body(json!({ "response_format": "mp3" }))).await;
    assert_eq!(r.headers()["content-type"], "audio/mpeg");
    assert_eq!(r.headers()["x-sample-rate"], "24000");
    assert!(r.headers().get("content-length").is_none(), "a stream has no length");
    let (streamed, n) = chunks(r).await;
    assert!(n >= 3, "{n} chunks");
    let r = post(&s, body(json!({ "response_format": "mp3", "stream": false }))).await;
    assert_eq!(r.headers()["content-length"], streamed.len().to_string().as_str());
    assert_eq!(r.bytes().await.unwrap(), streamed, "streamed and whole MP3 differ");
    let r = post(&s, body(json!({ "response_format": "mp3", "stream_format": "sse" }))).await;
    assert_eq!(sse_audio(&r.text().await.unwrap()), streamed, "SSE and streamed MP3 differ");
    // Decoded: the pcm answer, after LAME's delay (1105 samples) and
    // before its last frame's padding, at its level.
    let (rate, mp3) = decode_mp3(streamed);
    assert_eq!(rate, 24000);
    let extra = mp3.len() as i64 - pcm.len() as i64;
    assert!((1105..1105 + 3 * 576).contains(&extra), "{extra} samples more than pcm's {}", pcm.len());
    let db = 20.0 * (rms(&mp3) / rms(&pcm)).log10();
    assert!(db.abs() < 2.0, "level {db:+.1} dB");
    // Every rate the server has is an MP3 rate but the voice's own.
    for rate in dv_serve::SAMPLE_RATES {
        let r = post(&s, body(json!({ "response_format": "mp3", "sample_rate": rate }))).await;
        assert_eq!(r.headers()["x-sample-rate"], rate.to_string().as_str());
        assert_eq!(decode_mp3(r.bytes().await.unwrap().to_vec()).0, rate);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opus_streams_ogg_pages_of_48_khz_audio() {
    let s = Server::start(voices(false), |_| {}).await;
    let pcm = samples(
        &post(&s, body(json!({ "response_format": "pcm", "sample_rate": 48000 }))).await.bytes().await.unwrap(),
    );
    let r = post(&s, body(json!({ "response_format": "opus" }))).await;
    assert_eq!(r.headers()["content-type"], "audio/opus");
    assert_eq!(r.headers()["x-sample-rate"], "48000", "Opus is 48 kHz whatever the default");
    let (streamed, n) = chunks(r).await;
    assert!(n >= 3, "{n} chunks");
    assert_eq!(&streamed[..4], b"OggS");
    let (packets, samples_said, opus) = decode_opus(&streamed);
    // The granule position says the pcm answer's length to the sample, and
    // the decoder gives that many.
    assert_eq!(samples_said, pcm.len() as u64);
    assert_eq!(opus.len(), pcm.len());
    let db = 20.0 * (rms(&opus) / rms(&pcm)).log10();
    assert!(db.abs() < 2.0, "level {db:+.1} dB");
    // The whole answer and SSE: the same packets (pages may split
    // differently).
    let r = post(&s, body(json!({ "response_format": "opus", "stream": false, "sample_rate": 48000 }))).await;
    assert!(r.headers().get("content-length").is_some());
    assert_eq!(decode_opus(&r.bytes().await.unwrap()).0, packets, "streamed and whole Opus differ");
    let r = post(&s, body(json!({ "response_format": "opus", "stream_format": "sse" }))).await;
    assert_eq!(decode_opus(&sse_audio(&r.text().await.unwrap())).0, packets, "SSE and streamed Opus differ");
}
