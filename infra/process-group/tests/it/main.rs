//! Every process a [`ProcessGroup`] started is gone after it: on drop, after
//! SIGTERM is ignored, for descendants that left the group, and when the
//! process holding the guard is killed with SIGKILL.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dv_process_group::{ProcessGroup, GRACE};

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()).map(|st| st != "Z"))
        .unwrap_or(false)
}

/// The pids a shell script wrote to `file`, one a line, once there are `n`.
fn pids(file: &Path, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got: Vec<i32> =
            std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
        if got.len() >= n {
            return got;
        }
        assert!(Instant::now() < deadline, "{file:?} has {got:?}, want {n} pids");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gone_within(pids: &[i32], within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while pids.iter().any(|&p| alive(p)) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `sh -c script` in a new group, writing pids to `<dir>/pids`.
fn shell(dir: &Path, script: &str) -> ProcessGroup {
    ProcessGroup::spawn(Command::new("sh").arg("-c").arg(script).arg("sh").arg(dir.join("pids")).stdin(Stdio::null()))
        .unwrap()
}

#[test]
fn dropping_the_guard_ends_the_leader_and_its_grandchildren() {
    let d = tempfile::tempdir().unwrap();
    let g = shell(
        d.path(),
        concat!(
            r#"sh -c 'echo $$ >> "$1"; sleep 300 & echo $! >> "$1"; sleep 300 & echo $! >> "$1"; wait' "#,
            r#"sh "$1" & wait"#
        ),
    );
    let ps = pids(&d.path().join("pids"), 3);
    assert!(ps.iter().all(|&p| alive(p)), "{ps:?}");
    let t = Instant::now();
    drop(g);
    assert!(ps.iter().all(|&p| !alive(p)), "left behind: {:?}", ps.iter().filter(|&&p| alive(p)).collect::<Vec<_>>());
    assert!(t.elapsed() < GRACE, "processes that obey SIGTERM take no grace: {:?}", t.elapsed());
}

#[test]
fn a_process_that_ignores_sigterm_is_killed_after_the_grace() {
    let d = tempfile::tempdir().unwrap();
    let mut g = shell(d.path(), r#"trap '' TERM; sleep 300 & echo $! >> "$1"; wait"#);
    let ps = pids(&d.path().join("pids"), 1);
    let t = Instant::now();
    let status = g.stop().unwrap();
    assert!(!alive(ps[0]));
    assert!(t.elapsed() >= GRACE, "SIGKILL came after {:?}", t.elapsed());
    assert!(!status.success());
}

#[test]
fn a_descendant_in_a_session_of_its_own_is_ended_too() {
    let d = tempfile::tempdir().unwrap();
    let g = shell(d.path(), r#"setsid sleep 300 & echo $! >> "$1"; wait"#);
    let ps = pids(&d.path().join("pids"), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    // setsid(1) execs sleep in the same process once it has left the group.
    while std::fs::read_to_string(format!("/proc/{}/comm", ps[0])).unwrap_or_default().trim() != "sleep" {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(g);
    assert!(!alive(ps[0]), "pid {} survived", ps[0]);
}

#[test]
fn kill_ends_the_group_at_once() {
    let d = tempfile::tempdir().unwrap();
    let mut g = shell(d.path(), r#"trap '' TERM; sleep 300 & echo $! >> "$1"; wait"#);
    let ps = pids(&d.path().join("pids"), 1);
    let t = Instant::now();
    g.kill().unwrap();
    assert!(!alive(ps[0]) && !alive(g.id() as i32));
    assert!(t.elapsed() < GRACE, "{:?}", t.elapsed());
}

/// Runs this test binary again as the holder of a guard, kills it with
/// SIGKILL (no unwinding, no `Drop`), and checks that the watchdog ended the
/// group. The holder is this same test, told by `DV_PROCESS_GROUP_HOLDER`.
#[test]
fn the_group_ends_when_the_process_holding_the_guard_is_killed() {
    if let Some(dir) = std::env::var_os("DV_PROCESS_GROUP_HOLDER") {
        let _g = shell(Path::new(&dir), r#"sleep 300 & echo $! >> "$1"; sleep 300 & echo $! >> "$1"; wait"#);
        std::thread::sleep(Duration::from_secs(300));
        unreachable!("the parent test kills this process");
    }
    let d = tempfile::tempdir().unwrap();
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .args(["the_group_ends_when_the_process_holding_the_guard_is_killed", "--exact", "--test-threads", "1"])
        .env("DV_PROCESS_GROUP_HOLDER", d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ps = pids(&d.path().join("pids"), 2);
    assert!(ps.iter().all(|&p| alive(p)));
    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    assert!(gone_within(&ps, Duration::from_secs(10)), "the watchdog left {ps:?}");
}
