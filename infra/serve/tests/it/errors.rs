//! Every bad request gets an OpenAI-shaped JSON error naming the field, and
//! the server keeps serving.

use serde_json::{json, Value};

use crate::{body, voices, Server};

/// Posts `raw` to the speech endpoint; the status and the `error` object.
async fn error_of(s: &Server, raw: String) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .header("content-type", "application/json")
        .body(raw)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    (status, v["error"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_fields_are_json_errors_that_name_them() {
    let s = Server::start(voices(false), |_| {}).await;
    let with = |k: &str, v: Value| {
        let mut b = body(json!({}));
        b[k] = v;
        b.to_string()
    };
    let without = |k: &str| {
        let mut b = body(json!({}));
        b.as_object_mut().unwrap().remove(k);
        b.to_string()
    };
    let long = "a ".repeat(2049);
    // (body, status, param, code)
    let cases: Vec<(String, u16, Value, &str)> = vec![
        ("not json".into(), 400, Value::Null, "invalid_json"),
        ("[1, 2]".into(), 400, Value::Null, "invalid_json"),
        ("".into(), 400, Value::Null, "invalid_json"),
        (without("input"), 400, json!("input"), "missing_required_parameter"),
        (without("model"), 400, json!("model"), "missing_required_parameter"),
        (with("input", json!(5)), 400, json!("input"), "invalid_type"),
        (with("input", json!("")), 400, json!("input"), "empty_input"),
        (with("input", json!("   ")), 400, json!("input"), "empty_input"),
        (with("input", json!(long)), 400, json!("input"), "string_above_max_length"),
        (with("speed", json!(0.1)), 400, json!("speed"), "invalid_speed"),
        (with("speed", json!(4.5)), 400, json!("speed"), "invalid_speed"),
        (with("speed", json!("fast")), 400, json!("speed"), "invalid_type"),
        (with("response_format", json!("aac")), 400, json!("response_format"), "unsupported_response_format"),
        (with("response_format", json!("ogg")), 400, json!("response_format"), "unsupported_response_format"),
        (with("response_format", json!(1)), 400, json!("response_format"), "invalid_type"),
        (with("stream_format", json!("chunks")), 400, json!("stream_format"), "invalid_stream_format"),
        (with("seed", json!(-1)), 400, json!("seed"), "invalid_seed"),
        (with("seed", json!(1.5)), 400, json!("seed"), "invalid_seed"),
        (with("seed", json!("7")), 400, json!("seed"), "invalid_type"),
        (with("stream", json!("yes")), 400, json!("stream"), "invalid_type"),
        (with("voice", json!(["test"])), 400, json!("voice"), "invalid_type"),
        (with("model", json!("whisper-1")), 404, json!("model"), "model_not_found"),
        (with("input", json!("xylophone zebra")), 400, json!("input"), "unspeakable_input"),
        (with("input", json!("!!! ...")), 400, json!("input"), "unspeakable_input"),
    ];
    for (raw, status, param, code) in cases {
        let (got, e) = error_of(&s, raw.clone()).await;
        assert_eq!(got, status, "{raw:.80}: {e}");
        assert_eq!(e["param"], param, "{raw:.80}: {e}");
        assert_eq!(e["code"], code, "{raw:.80}: {e}");
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
        assert!(e["type"].is_string(), "{e}");
    }
    // flac is not streamed as SSE.
    let mut b = body(json!({ "response_format": "flac", "stream_format": "sse" }));
    let (got, e) = error_of(&s, b.to_string()).await;
    assert_eq!((got, e["param"].as_str()), (400, Some("stream_format")));
    b["stream_format"] = json!("audio");
    b["stream"] = json!(false);
    b["response_format"] = json!("pcm");
    b["stream_format"] = json!("sse");
    assert_eq!(error_of(&s, b.to_string()).await.0, 400);
    // The unsupported format's message names the supported ones (and, for
    // OpenAI's aac, why not).
    let (_, e) = error_of(&s, with("response_format", json!("aac"))).await;
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("\"aac\"") && m.contains("no AAC encoder") && m.contains("wav, pcm, flac, mp3, opus"), "{e}");
    let (_, e) = error_of(&s, with("response_format", json!("m4a"))).await;
    assert!(e["message"].as_str().unwrap().contains("supported: wav, pcm, flac, mp3, opus"), "{e}");
    // Opus is always 48 kHz; MP3 cannot carry the voice's 16384 Hz.
    for (format, rate) in [("opus", 24000), ("opus", 16384), ("mp3", 16384)] {
        let (got, e) = error_of(&s, body(json!({ "response_format": format, "sample_rate": rate })).to_string()).await;
        assert_eq!(
            (got, e["param"].as_str(), e["code"].as_str()),
            (400, Some("sample_rate"), Some("invalid_sample_rate"))
        );
        assert!(e["message"].as_str().unwrap().contains(format), "{e}");
    }
    // The timed endpoint checks the same fields.
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech/timed"))
        .body(with("speed", json!(9)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Still serving.
    let r = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&body(json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_voices_are_404_listing_the_known_ones() {
    let s = Server::start(voices(true), |_| {}).await;
    for name in ["alloy", "../test", "test/../slow", ".hidden", "/etc", "a\u{0}b", ""] {
        let mut b = body(json!({}));
        b["voice"] = json!(name);
        let (status, e) = error_of(&s, b.to_string()).await;
        assert_eq!(status, 404, "{name:?}: {e}");
        assert_eq!(e["code"], "voice_not_found");
        assert_eq!(e["param"], "voice");
        assert_eq!(e["voices"], json!(["slow", "test"]), "{e}");
        assert!(e["message"].as_str().unwrap().contains("slow, test"), "{e}");
    }
    let v: Value = reqwest::get(s.url("/v1/audio/voices")).await.unwrap().json().await.unwrap();
    // The default voice first.
    let listed = json!([
        { "id": "test", "name": "test", "demo": false },
        { "id": "slow", "name": "slow", "demo": false },
    ]);
    assert_eq!(v["voices"], listed);
    assert_eq!(v["default"], "test");
    let m: Value = reqwest::get(s.url("/v1/models")).await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = m["data"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids, dv_serve::MODELS);
    // Unknown routes and methods are JSON too.
    let r = reqwest::get(s.url("/v1/nope")).await.unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "not_found");
    let r = reqwest::get(s.url("/v1/audio/speech")).await.unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "method_not_allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_are_413() {
    let s = Server::start(voices(false), |_| {}).await;
    let big = format!("{{\"model\":\"deepvoice\",\"input\":\"{}\"}}", "a".repeat(dv_serve::MAX_BODY));
    let (status, e) = error_of(&s, big.clone()).await;
    assert_eq!((status, e["code"].as_str()), (413, Some("request_too_large")), "{e}");
    // Without a Content-Length (chunked): counted as it arrives.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big.into_bytes().chunks(8192).map(|c| Ok(c.to_vec())).collect();
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "request_too_large");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_guards_v1() {
    let s = Server::start(voices(false), |c| c.api_key = Some("sesame".into())).await;
    let c = reqwest::Client::new();
    for auth in [None, Some("Bearer wrong"), Some("sesame"), Some("Bearer sesam"), Some("Basic c2VzYW1l")] {
        let mut rq = c.post(s.url("/v1/audio/speech")).json(&body(json!({})));
        if let Some(a) = auth {
            rq = rq.header("authorization", a);
        }
        let r = rq.send().await.unwrap();
        assert_eq!(r.status(), 401, "{auth:?}");
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["type"], "authentication_error");
        assert_eq!(e["error"]["code"], "invalid_api_key");
    }
    assert_eq!(c.get(s.url("/v1/models")).send().await.unwrap().status(), 401);
    let r = c.post(s.url("/v1/audio/speech")).bearer_auth("sesame").json(&body(json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(!r.bytes().await.unwrap().is_empty());
    // Health, metrics and the page stay open.
    for path in ["/healthz", "/readyz", "/metrics", "/"] {
        assert_eq!(c.get(s.url(path)).send().await.unwrap().status(), 200, "{path}");
    }
}
