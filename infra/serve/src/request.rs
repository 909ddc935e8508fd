//! The speech request: OpenAI's fields and ours, each checked with an error
//! that names it.

use serde_json::{Map, Value};

use crate::error::ApiError;

/// The most characters `input` may hold (OpenAI's limit).
pub const MAX_INPUT: usize = 4096;

/// The model ids `/v1/models` lists and requests may name; every one is the
/// requested voice's Deep Voice model (the OpenAI ids are aliases so that
/// their clients work unchanged).
pub const MODELS: [&str; 4] = ["deepvoice", "tts-1", "tts-1-hd", "gpt-4o-mini-tts"];

/// The rate a response has unless its request says `sample_rate`: OpenAI's
/// (its `pcm` is 24 kHz 16-bit little-endian mono by definition).
pub const DEFAULT_SAMPLE_RATE: u32 = 24_000;

/// The rates `sample_rate` may name besides the voice's own.
pub const SAMPLE_RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 48_000];

/// How the audio is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseFormat {
    /// 16-bit mono PCM WAV (streamed with 0xFFFFFFFF sizes).
    Wav,
    /// Raw 16-bit little-endian mono samples (24 kHz unless the request
    /// says `sample_rate`).
    Pcm,
    /// FLAC (16 bits, mono), encoded after the whole text is rendered.
    Flac,
    /// MP3, mono, 64 kbit/s CBR (LAME), streamed frame by frame; only at
    /// the rates an MP3 frame header can name (all of [`SAMPLE_RATES`],
    /// not 16384).
    Mp3,
    /// Opus in Ogg (RFC 7845), mono, 48 kbit/s (libopus), streamed page by
    /// page; always 48 kHz, Opus's own rate.
    Opus,
}

/// The formats `response_format` may name, as the errors list them.
pub const RESPONSE_FORMATS: [&str; 5] = ["wav", "pcm", "flac", "mp3", "opus"];

impl ResponseFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            ResponseFormat::Wav => "audio/wav",
            ResponseFormat::Pcm => "audio/pcm",
            ResponseFormat::Flac => "audio/flac",
            // OpenAI's types for its mp3 and opus answers.
            ResponseFormat::Mp3 => "audio/mpeg",
            ResponseFormat::Opus => "audio/opus",
        }
    }
}

/// How the response arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// The audio bytes themselves.
    Audio,
    /// Server-sent events with base64 audio.
    Sse,
}

/// A checked speech request.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechRequest {
    pub model: String,
    pub input: String,
    /// `None`: the server's default voice.
    pub voice: Option<String>,
    pub format: ResponseFormat,
    pub speed: f32,
    pub stream_format: StreamFormat,
    /// `None`: a fresh seed, reported in `X-Seed`.
    pub seed: Option<u64>,
    /// `false`: the whole answer at once (with sizes and a length).
    pub stream: bool,
    /// The response's rate; `None`: [`DEFAULT_SAMPLE_RATE`]. Checked
    /// against the voice by [`SpeechRequest::output_rate`].
    pub sample_rate: Option<u32>,
}

fn string(obj: &Map<String, Value>, key: &'static str) -> Result<Option<String>, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ApiError::invalid(key, "invalid_type", format!("{key} must be a string, not {other}"))),
    }
}

impl SpeechRequest {
    /// Parses and checks a JSON body. Unknown fields are ignored (OpenAI's
    /// `instructions` among them).
    pub fn parse(body: &[u8]) -> Result<SpeechRequest, ApiError> {
        let value: Value =
            serde_json::from_slice(body).map_err(|e| ApiError::bad_body(format!("the body is not JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(ApiError::bad_body("the body must be a JSON object".into()));
        };
        let model = string(&obj, "model")?
            .ok_or_else(|| ApiError::invalid("model", "missing_required_parameter", "model is required".into()))?;
        if !MODELS.contains(&model.as_str()) {
            return Err(ApiError::model_not_found(&model, &MODELS));
        }
        let input = string(&obj, "input")?
            .ok_or_else(|| ApiError::invalid("input", "missing_required_parameter", "input is required".into()))?;
        let chars = input.chars().count();
        if chars == 0 || input.trim().is_empty() {
            return Err(ApiError::invalid("input", "empty_input", "input is empty".into()));
        }
        if chars > MAX_INPUT {
            return Err(ApiError::invalid(
                "input",
                "string_above_max_length",
                format!("input has {chars} characters; at most {MAX_INPUT}"),
            ));
        }
        let voice = string(&obj, "voice")?;
        let format = match string(&obj, "response_format")?.as_deref() {
            None | Some("wav") => ResponseFormat::Wav,
            Some("pcm") => ResponseFormat::Pcm,
            Some("flac") => ResponseFormat::Flac,
            Some("mp3") => ResponseFormat::Mp3,
            Some("opus") => ResponseFormat::Opus,
            // OpenAI lists aac; no encoder under a free licence is
            // built in (the crate docs say why).
            Some("aac") => {
                return Err(ApiError::invalid(
                    "response_format",
                    "unsupported_response_format",
                    format!(
                        "response_format \"aac\" is not supported: this server has no AAC encoder \
                         (the only maintained one, Fraunhofer's fdk-aac, is not under a free licence); \
                         supported: {}",
                        RESPONSE_FORMATS.join(", ")
                    ),
                ))
            }
            Some(other) => {
                return Err(ApiError::invalid(
                    "response_format",
                    "unsupported_response_format",
                    format!("response_format {other:?} is not supported; supported: {}", RESPONSE_FORMATS.join(", ")),
                ))
            }
        };
        let speed = match obj.get("speed") {
            None | Some(Value::Null) => 1.0,
            Some(Value::Number(n)) => {
                let s = n.as_f64().unwrap_or(f64::NAN);
                if !(0.25..=4.0).contains(&s) {
                    return Err(ApiError::invalid(
                        "speed",
                        "invalid_speed",
                        format!("speed {n} is outside 0.25..=4.0"),
                    ));
                }
                s as f32
            }
            Some(other) => {
                return Err(ApiError::invalid("speed", "invalid_type", format!("speed must be a number, not {other}")))
            }
        };
        let stream_format = match string(&obj, "stream_format")?.as_deref() {
            None | Some("audio") => StreamFormat::Audio,
            Some("sse") => StreamFormat::Sse,
            Some(other) => {
                return Err(ApiError::invalid(
                    "stream_format",
                    "invalid_stream_format",
                    format!("stream_format {other:?} is not one of audio, sse"),
                ))
            }
        };
        if stream_format == StreamFormat::Sse && format == ResponseFormat::Flac {
            return Err(ApiError::invalid(
                "stream_format",
                "invalid_stream_format",
                "flac is not streamed: use stream_format audio, or response_format wav or pcm with sse".into(),
            ));
        }
        let seed = match obj.get("seed") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(n.as_u64().ok_or_else(|| {
                ApiError::invalid("seed", "invalid_seed", format!("seed {n} is not an integer in 0..2^64"))
            })?),
            Some(other) => {
                return Err(ApiError::invalid("seed", "invalid_type", format!("seed must be an integer, not {other}")))
            }
        };
        let stream = match obj.get("stream") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(ApiError::invalid(
                    "stream",
                    "invalid_type",
                    format!("stream must be true or false, not {other}"),
                ))
            }
        };
        if !stream && stream_format == StreamFormat::Sse {
            return Err(ApiError::invalid(
                "stream",
                "invalid_stream_format",
                "stream false and stream_format sse contradict each other".into(),
            ));
        }
        let sample_rate = match obj.get("sample_rate") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(n.as_u64().and_then(|r| u32::try_from(r).ok()).ok_or_else(|| {
                ApiError::invalid(
                    "sample_rate",
                    "invalid_sample_rate",
                    format!("sample_rate {n} is not one of {}, or the voice's own rate", rates()),
                )
            })?),
            Some(other) => {
                return Err(ApiError::invalid(
                    "sample_rate",
                    "invalid_type",
                    format!("sample_rate must be an integer (Hz), not {other}"),
                ))
            }
        };
        Ok(SpeechRequest { model, input, voice, format, speed, stream_format, seed, stream, sample_rate })
    }

    /// The rate the response leaves at for a voice that renders at
    /// `native` Hz: `sample_rate` if it is one of [`SAMPLE_RATES`] or
    /// `native`, else a 400 naming the allowed rates. Opus is always
    /// 48000 Hz (a `sample_rate` other than 48000 is a 400), and MP3 takes
    /// only the rates its frame header can name (not 16384).
    pub fn output_rate(&self, native: u32) -> Result<u32, ApiError> {
        match (self.format, self.sample_rate) {
            (ResponseFormat::Opus, None) => return Ok(crate::ogg_opus::RATE),
            (ResponseFormat::Opus, Some(r)) if r != crate::ogg_opus::RATE => {
                return Err(ApiError::invalid(
                    "sample_rate",
                    "invalid_sample_rate",
                    format!("sample_rate {r} is not supported for opus: Opus is always {} Hz", crate::ogg_opus::RATE),
                ))
            }
            (ResponseFormat::Mp3, Some(r)) if !crate::mp3::RATES.contains(&r) => {
                let ours: Vec<String> =
                    SAMPLE_RATES.iter().filter(|r| crate::mp3::RATES.contains(r)).map(|r| r.to_string()).collect();
                return Err(ApiError::invalid(
                    "sample_rate",
                    "invalid_sample_rate",
                    format!(
                        "sample_rate {r} is not supported for mp3 (an MP3 frame cannot name it); supported: {}",
                        ours.join(", ")
                    ),
                ));
            }
            _ => {}
        }
        match self.sample_rate {
            None => Ok(DEFAULT_SAMPLE_RATE),
            Some(r) if r == native || SAMPLE_RATES.contains(&r) => Ok(r),
            Some(r) => Err(ApiError::invalid(
                "sample_rate",
                "invalid_sample_rate",
                format!("sample_rate {r} is not supported; supported: {}, or {native} (the voice's own rate)", rates()),
            )),
        }
    }
}

/// [`SAMPLE_RATES`] as a list.
fn rates() -> String {
    SAMPLE_RATES.map(|r| r.to_string()).join(", ")
}
