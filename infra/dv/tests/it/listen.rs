//! The evaluate stage's ears (`listen.py`) on a known recording, the shipped
//! voice and noise: what whisper, pocketsphinx and DNSMOS give must tell them
//! apart, and both sides of a WER are normalized alike.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::dv;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/recipe/listen.py")
}

fn python(args: &[&str]) -> String {
    let o = Command::new("python3").arg(script()).args(args).output().expect("run python3");
    assert!(o.status.success(), "listen.py {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn both_sides_of_a_wer_are_normalized_alike() {
    let words =
        python(&["--normalize", "At 7:30 on the 21st, Mr. Lee paid $5.50 (12.5%) in 1999 for 1,200 well-made pies."]);
    assert_eq!(
        words.trim(),
        "at seven thirty on the twenty first mister lee paid five dollars fifty cents twelve point five percent \
         in nineteen ninety nine for one thousand two hundred well made pies"
    );
    assert_eq!(
        python(&["--normalize", "Don't STOP: 'quoted' 2005, 100."]).trim(),
        "don't stop quoted two thousand five one hundred"
    );
}

/// 16 kHz mono 16-bit WAV.
fn write_wav(path: &Path, samples: &[f32]) {
    let data: Vec<u8> = samples.iter().flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes()).collect();
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    for v in [16u32.to_le_bytes(), [1, 0, 1, 0], 16_000u32.to_le_bytes(), 32_000u32.to_le_bytes(), [2, 0, 16, 0]] {
        b.extend_from_slice(&v);
    }
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(&data);
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_recording_and_the_shipped_voice_score_better_than_noise() {
    let have: serde_json::Value = serde_json::from_str(&python(&["--available"])).unwrap();
    for m in ["whisper", "pocketsphinx", "dnsmos"] {
        assert_eq!(have[m], true, "{m} is not installed: `infra/run test` installs LISTEN_PACKAGES (infra/install.sh)");
    }
    let d = tempfile::tempdir().unwrap();
    let text = "Please turn left at the next traffic light and park near the blue door.";
    // A known recording: festival's slt HTS voice, the shipped voice's teacher.
    let recording = d.path().join("recording.wav");
    let scm = format!(
        "(voice_cmu_us_slt_arctic_hts)\n(utt.save.wave (utt.synth (Utterance Text \"{text}\")) \"{}\" 'riff)\n",
        recording.display()
    );
    let mut f =
        Command::new("festival").args(["-b", "--pipe"]).stdin(std::process::Stdio::piped()).spawn().expect("festival");
    std::io::Write::write_all(f.stdin.as_mut().unwrap(), scm.as_bytes()).unwrap();
    assert!(f.wait().unwrap().success());
    let voice = d.path().join("voice.wav");
    let o = dv(&["synth", "-o", voice.to_str().unwrap(), text]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Noise of the same length as the recording, at a speech-like level.
    let noise = d.path().join("noise.wav");
    let mut rng = dv_util::SplitMix64::new(41);
    let samples: Vec<f32> =
        (0..16_000 * 4).map(|_| 0.1 * ((rng.next_u64() >> 11) as f32 / (1u64 << 53) as f32 - 0.5)).collect();
    write_wav(&noise, &samples);
    let items = serde_json::json!([{ "id": "one", "set": "novel", "reference": text,
        "audio": { "recording": recording, "voice": voice, "noise": noise } }]);
    let input = d.path().join("items.json");
    std::fs::write(&input, items.to_string()).unwrap();
    let out = d.path().join("listen.json");
    python(&[input.to_str().unwrap(), "-o", out.to_str().unwrap(), "--threads", "2"]);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let s = &r["summary"]["novel"];
    let get = |kind: &str, key: &str| s[kind][key].as_f64().unwrap_or_else(|| panic!("{kind} {key}: {r}"));
    assert!(get("recording", "whisper_wer") <= 0.1, "{r}");
    assert!(get("voice", "whisper_wer") <= 0.25, "the shipped voice: {r}");
    assert!(get("noise", "whisper_wer") >= 0.9, "noise: {r}");
    assert!(get("recording", "pocketsphinx_wer") < get("noise", "pocketsphinx_wer"), "{r}");
    for kind in ["recording", "voice"] {
        assert!(get(kind, "dnsmos_ovrl") > get("noise", "dnsmos_ovrl") + 0.5, "{kind} against noise: {r}");
        assert!(get(kind, "dnsmos_sig") > get("noise", "dnsmos_sig"), "{kind}: {r}");
    }
}
