//! `dv-serve`: Deep Voice voices over HTTP, OpenAI-compatible and streaming,
//! without libtorch (the binary links `dv-speak` and nothing heavier).
//!
//! # Endpoints
//!
//! * `POST /v1/audio/speech`: OpenAI's speech request (`model`, `input` of
//!   1..=4096 characters, `voice`, `response_format` `wav` | `pcm` | `flac`,
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
//!   streamed). With `stream_format: "sse"` the same bytes arrive base64'd
//!   in `speech.audio.delta` events, then a `speech.audio.done` event with
//!   usage and timing.
//! * `POST /v1/audio/speech/timed`: the same request; JSON with the audio as
//!   base64 WAV and each sentence's phoneme and word timings in seconds from
//!   the start of the audio (and its first sample and length in samples of
//!   the response's rate). With `stream_format: "sse"`, a
//!   `speech.sentence` event (its timings) before each sentence's audio
//!   deltas (base64 PCM): what the web page plays.
//! * `GET /v1/audio/voices` (`{"voices":[{"id","name","demo"}],"default"}`,
//!   the default voice first; `demo` marks a toy voice, [`is_demo`]),
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
//! ([`slots`]): one thread owning a multi-stream sampler (on the GPU,
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
mod error;
mod format;
mod job;
mod metrics;
mod openapi;
mod pool;
mod request;
mod resample;
mod server;
pub mod slots;
mod slotted;
mod voices;

pub use error::ApiError;
pub use metrics::Metrics;
pub use request::{ResponseFormat, SpeechRequest, StreamFormat, DEFAULT_SAMPLE_RATE, MAX_INPUT, MODELS, SAMPLE_RATES};
pub use server::{serve, ServeConfig, SlotBackend, SlotConfig, MAX_BODY};
pub use voices::{is_demo, VoiceCache};
