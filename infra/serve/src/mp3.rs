//! MP3 (MPEG-1/2/2.5 Layer III), mono, 64 kbit/s CBR, encoded by LAME 3.100
//! (`mp3lame-encoder`, which builds LAME's C source with the crate).
//!
//! An MP3 stream is a run of self-contained frames (1152 samples at 32 kHz
//! and above, 576 below), so the encoder's output can leave as it comes: a
//! streamed answer and a whole one are the same bytes. There is no
//! Xing/LAME tag (it would go in the first frame, which has left by the time
//! it is known), so a decoder sees LAME's delay (576 + 529 samples of
//! silence before the speech) and the last frame's padding; both are at
//! most about 0.1 s at 24 kHz.

use mp3lame_encoder::{Bitrate, Builder, FlushGap, Mode, MonoPcm, Quality};

use crate::error::ApiError;

/// The rates an MP3 frame header can name (MPEG-1, 2 and 2.5).
pub(crate) const RATES: [u32; 9] = [8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000];

/// The most bytes LAME's flush writes (its documented 7200).
const FLUSH_BYTES: usize = 7200;

/// One response's MP3 encoder.
pub(crate) struct Mp3 {
    lame: mp3lame_encoder::Encoder,
}

fn lame_error(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(format!("MP3 encoder (LAME): {what}: {e}"))
}

impl Mp3 {
    /// An encoder for mono 16-bit samples at `rate` Hz, one of [`RATES`]
    /// (the frames carry the same rate: LAME does not resample).
    pub(crate) fn new(rate: u32) -> Result<Mp3, ApiError> {
        if !RATES.contains(&rate) {
            return Err(ApiError::internal(format!("MP3 cannot carry {rate} Hz")));
        }
        let mut b = Builder::new().ok_or_else(|| lame_error("lame_init", "out of memory"))?;
        b.set_num_channels(1).map_err(|e| lame_error("channels", e))?;
        b.set_mode(Mode::Mono).map_err(|e| lame_error("mode", e))?;
        b.set_sample_rate(rate).map_err(|e| lame_error("input rate", e))?;
        b.set_output_sample_rate(std::num::NonZeroU32::new(rate)).map_err(|e| lame_error("output rate", e))?;
        // 64 kbit/s is within every MPEG version's table (2.5 tops out at 64).
        b.set_brate(Bitrate::Kbps64).map_err(|e| lame_error("bit rate", e))?;
        // LAME's `-h`: its recommended high quality.
        b.set_quality(Quality::NearBest).map_err(|e| lame_error("quality", e))?;
        b.set_to_write_vbr_tag(false).map_err(|e| lame_error("tag", e))?;
        Ok(Mp3 { lame: b.build().map_err(|e| lame_error("lame_init_params", e))? })
    }

    /// Encodes `pcm`, appending whatever whole frames are ready to `out`
    /// (often nothing for a short block: LAME holds back about 1100
    /// samples).
    pub(crate) fn push(&mut self, pcm: &[i16], out: &mut Vec<u8>) -> Result<(), ApiError> {
        out.reserve(mp3lame_encoder::max_required_buffer_size(pcm.len()));
        self.lame.encode_to_vec(MonoPcm(pcm), out).map_err(|e| lame_error("encoding", e))?;
        Ok(())
    }

    /// The held-back samples and the last frame, padded with silence.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ApiError> {
        out.reserve(FLUSH_BYTES);
        self.lame.flush_to_vec::<FlushGap>(out).map_err(|e| lame_error("flush", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use symphonia::core::audio::SampleBuffer;
    use symphonia::core::codecs::DecoderOptions;
    use symphonia::core::formats::FormatOptions;
    use symphonia::core::io::MediaSourceStream;
    use symphonia::core::meta::MetadataOptions;
    use symphonia::core::probe::Hint;

    use super::*;
    use crate::format::tests::{rms, tone, zero_crossings};

    /// Decodes MP3 with Symphonia (pure Rust, independent of LAME): the
    /// rate its frames say and the samples.
    fn decode(bytes: Vec<u8>) -> (u32, Vec<i16>) {
        let mss = MediaSourceStream::new(Box::new(std::io::Cursor::new(bytes)), Default::default());
        let mut hint = Hint::new();
        hint.with_extension("mp3");
        let probed = symphonia::default::get_probe()
            .format(&hint, mss, &FormatOptions::default(), &MetadataOptions::default())
            .unwrap();
        let mut format = probed.format;
        let track = format.default_track().unwrap();
        let rate = track.codec_params.sample_rate.unwrap();
        let mut decoder =
            symphonia::default::get_codecs().make(&track.codec_params, &DecoderOptions::default()).unwrap();
        let mut out = Vec::new();
        while let Ok(packet) = format.next_packet() {
            let decoded = decoder.decode(&packet).unwrap();
            let mut buf = SampleBuffer::<i16>::new(decoded.capacity() as u64, *decoded.spec());
            buf.copy_interleaved_ref(decoded);
            out.extend_from_slice(buf.samples());
        }
        (rate, out)
    }

    /// A 440 Hz tone at each of the server's rates comes back at that rate,
    /// its length within LAME's delay and padding, its level within 1 dB
    /// and its pitch within 1 %.
    #[test]
    fn a_tone_round_trips_through_lame_at_every_rate() {
        for rate in crate::request::SAMPLE_RATES {
            let input = tone(440.0, rate, rate as usize, 0.3);
            let mut e = Mp3::new(rate).unwrap();
            let mut bytes = Vec::new();
            for block in input.chunks(1000) {
                e.push(block, &mut bytes).unwrap();
            }
            e.finish(&mut bytes).unwrap();
            // 64 kbit/s: 8 KB a second, give or take a frame.
            assert!((7_000..9_500).contains(&bytes.len()), "{rate} Hz: {} bytes", bytes.len());
            let (got_rate, out) = decode(bytes);
            assert_eq!(got_rate, rate);
            let extra = out.len() as i64 - input.len() as i64;
            assert!((0..=3 * 1152).contains(&extra), "{rate} Hz: {extra} samples more than given");
            // LAME's delay, then the tone: compare the middles.
            let q = input.len() / 4;
            let db = 20.0 * (rms(&out[q..3 * q]) / rms(&input[q..3 * q])).log10();
            assert!(db.abs() < 1.0, "{rate} Hz: level {db:+.2} dB");
            let (a, b) = (zero_crossings(&out[q..3 * q]), zero_crossings(&input[q..3 * q]));
            assert!((a as f64 / b as f64 - 1.0).abs() < 0.01, "{rate} Hz: {a} vs {b} zero crossings");
        }
    }

    #[test]
    fn the_voices_own_16384_hz_is_not_an_mp3_rate() {
        assert!(Mp3::new(16_384).is_err());
    }
}
