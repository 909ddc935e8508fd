//! [`TcpCollective`]: CPU ranks as processes, on one host or many, joined
//! by TCP sockets (std::net, blocking, Nagle off).
//!
//! Rank 0 is the hub: it listens on `MASTER_PORT` (all interfaces), every
//! other rank connects to `MASTER_ADDR:MASTER_PORT` ([`RankEnv`]) and sends
//! a hello (its rank and world), retrying until the setup deadline. Per
//! collective each rank sends the hub one frame, the hub gathers them,
//! computes the result and sends it back to every rank:
//!
//! * sum: `0 + x₀ + x₁ + … + x_{n−1}` in rank order, element by element, as
//!   [`LocalCollective`](super::collective::LocalCollective) sums, so the
//!   result is bit-identical on every rank and to ranks as threads;
//! * broadcast: the root's values (the other ranks send only the header).
//!
//! A frame is `seq u64 | op u8 | arg u32 | count u64 | bytes u64 |
//! name_len u16` (little-endian), the collective's name, then `bytes` of
//! payload (float32 little-endian, or a reason in UTF-8). The hub checks
//! that every rank sent the same sequence number, operation, root, element
//! count and name; any difference is [`CollectiveError::Mismatch`] on every
//! rank.
//!
//! # Failure behaviour (as the in-process collective)
//!
//! * The hub reads every peer's socket on a thread of its own, so it sees a
//!   closed socket (the process exited or was killed) at once, whatever the
//!   collective is waiting for: it fails with
//!   [`CollectiveError::PeerFailed`] naming that rank and tells the others,
//!   which fail naming the same rank.
//! * [`Collective::abort`] sends the reason to the hub (or, on the hub, to
//!   every rank); the others fail with `PeerFailed` naming the aborting rank
//!   and carrying its reason. A handle dropped without [`TcpCollective::finish`]
//!   aborts.
//! * The watchdog: the hub fails a collective that waits longer than the
//!   group's timeout with [`CollectiveError::Stalled`] naming the ranks that
//!   never sent their frame, and tells the others, which fail with the same
//!   list. A rank that hears nothing from the hub for the timeout plus
//!   [`HUB_MARGIN`] (the hub dead without a closed socket, or cut off by the
//!   network) fails with `Stalled` naming rank 0.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use dv_torch::tch::Tensor;

use super::collective::{exchange_f32, Collective, CollectiveError};
use super::rendezvous::RankEnv;

/// How much longer than the group's timeout a non-hub rank waits for the
/// hub's answer, so that the hub's own diagnosis (which ranks are missing)
/// reaches it first.
pub const HUB_MARGIN: Duration = Duration::from_secs(2);

const MAGIC: [u8; 4] = *b"DVTC";
const VERSION: u32 = 1;
const HEADER: usize = 8 + 1 + 4 + 8 + 8 + 2;
/// Refuse frames announcing more than this many payload bytes (a stray
/// connection's garbage must not become an allocation).
const MAX_BYTES: u64 = 1 << 38;

const OP_SUM: u8 = 1;
const OP_BROADCAST: u8 = 2;
const OP_RESULT: u8 = 3;
/// `arg` failed; the payload is its reason.
const OP_FAILED: u8 = 4;
/// The hub's watchdog fired; the payload is the missing ranks, u32 each.
const OP_STALLED: u8 = 5;
/// The hub found ranks disagreeing; the payload is the reason.
const OP_MISMATCH: u8 = 6;

struct Frame {
    seq: u64,
    op: u8,
    arg: u32,
    count: u64,
    name: String,
    payload: Vec<u8>,
}

fn write_frame(s: &mut TcpStream, f: &Frame) -> io::Result<()> {
    let name = f.name.as_bytes();
    let name = &name[..name.len().min(u16::MAX as usize)];
    let mut head = Vec::with_capacity(HEADER + name.len());
    head.extend_from_slice(&f.seq.to_le_bytes());
    head.push(f.op);
    head.extend_from_slice(&f.arg.to_le_bytes());
    head.extend_from_slice(&f.count.to_le_bytes());
    head.extend_from_slice(&(f.payload.len() as u64).to_le_bytes());
    head.extend_from_slice(&(name.len() as u16).to_le_bytes());
    head.extend_from_slice(name);
    s.write_all(&head)?;
    s.write_all(&f.payload)?;
    s.flush()
}

fn read_frame(s: &mut TcpStream) -> io::Result<Frame> {
    let mut h = [0u8; HEADER];
    s.read_exact(&mut h)?;
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or_default());
    let seq = u64_at(0);
    let op = h[8];
    let arg = u32::from_le_bytes(h[9..13].try_into().unwrap_or_default());
    let count = u64_at(13);
    let bytes = u64_at(21);
    let name_len = u16::from_le_bytes([h[29], h[30]]) as usize;
    if bytes > MAX_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a frame of {bytes} bytes")));
    }
    let mut name = vec![0u8; name_len];
    s.read_exact(&mut name)?;
    let mut payload = vec![0u8; bytes as usize];
    s.read_exact(&mut payload)?;
    Ok(Frame { seq, op, arg, count, name: String::from_utf8_lossy(&name).into_owned(), payload })
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

fn to_floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn ranks_bytes(ranks: &[usize]) -> Vec<u8> {
    ranks.iter().flat_map(|r| (*r as u32).to_le_bytes()).collect()
}

fn ranks_of(b: &[u8]) -> Vec<usize> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize).collect()
}

fn closed_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
            format!("its connection closed: the process exited or was killed ({e})")
        }
        _ => format!("its connection failed ({e})"),
    }
}

fn setup(reason: String) -> CollectiveError {
    CollectiveError::Setup(reason)
}

/// `now + d`, or `None` (no deadline) when that is past what an [`Instant`] holds.
fn deadline_after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// What rank 0 holds: a socket per other rank and the frames its readers
/// forward, `(rank, frame or why the socket ended)`.
struct Hub {
    /// `peers[r]` for ranks `1..world` (`peers[0]` is unused).
    peers: Vec<Option<TcpStream>>,
    events: Receiver<(usize, Result<Frame, String>)>,
}

enum Link {
    Hub(Hub),
    /// Every other rank: its socket to rank 0.
    Spoke(TcpStream),
}

/// One rank of a group of processes joined over TCP. See the module docs.
pub struct TcpCollective {
    rank: usize,
    world: usize,
    timeout: Duration,
    seq: u64,
    link: Link,
    /// The failure that broke the group, returned by every later call.
    broken: Option<CollectiveError>,
    finished: bool,
}

impl TcpCollective {
    /// Joins the group `env` names: rank 0 listens on `env.master_port`,
    /// the others connect to `env.master_addr`. Fails with
    /// [`CollectiveError::Setup`] naming the ranks that did not arrive within
    /// `setup`; collectives then fail after `timeout` without progress.
    pub fn connect(env: &RankEnv, timeout: Duration, setup_within: Duration) -> Result<TcpCollective, CollectiveError> {
        if env.world == 0 || env.rank >= env.world {
            return Err(setup(format!("rank {} outside a world of {}", env.rank, env.world)));
        }
        let link = if env.rank == 0 {
            Link::Hub(accept_all(env, timeout, setup_within)?)
        } else {
            Link::Spoke(connect_hub(env, timeout, setup_within)?)
        };
        Ok(TcpCollective { rank: env.rank, world: env.world, timeout, seq: 0, link, broken: None, finished: false })
    }

    /// Marks this rank as done: dropping it afterwards closes its sockets
    /// without telling the others it failed.
    pub fn finish(mut self) {
        self.finished = true;
    }

    /// Remembers `e` as the group's failure and returns it.
    fn fail(&mut self, e: CollectiveError) -> CollectiveError {
        self.broken.get_or_insert(e.clone());
        e
    }

    /// Sends `f` to every peer but `except` (hub only); errors are ignored:
    /// a peer that cannot hear has failed already.
    fn tell_all(&mut self, f: &Frame, except: Option<usize>) {
        if let Link::Hub(hub) = &mut self.link {
            for (r, s) in hub.peers.iter_mut().enumerate() {
                if let (Some(s), false) = (s, Some(r) == except) {
                    let _ = write_frame(s, f);
                }
            }
        }
    }

    fn failed_frame(&self, peer: usize, reason: &str) -> Frame {
        Frame { seq: self.seq, op: OP_FAILED, arg: peer as u32, count: 0, name: String::new(), payload: reason.into() }
    }

    /// The hub's part of one collective: gather, check, compute, answer.
    fn hub_run(&mut self, op: u8, root: usize, data: Vec<f32>, what: &str) -> Result<Vec<f32>, CollectiveError> {
        let (rank, seq, world, n) = (self.rank, self.seq, self.world, data.len());
        let mut parts: Vec<Option<Vec<f32>>> = vec![None; world];
        parts[0] = Some(data);
        let deadline = deadline_after(self.timeout);
        while parts.iter().any(Option::is_none) {
            let Link::Hub(hub) = &mut self.link else { unreachable!("hub_run on a spoke") };
            let wait = deadline.map_or(Duration::from_secs(3600), |d| d.saturating_duration_since(Instant::now()));
            let event = match hub.events.recv_timeout(wait) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) if deadline.is_none_or(|d| Instant::now() < d) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    let missing: Vec<usize> = (0..world).filter(|r| parts[*r].is_none()).collect();
                    let stalled = Frame {
                        seq,
                        op: OP_STALLED,
                        arg: 0,
                        count: 0,
                        name: what.to_string(),
                        payload: ranks_bytes(&missing),
                    };
                    self.tell_all(&stalled, None);
                    let timeout_s = self.timeout.as_secs_f64();
                    return Err(self.fail(CollectiveError::Stalled {
                        rank,
                        seq,
                        what: what.into(),
                        missing,
                        timeout_s,
                    }));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // Every reader has ended, each after sending why: not reached in practice.
                    let peer = (1..world).find(|r| parts[*r].is_none()).unwrap_or(1);
                    let reason = "every connection closed".to_string();
                    return Err(self.fail(CollectiveError::PeerFailed { rank, seq, what: what.into(), peer, reason }));
                }
            };
            let (peer, frame) = event;
            let frame = match frame {
                Ok(f) if f.op == OP_FAILED => Err(String::from_utf8_lossy(&f.payload).into_owned()),
                other => other,
            };
            let f = match frame {
                Ok(f) => f,
                Err(reason) => {
                    if let Link::Hub(hub) = &mut self.link {
                        hub.peers[peer] = None;
                    }
                    let tell = self.failed_frame(peer, &reason);
                    self.tell_all(&tell, Some(peer));
                    return Err(self.fail(CollectiveError::PeerFailed { rank, seq, what: what.into(), peer, reason }));
                }
            };
            let disagree = if f.seq != seq {
                Some(format!("rank {peer} is at collective #{}, rank 0 at #{seq}", f.seq))
            } else if f.op != op || f.arg as usize != root || f.name != what {
                let kind = |op: u8, root: usize| {
                    if op == OP_SUM {
                        "sum".to_string()
                    } else {
                        format!("broadcast from {root}")
                    }
                };
                Some(format!(
                    "rank {peer} called {} {:?}, rank 0 {} {what:?}",
                    kind(f.op, f.arg as usize),
                    f.name,
                    kind(op, root)
                ))
            } else if f.count as usize != n {
                Some(format!("{n} elements on rank 0, {} on rank {peer}", f.count))
            } else if (op == OP_SUM || peer == root) && f.payload.len() != 4 * n {
                Some(format!("rank {peer} sent {} bytes for {n} elements", f.payload.len()))
            } else {
                None
            };
            if let Some(reason) = disagree {
                let tell = Frame {
                    seq,
                    op: OP_MISMATCH,
                    arg: 0,
                    count: 0,
                    name: what.to_string(),
                    payload: reason.clone().into(),
                };
                self.tell_all(&tell, None);
                return Err(self.fail(CollectiveError::Mismatch { rank, seq, what: what.into(), reason }));
            }
            parts[peer] = Some(to_floats(&f.payload));
        }
        let result = match op {
            OP_SUM => {
                let mut acc = vec![0.0f32; n];
                for part in parts.iter().flatten() {
                    for (a, v) in acc.iter_mut().zip(part) {
                        *a += v;
                    }
                }
                acc
            }
            _ => parts[root].take().unwrap_or_default(),
        };
        let answer =
            Frame { seq, op: OP_RESULT, arg: 0, count: n as u64, name: what.to_string(), payload: to_bytes(&result) };
        let Link::Hub(hub) = &mut self.link else { unreachable!("hub_run on a spoke") };
        let mut lost = None;
        for (r, s) in hub.peers.iter_mut().enumerate() {
            if let Some(s) = s {
                if let Err(e) = write_frame(s, &answer) {
                    lost.get_or_insert((r, closed_reason(&e)));
                }
            }
        }
        if let Some((peer, reason)) = lost {
            let tell = self.failed_frame(peer, &reason);
            self.tell_all(&tell, Some(peer));
            return Err(self.fail(CollectiveError::PeerFailed { rank, seq, what: what.into(), peer, reason }));
        }
        Ok(result)
    }

    /// A non-hub rank's part of one collective: send, then wait for the answer.
    fn spoke_run(&mut self, op: u8, root: usize, data: Vec<f32>, what: &str) -> Result<Vec<f32>, CollectiveError> {
        let (rank, seq, n) = (self.rank, self.seq, data.len());
        let Link::Spoke(s) = &mut self.link else { unreachable!("spoke_run on the hub") };
        let payload = if op == OP_SUM || root == rank { to_bytes(&data) } else { Vec::new() };
        let frame = Frame { seq, op, arg: root as u32, count: n as u64, name: what.to_string(), payload };
        let lost = |e: &io::Error| CollectiveError::PeerFailed {
            rank,
            seq,
            what: what.into(),
            peer: 0,
            reason: closed_reason(e),
        };
        if let Err(e) = write_frame(s, &frame) {
            // The hub may have told this rank why before it closed (another
            // rank aborted or stalled): its reason, still in the receive
            // buffer, says more than the broken pipe.
            let told = s.set_read_timeout(Some(Duration::from_millis(200))).and_then(|()| read_frame(s));
            return match told {
                Ok(answer) if answer.op != OP_RESULT => {
                    let e = self.answer_error(&answer, what, n);
                    Err(self.fail(e))
                }
                _ => Err(self.fail(lost(&e))),
            };
        }
        let wait = self.timeout.saturating_add(HUB_MARGIN);
        // A read timeout of more than a day is no timeout (setsockopt takes a timeval).
        let limit = (wait < Duration::from_secs(86_400)).then_some(wait);
        if let Err(e) = s.set_read_timeout(limit) {
            return Err(self.fail(lost(&e)));
        }
        let answer = match read_frame(s) {
            Ok(f) => f,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                let timeout_s = wait.as_secs_f64();
                return Err(self.fail(CollectiveError::Stalled {
                    rank,
                    seq,
                    what: what.into(),
                    missing: vec![0],
                    timeout_s,
                }));
            }
            Err(e) => return Err(self.fail(lost(&e))),
        };
        if answer.op == OP_RESULT && answer.seq == seq && answer.count as usize == n && answer.payload.len() == 4 * n {
            return Ok(to_floats(&answer.payload));
        }
        let e = self.answer_error(&answer, what, n);
        Err(self.fail(e))
    }

    /// What a hub's answer other than the expected result means on this rank.
    fn answer_error(&self, answer: &Frame, what: &str, n: usize) -> CollectiveError {
        let (rank, seq) = (self.rank, self.seq);
        let text = || String::from_utf8_lossy(&answer.payload).into_owned();
        match answer.op {
            OP_RESULT if answer.seq == seq && answer.count as usize == n => CollectiveError::Mismatch {
                rank,
                seq,
                what: what.into(),
                reason: format!("rank 0 answered with {} bytes for {n} elements", answer.payload.len()),
            },
            OP_RESULT => CollectiveError::Mismatch {
                rank,
                seq,
                what: what.into(),
                reason: format!("rank 0 answered collective #{} with {} elements", answer.seq, answer.count),
            },
            OP_FAILED => {
                CollectiveError::PeerFailed { rank, seq, what: what.into(), peer: answer.arg as usize, reason: text() }
            }
            OP_STALLED => CollectiveError::Stalled {
                rank,
                seq,
                what: what.into(),
                missing: ranks_of(&answer.payload),
                timeout_s: self.timeout.as_secs_f64(),
            },
            OP_MISMATCH => CollectiveError::Mismatch { rank, seq, what: what.into(), reason: text() },
            other => CollectiveError::Mismatch {
                rank,
                seq,
                what: what.into(),
                reason: format!("rank 0 sent an unknown operation {other}"),
            },
        }
    }

    fn exchange(&mut self, t: &mut Tensor, op: u8, root: usize, what: &str) -> Result<(), CollectiveError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let rank = self.rank;
        exchange_f32(t, rank, what, |data| {
            let result =
                if rank == 0 { self.hub_run(op, root, data, what)? } else { self.spoke_run(op, root, data, what)? };
            self.seq += 1;
            Ok(Box::new(result))
        })
    }
}

impl Collective for TcpCollective {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world
    }

    fn all_reduce_sum(&mut self, t: &mut Tensor, what: &str) -> Result<(), CollectiveError> {
        self.exchange(t, OP_SUM, 0, what)
    }

    fn broadcast(&mut self, t: &mut Tensor, root: usize, what: &str) -> Result<(), CollectiveError> {
        if root >= self.world {
            return Err(CollectiveError::Tensor {
                rank: self.rank,
                what: what.to_string(),
                reason: format!("root {root} outside 0..{}", self.world),
            });
        }
        self.exchange(t, OP_BROADCAST, root, what)
    }

    fn abort(&mut self, reason: &str) {
        let tell = self.failed_frame(self.rank, reason);
        match &mut self.link {
            Link::Hub(_) => self.tell_all(&tell, None),
            Link::Spoke(s) => {
                let _ = write_frame(s, &tell);
            }
        }
        let (rank, seq) = (self.rank, self.seq);
        let reason = format!("this rank aborted: {reason}");
        self.broken.get_or_insert(CollectiveError::PeerFailed { rank, seq, what: "abort".into(), peer: rank, reason });
    }
}

impl Drop for TcpCollective {
    fn drop(&mut self) {
        if !self.finished && self.broken.is_none() {
            self.abort("exited without finishing");
        }
        // Ends the hub's reader threads (their sockets reach end of file).
        match &mut self.link {
            Link::Hub(hub) => hub.peers.iter().flatten().for_each(|s| drop(s.shutdown(Shutdown::Both))),
            Link::Spoke(s) => drop(s.shutdown(Shutdown::Both)),
        }
    }
}

fn hello(rank: usize, world: usize) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..4].copy_from_slice(&MAGIC);
    h[4..8].copy_from_slice(&VERSION.to_le_bytes());
    h[8..12].copy_from_slice(&(rank as u32).to_le_bytes());
    h[12..].copy_from_slice(&(world as u32).to_le_bytes());
    h
}

/// Parses a hello: `(rank, world)`, or `None` for a stranger.
fn parse_hello(h: &[u8; 16]) -> Option<(usize, usize)> {
    let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]) as usize;
    (h[..4] == MAGIC && word(4) == VERSION as usize).then(|| (word(8), word(12)))
}

/// Sets a socket up for collectives: no Nagle, writes bounded by the timeout.
fn tune(s: &TcpStream, timeout: Duration) -> io::Result<()> {
    s.set_nodelay(true)?;
    s.set_read_timeout(None)?;
    s.set_write_timeout((timeout < Duration::from_secs(86_400)).then_some(timeout.max(Duration::from_millis(1))))
}

/// Rank 0: accepts every other rank, answers its hello, starts its reader.
fn accept_all(env: &RankEnv, timeout: Duration, within: Duration) -> Result<Hub, CollectiveError> {
    let world = env.world;
    let deadline = deadline_after(within);
    let (tx, events) = mpsc::channel();
    let mut peers: Vec<Option<TcpStream>> = (0..world).map(|_| None).collect();
    if world == 1 {
        return Ok(Hub { peers, events });
    }
    let port = env.master_port;
    let listener =
        TcpListener::bind(("0.0.0.0", port)).map_err(|e| setup(format!("rank 0 cannot listen on port {port}: {e}")))?;
    listener.set_nonblocking(true).map_err(|e| setup(e.to_string()))?;
    while peers.iter().skip(1).any(Option::is_none) {
        match listener.accept() {
            Ok((mut s, from)) => {
                let greeted = (|| -> io::Result<Option<(usize, usize)>> {
                    s.set_nonblocking(false)?;
                    s.set_read_timeout(Some(Duration::from_secs(10)))?;
                    let mut h = [0u8; 16];
                    s.read_exact(&mut h)?;
                    Ok(parse_hello(&h))
                })();
                let Ok(Some((r, w))) = greeted else { continue };
                if w != world {
                    return Err(setup(format!("rank {r} at {from} is in a world of {w}, rank 0 in one of {world}")));
                }
                if r == 0 || r >= world || peers[r].is_some() {
                    continue;
                }
                if s.write_all(&hello(0, world)).is_ok() && tune(&s, timeout).is_ok() {
                    peers[r] = Some(s);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    let missing: Vec<usize> = (1..world).filter(|r| peers[*r].is_none()).collect();
                    return Err(setup(format!(
                        "rank 0: ranks {missing:?} did not join the TCP collective on port {port} within {} s",
                        within.as_secs_f64()
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(setup(format!("rank 0: accepting on port {port}: {e}"))),
        }
    }
    for (r, s) in peers.iter().enumerate() {
        let Some(s) = s else { continue };
        let mut s = s.try_clone().map_err(|e| setup(format!("rank 0: socket of rank {r}: {e}")))?;
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("dv-tcp-rank{r}"))
            .spawn(move || loop {
                match read_frame(&mut s) {
                    Ok(f) => {
                        if tx.send((r, Ok(f))).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send((r, Err(closed_reason(&e))));
                        return;
                    }
                }
            })
            .map_err(|e| setup(format!("rank 0: reader thread for rank {r}: {e}")))?;
    }
    Ok(Hub { peers, events })
}

/// Every other rank: connects to rank 0 (retrying until the deadline) and
/// exchanges hellos.
fn connect_hub(env: &RankEnv, timeout: Duration, within: Duration) -> Result<TcpStream, CollectiveError> {
    let deadline = deadline_after(within);
    let addr = (env.master_addr.as_str(), env.master_port);
    loop {
        let attempt = (|| -> io::Result<TcpStream> {
            let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
            for a in addr.to_socket_addrs()? {
                match TcpStream::connect_timeout(&a, Duration::from_secs(5)) {
                    Ok(mut s) => {
                        s.set_read_timeout(Some(Duration::from_secs(10)))?;
                        s.write_all(&hello(env.rank, env.world))?;
                        let mut h = [0u8; 16];
                        s.read_exact(&mut h)?;
                        return match parse_hello(&h) {
                            Some((0, w)) if w == env.world => Ok(s),
                            _ => Err(io::Error::new(io::ErrorKind::InvalidData, "rank 0 answered another protocol")),
                        };
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        })();
        match attempt {
            Ok(s) => {
                tune(&s, timeout).map_err(|e| setup(e.to_string()))?;
                return Ok(s);
            }
            Err(e) if deadline.is_some_and(|d| Instant::now() >= d) => {
                return Err(setup(format!(
                    "rank {}: no TCP collective with rank 0 at {}:{} within {} s ({e})",
                    env.rank,
                    env.master_addr,
                    env.master_port,
                    within.as_secs_f64()
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}
