//! [`FrameArena`]: which frames of a GPU arena (`dv_gpu::GpuConditioner`'s
//! u rows) hold which sentence. First fit over a sorted free list with
//! neighbours merged on free; a [`FrameSpan`] gives its frames back when dropped,
//! and a caller that found no room can wait for that
//! ([`FrameArena::wait_for_free`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The free ranges of `frames` frames: start → length, never adjacent.
#[derive(Debug)]
pub struct FrameArena {
    frames: usize,
    free: Mutex<BTreeMap<usize, usize>>,
    freed: Condvar,
}

/// Frames `at .. at + frames` of an arena, owned until dropped.
#[derive(Debug)]
pub struct FrameSpan {
    at: usize,
    frames: usize,
    arena: Arc<FrameArena>,
}

impl FrameSpan {
    pub fn at(&self) -> usize {
        self.at
    }

    pub fn frames(&self) -> usize {
        self.frames
    }
}

impl Drop for FrameSpan {
    fn drop(&mut self) {
        self.arena.release(self.at, self.frames);
    }
}

impl FrameArena {
    pub fn new(frames: usize) -> Arc<Self> {
        let mut free = BTreeMap::new();
        if frames > 0 {
            free.insert(0, frames);
        }
        Arc::new(Self { frames, free: Mutex::new(free), freed: Condvar::new() })
    }

    /// Frames in all.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Frames free now.
    pub fn free_frames(&self) -> usize {
        self.lock().values().sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, usize>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first free range that holds `frames` (≥ 1), or `None` when none
    /// does now.
    pub fn alloc(self: &Arc<Self>, frames: usize) -> Option<FrameSpan> {
        if frames == 0 {
            return None;
        }
        let mut free = self.lock();
        let (&at, &len) = free.iter().find(|(_, &len)| len >= frames)?;
        free.remove(&at);
        if len > frames {
            free.insert(at + frames, len - frames);
        }
        Some(FrameSpan { at, frames, arena: self.clone() })
    }

    fn release(&self, at: usize, frames: usize) {
        let mut free = self.lock();
        let (mut start, mut len) = (at, frames);
        if let Some((&p, &pl)) = free.range(..at).next_back() {
            debug_assert!(p + pl <= at, "a span freed twice or overlapping");
            if p + pl == at {
                free.remove(&p);
                start = p;
                len += pl;
            }
        }
        if let Some(&nl) = free.get(&(at + frames)) {
            free.remove(&(at + frames));
            len += nl;
        }
        free.insert(start, len);
        drop(free);
        self.freed.notify_all();
    }

    /// Waits until some span is freed, at most `timeout`.
    pub fn wait_for_free(&self, timeout: Duration) {
        let free = self.lock();
        let _ = self.freed.wait_timeout(free, timeout);
    }
}
