//! A voice package without a `lexicon.dict` speaks from the CMUDict built
//! into the binary: `dv-serve` started with a `PATH` that holds no program
//! at all (so no `python3`) gets ready and speaks.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::{body, save_voice, FAST};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_gets_ready_and_speaks_without_python() {
    let dir = tempfile::tempdir().unwrap();
    save_voice(dir.path(), "test", FAST, 5);
    std::fs::remove_file(dir.path().join("test").join(dv_speak::LEXICON_FILE)).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = dv_process_group::ProcessGroup::spawn(
        std::process::Command::new(env!("CARGO_BIN_EXE_dv-serve"))
            .args(["--port", &port.to_string(), "--voice", "test", "--voices"])
            .arg(dir.path())
            .env("PATH", empty.path())
            .env_remove("DV_CMUDICT")
            .env_remove("DV_API_KEY")
            .stdout(std::process::Stdio::null()),
    )
    .unwrap();
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let t = Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status() == 200 {
                break;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(30), "dv-serve did not get ready");
        assert!(child.try_wait().unwrap().is_none(), "dv-serve exited");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("dv-serve ready after {:?}", t.elapsed());
    let r =
        client.post(format!("{base}/v1/audio/speech")).json(&body(json!({ "stream": false }))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let wav = r.bytes().await.unwrap();
    assert!(&wav[..4] == b"RIFF" && wav.len() > 44 + 2 * 1000, "{} bytes", wav.len());
    child.stop().unwrap();
}
