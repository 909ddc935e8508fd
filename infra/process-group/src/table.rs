//! The process table, read from `/proc`.

use std::collections::HashMap;

/// One live (not zombie) process, from `/proc/<pid>/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// Start time in clock ticks since boot: with the pid, names one process
    /// even after the pid is recycled.
    pub start: u64,
}

/// Parses `/proc/<pid>/stat`; `None` for a zombie, a process that has gone,
/// or a line that does not parse.
pub(crate) fn stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces and ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] = state (field 3), f[1] = ppid, f[2] = pgrp, f[19] = starttime (field 22).
    if matches!(*f.first()?, "Z" | "X" | "x") {
        return None;
    }
    Some(Proc { pid, ppid: f[1].parse().ok()?, pgrp: f[2].parse().ok()?, start: f.get(19)?.parse().ok()? })
}

/// Every live process.
pub(crate) fn all() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).filter_map(stat).collect()
}

/// The live processes of group `pgid`, and the live descendants of `root`
/// wherever they are (some move to a session of their own).
pub(crate) fn tree(pgid: i32, root: i32) -> Vec<Proc> {
    let procs = all();
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in &procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out: Vec<Proc> = procs.iter().filter(|p| p.pgrp == pgid).copied().collect();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for c in children.get(&pid).into_iter().flatten() {
            if !out.iter().any(|o| o.pid == c.pid) {
                out.push(**c);
            }
            stack.push(c.pid);
        }
    }
    out
}

/// Whether the process `p` names is still alive (same pid, same start time).
pub(crate) fn alive(p: &Proc) -> bool {
    stat(p.pid).is_some_and(|now| now.start == p.start)
}
