//! Abuse (issue 32): bytes that are not HTTP, requests cut off mid-body,
//! a crowd of idle connections, deeply nested and invalid JSON, pipelined
//! requests. After each the server answers `/healthz` and still speaks.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{body, samples, voices, Server};

/// Sends `bytes` on a new connection, half-closes it, and returns what the
/// server answered before closing (at most 5 s).
fn raw(s: &Server, bytes: &[u8]) -> String {
    let mut tcp = TcpStream::connect(s.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(bytes).unwrap();
    let _ = tcp.shutdown(Shutdown::Write);
    let mut buf = Vec::new();
    let _ = tcp.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The server is alive and still turns text into audio.
async fn still_speaks(s: &Server) {
    let r = reqwest::get(s.url("/healthz")).await.unwrap();
    assert_eq!(r.status(), 200);
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .json(&body(json!({ "response_format": "pcm" })))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let pcm = r.bytes().await.unwrap();
    assert!(samples(&pcm).len() > 1000, "{} bytes of audio", pcm.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_that_are_not_http_are_refused_and_the_server_goes_on() {
    let s = Server::start(voices(false), |c| c.header_timeout = Duration::from_millis(500)).await;
    let mut noise = vec![0u8; 4096];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for b in noise.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    for junk in
        [&noise[..], b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"GET / HTTP/9.9\r\n\r\n", b"\r\n\r\n\r\n"]
    {
        let answer = raw(&s, junk);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 4") || answer.starts_with("HTTP/1.1 505"),
            "{answer}"
        );
    }
    still_speaks(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_cut_off_mid_request_is_dropped_and_the_server_goes_on() {
    let s = Server::start(voices(false), |c| c.body_timeout = Duration::from_millis(500)).await;
    let t = Instant::now();
    let answer = raw(&s, b"POST /v1/audio/speech HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n{\"model\":\"deepvoice\",\"inp");
    assert!(t.elapsed() < Duration::from_secs(4), "held for {:?}", t.elapsed());
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 4"), "{answer}");
    still_speaks(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_idle_connections_does_not_keep_others_out() {
    let s = Server::start(voices(false), |c| c.header_timeout = Duration::from_millis(500)).await;
    // Idle: connected, nothing sent; half-sent: a request line and no more.
    let crowd: Vec<TcpStream> = (0..300)
        .map(|i| {
            let mut tcp = TcpStream::connect(s.addr).unwrap();
            if i % 2 == 1 {
                tcp.write_all(b"POST /v1/audio/speech HTTP/1.1\r\n").unwrap();
            }
            tcp
        })
        .collect();
    let t = Instant::now();
    still_speaks(&s).await;
    assert!(t.elapsed() < Duration::from_secs(10), "served after {:?} beside 300 idle connections", t.elapsed());
    // The header timeout closes every one of them.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for mut tcp in crowd {
        tcp.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 256];
        let closed = matches!(tcp.read(&mut buf), Ok(0)) || buf.starts_with(b"HTTP/1.1 408");
        assert!(closed, "a connection was still open 1.5 s after the header timeout");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_or_invalid_json_is_a_400_and_the_server_goes_on() {
    let s = Server::start(voices(false), |_| {}).await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let nested_input = format!("{{\"model\":\"deepvoice\",\"voice\":\"test\",\"input\":{deep}}}");
    let bad_utf8 = b"{\"model\":\"deepvoice\",\"voice\":\"test\",\"input\":\"\xff\xfe\xfd\"}".to_vec();
    for payload in [deep.into_bytes(), nested_input.into_bytes(), bad_utf8, b"{\"input\":".to_vec()] {
        let r = reqwest::Client::new()
            .post(s.url("/v1/audio/speech"))
            .header("content-type", "application/json")
            .body(payload)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let e: serde_json::Value = r.json().await.unwrap();
        assert!((400..500).contains(&status) && e["error"]["message"].is_string(), "{status} {e}");
    }
    still_speaks(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order() {
    let s = Server::start(voices(false), |_| {}).await;
    let two = b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\nGET /v1/audio/voices HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    // Both in one write, the connection left open (a half-close may end the
    // connection after the first answer): the second asks the server to close.
    let mut tcp = TcpStream::connect(s.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(two).unwrap();
    let mut buf = Vec::new();
    let _ = tcp.read_to_end(&mut buf);
    let answer = String::from_utf8_lossy(&buf).into_owned();
    let first = answer.find("HTTP/1.1 200").unwrap_or_else(|| panic!("{answer}"));
    let second = answer[first + 1..].find("HTTP/1.1 200").unwrap_or_else(|| panic!("one answer only: {answer}"));
    assert!(answer[first + 1 + second..].contains("\"test\""), "{answer}");
    still_speaks(&s).await;
}
