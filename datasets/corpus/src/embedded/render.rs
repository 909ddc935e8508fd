//! Running festival, hts_engine and sox for the embedded corpus, and turning
//! their outputs into ARCTIC-layout files.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

use dv_text::Phoneme;

use super::{Tools, SAMPLE_RATE};
use crate::label::{write_est_f0, write_xwaves_lab};
use crate::{CorpusError, F0Track, PhoneSpan};

/// Writes a file atomically ([`dv_util::write_atomic`]): a crash leaves
/// the old file or the new one, never half of one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CorpusError> {
    dv_util::write_atomic(path, bytes).map_err(|e| CorpusError::Io { path: e.path, source: e.source })
}

fn run(cmd: &mut Command) -> Result<(), CorpusError> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| CorpusError::ToolFailed { command: shown.clone(), reason: e.to_string() })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(CorpusError::ToolFailed { command: shown, reason: format!("{}: {}", out.status, stderr.trim()) });
    }
    Ok(())
}

fn scheme_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// festival's text analysis: HTS full-context labels in `hts/<id>.lab` for
/// every item that lacks them, `jobs` festival processes in parallel.
pub(crate) fn label(tools: &Tools, dir: &Path, items: &[(String, String)], jobs: usize) -> Result<(), CorpusError> {
    let todo: Vec<&(String, String)> =
        items.iter().filter(|(id, _)| !dir.join("hts").join(format!("{id}.lab")).is_file()).collect();
    if todo.is_empty() {
        return Ok(());
    }
    let per_job = todo.len().div_ceil(jobs);
    let mut children = Vec::new();
    for (j, chunk) in todo.chunks(per_job).enumerate() {
        let mut scm = String::from(
            "(voice_cmu_us_slt_arctic_hts)\n\
             (define (dv_label text ofile)\n\
             \x20 (let ((utt (eval (list 'Utterance 'Text text))))\n\
             \x20   (Initialize utt) (Text utt) (Token_POS utt) (Token utt) (POS utt)\n\
             \x20   (Phrasify utt) (Word utt) (Pauses utt) (Intonation utt) (PostLex utt)\n\
             \x20   (Duration utt) (Int_Targets utt)\n\
             \x20   (hts_dump_feats utt hts_feats_list ofile)))\n",
        );
        for (id, text) in chunk {
            let tmp = dir.join("hts").join(format!("{id}.lab.tmp"));
            scm.push_str(&format!("(dv_label {} {})\n", scheme_string(text), scheme_string(&tmp.to_string_lossy())));
        }
        let script = dir.join("etc").join(format!("festival_{j}.scm"));
        std::fs::write(&script, scm).map_err(CorpusError::io(&script))?;
        let mut cmd = Command::new(&tools.festival);
        cmd.arg("-b").arg(&script).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        let shown = format!("{cmd:?}");
        let child =
            cmd.spawn().map_err(|e| CorpusError::ToolFailed { command: shown.clone(), reason: e.to_string() })?;
        children.push((shown, script, child));
    }
    for (shown, script, child) in children {
        let out = child
            .wait_with_output()
            .map_err(|e| CorpusError::ToolFailed { command: shown.clone(), reason: e.to_string() })?;
        if !out.status.success() {
            let reason = format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
            return Err(CorpusError::ToolFailed { command: shown, reason });
        }
        let _ = std::fs::remove_file(script);
    }
    for (id, text) in todo {
        let tmp = dir.join("hts").join(format!("{id}.lab.tmp"));
        let ok = std::fs::metadata(&tmp).is_ok_and(|m| m.len() > 0);
        if !ok {
            return Err(CorpusError::Recipe(format!("festival wrote no labels for {id} ({text:?})")));
        }
        let dst = dir.join("hts").join(format!("{id}.lab"));
        std::fs::rename(&tmp, &dst).map_err(CorpusError::io(&dst))?;
    }
    Ok(())
}

/// The voice's sampling rate and frame period, from the `.htsvoice` header.
fn voice_frame(voice: &Path) -> Result<(u32, u32), CorpusError> {
    let bytes = std::fs::read(voice).map_err(CorpusError::io(voice))?;
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    let field = |name: &str| -> Option<u32> {
        head.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok())
    };
    match (field("SAMPLING_FREQUENCY:"), field("FRAME_PERIOD:")) {
        (Some(rate), Some(period)) if rate > 0 && period > 0 => Ok((rate, period)),
        _ => Err(CorpusError::Recipe(format!("{}: no SAMPLING_FREQUENCY/FRAME_PERIOD in the header", voice.display()))),
    }
}

/// Phone segments from `hts_engine -od` (the file `path`, named in errors):
/// `start end full-context-label` per line, times in 100 ns units, the
/// phone between the first `-` and `+`. A malformed line is a
/// [`CorpusError::Durations`] naming its number and text.
pub fn parse_durations(path: &Path, text: &str) -> Result<Vec<PhoneSpan>, CorpusError> {
    let mut spans = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let error = |reason: String| CorpusError::Durations { path: path.to_path_buf(), line: i + 1, reason };
        let bad = || error(format!("not `start end label`: {line:?}"));
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            return Err(bad());
        }
        let start: f64 = f[0].parse().map_err(|_| bad())?;
        let end: f64 = f[1].parse().map_err(|_| bad())?;
        let phone = f[2].split_once('-').and_then(|(_, r)| r.split_once('+')).map(|(p, _)| p).ok_or_else(bad)?;
        let phone = Phoneme::from_festival(phone).map_err(|e| error(e.to_string()))?;
        spans.push(PhoneSpan { phone: phone.phoneme.symbol().to_string(), start: start * 1e-7, end: end * 1e-7 });
    }
    Ok(spans)
}

/// The F0 track of `hts_engine -of`: native-endian f32 natural-log F0 per
/// frame, `-1e10` where unvoiced. Frame `i` drives samples `[i p, (i+1) p)`,
/// so its time is the frame centre.
pub(crate) fn parse_lf0(bytes: &[u8], step: f64) -> F0Track {
    let hz = bytes
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .map(|v| if v > -1e9 { v.exp() } else { 0.0 })
        .collect();
    F0Track { start: step / 2.0, step, hz }
}

/// Renders every item whose WAV is missing, `jobs` at a time.
pub(crate) fn render(
    tools: &Tools,
    dir: &Path,
    items: &[(String, String)],
    jobs: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), CorpusError> {
    let (rate, period) = voice_frame(&tools.voice)?;
    let step = period as f64 / rate as f64;
    let todo: Vec<&String> =
        items.iter().map(|(id, _)| id).filter(|id| !dir.join("wav").join(format!("{id}.wav")).is_file()).collect();
    let already = items.len() - todo.len();
    progress(already, items.len());
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<CorpusError>> = Mutex::new(None);
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        for worker in 0..jobs {
            let tx = tx.clone();
            let (next, stop, first_error, todo) = (&next, &stop, &first_error, &todo);
            s.spawn(move || {
                let scratch = dir.join("etc").join(format!("render_{worker}"));
                let result = (|| -> Result<(), CorpusError> {
                    std::fs::create_dir_all(&scratch).map_err(CorpusError::io(&scratch))?;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= todo.len() || stop.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        render_one(tools, dir, &scratch, todo[i], step)?;
                        let _ = tx.send(());
                    }
                })();
                let _ = std::fs::remove_dir_all(&scratch);
                if let Err(e) = result {
                    stop.store(true, Ordering::Relaxed);
                    first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                }
            });
        }
        drop(tx);
        let mut done = already;
        for () in rx {
            done += 1;
            progress(done, items.len());
        }
    });
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn render_one(tools: &Tools, dir: &Path, scratch: &Path, id: &str, step: f64) -> Result<(), CorpusError> {
    let full = scratch.join("full.wav");
    let lf0 = scratch.join("out.lf0");
    let dur = scratch.join("out.dur");
    let resampled = scratch.join("out.wav");
    run(Command::new(&tools.hts_engine)
        .arg("-m")
        .arg(&tools.voice)
        .arg("-ow")
        .arg(&full)
        .arg("-of")
        .arg(&lf0)
        .arg("-od")
        .arg(&dur)
        .arg(dir.join("hts").join(format!("{id}.lab"))))?;
    run(Command::new(&tools.sox).arg("-R").arg(&full).arg("-b").arg("16").arg(&resampled).args([
        "rate",
        "-h",
        &SAMPLE_RATE.to_string(),
    ]))?;
    let dur_text = std::fs::read_to_string(&dur).map_err(CorpusError::io(&dur))?;
    let spans = parse_durations(&dur, &dur_text)?;
    let lf0_bytes = std::fs::read(&lf0).map_err(CorpusError::io(&lf0))?;
    let track = parse_lf0(&lf0_bytes, step);
    write_atomic(&dir.join("lab").join(format!("{id}.lab")), write_xwaves_lab(&spans).as_bytes())?;
    write_atomic(&dir.join("f0").join(format!("{id}.f0")), write_est_f0(&track).as_bytes())?;
    let wav: PathBuf = dir.join("wav").join(format!("{id}.wav"));
    std::fs::rename(&resampled, &wav).map_err(CorpusError::io(&wav))
}

/// Total seconds of the WAVs under `dir/wav`.
pub(crate) fn audio_seconds(dir: &Path) -> Result<f64, CorpusError> {
    let wav_dir = dir.join("wav");
    let mut total = 0.0;
    for e in std::fs::read_dir(&wav_dir).map_err(CorpusError::io(&wav_dir))? {
        let p = e.map_err(CorpusError::io(&wav_dir))?.path();
        if p.extension().is_some_and(|x| x == "wav") {
            let info = dv_audio::probe(&p).map_err(|e| CorpusError::Recipe(e.to_string()))?;
            total += info.duration();
        }
    }
    Ok(total)
}
