//! How ranks in separate processes find each other: the usual environment
//! (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`, as
//! torchrun sets them, or Slurm's `SLURM_PROCID`, `SLURM_NTASKS`,
//! `SLURM_LOCALID`, with `MASTER_ADDR`/`MASTER_PORT` exported by the job or,
//! when they are not, the first host of `SLURM_JOB_NODELIST` ([`first_host`])
//! and a port from `SLURM_JOB_ID` ([`SLURM_PORT_BASE`])), and a TCP rendezvous on rank 0 that hands every rank the same
//! opaque bytes (NCCL's unique id), with a deadline.
//!
//! Protocol: rank 0 listens on `MASTER_PORT`; every other rank connects
//! (retrying until the deadline), sends its rank as 8 bytes little-endian,
//! and reads the id. Rank 0 answers each rank once and returns when all
//! `world - 1` have been served.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::CollectiveError;

/// This process's place in a multi-process run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankEnv {
    pub rank: usize,
    pub world: usize,
    /// Rank within this machine: the GPU index.
    pub local_rank: usize,
    pub master_addr: String,
    pub master_port: u16,
}

fn setup(reason: String) -> CollectiveError {
    CollectiveError::Setup(reason)
}

impl RankEnv {
    /// Reads the environment; `None` when it names no multi-process run.
    pub fn from_env() -> Result<Option<RankEnv>, CollectiveError> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// As [`RankEnv::from_env`], from any variable lookup.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<RankEnv>, CollectiveError> {
        let num = |k: &str| -> Result<Option<usize>, CollectiveError> {
            var(k).map(|v| v.trim().parse().map_err(|_| setup(format!("{k}={v:?} is not a number")))).transpose()
        };
        let (rank, world, local) = match (num("RANK")?, num("WORLD_SIZE")?) {
            (Some(r), Some(w)) => (r, w, num("LOCAL_RANK")?.unwrap_or(r)),
            (None, None) => match (num("SLURM_PROCID")?, num("SLURM_NTASKS")?) {
                (Some(r), Some(w)) => (r, w, num("SLURM_LOCALID")?.unwrap_or(r)),
                _ => return Ok(None),
            },
            _ => return Err(setup("RANK and WORLD_SIZE must be set together".into())),
        };
        if world == 0 || rank >= world {
            return Err(setup(format!("rank {rank} outside a world of {world}")));
        }
        // Under Slurm, without MASTER_ADDR/MASTER_PORT: the job's first host, and a port
        // derived from the job id (so that two jobs sharing a node do not collide).
        let slurm_host = || var("SLURM_JOB_NODELIST").or_else(|| var("SLURM_NODELIST")).and_then(|l| first_host(&l));
        let master_addr = var("MASTER_ADDR")
            .or_else(slurm_host)
            .ok_or_else(|| setup("MASTER_ADDR is not set (nor SLURM_JOB_NODELIST, under Slurm)".into()))?;
        let port = match (var("MASTER_PORT"), num("SLURM_JOB_ID")?) {
            (Some(p), _) => p,
            (None, Some(job)) => (SLURM_PORT_BASE + job % SLURM_PORT_SPAN).to_string(),
            (None, None) => return Err(setup("MASTER_PORT is not set (nor SLURM_JOB_ID, under Slurm)".into())),
        };
        let master_port = port.trim().parse().map_err(|_| setup(format!("MASTER_PORT={port:?} is not a port")))?;
        Ok(Some(RankEnv { rank, world, local_rank: local, master_addr, master_port }))
    }
}

/// Under Slurm without `MASTER_PORT`, the rendezvous port is
/// `SLURM_PORT_BASE + SLURM_JOB_ID % SLURM_PORT_SPAN`.
pub const SLURM_PORT_BASE: usize = 29_500;
/// See [`SLURM_PORT_BASE`].
pub const SLURM_PORT_SPAN: usize = 10_000;

/// The first host of a Slurm node list (`SLURM_JOB_NODELIST`): `node07`,
/// `gpu[03-08,11],cpu1` → `gpu03` (zero padding kept), `a-b[1,4]` → `a-b1`;
/// `None` for an empty or malformed list.
pub fn first_host(list: &str) -> Option<String> {
    let list = list.trim();
    let mut depth = 0usize;
    let end = list
        .char_indices()
        .find(|&(_, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            c == ',' && depth == 0
        })
        .map_or(list.len(), |(i, _)| i);
    let first = &list[..end];
    let host = match first.split_once('[') {
        None => first.to_string(),
        Some((prefix, rest)) => {
            let (inside, suffix) = rest.split_once(']')?;
            let range = inside.split(',').next()?;
            let start = range.split('-').next()?.trim();
            if start.is_empty() || !start.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            format!("{prefix}{start}{suffix}")
        }
    };
    let ok = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    ok.then_some(host)
}

/// Rank 0 passes `Some(id)`; every rank gets rank 0's id back, or an error
/// naming what did not arrive before `timeout`.
pub fn share_id(env: &RankEnv, id: Option<&[u8]>, len: usize, timeout: Duration) -> Result<Vec<u8>, CollectiveError> {
    let deadline = Instant::now() + timeout;
    let addr = format!("{}:{}", env.master_addr, env.master_port);
    if env.rank == 0 {
        let id = id.ok_or_else(|| setup("rank 0 must provide the id".into()))?.to_vec();
        if id.len() != len {
            return Err(setup(format!("id of {} bytes, expected {len}", id.len())));
        }
        let listener = TcpListener::bind(("0.0.0.0", env.master_port))
            .map_err(|e| setup(format!("rank 0 cannot listen on port {}: {e}", env.master_port)))?;
        listener.set_nonblocking(true).map_err(|e| setup(e.to_string()))?;
        let mut served = vec![false; env.world];
        served[0] = true;
        while served.iter().any(|s| !s) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).map_err(|e| setup(e.to_string()))?;
                    s.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| setup(e.to_string()))?;
                    let mut r = [0u8; 8];
                    if s.read_exact(&mut r).is_err() {
                        continue;
                    }
                    let r = u64::from_le_bytes(r) as usize;
                    if r == 0 || r >= env.world {
                        continue;
                    }
                    if s.write_all(&id).is_ok() {
                        served[r] = true;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let missing: Vec<usize> = (0..env.world).filter(|r| !served[*r]).collect();
                        return Err(setup(format!(
                            "rank 0: ranks {missing:?} did not reach the rendezvous at port {} within {} s",
                            env.master_port,
                            timeout.as_secs_f64()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(setup(format!("rank 0: rendezvous accept: {e}"))),
            }
        }
        return Ok(id);
    }
    loop {
        let attempt = (|| -> std::io::Result<Vec<u8>> {
            let mut s = TcpStream::connect(&addr)?;
            s.set_read_timeout(Some(Duration::from_secs(10)))?;
            s.write_all(&(env.rank as u64).to_le_bytes())?;
            let mut buf = vec![0u8; len];
            s.read_exact(&mut buf)?;
            Ok(buf)
        })();
        match attempt {
            Ok(id) => return Ok(id),
            Err(e) if Instant::now() >= deadline => {
                return Err(setup(format!(
                    "rank {}: no rendezvous with rank 0 at {addr} within {} s ({e})",
                    env.rank,
                    timeout.as_secs_f64()
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}
