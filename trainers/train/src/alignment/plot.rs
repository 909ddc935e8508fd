//! `<out>/plots/<id>.png`: an utterance's log-mel spectrogram with its
//! predicted boundaries (labelled, red) and the reference ones (cyan, where
//! known), from the audio in the featurize output.

use std::path::{Path, PathBuf};

use dv_featurize::format::{self, column};
use dv_plot::{Heatmap, Marker, Rgb};
use polars::prelude::*;

use super::output::Aligned;
use super::AlignmentError;

/// A plot asked for in [`super::AlignOptions::plots`].
#[derive(Clone, Debug, PartialEq)]
pub enum Plot {
    Written {
        id: String,
        path: PathBuf,
    },
    /// The utterance failed to align (see the report's failures).
    NotAligned {
        id: String,
    },
}

/// The mu-law audio and its rate of utterance `id` in a featurize output.
fn read_audio(features: &str, id: &str) -> Result<(Vec<f32>, u32), AlignmentError> {
    for shard in format::shard_files(Path::new(features))? {
        let file = std::fs::File::open(&shard).map_err(AlignmentError::io("opening", &shard))?;
        let cols = [column::ID, column::MULAW, column::SAMPLE_RATE].map(String::from).to_vec();
        let df = ParquetReader::new(file).with_columns(Some(cols)).finish()?;
        let ids = df.column(column::ID)?.str()?.clone();
        let Some(row) = ids.iter().position(|x| x == Some(id)) else { continue };
        let rate = df.column(column::SAMPLE_RATE)?.cast(&DataType::UInt32)?.u32()?.get(row);
        let bytes = df.column(column::MULAW)?.binary()?.get(row).map(<[u8]>::to_vec);
        let (Some(rate), Some(bytes)) = (rate, bytes) else {
            return Err(AlignmentError::NoAudio { shard, id: id.to_string() });
        };
        let mut audio = vec![0.0f32; bytes.len()];
        dv_audio::mulaw::decode_into(&bytes, &mut audio);
        return Ok((audio, rate));
    }
    Err(AlignmentError::NotInShards { features: features.to_string(), id: id.to_string() })
}

/// Draws `u` to `<out>/plots/<id>.png` (module docs) and returns the path.
pub(super) fn plot(
    out: &Path,
    features: &str,
    u: &Aligned,
    reference: Option<&[f64]>,
) -> Result<PathBuf, AlignmentError> {
    let (audio, rate) = read_audio(features, &u.id)?;
    let mfcc = dv_audio::Mfcc::new(&dv_audio::MfccConfig::for_rate(rate))?;
    let frames = mfcc.frames(audio.len());
    let mut scratch = mfcc.make_scratch();
    let mut coeffs = vec![0.0f32; frames * mfcc.config().n_mfcc];
    mfcc.compute_into(&audio, &mut coeffs, &mut scratch)?;
    let hop = mfcc.config().hop_length as f64 / rate as f64;
    let mut markers: Vec<Marker> = reference
        .unwrap_or_default()
        .iter()
        .map(|&x| Marker { x, label: String::new(), row: 0, colour: Rgb(0, 230, 255) })
        .collect();
    for (k, (p, t)) in u.phones.iter().zip(&u.timing).enumerate().skip(1) {
        markers.push(Marker { x: t.start, label: p.clone(), row: (k % 2) as u8, colour: Rgb(230, 30, 30) });
    }
    let map = Heatmap {
        title: u.id.clone(),
        x_label: "seconds (red: dv align, cyan: reference)".into(),
        y_label: "mel band".into(),
        columns: frames,
        rows: mfcc.config().n_mels,
        values: mfcc.last_log_mel(&scratch, frames).to_vec(),
        x_range: (0.0, frames as f64 * hop),
        y_range: (0.0, mfcc.config().n_mels as f64),
        markers,
    };
    let width = (400.0 + 500.0 * frames as f64 * hop).clamp(600.0, 4000.0) as u32;
    let png = map.render_png(width, 360)?;
    let dir = out.join("plots");
    std::fs::create_dir_all(&dir).map_err(AlignmentError::io("creating", &dir))?;
    let path = dir.join(format!("{}.png", u.id));
    dv_util::write_atomic(&path, &png)?;
    Ok(path)
}
