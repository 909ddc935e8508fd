//! `GET /openapi.json` describes the server as it is: every operation it
//! lists is served (and guarded as it says), and schemathesis (from PyPI,
//! the version `infra/install.sh` pins in `SERVE_TEST_PACKAGES`), fuzzing
//! every operation from the description (its examples, its coverage phase
//! and at most 100 fuzzed cases per operation under a fixed seed: about 500
//! cases in 10 s on the 2-core dev VM), finds no 5xx and no answer that
//! disagrees with its schemas, while the server's memory stays bounded.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{voices, Server};

const KEY: &str = "sk-dv-openapi-test";

/// The description as a client fetches it.
async fn description(s: &Server) -> Value {
    let r = reqwest::get(s.url("/openapi.json")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    r.json().await.unwrap()
}

/// `(METHOD, path, secured)` of every operation in `spec`.
fn operations(spec: &Value) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            out.push((method.to_uppercase(), path.clone(), secured));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_described_is_served_and_guarded_as_described() {
    let s = Server::start(voices(false), |c| c.api_key = Some(KEY.into())).await;
    let spec = description(&s).await;
    assert!(spec["openapi"].as_str().unwrap().starts_with("3.1"), "{}", spec["openapi"]);
    assert_eq!(spec["info"]["title"], "dv-serve");
    let ops = operations(&spec);
    assert_eq!(ops.len(), 9, "{ops:?}");
    let client = reqwest::Client::new();
    for (method, path, secured) in &ops {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let send = |key: bool| {
            let mut r = client.request(m.clone(), s.url(path));
            if m == reqwest::Method::POST {
                // Valid JSON, but no request: a 400 that names `model`.
                r = r.header("content-type", "application/json").body("{}");
            }
            if key {
                r = r.bearer_auth(KEY);
            }
            r.send()
        };
        let with_key = send(true).await.unwrap().status().as_u16();
        assert!(![404, 405].contains(&with_key), "{method} {path}: {with_key}");
        let want = if m == reqwest::Method::POST { 400 } else { 200 };
        assert_eq!(with_key, want, "{method} {path}");
        // `security` says which operations need the key.
        let without = send(false).await.unwrap().status().as_u16();
        assert_eq!(without == 401, *secured, "{method} {path} without the key: {without}");
        // A method the description does not list for the path is 405.
        let other = if m == reqwest::Method::GET { reqwest::Method::DELETE } else { reqwest::Method::GET };
        let r = client.request(other.clone(), s.url(path)).bearer_auth(KEY).send().await.unwrap();
        assert_eq!(r.status(), 405, "{other} {path}");
    }
    // A path it does not list is 404.
    let r = client.get(s.url("/v1/audio/transcriptions")).bearer_auth(KEY).send().await.unwrap();
    assert_eq!(r.status(), 404);
}

/// The test process's resident memory, bytes (the server runs in it).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// The line after `label` in schemathesis's summary (`"Test cases:"` →
/// `"346 generated, 346 passed, 8 skipped"`), or the rest of `label`'s own
/// line when it has one (`"Tested:"` → `"9"`).
fn summary(out: &str, label: &str) -> String {
    let mut lines = out.lines().map(str::trim);
    while let Some(l) = lines.next() {
        if let Some(rest) = l.strip_prefix(label) {
            let rest = rest.trim();
            return if rest.is_empty() { lines.next().unwrap_or("").to_string() } else { rest.to_string() };
        }
    }
    panic!("no {label:?} in schemathesis's output:\n{out}")
}

/// `"346 generated, 346 passed, 8 skipped"` → the number before `word`.
fn count(line: &str, word: &str) -> Option<u64> {
    line.split(',').find_map(|part| part.trim().strip_suffix(word)?.trim().parse().ok())
}

/// Runs schemathesis against `url` in `dir` (its own process group, ended
/// with the test); its exit status and stdout.
fn run_schemathesis(url: &str, dir: &Path, limit: Duration) -> (std::process::ExitStatus, String) {
    let out_path = dir.join("schemathesis.txt");
    let mut child = dv_process_group::ProcessGroup::spawn(
        Command::new("schemathesis")
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .env("COLUMNS", "200")
            .args(["run", url, "--header", &format!("Authorization: Bearer {KEY}")])
            // Every operation, the description's own included (schemathesis
            // leaves the one that served the schema out unless a filter names it).
            .args(["--include-path-regex", "^/"])
            // Every check but "schema-valid requests are accepted": a valid
            // text the voice cannot pronounce is a 400, as it should be.
            .args(["--checks", "all", "--exclude-checks", "positive_data_acceptance"])
            .args(["--max-examples", "100", "--seed", "1", "--workers", "1", "--request-timeout", "20"])
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(Stdio::inherit()),
    )
    .expect("schemathesis fuzzes the API: infra/install.sh ensure_test_python installs it");
    let status = super::wait_within(&mut child, limit, "schemathesis");
    drop(child);
    (status, std::fs::read_to_string(&out_path).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_answer_off_the_description() {
    let v = voices(false);
    // The description's example text, so that its examples are spoken.
    let lexicon = v.path().join("test").join(dv_speak::LEXICON_FILE);
    let mut words = std::fs::read_to_string(&lexicon).unwrap();
    words.push_str("from F R AH1 M\ndeep D IY1 P\nvoice V OY1 S\n");
    std::fs::write(&lexicon, words).unwrap();
    let s = Server::start(v, |c| c.api_key = Some(KEY.into())).await;
    let before = rss();
    let dir = tempfile::tempdir().unwrap();
    let (url, path) = (s.url("/openapi.json"), dir.path().to_path_buf());
    let t = Instant::now();
    let (status, out) =
        tokio::task::spawn_blocking(move || run_schemathesis(&url, &path, Duration::from_secs(120))).await.unwrap();
    let took = t.elapsed();
    let after = rss();
    eprintln!("{out}");
    eprintln!(
        "schemathesis took {:.1} s; RSS {} MB before, {} MB after",
        took.as_secs_f64(),
        before >> 20,
        after >> 20
    );
    assert!(status.success(), "schemathesis found failures ({status:?}):\n{out}");
    // It tested every operation, and every case it made passed.
    assert_eq!(summary(&out, "Selected:"), "9/9");
    assert_eq!(summary(&out, "Tested:"), "9");
    let cases = summary(&out, "Test cases:");
    let generated = count(&cases, "generated").unwrap_or_else(|| panic!("{cases}"));
    assert!(generated >= 100, "{cases}");
    assert_eq!(count(&cases, "passed"), Some(generated), "{cases}");
    // The description's example requests were spoken, in every kind of
    // answer, on both speech endpoints; the server's own count has no 5xx.
    for endpoint in ["speech", "timed"] {
        let ok = s.metric(&format!("dv_serve_requests_total{{endpoint=\"{endpoint}\",status=\"200\"}}")).await;
        assert!(ok >= 5.0, "{endpoint}: {ok} answers with audio");
    }
    let metrics = reqwest::get(s.url("/metrics")).await.unwrap().text().await.unwrap();
    // (`/readyz` is 503 until the voice loaded, as it says: `Server::start` waited on it.)
    let server_errors: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("dv_serve_requests_total") && l.contains("status=\"5"))
        .filter(|l| !l.contains("endpoint=\"readyz\""))
        .collect();
    assert!(server_errors.is_empty(), "{server_errors:?}");
    // The server (in this process) held on to no more than a generous bound.
    assert!(after < 1536 << 20, "RSS {} MB after schemathesis ({} MB before)", after >> 20, before >> 20);
}
