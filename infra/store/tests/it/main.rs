//! Object-store faults (issue 32): a small TCP proxy in front of moto_server
//! (PyPI's `moto[server]`, which the test command installs) answers chosen
//! connections with HTTP 500/503 or not at all, and passes the others
//! through. `dv-store` must retry with backoff and succeed when the store
//! recovers, and give an error naming the location and the object when it
//! does not.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dv_process_group::ProcessGroup;
use dv_store::{Store, StoreError, StoreOptions};

/// What the proxy does with one connection.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Read the request, answer with this status and close.
    Status(u16),
    /// Read the request, then say nothing for this long and close.
    Stall(Duration),
    /// Pass the connection through to moto.
    Pass,
}

struct Proxy {
    port: u16,
    /// Connections accepted so far (each failed attempt is a new one: the
    /// proxy closes it).
    connections: Arc<AtomicUsize>,
}

/// A proxy whose connection `i` (from 0) gets `plan(i)`.
fn proxy(upstream: u16, plan: impl Fn(usize) -> Fault + Send + 'static) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let i = count.fetch_add(1, Ordering::SeqCst);
            match plan(i) {
                Fault::Status(code) => {
                    std::thread::spawn(move || {
                        read_request(&mut conn);
                        let reason = if code == 503 { "Service Unavailable" } else { "Internal Server Error" };
                        let _ =
                            write!(conn, "HTTP/1.1 {code} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        let _ = conn.shutdown(Shutdown::Both);
                    });
                }
                Fault::Stall(d) => {
                    std::thread::spawn(move || {
                        read_request(&mut conn);
                        std::thread::sleep(d);
                        let _ = conn.shutdown(Shutdown::Both);
                    });
                }
                Fault::Pass => {
                    let up = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                    let (mut a, mut b) = (conn.try_clone().unwrap(), up.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut a, &mut b);
                        let _ = b.shutdown(Shutdown::Write);
                    });
                    let (mut a, mut b) = (up, conn);
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut a, &mut b);
                        let _ = b.shutdown(Shutdown::Write);
                    });
                }
            }
        }
    });
    Proxy { port, connections }
}

/// Reads one request's head and its `Content-Length` body.
fn read_request(conn: &mut TcpStream) {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        match conn.read(&mut byte) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&byte[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    let mut have = buf.len() - head_end;
    while have < len {
        match conn.read(&mut byte) {
            Ok(0) | Err(_) => return,
            Ok(n) => have += n,
        }
    }
}

struct Moto {
    _group: ProcessGroup,
    port: u16,
}

fn start_moto() -> Moto {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let group = ProcessGroup::spawn(
        Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .expect("moto_server (pip install 'moto[server]'; the test command installs it)");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            // The bucket every test writes to.
            write!(s, "PUT /faults HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut reply = String::new();
            let _ = s.read_to_string(&mut reply);
            if reply.starts_with("HTTP/1.1 200") {
                break;
            }
        }
        assert!(Instant::now() < deadline, "moto_server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Moto { _group: group, port }
}

fn options(proxy: &Proxy, max_retries: usize, request_timeout: Duration) -> StoreOptions {
    StoreOptions {
        max_retries,
        retry_timeout: Duration::from_secs(60),
        request_timeout,
        config: [
            ("aws_endpoint", format!("http://127.0.0.1:{}", proxy.port)),
            ("allow_http", "true".into()),
            ("aws_access_key_id", "test".into()),
            ("aws_secret_access_key", "test".into()),
            ("aws_region", "us-east-1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[test]
fn errors_and_stalls_are_retried_until_the_store_answers() {
    let moto = start_moto();
    // Connections 0-1: 503, 2: 500, 3: no answer for 10 s, then through.
    let p = proxy(moto.port, |i| match i {
        0 | 1 => Fault::Status(503),
        2 => Fault::Status(500),
        3 => Fault::Stall(Duration::from_secs(10)),
        _ => Fault::Pass,
    });
    let store = Store::open_with("s3://faults/retry", &options(&p, 10, Duration::from_secs(2))).unwrap();
    let t = Instant::now();
    block_on(store.put("shards/a.bin", b"payload".to_vec())).unwrap();
    let took = t.elapsed();
    eprintln!("stored after {took:?} and {} connections", p.connections.load(Ordering::SeqCst));
    assert!(p.connections.load(Ordering::SeqCst) >= 5, "{} connections", p.connections.load(Ordering::SeqCst));
    // The stalled attempt alone waited out the 2 s request timeout.
    assert!(took >= Duration::from_secs(2), "{took:?}");
    assert_eq!(block_on(store.get("shards/a.bin")).unwrap(), b"payload");
}

#[test]
fn a_store_that_keeps_failing_is_a_clear_error_after_the_retries() {
    let moto = start_moto();
    let p = proxy(moto.port, |_| Fault::Status(503));
    let store = Store::open_with("s3://faults/down", &options(&p, 3, Duration::from_secs(5))).unwrap();
    let t = Instant::now();
    let err = block_on(store.put("shards/b.bin", b"payload".to_vec())).unwrap_err();
    let took = t.elapsed();
    // One attempt and three retries, with backoff between them.
    assert_eq!(p.connections.load(Ordering::SeqCst), 4);
    assert!(took >= Duration::from_millis(50), "{took:?}");
    assert!(matches!(err, StoreError::Request { .. }), "{err:?}");
    let msg = err.to_string();
    eprintln!("after {took:?}: {msg}");
    for part in ["s3://faults/down", "shards/b.bin", "503", "retries"] {
        assert!(msg.contains(part), "{part:?} not in {msg:?}");
    }
    // Nothing was stored: moto never saw the object.
    let direct = proxy(moto.port, |_| Fault::Pass);
    let store = Store::open_with("s3://faults/down", &options(&direct, 0, Duration::from_secs(5))).unwrap();
    assert_eq!(block_on(store.list("")).unwrap(), Vec::<String>::new());
}

#[test]
fn a_store_that_never_answers_times_out_and_names_the_object() {
    let moto = start_moto();
    let p = proxy(moto.port, |_| Fault::Stall(Duration::from_secs(30)));
    let store = Store::open_with("s3://faults/slow", &options(&p, 2, Duration::from_millis(500))).unwrap();
    let t = Instant::now();
    let err = block_on(store.get("shards/c.bin")).unwrap_err();
    let took = t.elapsed();
    assert_eq!(p.connections.load(Ordering::SeqCst), 3);
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(20), "{took:?}");
    let msg = err.to_string();
    eprintln!("after {took:?}: {msg}");
    assert!(msg.contains("s3://faults/slow") && msg.contains("shards/c.bin"), "{msg}");
    assert!(msg.contains("timed out"), "{msg}");
}

#[test]
fn bad_retry_settings_in_the_environment_are_named() {
    // Only this test sets the variable, and only to a bad value it removes.
    std::env::set_var("DV_STORE_MAX_RETRIES", "many");
    let err = StoreOptions::from_env().unwrap_err();
    std::env::remove_var("DV_STORE_MAX_RETRIES");
    assert!(err.to_string().contains("DV_STORE_MAX_RETRIES"), "{err}");
}
