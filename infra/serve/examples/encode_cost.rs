//! What encoding an answer costs on this host: [`dv_serve::encode`] of the
//! same speech in each `response_format`, timed over N runs on one thread,
//! with the bytes it gives. The speech is the server's own pcm answers, at
//! 24 kHz (wav, flac, mp3) and 48 kHz (opus, Opus's only rate):
//!
//!   curl … -d '{…, "response_format": "pcm", "seed": 1}' -o s24.pcm
//!   curl … -d '{…, "response_format": "pcm", "seed": 1, "sample_rate": 48000}' -o s48.pcm
//!   cargo run -p dv-serve --example encode_cost -- s24.pcm s48.pcm [N]
use std::time::Instant;

use dv_serve::{encode, ResponseFormat};

fn read_pcm(path: &str) -> Result<Vec<i16>, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(bytes.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: encode_cost PCM_24KHZ PCM_48KHZ [N]";
    let pcm24 = read_pcm(args.get(1).ok_or(usage)?)?;
    let pcm48 = read_pcm(args.get(2).ok_or(usage)?)?;
    let n: usize = match args.get(3) {
        Some(s) => s.parse().map_err(|e| format!("N (the runs to time): {s:?}: {e}"))?,
        None => 20,
    };
    println!(
        "audio: {:.2} s at 24 kHz, {:.2} s at 48 kHz; {n} runs each",
        pcm24.len() as f64 / 24e3,
        pcm48.len() as f64 / 48e3
    );
    println!("| format | rate | bytes | kbit/s | encode, median (min–max) | encode / audio |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (format, name, pcm, rate) in [
        (ResponseFormat::Pcm, "pcm", &pcm24, 24_000u32),
        (ResponseFormat::Wav, "wav", &pcm24, 24_000),
        (ResponseFormat::Flac, "flac", &pcm24, 24_000),
        (ResponseFormat::Mp3, "mp3", &pcm24, 24_000),
        (ResponseFormat::Opus, "opus", &pcm48, 48_000),
    ] {
        let audio_s = pcm.len() as f64 / rate as f64;
        let mut times = Vec::with_capacity(n);
        let mut bytes = 0;
        for _ in 0..n {
            let t = Instant::now();
            let out = encode(format, pcm, rate, 1).map_err(|e| format!("{name}: {}", e.message))?;
            times.push(t.elapsed().as_secs_f64());
            bytes = out.len();
        }
        times.sort_by(f64::total_cmp);
        let ms = |s: f64| s * 1e3;
        println!(
            "| {name} | {rate} | {bytes} | {:.0} | {:.2} ms ({:.2}–{:.2}) | {:.4} |",
            bytes as f64 * 8.0 / audio_s / 1e3,
            ms(times[n / 2]),
            ms(times[0]),
            ms(times[n - 1]),
            times[n / 2] / audio_s
        );
    }
    Ok(())
}
