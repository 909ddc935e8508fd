//! Reference label files of the ARCTIC/festvox layout: xwaves phone labels
//! (`lab/*.lab`) and EST ascii F0 tracks (`f0/*.f0`).

use std::fmt::Write as _;

use dv_text::Phoneme;

use crate::{F0Track, PhoneSpan};

/// Why a reference label file ([`parse_xwaves_lab`], [`parse_est_f0`]) is
/// not read. Line numbers count from 1: of the file for xwaves labels, of
/// the data after the header for EST tracks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error("no `#` line ends the header")]
    NoHeaderEnd,
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error("no segments")]
    NoSegments,
    #[error("not an EST track (first line is not `EST_File Track`)")]
    NotEstTrack,
    #[error("only `DataType ascii` EST tracks are read")]
    NotAscii,
    #[error("data line {line}: {reason}")]
    DataLine { line: usize, reason: String },
    #[error("fewer than two frames")]
    TooFewFrames,
    #[error("frames are not equally spaced")]
    Unequal,
}

fn line(i: usize, reason: impl Into<String>) -> LabelError {
    LabelError::Line { line: i + 1, reason: reason.into() }
}

fn data_line(i: usize, reason: impl Into<String>) -> LabelError {
    LabelError::DataLine { line: i + 1, reason: reason.into() }
}

/// Parses an xwaves/ESPS label file: header lines up to a line `#`, then
/// `end_time color label` per line (text after `;` ignored). Each segment
/// starts where the previous one ended (the first at 0). Phones are mapped to
/// the Deep Voice inventory (`pau` → `sil`, `ax` → `AH`).
pub fn parse_xwaves_lab(text: &str) -> Result<Vec<PhoneSpan>, LabelError> {
    let mut lines = text.lines().enumerate();
    if !text.lines().any(|l| l.trim() == "#") {
        return Err(LabelError::NoHeaderEnd);
    }
    for (_, l) in lines.by_ref() {
        if l.trim() == "#" {
            break;
        }
    }
    let mut spans = Vec::new();
    let mut start = 0.0;
    for (i, text) in lines {
        let text = text.split(';').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        let f: Vec<&str> = text.split_whitespace().collect();
        if f.len() < 3 {
            return Err(line(i, format!("expected `end color phone`, got {text:?}")));
        }
        let end: f64 = f[0].parse().map_err(|_| line(i, format!("bad time {:?}", f[0])))?;
        if !end.is_finite() || end < start {
            return Err(line(i, format!("time {end} goes backwards (previous {start})")));
        }
        let phone = Phoneme::from_festival(f[2]).map_err(|e| line(i, e.to_string()))?;
        spans.push(PhoneSpan { phone: phone.phoneme.symbol().to_string(), start, end });
        start = end;
    }
    if spans.is_empty() {
        return Err(LabelError::NoSegments);
    }
    Ok(spans)
}

/// Writes phone segments as an xwaves label file (festival's radio phone
/// names in lower case, `sil` as `pau`), as CMU ARCTIC ships them.
pub fn write_xwaves_lab(spans: &[PhoneSpan]) -> String {
    let mut out = String::from("#\n");
    for s in spans {
        let name = if s.phone == "sil" { "pau".to_string() } else { s.phone.to_ascii_lowercase() };
        let _ = writeln!(out, "{:.6} 125 {}", s.end, name);
    }
    out
}

/// Parses an EST ascii F0 track (`EST_File Track`, `DataType ascii`, one
/// channel, equally spaced). Each data line is `time voiced value`.
pub fn parse_est_f0(text: &str) -> Result<F0Track, LabelError> {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("EST_File Track") {
        return Err(LabelError::NotEstTrack);
    }
    let mut ascii = false;
    for l in lines.by_ref() {
        let l = l.trim();
        if l == "EST_Header_End" {
            break;
        }
        if let Some(t) = l.strip_prefix("DataType") {
            ascii = t.trim() == "ascii";
        }
    }
    if !ascii {
        return Err(LabelError::NotAscii);
    }
    let mut times = Vec::new();
    let mut hz = Vec::new();
    for (i, l) in lines.enumerate() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() < 3 {
            return Err(data_line(i, "expected `time voiced value`"));
        }
        let t: f64 = f[0].parse().map_err(|_| data_line(i, "bad time"))?;
        let v: f32 = f[2].parse().map_err(|_| data_line(i, "bad value"))?;
        let voiced = f[1] != "0";
        if !v.is_finite() || v < 0.0 {
            return Err(data_line(i, format!("F0 {v} is not a frequency")));
        }
        times.push(t);
        hz.push(if voiced { v } else { 0.0 });
    }
    if times.len() < 2 {
        return Err(LabelError::TooFewFrames);
    }
    let step = times[1] - times[0];
    let uniform = times.windows(2).all(|w| ((w[1] - w[0]) - step).abs() < 1e-6);
    if step <= 0.0 || !uniform {
        return Err(LabelError::Unequal);
    }
    Ok(F0Track { start: times[0], step, hz })
}

/// Writes an F0 track as an EST ascii track (festvox's `f0/*.f0` format).
pub fn write_est_f0(track: &F0Track) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "EST_File Track\nDataType ascii\nNumFrames {}\nNumChannels 1\nNumAuxChannels 0\nEqualSpace 1\nBreaksPresent true\nCommentChar ;\nChannel_0 F0\nEST_Header_End\n",
        track.hz.len()
    );
    for (i, v) in track.hz.iter().enumerate() {
        let t = track.start + i as f64 * track.step;
        let _ = writeln!(out, "{:.6} {} {:.4}", t, u8::from(*v > 0.0), v);
    }
    out
}
