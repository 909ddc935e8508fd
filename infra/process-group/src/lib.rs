//! A process that tests start (an MLflow or S3 server, a `dv` job run in the
//! background) together with everything it starts in turn, stopped as one:
//! when the [`ProcessGroup`] guard is dropped, on a panic as well as on
//! success, and when the test process itself dies without unwinding
//! (SIGKILL, Ctrl-C, a harness timeout). Linux only; used by the tests only,
//! as a dev-dependency.
//!
//! # How
//!
//! * The command is started as the leader of a new process group
//!   (`setpgid(0, 0)`), so its children and grandchildren (uvicorn, MLflow's
//!   job runner, its huey consumers) share one group id and can be signalled
//!   together with `kill(-pgid, …)`. `Child::kill` would reach only the
//!   leader and orphan the rest.
//! * [`ProcessGroup::stop`] (and `Drop`) sends SIGTERM to the group and to
//!   every descendant that moved to a group or session of its own, waits up
//!   to [`GRACE`] for them to exit, then sends SIGKILL, and reaps the leader.
//!   Descendants are found through `/proc` (parent links, checked against
//!   their start time so a recycled pid is never signalled).
//! * A watchdog joins the group: `sh`, reading a pipe whose only writer is
//!   the test process. A test process that dies for any reason closes the
//!   pipe; the watchdog then sends SIGTERM to its group, and SIGKILL two
//!   seconds later. This covers servers kept in a `static` (never dropped)
//!   and test binaries killed from outside. `PR_SET_PDEATHSIG` would not do:
//!   it reaches only the direct child, not its children.
//!
//! # Limits
//!
//! A descendant that leaves the group *and* whose parent has already exited
//! before the stop is not found. The CI check in `infra/run test` (an
//! environment marker scanned after the suite) catches such a process.

mod group;
mod table;

pub use group::{ProcessGroup, GRACE};
