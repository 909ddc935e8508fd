//! `dv-serve`: Deep Voice voices over HTTP, OpenAI-compatible and streaming,
//! without libtorch (the binary links `dv-speak` and nothing heavier).
//!
//! # Endpoints
//!
//! * `POST /v1/audio/speech`: OpenAI's speech request (`model`, `input` of
//!   1..=4096 characters, `voice`, `response_format` `wav` | `pcm` | `flac`
//!   | `mp3` | `opus`,
//!   `speed` 0.25..=4, `stream_format` `audio` | `sse`), plus three
//!   extensions: `seed` (an integer: the same seed gives the same
//!   samples), `stream` (`false` buffers the whole answer: a WAV with real
//!   sizes and a `Content-Length`) and `sample_rate`. Audio is 16-bit mono PCM
//!   at 24 kHz, OpenAI's rate, unless `sample_rate` asks for 8000, 16000,
//!   22050, 24000, 48000 or the voice's own rate (16384 Hz for the paper's
//!   voices); the rate is said in `X-Sample-Rate`. A voice renders at its
//!   own rate and each response is resampled as its blocks arrive
//!   (one converter per request in `resample.rs`, under 25 ms held back).
//!   `pcm` is raw little-endian samples. Streamed WAV has 0xFFFFFFFF in
//!   both size fields. FLAC is encoded once the whole text is rendered (never
//!   streamed). MP3 (`audio/mpeg`, mono 64 kbit/s CBR) and Ogg Opus
//!   (`audio/opus`, RFC 7845, mono 48 kbit/s, always 48 kHz) are encoded as
//!   the blocks arrive and stream as MP3 frames and Ogg pages; MP3 takes
//!   only the rates an MP3 frame can name (not 16384). With `stream_format: "sse"` the same bytes arrive base64'd
//!   in `speech.audio.delta` events, then a `speech.audio.done` event with
//!   usage and timing.
//! * `POST /v1/audio/speech/timed`: the same request; JSON with the audio as
//!   base64 WAV and each sentence's phoneme and word timings in seconds from
//!   the start of the audio (and its first sample and length in samples of
//!   the response's rate). With `stream_format: "sse"`, a
//!   `speech.sentence` event (its timings) before each sentence's audio
//!   deltas (base64 PCM): what the web page plays.
//! * `GET /v1/audio/voices` (`{"voices":[{"id","name","demo"}],"default"}`,
//!   the default voice first; `demo` marks a toy voice,
//!   [`dv_voice::catalog::is_demo`]),
//!   `GET /v1/models`,
//!   `GET /healthz` (alive), `GET /readyz` (the default voice is loaded),
//!   `GET /metrics` (Prometheus text), `GET /` (the web page),
//!   `GET /openapi.json` (an OpenAPI 3.1 description of every route, built
//!   from the limits the handlers check, in `openapi.rs`).
//!
//! # Streaming and work
//!
//! A request is admitted while fewer than `workers + queue` are in flight
//! (else 429 with `Retry-After`), waits for one of `workers` render slots,
//! then plans its text and renders sentence by sentence on a blocking
//! thread, handing blocks of [`dv_speak::DEFAULT_BLOCK`] samples (about
//! 100 ms) through a bounded channel to the response body: the first bytes
//! leave after the first block, long before the first sentence ends. A
//! client that goes away drops the body; the next send fails and the render
//! is cancelled ([`dv_speak::CancelToken`]) at its next block. A client
//! that stops reading holds its render for at most `stall_timeout`.
//!
//! Errors before the first byte are OpenAI-shaped JSON
//! (`{"error":{"message","type","param","code"}}`) with a 4xx/5xx status;
//! an error after it ends the stream (an `error` event in SSE).
//!
//! # Encoders
//!
//! OpenAI lists mp3, opus, aac, flac, wav and pcm. Each compressed format is
//! encoded by the reference implementation, built from source by its crate
//! so that the binary needs no codec library at run time (the serving image
//! is distroless):
//!
//! * FLAC: `flacenc` (pure Rust, Apache-2.0 or MIT).
//! * MP3: LAME 3.100 through `mp3lame-encoder` 0.2 over `mp3lame-sys` (the
//!   crates LGPL-3.0, LAME itself LGPL-2.0 or later; LAME is the encoder the
//!   MP3 tools wrap, and no pure-Rust MP3 encoder is maintained). It is
//!   linked statically: whoever has this source can rebuild the binary
//!   against a changed LAME, which is what the LGPL asks of a static link.
//! * Opus: libopus 1.6.1 through `opus` 0.4 (MIT or Apache-2.0) over
//!   `opusic-sys` 0.7 (BSD-3-Clause; CMake builds the bundled libopus), in
//!   Ogg pages from the pure-Rust `ogg` 0.9 (BSD-3-Clause). libopus is
//!   Xiph's reference encoder; the pure-Rust port (`opus-rs` 0.1) is young.
//! * AAC: none, so `aac` is a 400 naming the supported formats. The one
//!   maintained AAC encoder with a crate is Fraunhofer's FDK AAC (`fdk-aac`
//!   bundles it), whose licence is GPL-incompatible and grants no patent
//!   rights (Debian ships it in non-free); FFmpeg's own AAC encoder has no
//!   binding short of linking all of libavcodec.
//!
//! # Safety
//!
//! A request's `voice` is a plain name ([`dv_voice::catalog::resolve_name`]),
//! never a path. Bearer auth on `/v1/*` when an API key is set; bodies over
//! [`MAX_BODY`] are 413; headers must arrive within `header_timeout` and the
//! body within `body_timeout`. Shutdown stops accepting, lets in-flight
//! requests finish for `shutdown_grace`, then cancels what is left.
//!
//! # On slots (`--device cuda`)
//!
//! With [`ServeConfig::slots`] each voice gets a slot scheduler
//! (`dv-slots`, [`dv_slots::Scheduler`]): one thread owning a multi-stream sampler (on the GPU,
//! `dv-gpu`'s kernel 2) whose N slots requests join as they arrive and leave
//! when done, so concurrent requests share launches. A request still waits
//! for one of N render permits in the same bounded queue (429 beyond it),
//! plans on the CPU (a blocking thread), has each sentence conditioned one
//! sentence ahead (on the GPU by the voice's conditioning thread, batched
//! with other requests' sentences and awaited; on the CPU with
//! `--device cpu-slots`), and each launch sends every busy slot's next block
//! (about 100 ms) to its response. The same metrics cover both paths, with
//! the slots' own gauges and counters added.
#![forbid(unsafe_code)]

mod api;
mod auth;
mod config;
mod error;
mod format;
mod job;
mod metrics;
mod mp3;
mod ogg_opus;
mod openapi;
mod pool;
mod request;
mod resample;
mod server;
mod slotted;
mod state;
mod voices;

pub use config::{ServeConfig, SlotBackend, SlotConfig, MAX_BODY};
pub use error::ApiError;
pub use format::encode;
pub use metrics::Metrics;
pub use request::{
    ResponseFormat, SpeechRequest, StreamFormat, DEFAULT_SAMPLE_RATE, MAX_INPUT, MODELS, RESPONSE_FORMATS, SAMPLE_RATES,
};
pub use server::serve;
pub use voices::VoiceCache;
