//! What the text front end costs per request on this host: `Speaker::plan`
//! (normalization, lexicon then G2P, the duration and F0 models, each
//! sentence's frame-rate features), timed for one text over N runs on one
//! thread. A slotted server plans every request on the CPU before it
//! joins a slot, so the host's cores bound the requests it can start per
//! second (benchmarks/serve.md).
//!
//!   cargo run -p dv-serve --example plan_cost -- inference/voices/slt [N] [TEXT]
use std::path::Path;
use std::time::Instant;

use dv_speak::{Speaker, SpeakerOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).map(String::as_str).unwrap_or("inference/voices/slt");
    let n: usize = match args.get(2) {
        Some(s) => s.parse().map_err(|e| format!("N (the runs to time): {s:?}: {e}"))?,
        None => 50,
    };
    let text = args.get(3).cloned().unwrap_or_else(|| {
        "The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet forest. \
         It stops by a stream, drinks, and listens to the birds in the tall trees."
            .to_string()
    });
    let speaker = Speaker::load(Path::new(dir), &SpeakerOptions::default())?;
    let (mut plan_s, mut values) = (Vec::new(), 0usize);
    for _ in 0..n.max(1) {
        let t = Instant::now();
        let plan = speaker.plan(&text, 1.0)?;
        plan_s.push(t.elapsed().as_secs_f64());
        values = plan.iter().map(|s| s.conditioning_frames().len()).sum::<usize>();
    }
    plan_s.sort_by(f64::total_cmp);
    let ms = |q: f64| 1e3 * plan_s[((plan_s.len() - 1) as f64 * q) as usize];
    println!(
        "{} runs: plan p50 {:.2} ms, p90 {:.2} ms; {values} feature values ({} characters)",
        plan_s.len(),
        ms(0.5),
        ms(0.9),
        text.chars().count()
    );
    Ok(())
}
