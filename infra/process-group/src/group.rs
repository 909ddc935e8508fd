//! [`ProcessGroup`]: spawn a command as a group, stop the group.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::table::{self, Proc};

/// How long [`ProcessGroup::stop`] waits after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);

/// How long to wait for processes to vanish after SIGKILL (a process in
/// uninterruptible sleep takes a moment).
const AFTER_KILL: Duration = Duration::from_secs(5);

/// The watchdog: blocks until its stdin (a pipe only the test process
/// writes) reaches end of file, then ends its own process group. It ignores
/// SIGTERM so that it outlives its own `kill -TERM 0` to send the SIGKILL.
const WATCHDOG: &str = "trap '' TERM INT HUP; read -r line; kill -TERM 0; sleep 2; kill -KILL 0";

/// A spawned command and every process it starts, stopped together on
/// drop. See the crate docs for how.
#[derive(Debug)]
pub struct ProcessGroup {
    leader: Child,
    watchdog: Option<Child>,
}

impl ProcessGroup {
    /// Starts `cmd` as the leader of a new process group, with a watchdog
    /// that ends the group if this process dies.
    pub fn spawn(cmd: &mut Command) -> io::Result<ProcessGroup> {
        let leader = cmd.process_group(0).spawn()?;
        let mut group = ProcessGroup { leader, watchdog: None };
        // The leader, even exited, is a zombie until reaped: the group exists to join.
        let watchdog = Command::new("sh")
            .args(["-c", WATCHDOG])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(group.pgid())
            .spawn()?; // on error `group` is dropped, which stops the leader
        group.watchdog = Some(watchdog);
        Ok(group)
    }

    /// The leader's pid, which is also the group id.
    pub fn id(&self) -> u32 {
        self.leader.id()
    }

    /// The leader's exit status if it has exited (the rest of the group may live on).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.leader.try_wait()
    }

    /// SIGTERM to the group and the leader's descendants, up to [`GRACE`] for
    /// them to exit, then SIGKILL; returns the leader's status once every
    /// one has gone.
    pub fn stop(&mut self) -> io::Result<ExitStatus> {
        self.end(Some(GRACE))
    }

    /// SIGKILL to the group and the leader's descendants at once (`kill -9`
    /// of a whole job); returns the leader's status once every one has gone.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        self.end(None)
    }

    fn pgid(&self) -> i32 {
        self.leader.id() as i32
    }

    fn end(&mut self, grace: Option<Duration>) -> io::Result<ExitStatus> {
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        let pgid = self.pgid();
        // Taken before any signal: once the leader exits, its children's
        // parent links no longer lead to it.
        let mut procs = table::tree(pgid, pgid);
        if let Some(grace) = grace {
            signal_all(pgid, &procs, libc::SIGTERM);
            if self.wait_gone(pgid, &mut procs, grace) {
                return self.leader.wait();
            }
        }
        signal_all(pgid, &procs, libc::SIGKILL);
        if !self.wait_gone(pgid, &mut procs, AFTER_KILL) {
            let pids: Vec<i32> = procs.iter().map(|p| p.pid).collect();
            return Err(io::Error::other(format!("processes {pids:?} of group {pgid} outlived SIGKILL")));
        }
        self.leader.wait()
    }

    /// Polls until none of `procs` nor any member of the group is alive
    /// (zombies count as gone), reaping the leader on the way.
    fn wait_gone(&mut self, pgid: i32, procs: &mut Vec<Proc>, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let _ = self.leader.try_wait();
            procs.retain(table::alive);
            for p in table::all() {
                if p.pgrp == pgid && !procs.iter().any(|q| q.pid == p.pid) {
                    procs.push(p);
                }
            }
            if procs.is_empty() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Sends `sig` to group `pgid` and to each of `procs` outside it.
fn signal_all(pgid: i32, procs: &[Proc], sig: libc::c_int) {
    signal(-pgid, sig);
    for p in procs.iter().filter(|p| p.pgrp != pgid && table::alive(p)) {
        signal(p.pid, sig);
    }
}

/// kill(2); a target that has already gone is not an error worth reporting.
fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill(2) takes two integers and reads or writes no memory of this process.
    let _ = unsafe { libc::kill(pid, sig) };
}
