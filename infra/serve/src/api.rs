//! The handlers: speech (streamed, SSE or whole), the timed native
//! endpoint, voices, models, health, metrics, the OpenAPI description and
//! the page.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use futures::stream::{self, Stream};
use serde_json::json;
use tokio::sync::mpsc;

use crate::config::MAX_BODY;
use crate::error::ApiError;
use crate::format::{base64, encode, pcm_bytes, sse, wav, Encoder};
use crate::job::{Event, Job, Planned, Summary};
use crate::metrics::Metrics;
use crate::request::{ResponseFormat, SpeechRequest, StreamFormat, MODELS};
use crate::resample::{out_len, RateConverter};
use crate::state::App;

const PAGE: &str = include_str!("page.html");

pub(crate) async fn page() -> Html<&'static str> {
    Html(PAGE)
}

/// `GET /openapi.json`: [`crate::openapi::spec`].
pub(crate) async fn openapi() -> Json<serde_json::Value> {
    Json(crate::openapi::spec())
}

pub(crate) async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

pub(crate) async fn readyz(State(app): State<App>) -> Response {
    let voice = app.voices.default_voice();
    if app.voices.is_loaded(voice) {
        return Json(json!({ "status": "ready", "voice": voice, "uptime_s": app.started.elapsed().as_secs_f64() }))
            .into_response();
    }
    let why = app.preload_error.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let body = json!({ "status": "loading", "voice": voice, "error": why });
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

pub(crate) async fn metrics(State(app): State<App>) -> Response {
    let mut r = app.metrics.render().into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    r
}

pub(crate) async fn models() -> Json<serde_json::Value> {
    let data: Vec<_> = MODELS
        .iter()
        .map(|m| json!({ "id": m, "object": "model", "created": 0, "owned_by": "deepvoice-rs" }))
        .collect();
    Json(json!({ "object": "list", "data": data }))
}

/// The default voice first; `demo` marks the toy voices of `infra/run demo`.
pub(crate) async fn voices(State(app): State<App>) -> Json<serde_json::Value> {
    let list: Vec<_> = app
        .voices
        .listed()
        .into_iter()
        .map(|(n, demo)| {
            let name = if demo { format!("{n} (demo)") } else { n.clone() };
            json!({ "id": n, "name": name, "demo": demo })
        })
        .collect();
    Json(json!({ "voices": list, "default": app.voices.default_voice() }))
}

/// The body, at most [`MAX_BODY`] bytes, within the body timeout.
async fn read_body(app: &App, req: Request) -> Result<Bytes, ApiError> {
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(ApiError::too_large(MAX_BODY));
    }
    let read = axum::body::to_bytes(req.into_body(), MAX_BODY);
    match tokio::time::timeout(app.config.body_timeout, read).await {
        Err(_) => Err(ApiError::body_timeout()),
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
            while let Some(s) = source {
                if s.is::<http_body_util::LengthLimitError>() {
                    return Err(ApiError::too_large(MAX_BODY));
                }
                source = s.source();
            }
            Err(ApiError::bad_body(format!("the body could not be read: {e}")))
        }
    }
}

/// A seed for a request that gave none: the clock and a counter, mixed.
fn fresh_seed() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    dv_util::splitmix64(t ^ COUNT.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A started request: its plan (its rate and sample positions those of
/// the response) and the channel its audio arrives on (at the voice's rate,
/// `native`).
struct Started {
    request: SpeechRequest,
    voice: String,
    planned: Planned,
    native: u32,
    rx: mpsc::Receiver<Event>,
    arrived: Instant,
}

impl Started {
    /// The converter from the voice's rate to the response's.
    fn converter(&self) -> Result<RateConverter, ApiError> {
        RateConverter::new(self.native, self.planned.rate)
    }
}

/// `planned` (at `native` Hz) said at `rate` Hz: sentence starts and
/// lengths in samples of the response, so that they still tile it; the
/// timings in seconds are unchanged.
fn at_rate(mut planned: Planned, native: u32, rate: u32) -> Planned {
    for s in &mut planned.sentences {
        let end = out_len(s.start_sample + s.samples, native, rate);
        s.start_sample = out_len(s.start_sample, native, rate);
        s.samples = end - s.start_sample;
    }
    planned.rate = rate;
    planned
}

/// Body → checked request → voice → a place in the pool → a worker → plan.
async fn start(app: &App, req: Request) -> Result<Started, ApiError> {
    let arrived = Instant::now();
    let body = read_body(app, req).await?;
    let request = SpeechRequest::parse(&body)?;
    let loaded = app.voices.load(request.voice.as_deref()).await?;
    let native = loaded.speaker.sample_rate();
    let rate = request.output_rate(native)?;
    let ticket = app.pool.admit()?;
    let job = Job {
        speaker: loaded.speaker.clone(),
        input: request.input.clone(),
        speed: request.speed,
        seed: request.seed.unwrap_or_else(fresh_seed),
        block: app.config.block,
        first_block: app.config.first_block,
        sampling: app.config.sampling,
        stall: app.config.stall_timeout,
        metrics: app.metrics.clone(),
    };
    let (planned, rx) = match &loaded.slots {
        Some(engine) => job.start_slotted(engine.clone(), ticket).await?,
        None => job.start(ticket).await?,
    };
    let voice = request.voice.clone().unwrap_or_else(|| app.voices.default_voice().to_string());
    Ok(Started { request, voice, planned: at_rate(planned, native, rate), native, rx, arrived })
}

/// Counts a response body as an active stream until it is dropped.
struct Active(Arc<Metrics>);

impl Active {
    fn new(m: &Arc<Metrics>) -> Self {
        m.streams.fetch_add(1, Ordering::Relaxed);
        Self(m.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the body stream turns events into.
#[derive(Clone, Copy, PartialEq)]
enum Wire {
    /// Raw bytes (PCM, with a streaming WAV header first for WAV; MP3
    /// frames or Ogg pages as the encoder gives them).
    Audio(ResponseFormat),
    /// OpenAI's SSE: audio deltas of the same bytes, then done.
    Sse(ResponseFormat),
    /// The page's SSE: sentence timings, PCM deltas, done.
    TimedSse,
}

struct BodyState {
    rx: mpsc::Receiver<Event>,
    /// The voice's blocks to the response's rate.
    converter: RateConverter,
    /// What the converter gave for one event.
    out: Vec<i16>,
    wire: Wire,
    planned: Planned,
    input_chars: usize,
    header: Option<Vec<u8>>,
    /// MP3 or Ogg Opus; `None`: the samples go as they are.
    encoder: Option<Encoder>,
    first: Option<Instant>,
    arrived: Instant,
    _active: Active,
    metrics: Arc<Metrics>,
    ended: bool,
}

/// The end of an SSE stream; `samples` are the response's.
fn done_event(s: &BodyState, summary: Summary) -> serde_json::Value {
    let rate = s.planned.rate as f64;
    let samples = s.converter.given();
    let audio_s = samples as f64 / rate;
    json!({
        "type": "speech.audio.done",
        // Characters in, samples out: Deep Voice has no tokens.
        "usage": {
            "input_tokens": s.input_chars,
            "output_tokens": samples,
            "total_tokens": s.input_chars + samples,
        },
        "timing": {
            "sample_rate": s.planned.rate,
            "samples": samples,
            "audio_s": audio_s,
            "render_s": summary.render_s,
            "real_time_factor": if audio_s > 0.0 { summary.render_s / audio_s } else { 0.0 },
            "first_audio_s": s.first.map(|f| f.duration_since(s.arrived).as_secs_f64()),
        },
        "seed": s.planned.seed,
    })
}

/// An SSE error event.
fn error_event(msg: &str) -> Bytes {
    sse(&json!({ "type": "error", "error": { "message": msg, "type": "server_error" } }))
}

/// The response body: events until Done, the audio converted to the
/// response's rate block by block (the converter's tail leaves with Done);
/// a render failure ends it with an error (an `error` event in SSE), and so
/// does a render cancelled by a shutdown (the channel closes without Done).
fn body_stream(s: BodyState) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send {
    stream::unfold(s, |mut s| async move {
        loop {
            if s.ended {
                return None;
            }
            let sse_wire = !matches!(s.wire, Wire::Audio(_));
            let out = match s.rx.recv().await {
                None => {
                    s.ended = true;
                    let msg = "the render was cancelled";
                    if sse_wire {
                        Some(Ok(error_event(msg)))
                    } else {
                        Some(Err(std::io::Error::other(msg)))
                    }
                }
                Some(Event::Sentence(k)) => match (s.wire, s.planned.sentences.get(k)) {
                    (Wire::TimedSse, Some(t)) => Some(Ok(sse(&json!({ "type": "speech.sentence", "sentence": t })))),
                    _ => None,
                },
                Some(Event::Audio(pcm)) => {
                    s.out.clear();
                    let mut bytes = Vec::new();
                    let converted = s.converter.push(&pcm, &mut s.out);
                    let wired = converted.and_then(|()| match s.out.is_empty() {
                        true => Ok(()),
                        false => wire_bytes(&mut s, false, &mut bytes),
                    });
                    if let Err(e) = wired {
                        s.ended = true;
                        Some(if sse_wire { Ok(error_event(&e.message)) } else { Err(std::io::Error::other(e.message)) })
                    } else if bytes.is_empty() {
                        None
                    } else {
                        if s.first.is_none() {
                            let now = Instant::now();
                            s.first = Some(now);
                            s.metrics.first_audio(now.duration_since(s.arrived).as_secs_f64());
                        }
                        if sse_wire {
                            Some(Ok(sse(&json!({ "type": "speech.audio.delta", "audio": base64(&bytes) }))))
                        } else {
                            Some(Ok(Bytes::from(bytes)))
                        }
                    }
                }
                Some(Event::Done(summary)) => {
                    s.ended = true;
                    s.out.clear();
                    let mut bytes = Vec::new();
                    let converted = s.converter.finish(&mut s.out);
                    match converted.and_then(|()| wire_bytes(&mut s, true, &mut bytes)) {
                        Err(e) if sse_wire => Some(Ok(error_event(&e.message))),
                        Err(e) => Some(Err(std::io::Error::other(e.message))),
                        Ok(()) => {
                            if sse_wire {
                                // The tail's delta, if any, then done.
                                let mut events = Vec::new();
                                if !bytes.is_empty() {
                                    let delta = json!({ "type": "speech.audio.delta", "audio": base64(&bytes) });
                                    events.extend_from_slice(&sse(&delta));
                                }
                                events.extend_from_slice(&sse(&done_event(&s, summary)));
                                Some(Ok(Bytes::from(events)))
                            } else {
                                (!bytes.is_empty()).then(|| Ok(Bytes::from(bytes)))
                            }
                        }
                    }
                }
                Some(Event::Failed(msg)) => {
                    s.ended = true;
                    if sse_wire {
                        Some(Ok(error_event(&msg)))
                    } else {
                        Some(Err(std::io::Error::other(msg)))
                    }
                }
            };
            if let Some(o) = out {
                return Some((o, s));
            }
        }
    })
}

/// The bytes of the response for the samples in `s.out` (appended to
/// `bytes`): a pending header first, then the samples as they are or what
/// the encoder gives for them (and, at the `end`, the rest of its stream).
fn wire_bytes(s: &mut BodyState, end: bool, bytes: &mut Vec<u8>) -> Result<(), ApiError> {
    if let Some(h) = s.header.take() {
        bytes.extend_from_slice(&h);
    }
    match &mut s.encoder {
        None => bytes.extend_from_slice(&pcm_bytes(&s.out)),
        Some(e) => {
            e.push(&s.out, bytes)?;
            if end {
                e.finish(bytes)?;
            }
        }
    }
    Ok(())
}

/// Waits for the whole audio, at the response's rate.
async fn collect(st: &mut Started, metrics: &Arc<Metrics>) -> Result<(Vec<i16>, Summary), ApiError> {
    let _active = Active::new(metrics);
    let mut converter = st.converter()?;
    let mut pcm = Vec::new();
    loop {
        match st.rx.recv().await {
            Some(Event::Sentence(_)) => {}
            Some(Event::Audio(b)) => converter.push(&b, &mut pcm)?,
            Some(Event::Done(summary)) => {
                converter.finish(&mut pcm)?;
                metrics.first_audio(st.arrived.elapsed().as_secs_f64());
                return Ok((pcm, summary));
            }
            Some(Event::Failed(msg)) => return Err(ApiError::internal(msg)),
            None => return Err(ApiError::unavailable("the render was cancelled".into())),
        }
    }
}

/// `Content-Type`, `X-Sample-Rate`, `X-Seed`, `X-Voice`, and for raw PCM
/// `X-Audio-Format`.
fn audio_headers(r: &mut Response, st: &Started, content_type: &'static str) {
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-sample-rate", HeaderValue::from(st.planned.rate));
    h.insert("x-seed", HeaderValue::from(st.planned.seed));
    if let Ok(v) = HeaderValue::from_str(&st.voice) {
        h.insert("x-voice", v);
    }
    if content_type == "audio/pcm" {
        h.insert("x-audio-format", HeaderValue::from_static("s16le; channels=1"));
    }
}

fn streamed(app: &App, mut st: Started, wire: Wire) -> Result<Response, ApiError> {
    let converter = st.converter()?;
    let header = match wire {
        Wire::Audio(ResponseFormat::Wav) | Wire::Sse(ResponseFormat::Wav) => {
            Some(dv_speak::wav_header(st.planned.rate, None).to_vec())
        }
        _ => None,
    };
    let content_type = match wire {
        Wire::Audio(f) => f.content_type(),
        Wire::Sse(_) | Wire::TimedSse => "text/event-stream",
    };
    let encoder = match wire {
        Wire::Audio(f) | Wire::Sse(f) => Encoder::new(f, st.planned.rate, st.planned.seed as u32)?,
        Wire::TimedSse => None,
    };
    let (_, closed) = mpsc::channel(1);
    let state = BodyState {
        rx: std::mem::replace(&mut st.rx, closed),
        converter,
        out: Vec::with_capacity(4 * app.config.block),
        wire,
        planned: st.planned.clone(),
        input_chars: st.request.input.chars().count(),
        header,
        encoder,
        first: None,
        arrived: st.arrived,
        _active: Active::new(&app.metrics),
        metrics: app.metrics.clone(),
        ended: false,
    };
    let mut r = Body::from_stream(body_stream(state)).into_response();
    audio_headers(&mut r, &st, content_type);
    Ok(r)
}

async fn speak(app: &App, req: Request, timed: bool) -> Result<Response, ApiError> {
    let mut st = start(app, req).await?;
    let (format, stream_format, stream) = (st.request.format, st.request.stream_format, st.request.stream);
    Ok(match (timed, stream_format) {
        (false, StreamFormat::Sse) => streamed(app, st, Wire::Sse(format))?,
        (true, StreamFormat::Sse) => streamed(app, st, Wire::TimedSse)?,
        (false, StreamFormat::Audio) if stream && format != ResponseFormat::Flac => {
            streamed(app, st, Wire::Audio(format))?
        }
        (false, StreamFormat::Audio) => {
            let (pcm, _) = collect(&mut st, &app.metrics).await?;
            let rate = st.planned.rate;
            let serial = st.planned.seed as u32;
            let bytes = tokio::task::spawn_blocking(move || encode(format, &pcm, rate, serial))
                .await
                .map_err(|e| ApiError::internal(format!("{format:?} encoding: {e}")))??;
            let mut r = bytes.into_response();
            audio_headers(&mut r, &st, format.content_type());
            r
        }
        (true, StreamFormat::Audio) => {
            let (pcm, summary) = collect(&mut st, &app.metrics).await?;
            let rate = st.planned.rate;
            let audio_s = pcm.len() as f64 / rate as f64;
            let body = json!({
                "model": st.request.model,
                "voice": st.voice,
                "sample_rate": rate,
                "seed": st.planned.seed,
                "samples": pcm.len(),
                "duration_s": audio_s,
                "render_s": summary.render_s,
                "audio": base64(&wav(&pcm, rate)),
                "sentences": st.planned.sentences,
            });
            let mut r = Json(body).into_response();
            audio_headers(&mut r, &st, "application/json");
            r
        }
    })
}

/// `POST /v1/audio/speech`.
pub(crate) async fn speech(State(app): State<App>, req: Request) -> Response {
    speak(&app, req, false).await.unwrap_or_else(IntoResponse::into_response)
}

/// `POST /v1/audio/speech/timed`.
pub(crate) async fn timed(State(app): State<App>, req: Request) -> Response {
    speak(&app, req, true).await.unwrap_or_else(IntoResponse::into_response)
}
