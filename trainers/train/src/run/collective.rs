//! Collective communication between the ranks of a data-parallel run.
//!
//! [`Collective`] is the one small interface the trainer uses. Three
//! implementations: [`LocalCollective`], ranks as threads of one process
//! exchanging CPU buffers (what CI tests); [`TcpCollective`], CPU ranks as
//! processes on one host or many, rank 0 the hub of TCP sockets (CI tests it
//! over loopback and between two network namespaces); and NCCL over GPUs
//! (on machines that have them). Every collective must be called by every rank in the
//! same order; each call carries a name (`"grads[3]"`, `"broadcast params"`)
//! that errors report.
//!
//! # Failure behaviour
//!
//! * A rank that does not arrive at a collective within the group's timeout
//!   makes every waiting rank fail with [`CollectiveError::Stalled`], naming
//!   the collective and the ranks that never arrived (the watchdog).
//! * A rank that fails or exits (its handle is dropped) marks the group
//!   broken; the others fail at once with [`CollectiveError::PeerFailed`]
//!   instead of waiting for the timeout.
//!
//! Reductions sum in rank order (`0 + x₀ + x₁ + …`), so the result is the
//! same on every rank, does not depend on which rank arrived last, and is
//! the same bits with ranks as threads or as processes.
//!
//! [`TcpCollective`]: super::tcp::TcpCollective

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dv_torch::tch;
use dv_torch::tch::{Kind, Tensor};

/// Why a collective failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CollectiveError {
    /// `missing` is empty when the backend cannot tell which ranks are
    /// absent (NCCL).
    #[error("rank {rank}: collective #{seq} {what:?} stalled: {} within {timeout_s} s", stalled_who(missing))]
    Stalled { rank: usize, seq: u64, what: String, missing: Vec<usize>, timeout_s: f64 },
    /// `peer` is [`CollectiveError::UNKNOWN_PEER`] when the backend cannot
    /// tell which rank failed (NCCL's asynchronous error names none).
    #[error("rank {rank}: collective #{seq} {what:?} abandoned: {} ({reason})", failed_who(*peer))]
    PeerFailed { rank: usize, seq: u64, what: String, peer: usize, reason: String },
    #[error("rank {rank}: collective #{seq} {what:?}: ranks disagree ({reason})")]
    Mismatch { rank: usize, seq: u64, what: String, reason: String },
    #[error("rank {rank}: {what:?}: {reason}")]
    Tensor { rank: usize, what: String, reason: String },
    #[error("collective setup: {0}")]
    Setup(String),
}

impl CollectiveError {
    /// A [`CollectiveError::PeerFailed`]'s `peer` when the backend cannot
    /// tell which rank failed.
    pub const UNKNOWN_PEER: usize = usize::MAX;
}

fn failed_who(peer: usize) -> String {
    if peer == CollectiveError::UNKNOWN_PEER {
        "a peer rank failed (the backend cannot tell which)".into()
    } else {
        format!("rank {peer} failed")
    }
}

fn stalled_who(missing: &[usize]) -> String {
    if missing.is_empty() {
        "a peer rank did not take part (dead, hung, or at another collective)".into()
    } else {
        format!("ranks {missing:?} did not arrive")
    }
}

/// The operations data-parallel training needs.
pub trait Collective: Send {
    /// This rank, `0..world_size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn world_size(&self) -> usize;
    /// Sums a float32 tensor over all ranks, in place.
    fn all_reduce_sum(&mut self, t: &mut Tensor, what: &str) -> Result<(), CollectiveError>;
    /// Copies `root`'s float32 tensor into every rank's, in place.
    fn broadcast(&mut self, t: &mut Tensor, root: usize, what: &str) -> Result<(), CollectiveError>;
    /// Tells the other ranks this one has failed, so they stop waiting.
    fn abort(&mut self, reason: &str);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Sum,
    Broadcast(usize),
}

struct State {
    /// The collective being gathered.
    seq: u64,
    what: String,
    op: Option<Op>,
    arrived: Vec<Option<Vec<f32>>>,
    result: Option<Arc<Vec<f32>>>,
    taken: usize,
    /// First failure: rank and reason.
    failed: Option<(usize, String)>,
}

struct Group {
    world: usize,
    timeout: Duration,
    state: Mutex<State>,
    cv: Condvar,
}

/// One rank of a group of threads in this process.
pub struct LocalCollective {
    group: Arc<Group>,
    rank: usize,
    seq: u64,
    finished: bool,
}

impl LocalCollective {
    /// A group of `world` ranks whose collectives fail after `timeout`
    /// without progress. Hand one handle to each rank's thread.
    pub fn group(world: usize, timeout: Duration) -> Vec<LocalCollective> {
        let group = Arc::new(Group {
            world,
            timeout,
            state: Mutex::new(State {
                seq: 0,
                what: String::new(),
                op: None,
                arrived: vec![None; world],
                result: None,
                taken: 0,
                failed: None,
            }),
            cv: Condvar::new(),
        });
        (0..world).map(|rank| LocalCollective { group: group.clone(), rank, seq: 0, finished: false }).collect()
    }

    /// Marks this rank as done: dropping it afterwards does not fail the others.
    pub fn finish(mut self) {
        self.finished = true;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking rank never holds the lock across user code, so a
        // poisoned mutex still holds consistent state.
        self.group.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn failure(&self, st: &State, what: &str) -> Option<CollectiveError> {
        st.failed.as_ref().map(|(peer, reason)| CollectiveError::PeerFailed {
            rank: self.rank,
            seq: self.seq,
            what: what.to_string(),
            peer: *peer,
            reason: reason.clone(),
        })
    }

    /// Waits on the condition variable until `ready` holds, a peer fails,
    /// or the timeout passes.
    fn wait<'a>(
        &self,
        mut st: MutexGuard<'a, State>,
        what: &str,
        ready: impl Fn(&State) -> bool,
    ) -> Result<MutexGuard<'a, State>, CollectiveError> {
        let deadline = Instant::now() + self.group.timeout;
        loop {
            if let Some(e) = self.failure(&st, what) {
                return Err(e);
            }
            if ready(&st) {
                return Ok(st);
            }
            let now = Instant::now();
            if now >= deadline {
                let missing: Vec<usize> = if st.seq == self.seq {
                    (0..self.group.world).filter(|r| st.arrived[*r].is_none()).collect()
                } else {
                    Vec::new()
                };
                let e = CollectiveError::Stalled {
                    rank: self.rank,
                    seq: self.seq,
                    what: what.to_string(),
                    missing,
                    timeout_s: self.group.timeout.as_secs_f64(),
                };
                st.failed.get_or_insert((self.rank, e.to_string()));
                self.group.cv.notify_all();
                return Err(e);
            }
            st = self.group.cv.wait_timeout(st, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    fn run(&mut self, op: Op, data: Vec<f32>, what: &str) -> Result<Arc<Vec<f32>>, CollectiveError> {
        let seq = self.seq;
        let world = self.group.world;
        // Phase 1: wait for the previous collective to drain, then deposit.
        let mut st = self.wait(self.lock(), what, |s| s.seq == seq)?;
        if st.arrived.iter().all(Option::is_none) {
            st.what = what.to_string();
            st.op = Some(op);
        } else if st.op != Some(op) || st.what != what {
            let reason = format!("rank {} called {:?}, this rank {what:?}", self.rank, st.what);
            let e = CollectiveError::Mismatch { rank: self.rank, seq, what: what.to_string(), reason };
            st.failed.get_or_insert((self.rank, e.to_string()));
            self.group.cv.notify_all();
            return Err(e);
        }
        let len = data.len();
        if let Some(other) = st.arrived.iter().flatten().next() {
            if other.len() != len {
                let reason = format!("{} elements here, {} on another rank", len, other.len());
                let e = CollectiveError::Mismatch { rank: self.rank, seq, what: what.to_string(), reason };
                st.failed.get_or_insert((self.rank, e.to_string()));
                self.group.cv.notify_all();
                return Err(e);
            }
        }
        st.arrived[self.rank] = Some(data);
        if st.arrived.iter().all(Option::is_some) {
            let result = match op {
                Op::Broadcast(root) => st.arrived[root].clone().unwrap_or_default(),
                Op::Sum => {
                    let mut acc = vec![0.0f32; len];
                    for part in st.arrived.iter().flatten() {
                        for (a, v) in acc.iter_mut().zip(part) {
                            *a += v;
                        }
                    }
                    acc
                }
            };
            st.result = Some(Arc::new(result));
            self.group.cv.notify_all();
        }
        // Phase 2: wait for the result, take it; the last taker resets.
        let mut st = self.wait(st, what, |s| s.seq == seq && s.result.is_some())?;
        let result = st.result.clone().unwrap_or_default();
        st.taken += 1;
        if st.taken == world {
            st.arrived.iter_mut().for_each(|a| *a = None);
            st.result = None;
            st.taken = 0;
            st.op = None;
            st.seq += 1;
            self.group.cv.notify_all();
        }
        drop(st);
        self.seq += 1;
        Ok(result)
    }

    fn exchange(&mut self, t: &mut Tensor, op: Op, what: &str) -> Result<(), CollectiveError> {
        exchange_f32(t, self.rank, what, |data| self.run(op, data, what))
    }
}

impl Collective for LocalCollective {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.group.world
    }

    fn all_reduce_sum(&mut self, t: &mut Tensor, what: &str) -> Result<(), CollectiveError> {
        self.exchange(t, Op::Sum, what)
    }

    fn broadcast(&mut self, t: &mut Tensor, root: usize, what: &str) -> Result<(), CollectiveError> {
        if root >= self.group.world {
            return Err(CollectiveError::Tensor {
                rank: self.rank,
                what: what.to_string(),
                reason: format!("root {root} outside 0..{}", self.group.world),
            });
        }
        self.exchange(t, Op::Broadcast(root), what)
    }

    fn abort(&mut self, reason: &str) {
        let mut st = self.lock();
        st.failed.get_or_insert((self.rank, reason.to_string()));
        self.group.cv.notify_all();
    }
}

impl Drop for LocalCollective {
    fn drop(&mut self) {
        if !self.finished {
            self.abort("exited without finishing");
        }
    }
}

/// Runs `run` on the float32 tensor `t`'s elements (flattened, on the CPU)
/// and copies its result back into `t`, in place: the part every
/// collective's tensor operations share.
pub(super) fn exchange_f32<R: std::ops::Deref<Target = Vec<f32>>>(
    t: &mut Tensor,
    rank: usize,
    what: &str,
    run: impl FnOnce(Vec<f32>) -> Result<R, CollectiveError>,
) -> Result<(), CollectiveError> {
    let terr = |reason: String| CollectiveError::Tensor { rank, what: what.to_string(), reason };
    if t.kind() != Kind::Float {
        return Err(terr(format!("expected float32, got {:?}", t.kind())));
    }
    let data = Vec::<f32>::try_from(&t.flatten(0, -1)).map_err(|e| terr(e.to_string()))?;
    let result = run(data)?;
    let src = Tensor::from_slice(result.as_slice())
        .f_view(t.size().as_slice())
        .and_then(|v| v.f_to_device(t.device()))
        .map_err(|e| terr(e.to_string()))?;
    tch::no_grad(|| t.f_copy_(&src)).map_err(|e| terr(e.to_string()))?;
    Ok(())
}
