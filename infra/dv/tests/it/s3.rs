//! `dv featurize` and `dv recipe` against a real S3-compatible server
//! (moto_server from PyPI's `moto[server]`, which the test command
//! installs), including a job killed mid-run and resumed. The server and the background job are
//! process groups, ended when their guards drop, panics included.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dv_process_group::ProcessGroup;

struct Moto {
    /// Stops moto_server when the test ends, however it ends.
    _group: ProcessGroup,
    port: u16,
}

fn http(port: u16, method: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let code = body.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body))
}

fn put(port: u16, path: &str, body: &[u8]) -> u16 {
    put_with(port, path, body, "")
}

/// [`put`] with extra header lines (each ending in `\r\n`).
fn put_with(port: u16, path: &str, body: &[u8], headers: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Uploads every file under `dir` to `bucket/prefix/<relative path>`.
fn upload(port: u16, dir: &Path, bucket: &str, prefix: &str) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_str().unwrap();
                assert_eq!(put(port, &format!("/{bucket}/{prefix}/{rel}"), &std::fs::read(&p).unwrap()), 200, "{rel}");
                n += 1;
            }
        }
    }
    n
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
    let moto = Moto { _group: group, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    while http(port, "GET", "/").is_none() {
        assert!(Instant::now() < deadline, "moto_server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    moto
}

fn keys(port: u16, bucket: &str, prefix: &str) -> Vec<String> {
    let (_, body) = http(port, "GET", &format!("/{bucket}?list-type=2&prefix={prefix}")).unwrap();
    body.split("<Key>").skip(1).filter_map(|k| k.split("</Key>").next()).map(str::to_string).collect()
}

fn featurize(moto: &Moto, corpus: &Path, out: &str, extra: &[&str]) -> Command {
    featurize_url(moto, corpus.to_str().unwrap(), out, extra)
}

fn featurize_url(moto: &Moto, corpus: &str, out: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dv"));
    c.args(["featurize", "--corpus", corpus, "--out", out, "--jobs", "1"])
        .args(extra)
        .env("AWS_ENDPOINT", format!("http://127.0.0.1:{}", moto.port))
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1");
    c
}

fn corpus(dir: &Path, n: usize) -> std::path::PathBuf {
    let out = dir.join("slt");
    let o = Command::new(env!("CARGO_BIN_EXE_dv"))
        .args(["corpus", "make-default", "--utterances", &n.to_string(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn featurize_to_s3_survives_a_kill_and_resumes() {
    let moto = start_moto();
    assert_eq!(http(moto.port, "PUT", "/feats").map(|r| r.0), Some(200), "create the bucket");
    let d = tempfile::tempdir().unwrap();
    let corpus = corpus(d.path(), 48);

    let mut first = ProcessGroup::spawn(
        featurize(&moto, &corpus, "s3://feats/run1", &["--shards", "48"]).stdout(Stdio::null()).stderr(Stdio::null()),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let killed_at = loop {
        let n = keys(moto.port, "feats", "run1/shards/").len();
        if n >= 3 {
            first.kill().unwrap(); // SIGKILL to the job's group, then reaped
            break keys(moto.port, "feats", "run1/shards/").len();
        }
        assert!(first.try_wait().unwrap().is_none(), "the job finished before it could be killed");
        assert!(Instant::now() < deadline, "no shard appeared");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(killed_at < 48, "killed mid-run ({killed_at} shards done)");
    assert!(keys(moto.port, "feats", "run1/manifest.json").is_empty());
    // Every visible shard is whole: its report and chunk index were written before it.
    for k in keys(moto.port, "feats", "run1/shards/") {
        let name = k.trim_start_matches("run1/shards/").trim_end_matches(".parquet");
        assert_eq!(keys(moto.port, "feats", &format!("run1/reports/{name}.json")).len(), 1, "{k}");
    }

    let o = featurize(&moto, &corpus, "s3://feats/run1", &["--shards", "48"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let skipped: usize = out
        .lines()
        .find(|l| l.starts_with("shards"))
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(skipped >= killed_at, "the rerun skipped {skipped} finished shards (at least {killed_at}): {out}");
    assert!(out.contains("manifest.json written"), "{out}");
    assert_eq!(keys(moto.port, "feats", "run1/shards/").len(), 48);
    assert_eq!(keys(moto.port, "feats", "run1/manifest.json").len(), 1);
}

#[test]
fn featurize_reads_a_corpus_from_s3_and_stages_it_once() {
    let moto = start_moto();
    for bucket in ["/corpora", "/feats"] {
        assert_eq!(http(moto.port, "PUT", bucket).map(|r| r.0), Some(200), "create {bucket}");
    }
    let d = tempfile::tempdir().unwrap();
    let corpus = corpus(d.path(), 6);
    let objects = upload(moto.port, &corpus, "corpora", "slt");
    let home = d.path().join("home");
    let run = |out: &str| {
        let o = featurize_url(&moto, "s3://corpora/slt", out, &[]).env("DV_HOME", &home).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{text}\n{}", String::from_utf8_lossy(&o.stderr));
        text
    };
    let first = run("s3://feats/remote");
    assert!(first.contains(&format!("staged         {objects} objects of s3://corpora/slt")), "{first}");
    assert!(first.contains(&format!("{objects} fetched")), "{first}");
    assert!(first.contains("utterances     6 featurized"), "{first}");
    assert_eq!(keys(moto.port, "feats", "remote/manifest.json").len(), 1);
    // A second job on the same corpus fetches nothing and featurizes into a new place.
    let second = run("s3://feats/again");
    assert!(second.contains(", 0 fetched"), "{second}");
    assert!(second.contains("utterances     6 featurized"), "{second}");
    // A prefix with nothing under it is an error naming the URL.
    let o = featurize_url(&moto, "s3://corpora/nothing", "s3://feats/x", &[]).env("DV_HOME", &home).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("s3://corpora/nothing") && err.contains("no objects"), "{err}");
}

#[test]
fn recipe_runs_from_a_corpus_on_s3_and_skips_an_unchanged_bucket() {
    let moto = start_moto();
    assert_eq!(http(moto.port, "PUT", "/corpora").map(|r| r.0), Some(200), "create the bucket");
    let d = tempfile::tempdir().unwrap();
    let corpus = corpus(d.path(), 10);
    // Audio and text only, as in the local recipe test.
    std::fs::remove_dir_all(corpus.join("lab")).unwrap();
    std::fs::remove_dir_all(corpus.join("f0")).unwrap();
    let objects = upload(moto.port, &corpus, "corpora", "slt");
    let out = d.path().join("out");
    let r = super::recipe::recipe(d.path(), "r.toml", Path::new("s3://corpora/slt"), &out, 2);
    let secret = "moto-secret-never-logged";
    let dv = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_dv"))
            .args(args)
            .env("AWS_ENDPOINT", format!("http://127.0.0.1:{}", moto.port))
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_REGION", "us-east-1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{text}\n{}", String::from_utf8_lossy(&o.stderr));
        assert!(!text.contains(secret) && !String::from_utf8_lossy(&o.stderr).contains(secret));
        text
    };
    let recipe = r.to_str().unwrap();

    // Every stage runs from the bucket, staged once under out/corpus-cache/.
    let printed = dv(&["recipe", "run", recipe]);
    assert_eq!(super::recipe::ran(&printed).len(), 10, "{printed}");
    let log = std::fs::read_to_string(out.join("logs/inspect.log")).unwrap();
    assert!(log.contains(&format!("staged {objects} objects of s3://corpora/slt")), "{log}");
    assert!(log.contains(&format!("{objects} fetched")) && log.contains("utterances     10"), "{log}");
    let log = std::fs::read_to_string(out.join("logs/featurize.log")).unwrap();
    assert!(log.contains(": 0 fetched") && log.contains("): 10 utterances, 0 left out"), "{log}");
    assert!(out.join("corpus-cache").is_dir() && out.join("voice/config.json").exists());
    for e in std::fs::read_dir(out.join("logs")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        assert!(!text.contains(secret), "a log holds the secret");
    }

    // An unchanged bucket: every stage is skipped.
    let printed = dv(&["recipe", "run", recipe]);
    assert!(super::recipe::ran(&printed).is_empty(), "{printed}");
    assert_eq!(printed.matches("skipped (key unchanged, outputs present)").count(), 10, "{printed}");

    // A transcript rewritten in the bucket at the same size: its new ETag
    // changes the corpus's digest, and staging fetches it again.
    let txt = corpus.join("etc/txt.done.data");
    let mut text = std::fs::read_to_string(&txt).unwrap().into_bytes();
    let quote = text.iter().position(|&b| b == b'"').unwrap();
    let at = quote + text[quote..].iter().position(u8::is_ascii_lowercase).unwrap();
    text[at] = text[at].to_ascii_uppercase();
    // moto refuses an anonymous overwrite; it does not check signatures.
    let auth = "Authorization: AWS test:unsigned\r\n";
    assert_eq!(put_with(moto.port, "/corpora/slt/etc/txt.done.data", &text, auth), 200);
    let dry = dv(&["recipe", "run", recipe, "--dry-run"]);
    assert!(dry.contains("inspect: would run (key changed: inputs)"), "{dry}");
    assert!(dry.contains("featurize: would run (key changed: inputs)"), "{dry}");
    let printed = dv(&["recipe", "run", recipe, "--stop-stage", "inspect"]);
    assert_eq!(super::recipe::ran(&printed), ["inspect"], "{printed}");
    let log = std::fs::read_to_string(out.join("logs/inspect.log")).unwrap();
    assert!(
        log.contains(&format!("staged {objects} objects of s3://corpora/slt")) && log.contains(": 1 fetched"),
        "{log}"
    );
}
