//! `GET /openapi.json`: an OpenAPI 3.1 description of every route the
//! server has, built here from the constants the handlers check against
//! ([`MAX_INPUT`], [`MODELS`], [`SAMPLE_RATES`], [`MAX_BODY`]), so that a
//! limit changed in one place is changed in the description too.
//!
//! The routes it describes are exactly the router's
//! ([`crate::server::route_list`], checked by this module's test); the
//! integration test `openapi.rs` requests every operation it lists and
//! fuzzes them all with schemathesis, checking each answer against the
//! schemas here.

use serde_json::{json, Value};

use crate::config::MAX_BODY;
use crate::request::{DEFAULT_SAMPLE_RATE, MAX_INPUT, MODELS, RESPONSE_FORMATS, SAMPLE_RATES};

/// A `$ref` to a component schema.
fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// A `$ref` to a component response.
fn response(name: &str) -> Value {
    json!({ "$ref": format!("#/components/responses/{name}") })
}

/// The error responses of a `/v1/*` operation that takes a speech request.
fn speech_errors() -> Value {
    json!({
        "400": response("BadRequest"),
        "401": response("Unauthorized"),
        "404": response("NotFound"),
        "408": response("BodyTimeout"),
        "413": response("TooLarge"),
        "429": response("Busy"),
        "500": response("ServerError"),
        "503": response("Unavailable"),
    })
}

/// `base` with the `speech_errors` added.
fn with_errors(mut base: Value) -> Value {
    if let (Some(b), Value::Object(errors)) = (base.as_object_mut(), speech_errors()) {
        b.extend(errors);
    }
    base
}

/// The headers every audio answer carries.
fn audio_headers() -> Value {
    json!({
        "X-Sample-Rate": {
            "description": "The rate of the audio, Hz.",
            "required": true,
            "schema": { "type": "integer", "minimum": 1 },
        },
        "X-Seed": {
            "description": "The seed the sampler used (the request's, or a fresh one).",
            "required": true,
            "schema": { "type": "integer", "minimum": 0 },
        },
        "X-Voice": {
            "description": "The voice that spoke.",
            "schema": { "type": "string" },
        },
    })
}

fn speech_request() -> Value {
    let rates = SAMPLE_RATES.map(|r| r.to_string()).join(", ");
    json!({
        "type": "object",
        "description": "OpenAI's speech request plus `seed`, `stream` and `sample_rate`. \
            Unknown fields (OpenAI's `instructions` among them) are ignored; null is the same as absent. \
            `response_format: flac` with `stream_format: sse`, and `stream: false` with \
            `stream_format: sse`, are 400.",
        "required": ["model", "input"],
        "properties": {
            "model": {
                "type": "string",
                "enum": MODELS,
                "description": "`deepvoice`, or one of OpenAI's ids as an alias: every one is the voice's Deep Voice model.",
            },
            "input": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_INPUT,
                "description": format!(
                    "The text, 1 to {MAX_INPUT} characters (Unicode scalar values), not only whitespace; \
                     words the voice cannot pronounce are 400."
                ),
                "examples": ["Hello from Deep Voice."],
            },
            "voice": {
                "type": ["string", "null"],
                "description": "A voice's name (`GET /v1/audio/voices`); absent: the server's default voice; unknown: 404 listing the known ones.",
            },
            "response_format": {
                "type": ["string", "null"],
                "enum": RESPONSE_FORMATS.iter().map(|f| json!(f)).chain([Value::Null]).collect::<Vec<_>>(),
                "default": "wav",
                "description": "`wav` (16-bit mono, streamed with 0xFFFFFFFF sizes), `pcm` (raw 16-bit little-endian mono), \
                    `flac` (encoded once the whole text is rendered), `mp3` (mono 64 kbit/s CBR, LAME; streamed frame by frame) \
                    or `opus` (Ogg Opus, RFC 7845, mono 48 kbit/s, libopus; streamed page by page; always 48 kHz). \
                    OpenAI's `aac` is 400: no AAC encoder under a free licence is built in.",
            },
            "speed": {
                "type": ["number", "null"],
                "minimum": 0.25,
                "maximum": 4.0,
                "default": 1.0,
            },
            "stream_format": {
                "type": ["string", "null"],
                "enum": ["audio", "sse", null],
                "default": "audio",
                "description": "`audio`: the bytes themselves; `sse`: server-sent events with the same bytes base64'd \
                    (`speech.audio.delta`, then `speech.audio.done`).",
            },
            "seed": {
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": u64::MAX,
                "description": "The same seed gives the same samples; absent: a fresh one, said in `X-Seed`.",
            },
            "stream": {
                "type": ["boolean", "null"],
                "default": true,
                "description": "`false`: the whole answer at once, with real sizes and a `Content-Length`.",
            },
            "sample_rate": {
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": u32::MAX,
                "default": DEFAULT_SAMPLE_RATE,
                "description": format!(
                    "The rate of the answer, Hz: one of {rates}, or the voice's own rate (16384 for the paper's voices); \
                     any other is 400. `opus` is always 48000 Hz (another rate is 400); `mp3` takes only the rates an MP3 \
                     frame can name (the voice's 16384 is 400)."
                ),
            },
        },
    })
}

fn span() -> Value {
    json!({
        "type": "object",
        "required": ["label", "start_s", "end_s"],
        "properties": {
            "label": { "type": "string" },
            "start_s": { "type": "number" },
            "end_s": { "type": "number" },
        },
    })
}

fn sentence() -> Value {
    json!({
        "type": "object",
        "description": "A sentence's timings in seconds from the start of the audio, its first sample and its length in samples of the answer's rate.",
        "required": ["index", "text", "start_s", "end_s", "start_sample", "samples", "phonemes", "words"],
        "properties": {
            "index": { "type": "integer", "minimum": 0 },
            "text": { "type": "string" },
            "start_s": { "type": "number" },
            "end_s": { "type": "number" },
            "start_sample": { "type": "integer", "minimum": 0 },
            "samples": { "type": "integer", "minimum": 0 },
            "phonemes": { "type": "array", "items": schema("Span") },
            "words": { "type": "array", "items": schema("Span") },
        },
    })
}

fn timed() -> Value {
    json!({
        "type": "object",
        "required": ["model", "voice", "sample_rate", "seed", "samples", "duration_s", "render_s", "audio", "sentences"],
        "properties": {
            "model": { "type": "string" },
            "voice": { "type": "string" },
            "sample_rate": { "type": "integer", "minimum": 1 },
            "seed": { "type": "integer", "minimum": 0 },
            "samples": { "type": "integer", "minimum": 0 },
            "duration_s": { "type": "number", "minimum": 0 },
            "render_s": { "type": "number", "minimum": 0 },
            "audio": { "type": "string", "contentEncoding": "base64", "contentMediaType": "audio/wav" },
            "sentences": { "type": "array", "items": schema("Sentence") },
        },
    })
}

/// A server-sent event whose `data` is JSON matching one of `payloads`
/// (OpenAPI 3.1: a `text/event-stream` schema describes each event).
fn event(payloads: &[&str]) -> Value {
    let one_of: Vec<Value> = payloads.iter().map(|p| schema(p)).collect();
    json!({
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": { "oneOf": one_of },
            },
        },
    })
}

fn events() -> Value {
    json!({
        "AudioDelta": {
            "type": "object",
            "description": "The next bytes of the audio (the same bytes `stream_format: audio` sends; PCM only on the timed endpoint).",
            "required": ["type", "audio"],
            "properties": {
                "type": { "const": "speech.audio.delta" },
                "audio": { "type": "string", "contentEncoding": "base64" },
            },
        },
        "AudioDone": {
            "type": "object",
            "description": "The last event: usage (characters in, samples out: Deep Voice has no tokens) and timing.",
            "required": ["type", "usage", "timing", "seed"],
            "properties": {
                "type": { "const": "speech.audio.done" },
                "usage": {
                    "type": "object",
                    "required": ["input_tokens", "output_tokens", "total_tokens"],
                    "properties": {
                        "input_tokens": { "type": "integer", "minimum": 0 },
                        "output_tokens": { "type": "integer", "minimum": 0 },
                        "total_tokens": { "type": "integer", "minimum": 0 },
                    },
                },
                "timing": {
                    "type": "object",
                    "required": ["sample_rate", "samples", "audio_s", "render_s", "real_time_factor", "first_audio_s"],
                    "properties": {
                        "sample_rate": { "type": "integer", "minimum": 1 },
                        "samples": { "type": "integer", "minimum": 0 },
                        "audio_s": { "type": "number", "minimum": 0 },
                        "render_s": { "type": "number", "minimum": 0 },
                        "real_time_factor": { "type": "number", "minimum": 0 },
                        "first_audio_s": { "type": ["number", "null"], "minimum": 0 },
                    },
                },
                "seed": { "type": "integer", "minimum": 0 },
            },
        },
        "SentenceEvent": {
            "type": "object",
            "description": "A sentence's timings, before its audio (the timed endpoint).",
            "required": ["type", "sentence"],
            "properties": {
                "type": { "const": "speech.sentence" },
                "sentence": schema("Sentence"),
            },
        },
        "ErrorEvent": {
            "type": "object",
            "description": "The render failed after the first byte; the stream ends.",
            "required": ["type", "error"],
            "properties": {
                "type": { "const": "error" },
                "error": {
                    "type": "object",
                    "required": ["message", "type"],
                    "properties": { "message": { "type": "string" }, "type": { "type": "string" } },
                },
            },
        },
    })
}

fn error() -> Value {
    json!({
        "type": "object",
        "description": "OpenAI's error shape.",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type", "param", "code"],
                "properties": {
                    "message": { "type": "string" },
                    "type": {
                        "type": "string",
                        "description": "`invalid_request_error`, `authentication_error`, `rate_limit_error` or `server_error`.",
                    },
                    "param": { "type": ["string", "null"], "description": "The request field at fault." },
                    "code": { "type": "string" },
                    "voices": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "The known voices (an unknown voice's 404).",
                    },
                },
            },
        },
    })
}

/// An error response.
fn error_response(description: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema("Error") } } })
}

fn components() -> Value {
    let mut schemas = json!({
        "SpeechRequest": speech_request(),
        "Timed": timed(),
        "Sentence": sentence(),
        "Span": span(),
        "Error": error(),
        "Models": {
            "type": "object",
            "required": ["object", "data"],
            "properties": {
                "object": { "const": "list" },
                "data": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["id", "object", "created", "owned_by"],
                        "properties": {
                            "id": { "type": "string", "enum": MODELS },
                            "object": { "const": "model" },
                            "created": { "type": "integer" },
                            "owned_by": { "type": "string" },
                        },
                    },
                },
            },
        },
        "Voices": {
            "type": "object",
            "required": ["voices", "default"],
            "properties": {
                "voices": {
                    "type": "array",
                    "description": "The default voice first.",
                    "items": {
                        "type": "object",
                        "required": ["id", "name", "demo"],
                        "properties": {
                            "id": { "type": "string", "description": "What a request's `voice` names." },
                            "name": { "type": "string" },
                            "demo": { "type": "boolean", "description": "A toy voice (its name starts with `demo-`)." },
                        },
                    },
                },
                "default": { "type": "string" },
            },
        },
    });
    if let (Some(s), Value::Object(e)) = (schemas.as_object_mut(), events()) {
        s.extend(e);
    }
    json!({
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "Required on `/v1/*` when the server has an API key (`--api-key`, `DV_API_KEY`); else anything or nothing is accepted.",
            },
        },
        "schemas": schemas,
        "responses": {
            "BadRequest": error_response("A field is missing, of the wrong type or out of range, the body is not a JSON object, or the text cannot be spoken; `param` names the field."),
            "Unauthorized": error_response("The server has an API key and the request did not send it as `Authorization: Bearer <key>`."),
            "NotFound": error_response("The model or the voice does not exist (`param` says which)."),
            "BodyTimeout": error_response("The body did not arrive within the server's body timeout."),
            "TooLarge": error_response(&format!("The body is over {MAX_BODY} bytes.")),
            "Busy": {
                "description": "Every worker is busy and the queue is full.",
                "headers": { "Retry-After": { "description": "Seconds to wait.", "required": true, "schema": { "type": "integer" } } },
                "content": { "application/json": { "schema": schema("Error") } },
            },
            "ServerError": error_response("The server failed (a voice that does not load, a render error)."),
            "Unavailable": error_response("The server is shutting down, or the render was cancelled."),
        },
    })
}

/// Whole requests, one per kind of answer (streamed WAV, PCM at another
/// rate, whole FLAC, streamed MP3 and Opus, SSE, a whole WAV with a seed).
fn speech_examples() -> Value {
    let text = "Hello from Deep Voice.";
    json!({
        "wav": { "summary": "Streamed WAV at 24 kHz", "value": { "model": "tts-1", "input": text } },
        "pcm": {
            "summary": "Raw PCM at 16 kHz",
            "value": { "model": "deepvoice", "input": text, "response_format": "pcm", "sample_rate": 16_000 },
        },
        "flac": { "summary": "FLAC", "value": { "model": "deepvoice", "input": text, "response_format": "flac" } },
        "mp3": { "summary": "Streamed MP3", "value": { "model": "tts-1", "input": text, "response_format": "mp3" } },
        "opus": {
            "summary": "Streamed Ogg Opus at 48 kHz",
            "value": { "model": "tts-1", "input": text, "response_format": "opus" },
        },
        "sse": {
            "summary": "Server-sent events",
            "value": { "model": "deepvoice", "input": text, "response_format": "pcm", "stream_format": "sse" },
        },
        "whole": {
            "summary": "The whole WAV at once, the same samples for the same seed",
            "value": { "model": "deepvoice", "input": text, "stream": false, "seed": 42, "speed": 1.25 },
        },
    })
}

fn speech_body() -> Value {
    json!({
        "required": true,
        "content": { "application/json": { "schema": schema("SpeechRequest"), "examples": speech_examples() } },
    })
}

fn paths() -> Value {
    let bearer = json!([{ "bearer": [] }]);
    let binary = json!({ "type": "string", "format": "binary" });
    json!({
        "/v1/audio/speech": {
            "post": {
                "operationId": "speech",
                "summary": "Speak a text (OpenAI's speech endpoint)",
                "description": "Audio streams in blocks of about 100 ms as the sampler makes them (unless `stream` is false \
                    or the format is `flac`); with `stream_format: sse`, `speech.audio.delta` events then `speech.audio.done`. \
                    An error after the first byte ends the stream (an `error` event in SSE).",
                "security": bearer,
                "requestBody": speech_body(),
                "responses": with_errors(json!({
                    "200": {
                        "description": "The audio, or server-sent events carrying it.",
                        "headers": audio_headers(),
                        "content": {
                            "audio/wav": { "schema": binary },
                            "audio/pcm": { "schema": binary },
                            "audio/flac": { "schema": binary },
                            "audio/mpeg": { "schema": binary },
                            "audio/opus": { "schema": binary },
                            "text/event-stream": { "schema": event(&["AudioDelta", "AudioDone", "ErrorEvent"]) },
                        },
                    },
                })),
            },
        },
        "/v1/audio/speech/timed": {
            "post": {
                "operationId": "speechTimed",
                "summary": "Speak a text, with each sentence's phoneme and word timings",
                "description": "The same request. JSON with the audio as base64 WAV and the timings; with `stream_format: sse`, \
                    a `speech.sentence` event before each sentence's `speech.audio.delta` events (base64 PCM), then `speech.audio.done`.",
                "security": bearer,
                "requestBody": speech_body(),
                "responses": with_errors(json!({
                    "200": {
                        "description": "The audio and its timings, or server-sent events carrying them.",
                        "headers": audio_headers(),
                        "content": {
                            "application/json": { "schema": schema("Timed") },
                            "text/event-stream": {
                                "schema": event(&["SentenceEvent", "AudioDelta", "AudioDone", "ErrorEvent"]),
                            },
                        },
                    },
                })),
            },
        },
        "/v1/audio/voices": {
            "get": {
                "operationId": "voices",
                "summary": "The voices, the default first",
                "security": bearer,
                "responses": {
                    "200": { "description": "The voices.", "content": { "application/json": { "schema": schema("Voices") } } },
                    "401": response("Unauthorized"),
                },
            },
        },
        "/v1/models": {
            "get": {
                "operationId": "models",
                "summary": "The model ids a request may name",
                "security": bearer,
                "responses": {
                    "200": { "description": "The models.", "content": { "application/json": { "schema": schema("Models") } } },
                    "401": response("Unauthorized"),
                },
            },
        },
        "/healthz": {
            "get": {
                "operationId": "healthz",
                "summary": "Alive",
                "responses": {
                    "200": {
                        "description": "The server answers.",
                        "content": { "application/json": { "schema": {
                            "type": "object",
                            "required": ["status"],
                            "properties": { "status": { "const": "ok" } },
                        } } },
                    },
                },
            },
        },
        "/readyz": {
            "get": {
                "operationId": "readyz",
                "summary": "Ready: the default voice is loaded",
                "responses": {
                    "200": {
                        "description": "The default voice is loaded.",
                        "content": { "application/json": { "schema": {
                            "type": "object",
                            "required": ["status", "voice", "uptime_s"],
                            "properties": {
                                "status": { "const": "ready" },
                                "voice": { "type": "string" },
                                "uptime_s": { "type": "number", "minimum": 0 },
                            },
                        } } },
                    },
                    "503": {
                        "description": "The default voice is loading, or did not load (`error` says why).",
                        "content": { "application/json": { "schema": {
                            "type": "object",
                            "required": ["status", "voice", "error"],
                            "properties": {
                                "status": { "const": "loading" },
                                "voice": { "type": "string" },
                                "error": { "type": ["string", "null"] },
                            },
                        } } },
                    },
                },
            },
        },
        "/metrics": {
            "get": {
                "operationId": "metrics",
                "summary": "Prometheus metrics (text format 0.0.4)",
                "responses": {
                    "200": { "description": "The metrics.", "content": { "text/plain": { "schema": { "type": "string" } } } },
                },
            },
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This description",
                "responses": {
                    "200": {
                        "description": "OpenAPI 3.1.",
                        "content": { "application/json": { "schema": {
                            "type": "object",
                            "required": ["openapi", "info", "paths"],
                        } } },
                    },
                },
            },
        },
        "/": {
            "get": {
                "operationId": "page",
                "summary": "The web page: type a text, pick a voice, hear it, see its timeline",
                "responses": {
                    "200": { "description": "The page.", "content": { "text/html": { "schema": { "type": "string" } } } },
                },
            },
        },
    })
}

/// The whole description.
pub(crate) fn spec() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "dv-serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Deep Voice voices over HTTP: OpenAI's speech endpoint (streamed, SSE or whole), \
                a timed endpoint with phoneme and word timings, voices, models, health, metrics and a web page. \
                Errors are OpenAI-shaped: `{\"error\":{\"message\",\"type\",\"param\",\"code\"}}`.",
        },
        "paths": paths(),
        "components": components(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// `(METHOD, path)` of every operation in the description.
    fn operations(spec: &Value) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for (path, item) in spec["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                out.insert((method.to_uppercase(), path.clone()));
            }
        }
        out
    }

    #[test]
    fn the_description_lists_exactly_the_routers_routes() {
        let spec = spec();
        let routes: BTreeSet<(String, String)> =
            crate::server::route_list().into_iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
        assert_eq!(operations(&spec), routes);
        assert_eq!(routes.len(), 9, "{routes:?}");
    }

    #[test]
    fn the_description_is_openapi_3_1_with_its_limits() {
        // Through text, as a client reads it.
        let spec: Value = serde_json::from_str(&spec().to_string()).unwrap();
        assert_eq!(spec["openapi"], "3.1.0");
        assert_eq!(spec["info"]["title"], "dv-serve");
        assert!(spec["paths"].is_object());
        let req = &spec["components"]["schemas"]["SpeechRequest"];
        assert_eq!(req["properties"]["input"]["maxLength"], MAX_INPUT);
        assert_eq!(req["properties"]["model"]["enum"], json!(MODELS));
        assert_eq!(req["required"], json!(["model", "input"]));
        // Every $ref resolves.
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        out.push(r.clone());
                    }
                    m.values().for_each(|v| refs(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&spec, &mut all);
        assert!(all.len() > 10);
        for r in all {
            let pointer = r.strip_prefix('#').unwrap();
            assert!(spec.pointer(pointer).is_some(), "{r} does not resolve");
        }
    }
}
