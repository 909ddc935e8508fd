//! Throughput of our MFCC and pitch on a directory of WAVs, per thread
//! count: the Rust half of `benchmarks/dsp_throughput.sh` (the other half
//! times librosa and parselmouth on the same audio with the same settings).
//!
//! `cargo run --release -p dv-audio --example dsp_bench -- <wav dir> [max files] [threads...]`
//!
//! Audio is decoded and resampled to 16384 Hz before the clock starts.

use std::path::PathBuf;
use std::time::Instant;

use dv_audio::{decode, resample, Mfcc, MfccConfig, Pitch, PitchConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).expect("usage: dsp_bench <wav dir> [max files] [threads...]"));
    let max: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(usize::MAX);
    let threads: Vec<usize> =
        if args.len() > 3 { args[3..].iter().filter_map(|s| s.parse().ok()).collect() } else { vec![1] };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wav"))
        .collect();
    files.sort();
    files.truncate(max);
    let rate = 16_384;
    let audio: Vec<Vec<f32>> = files
        .iter()
        .map(|f| {
            let d = decode(f).unwrap();
            resample(&d.samples, d.info.sample_rate, rate).unwrap()
        })
        .collect();
    let secs: f64 = audio.iter().map(|a| a.len() as f64 / rate as f64).sum();
    println!("{} files, {:.1} s of audio at {rate} Hz", audio.len(), secs);
    for &t in &threads {
        let run = |work: &(dyn Fn(&[f32]) + Sync)| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for k in 0..t {
                    let audio = &audio;
                    s.spawn(move || {
                        for a in audio.iter().skip(k).step_by(t) {
                            work(a);
                        }
                    });
                }
            });
            secs / start.elapsed().as_secs_f64()
        };
        let mfcc = Mfcc::new(&MfccConfig::for_rate(rate)).unwrap();
        let pitch = Pitch::new(&PitchConfig::default(), rate).unwrap();
        let m = run(&|a| {
            std::hint::black_box(mfcc.compute(a).unwrap());
        });
        let p = run(&|a| {
            std::hint::black_box(pitch.track(a).unwrap());
        });
        let both = 1.0 / (1.0 / m + 1.0 / p);
        println!("ours threads={t}: mfcc {m:.0} audio-s/s, pitch {p:.0} audio-s/s, mfcc+pitch {both:.0} audio-s/s");
    }
}
