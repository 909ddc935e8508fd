//! Ogg Opus (RFC 7845): mono Opus packets of 20 ms at 48 kHz, 48 kbit/s
//! VBR, encoded by libopus 1.6 (the `opus` crate over `opusic-sys`, which
//! builds the bundled libopus with CMake) and put in Ogg pages by the
//! pure-Rust `ogg` crate.
//!
//! The stream is what RFC 7845 §3 asks for: an `OpusHead` page (with the
//! encoder's look-ahead as the pre-skip), an `OpusTags` page, then audio
//! pages whose granule position counts 48 kHz samples from the start of
//! decoding, pre-skip included. Each [`OggOpus::push`] ends a page after
//! its packets, so a streamed answer leaves in whole pages. The last page
//! has the end-of-stream flag and a granule position of pre-skip plus the
//! samples given, which tells a decoder to drop the silence that pads the
//! last packet (§4.4): the decoded length is the input's, to the sample.
//! Opus codes 48 kHz (it takes 8, 12, 16 and 24 kHz too, but decodes to
//! 48 kHz), so the server resamples an Opus answer to 48 kHz before it
//! gets here.

use ogg::{PacketWriteEndInfo, PacketWriter};

use crate::error::ApiError;

/// The rate Opus is coded at, and the unit of Ogg Opus granule positions.
pub(crate) const RATE: u32 = 48_000;

/// 20 ms at 48 kHz: libopus's default frame and RFC 7587's recommendation.
const FRAME: usize = 960;

/// Bits per second: clear wideband speech (libopus's own tests judge mono
/// speech near-transparent from about 32 kbit/s).
const BITRATE: i32 = 48_000;

/// The largest packet libopus is asked to write (its documentation's
/// recommended buffer, far above a 20 ms packet at 48 kbit/s).
const MAX_PACKET: usize = 4000;

/// One response's Ogg Opus encoder and page writer.
pub(crate) struct OggOpus {
    encoder: opus::Encoder,
    pages: PacketWriter<'static, Vec<u8>>,
    serial: u32,
    /// Samples not yet a whole frame (fewer than [`FRAME`] between calls).
    pending: Vec<i16>,
    /// Where libopus writes a packet.
    packet: Vec<u8>,
    /// Samples given, not counting the pre-skip or padding.
    given: u64,
    /// Samples coded into packets so far (the granule position).
    coded: u64,
    pre_skip: u64,
}

fn opus_error(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(format!("Opus encoder (libopus): {what}: {e}"))
}

fn page_error(e: std::io::Error) -> ApiError {
    ApiError::internal(format!("Ogg page writer: {e}"))
}

/// The identification header (RFC 7845 §5.1): one channel, mapping family 0.
fn opus_head(pre_skip: u16) -> Vec<u8> {
    let mut h = b"OpusHead".to_vec();
    h.push(1); // version
    h.push(1); // channels
    h.extend_from_slice(&pre_skip.to_le_bytes());
    h.extend_from_slice(&RATE.to_le_bytes()); // the input's rate
    h.extend_from_slice(&0i16.to_le_bytes()); // output gain
    h.push(0); // mapping family: mono or stereo, no table
    h
}

/// The comment header (RFC 7845 §5.2): a vendor string, no comments.
fn opus_tags() -> Vec<u8> {
    let vendor = format!("deepvoice-rs dv-serve, {}", opus::version());
    let mut t = b"OpusTags".to_vec();
    t.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
    t.extend_from_slice(vendor.as_bytes());
    t.extend_from_slice(&0u32.to_le_bytes());
    t
}

impl OggOpus {
    /// An encoder for mono 16-bit samples at [`RATE`]; `serial` names the
    /// Ogg stream. The two header pages are written at once and leave with
    /// the first [`OggOpus::push`].
    pub(crate) fn new(serial: u32) -> Result<OggOpus, ApiError> {
        let mut encoder = opus::Encoder::new(RATE, opus::Channels::Mono, opus::Application::Audio)
            .map_err(|e| opus_error("opus_encoder_create", e))?;
        encoder.set_bitrate(opus::Bitrate::Bits(BITRATE)).map_err(|e| opus_error("bit rate", e))?;
        let lookahead = encoder.get_lookahead().map_err(|e| opus_error("look-ahead", e))?;
        let pre_skip = u16::try_from(lookahead).map_err(|_| opus_error("look-ahead", lookahead))?;
        let mut pages = PacketWriter::new(Vec::new());
        pages.write_packet(opus_head(pre_skip), serial, PacketWriteEndInfo::EndPage, 0).map_err(page_error)?;
        pages.write_packet(opus_tags(), serial, PacketWriteEndInfo::EndPage, 0).map_err(page_error)?;
        Ok(OggOpus {
            encoder,
            pages,
            serial,
            pending: Vec::with_capacity(FRAME),
            packet: vec![0; MAX_PACKET],
            given: 0,
            coded: 0,
            pre_skip: pre_skip as u64,
        })
    }

    /// Codes `samples` (whole frames) into packets, the last of which ends
    /// a page (`end`); its granule position is `last_granule` if given (the
    /// end of the stream), else the samples coded so far.
    fn code(&mut self, samples: &[i16], end: PacketWriteEndInfo, last_granule: Option<u64>) -> Result<(), ApiError> {
        let frames = samples.len() / FRAME;
        for (i, frame) in samples.chunks_exact(FRAME).enumerate() {
            let n = self.encoder.encode(frame, &mut self.packet).map_err(|e| opus_error("encoding", e))?;
            self.coded += FRAME as u64;
            let (info, granule) = if i + 1 == frames {
                (end, last_granule.unwrap_or(self.coded))
            } else {
                (PacketWriteEndInfo::NormalPacket, self.coded)
            };
            self.pages.write_packet(self.packet[..n].to_vec(), self.serial, info, granule).map_err(page_error)?;
        }
        Ok(())
    }

    /// Moves the pages written so far to `out`.
    fn drain(&mut self, out: &mut Vec<u8>) {
        out.append(self.pages.inner_mut());
    }

    /// Encodes `pcm`, appending the whole pages ready to `out` (nothing
    /// until a 20 ms frame is complete, bar the headers).
    pub(crate) fn push(&mut self, pcm: &[i16], out: &mut Vec<u8>) -> Result<(), ApiError> {
        self.given += pcm.len() as u64;
        self.pending.extend_from_slice(pcm);
        let whole = self.pending.len() / FRAME * FRAME;
        if whole > 0 {
            let pending = std::mem::take(&mut self.pending);
            let coded = self.code(&pending[..whole], PacketWriteEndInfo::EndPage, None);
            self.pending = pending;
            self.pending.drain(..whole);
            coded?;
        }
        self.drain(out);
        Ok(())
    }

    /// The held-back samples and the encoder's look-ahead, padded with
    /// silence to whole frames, in the last page (end of stream; granule
    /// position pre-skip + samples given, so decoders trim the padding).
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ApiError> {
        let end = self.pre_skip + self.given;
        // Samples still to code so that the decoder has every input sample
        // past the pre-skip: at least one frame, since the pre-skip is > 0.
        let need = (end - self.coded) as usize;
        let mut tail = std::mem::take(&mut self.pending);
        tail.resize(need.div_ceil(FRAME).max(1) * FRAME, 0);
        self.code(&tail, PacketWriteEndInfo::EndStream, Some(end))?;
        self.drain(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::tests::{rms, tone, zero_crossings};

    /// Decodes an Ogg Opus stream with libopus, as RFC 7845 §4 says: drop
    /// the pre-skip, end at the last page's granule position. Returns the
    /// samples, the last granule position and the header's pre-skip.
    fn decode(bytes: &[u8]) -> (Vec<i16>, u64, u64) {
        let mut reader = ogg::PacketReader::new(std::io::Cursor::new(bytes));
        let head = reader.read_packet_expected().unwrap();
        assert!(head.first_in_stream());
        assert_eq!(&head.data[..8], b"OpusHead");
        assert_eq!((head.data[8], head.data[9]), (1, 1), "version 1, mono");
        let pre_skip = u16::from_le_bytes([head.data[10], head.data[11]]) as u64;
        assert_eq!(u32::from_le_bytes(head.data[12..16].try_into().unwrap()), RATE);
        let tags = reader.read_packet_expected().unwrap();
        assert_eq!(&tags.data[..8], b"OpusTags");
        assert!(tags.last_in_page(), "the comment header ends its page");
        let mut decoder = opus::Decoder::new(RATE, opus::Channels::Mono).unwrap();
        let (mut pcm, mut frame) = (Vec::new(), vec![0i16; 5760]);
        let mut last_granule = 0;
        while let Some(p) = reader.read_packet().unwrap() {
            let n = decoder.decode(&p.data, &mut frame, false).unwrap();
            pcm.extend_from_slice(&frame[..n]);
            assert!(p.absgp_page() >= last_granule, "granule positions only grow");
            last_granule = p.absgp_page();
            if p.last_in_stream() {
                assert!(reader.read_packet().unwrap().is_none(), "nothing after the end of the stream");
                break;
            }
        }
        assert!(last_granule <= pcm.len() as u64 && last_granule >= pre_skip);
        pcm.truncate(last_granule as usize);
        (pcm.split_off(pre_skip as usize), last_granule, pre_skip)
    }

    /// A 440 Hz tone in irregular blocks comes back at its length to the
    /// sample, its level within 1 dB and its pitch within 1 %.
    #[test]
    fn a_tone_round_trips_through_libopus_and_ogg() {
        let input = tone(440.0, RATE, 48_000 + 123, 0.3);
        let mut e = OggOpus::new(7).unwrap();
        let mut bytes = Vec::new();
        let mut rest = &input[..];
        for n in [100, 2400, 959, 1, 4096, 960].iter().cycle() {
            let take = rest.len().min(*n);
            e.push(&rest[..take], &mut bytes).unwrap();
            rest = &rest[take..];
            if rest.is_empty() {
                break;
            }
        }
        e.finish(&mut bytes).unwrap();
        // 48 kbit/s: about 6 KB a second, plus headers.
        assert!((4_000..9_000).contains(&bytes.len()), "{} bytes", bytes.len());
        let (out, end, pre_skip) = decode(&bytes);
        assert_eq!(end, pre_skip + input.len() as u64);
        assert_eq!(out.len(), input.len());
        let mid = 4800..input.len() - 4800;
        let db = 20.0 * (rms(&out[mid.clone()]) / rms(&input[mid.clone()])).log10();
        assert!(db.abs() < 1.0, "level {db:+.2} dB");
        let (a, b) = (zero_crossings(&out[mid.clone()]), zero_crossings(&input[mid]));
        assert!((a as f64 / b as f64 - 1.0).abs() < 0.01, "{a} vs {b} zero crossings");
    }

    /// Streamed pages are whole pages: the bytes of each push parse alone.
    #[test]
    fn each_push_leaves_whole_pages() {
        let input = tone(300.0, RATE, 9600, 0.2);
        let mut e = OggOpus::new(1).unwrap();
        let mut first = Vec::new();
        e.push(&input[..4800], &mut first).unwrap();
        let mut reader = ogg::PacketReader::new(std::io::Cursor::new(&first));
        let mut packets = 0;
        while reader.read_packet().unwrap().is_some() {
            packets += 1;
        }
        assert_eq!(packets, 2 + 5, "two headers and five 20 ms packets");
        let mut rest = Vec::new();
        e.push(&input[4800..], &mut rest).unwrap();
        e.finish(&mut rest).unwrap();
        first.extend_from_slice(&rest);
        assert_eq!(decode(&first).0.len(), input.len());
    }
}
