//! Admission and render slots: at most `workers` renders at once, at most
//! `workers + queue` requests in flight (the rest are 429), and every
//! render's [`CancelToken`] known so a shutdown can stop them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use dv_speak::CancelToken;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::metrics::Metrics;

pub(crate) struct Pool {
    workers: Arc<Semaphore>,
    capacity: usize,
    in_flight: AtomicUsize,
    closing: AtomicBool,
    next: AtomicU64,
    tokens: Mutex<HashMap<u64, CancelToken>>,
    metrics: Arc<Metrics>,
}

/// An admitted request; dropping it frees its place.
pub(crate) struct Ticket {
    pool: Arc<Pool>,
    id: u64,
    pub(crate) cancel: CancelToken,
}

impl Pool {
    pub(crate) fn new(workers: usize, queue: usize, metrics: Arc<Metrics>) -> Arc<Pool> {
        let workers = workers.max(1);
        Arc::new(Pool {
            workers: Arc::new(Semaphore::new(workers)),
            capacity: workers + queue,
            in_flight: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            next: AtomicU64::new(0),
            tokens: Mutex::default(),
            metrics,
        })
    }

    /// A place for one more request, or 429 when `workers + queue` are in
    /// flight (503 once shutting down).
    pub(crate) fn admit(self: &Arc<Self>) -> Result<Ticket, ApiError> {
        if self.closing.load(Ordering::Acquire) {
            return Err(ApiError::unavailable("the server is shutting down".into()));
        }
        let before = self.in_flight.fetch_add(1, Ordering::AcqRel);
        if before >= self.capacity {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            return Err(ApiError::busy(1));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let cancel = CancelToken::new();
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).insert(id, cancel.clone());
        Ok(Ticket { pool: self.clone(), id, cancel })
    }

    /// Refuses new requests and cancels every render in flight.
    pub(crate) fn cancel_all(&self) {
        self.closing.store(true, Ordering::Release);
        for t in self.tokens.lock().unwrap_or_else(|e| e.into_inner()).values() {
            t.cancel();
        }
    }

    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }
}

/// Counts a queued request while it waits, even if its wait is dropped.
struct Queued<'a>(&'a Metrics);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Ticket {
    /// Waits in the queue for a render slot.
    pub(crate) async fn worker(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        let m = &self.pool.metrics;
        m.queued.fetch_add(1, Ordering::Relaxed);
        let _q = Queued(m);
        self.pool.workers.clone().acquire_owned().await.map_err(|_| ApiError::unavailable("the pool is closed".into()))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pool.tokens.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
        self.pool.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}
