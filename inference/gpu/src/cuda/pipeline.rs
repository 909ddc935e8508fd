//! [`Pipelined`]: kernel 2 with conditioning windows for a server, every
//! host-side cost of a launch overlapped with the launch before it.
//!
//! [`MultiStream::set_windows`] and [`MultiStream::advance_first`] copy from
//! pageable memory and wait for the kernel, so a server's window copies,
//! output copies and bookkeeping run while the GPU idles. Here everything a
//! launch needs is double-buffered:
//!
//! * two conditioning pools and two offset arrays on the device, two
//!   page-locked staging buffers on the host: launch k reads buffer k % 2
//!   while the host fills, and a copy stream uploads, buffer (k + 1) % 2;
//!   the compute stream waits on the upload's event, never on the host;
//! * slot starts ([`Pipelined::start`]) are queued on the compute stream
//!   behind the launches already submitted (from page-locked mirrors, one
//!   pair per buffer), so a slot that joins or leaves takes effect at the
//!   next launch boundary and never waits for the kernel;
//! * each launch's codes are copied back asynchronously into page-locked
//!   memory and handed out by [`Pipelined::collect`] after its event.
//!
//! At most [`Pipelined::DEPTH`] launches are in flight: submit k + 1, then
//! collect k. A buffer is reused two launches later, by which time the
//! launch that read it has been collected (both calls refuse otherwise), so
//! no host write races a copy still queued.

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice, PushKernelArg};

use super::{driver, GpuDevice, MultiStream, Windows};
use crate::error::GpuError;
use crate::model::Weights;
use crate::sampling::{rng_state, GpuSampling};
use crate::source::MultiPlan;
use crate::StreamStart;

/// Device times of one collected launch, from events (ms).
#[derive(Debug, Clone, Copy, Default)]
pub struct PipeTimes {
    /// The windows' and offsets' copy to the device (copy stream).
    pub upload_ms: f32,
    /// The kernel.
    pub kernel_ms: f32,
    /// The codes' copy back.
    pub download_ms: f32,
    /// The compute stream's idle time between the previous launch's end
    /// and this one's start, when this launch was submitted while the
    /// previous one was in flight (`None` otherwise): time the kernel waited
    /// for the host.
    pub gap_ms: Option<f32>,
}

/// Page-locked host copies of the per-slot state a start writes.
struct Mirror {
    pos: PinnedHostSlice<i32>,
    len: PinnedHostSlice<i32>,
    lead: PinnedHostSlice<i32>,
    y: PinnedHostSlice<i32>,
    rng: PinnedHostSlice<u64>,
}

struct Flight {
    buf: usize,
    ev: usize,
    launched: usize,
    steps: usize,
    back_to_back: bool,
}

/// Kernel 2 with double-buffered windows, asynchronous starts and copies.
pub struct Pipelined {
    ms: MultiStream,
    win: Windows,
    steps: usize,
    copy: Arc<CudaStream>,
    /// Buffer 1's pool (buffer 0's is `ms.pool`).
    pool1: CudaSlice<f32>,
    /// Buffer 1's voicing pool (buffer 0's is `ms.voiced`).
    voiced1: CudaSlice<u8>,
    off: [CudaSlice<i64>; 2],
    stage: [PinnedHostSlice<f32>; 2],
    /// The windows' voicing, `[slots, window_frames]` (1 voiced).
    stage_voiced: [PinnedHostSlice<u8>; 2],
    stage_off: [PinnedHostSlice<i64>; 2],
    /// Per slot (u offset, frames, first frame) for [`Pipelined::submit_projected`].
    meta: [CudaSlice<i64>; 2],
    stage_meta: [PinnedHostSlice<i64>; 2],
    mirror: [Mirror; 2],
    out: [CudaSlice<i32>; 2],
    host_out: [PinnedHostSlice<i32>; 2],
    /// `slots × steps` of −1, copied over a launch's codes before it.
    minus: CudaSlice<i32>,
    up: [(CudaEvent, CudaEvent); 2],
    done: [CudaEvent; 2],
    /// Kernel start and end, a ring of three (the gap reads the launch before).
    kern: [(CudaEvent, CudaEvent); 3],
    flights: VecDeque<Flight>,
    submitted: u64,
}

/// Page-locked host memory (not write-combined where the host reads it).
fn pinned<T: cudarc::driver::DeviceRepr>(
    dev: &GpuDevice,
    len: usize,
    host_reads: bool,
) -> Result<PinnedHostSlice<T>, GpuError> {
    let flags = if host_reads { 0 } else { cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED };
    // SAFETY: the memory is uninitialised; every element is written (by the host or a copy)
    // before it is read: windows and offsets are filled before their upload, the mirrors'
    // slot entries before their copy, the codes by their download before `collect` reads them.
    unsafe { dev.ctx.alloc_pinned_with_flags::<T>(len.max(1), flags) }.map_err(driver("cuMemHostAlloc"))
}

fn event(dev: &GpuDevice, flags: CUevent_flags) -> Result<CudaEvent, GpuError> {
    dev.ctx.new_event(Some(flags)).map_err(driver("cuEventCreate"))
}

impl Pipelined {
    /// Launches in flight at most: submit k + 1, then collect k.
    pub const DEPTH: usize = 2;

    /// [`MultiStream::with_windows`] with the buffers above: `slots`
    /// (rounded up to whole blocks), launches of at most `steps` samples,
    /// streams of at most `max_stream_frames` frames.
    pub fn new(
        dev: Arc<GpuDevice>,
        w: &Weights,
        plan: MultiPlan,
        slots: usize,
        steps: usize,
        max_stream_frames: usize,
    ) -> Result<Self, GpuError> {
        let ms = MultiStream::with_windows(dev.clone(), w, plan, slots, steps, max_stream_frames)?;
        let win = ms.windows.expect("with_windows sets the windows");
        let n = ms.slots;
        let width = ms.sizes.conditioning_width();
        let copy = dev.ctx.new_stream().map_err(driver("cuStreamCreate(copies)"))?;
        let s = &dev.stream;
        let pool1 = s.alloc_zeros::<f32>(ms.pool_frames * width).map_err(driver("cuMemAlloc(conditioning pool 1)"))?;
        let off = [
            s.alloc_zeros::<i64>(n).map_err(driver("cuMemAlloc(conditioning offsets)"))?,
            s.alloc_zeros::<i64>(n).map_err(driver("cuMemAlloc(conditioning offsets)"))?,
        ];
        let stage = [pinned(&dev, n * win.frames * width, false)?, pinned(&dev, n * win.frames * width, false)?];
        let stage_off = [pinned(&dev, n, false)?, pinned(&dev, n, false)?];
        let voiced1 = dev.upload("voicing pool 1", &vec![1u8; ms.pool_frames])?;
        let mut stage_voiced = [pinned(&dev, n * win.frames, false)?, pinned(&dev, n * win.frames, false)?];
        for v in &mut stage_voiced {
            v.as_mut_slice().map_err(driver("cuEventSynchronize(voicing)"))?.fill(1);
        }
        let meta = [
            s.alloc_zeros::<i64>(3 * n).map_err(driver("cuMemAlloc(window sources)"))?,
            s.alloc_zeros::<i64>(3 * n).map_err(driver("cuMemAlloc(window sources)"))?,
        ];
        let stage_meta = [pinned(&dev, 3 * n, false)?, pinned(&dev, 3 * n, false)?];
        let mirror = |dev: &GpuDevice| -> Result<Mirror, GpuError> {
            Ok(Mirror {
                pos: pinned(dev, n, false)?,
                len: pinned(dev, n, false)?,
                lead: pinned(dev, n, false)?,
                y: pinned(dev, 2 * n, false)?,
                rng: pinned(dev, 4 * n, false)?,
            })
        };
        let mirror = [mirror(&dev)?, mirror(&dev)?];
        let out = [
            s.alloc_zeros::<i32>(n * steps).map_err(driver("cuMemAlloc(samples)"))?,
            s.alloc_zeros::<i32>(n * steps).map_err(driver("cuMemAlloc(samples)"))?,
        ];
        let host_out = [pinned(&dev, n * steps, true)?, pinned(&dev, n * steps, true)?];
        let minus = dev.upload("−1 codes", &vec![-1i32; n * steps])?;
        let timed = CUevent_flags::CU_EVENT_DEFAULT;
        let pair = |dev: &GpuDevice| -> Result<(CudaEvent, CudaEvent), GpuError> {
            Ok((event(dev, timed)?, event(dev, timed)?))
        };
        let up = [pair(&dev)?, pair(&dev)?];
        let kern = [pair(&dev)?, pair(&dev)?, pair(&dev)?];
        // The host sleeps on these instead of spinning: the cores run the conditioning network.
        let done =
            [event(&dev, CUevent_flags::CU_EVENT_BLOCKING_SYNC)?, event(&dev, CUevent_flags::CU_EVENT_BLOCKING_SYNC)?];
        s.synchronize().map_err(driver("cuStreamSynchronize(pipeline set-up)"))?;
        Ok(Self {
            ms,
            win,
            steps,
            copy,
            pool1,
            voiced1,
            off,
            stage,
            stage_voiced,
            stage_off,
            meta,
            stage_meta,
            mirror,
            out,
            host_out,
            minus,
            up,
            done,
            kern,
            flights: VecDeque::new(),
            submitted: 0,
        })
    }

    pub fn slots(&self) -> usize {
        self.ms.slots
    }

    pub fn plan(&self) -> MultiPlan {
        self.ms.plan
    }

    /// Frames per slot window.
    pub fn window_frames(&self) -> usize {
        self.win.frames
    }

    /// Launches submitted and not yet collected.
    pub fn in_flight(&self) -> usize {
        self.flights.len()
    }

    fn next_buf(&self) -> usize {
        (self.submitted % 2) as usize
    }

    /// The buffers of the next launch are free once the launch two before
    /// it has been collected.
    fn check_free(&self, what: &str) -> Result<(), GpuError> {
        if self.flights.len() >= Self::DEPTH {
            return Err(GpuError::Unsupported {
                what: format!("{what} with {} launches in flight: collect one first", self.flights.len()),
            });
        }
        Ok(())
    }

    /// Streams join (or leave, with `samples` 0) at the next launch: each
    /// named slot restarts from silence with zero histories and
    /// `dv_synth::Rng::new(seed)`; its window's offset is set by the next
    /// [`Pipelined::submit`] (`cond_frame` is ignored). Queued on the
    /// compute stream behind the launches in flight; the host does not wait.
    pub fn start(&mut self, starts: &[StreamStart]) -> Result<(), GpuError> {
        self.check_free("starting streams")?;
        let n = self.ms.slots;
        let hop = self.ms.sizes.hop;
        for st in starts {
            if st.slot >= n {
                return Err(GpuError::Shape { what: "stream slot", expected: n, got: st.slot });
            }
            if st.samples.div_ceil(hop) > self.win.base || st.samples > i32::MAX as usize {
                return Err(GpuError::Shape {
                    what: "conditioning frames of a windowed stream (past the longest allowed)",
                    expected: self.win.base,
                    got: st.samples.div_ceil(hop),
                });
            }
        }
        let b = self.next_buf();
        let (_, rows) = self.ms.sizes.history_offsets();
        let per_slot = rows * self.ms.sizes.residual;
        let s = self.ms.dev.stream.clone();
        let m = &mut self.mirror[b];
        let (pos, len, lead, y, rng) = (
            m.pos.as_mut_slice().map_err(driver("cuEventSynchronize(mirror)"))?,
            m.len.as_mut_slice().map_err(driver("cuEventSynchronize(mirror)"))?,
            m.lead.as_mut_slice().map_err(driver("cuEventSynchronize(mirror)"))?,
            m.y.as_mut_slice().map_err(driver("cuEventSynchronize(mirror)"))?,
            m.rng.as_mut_slice().map_err(driver("cuEventSynchronize(mirror)"))?,
        );
        for st in starts {
            let k = st.slot;
            pos[k] = 0;
            len[k] = st.samples as i32;
            lead[k] = st.lead.min(st.samples) as i32;
            y[2 * k] = 128;
            y[2 * k + 1] = 128;
            rng[4 * k..4 * k + 4].copy_from_slice(&rng_state(st.seed));
            // From page-locked memory: asynchronous; the mirror is rewritten only after the
            // launch these copies precede has been collected (`check_free`).
            s.memcpy_htod(&pos[k..k + 1], &mut self.ms.pos.slice_mut(k..k + 1))
                .map_err(driver("cuMemcpyHtoDAsync(position)"))?;
            s.memcpy_htod(&lead[k..k + 1], &mut self.ms.lead.slice_mut(k..k + 1))
                .map_err(driver("cuMemcpyHtoDAsync(lead)"))?;
            s.memcpy_htod(&len[k..k + 1], &mut self.ms.len.slice_mut(k..k + 1))
                .map_err(driver("cuMemcpyHtoDAsync(length)"))?;
            s.memcpy_htod(&y[2 * k..2 * k + 2], &mut self.ms.y.slice_mut(2 * k..2 * k + 2))
                .map_err(driver("cuMemcpyHtoDAsync(last samples)"))?;
            s.memcpy_htod(&rng[4 * k..4 * k + 4], &mut self.ms.rng.slice_mut(4 * k..4 * k + 4))
                .map_err(driver("cuMemcpyHtoDAsync(random state)"))?;
            if st.samples > 0 {
                s.memset_zeros(&mut self.ms.hist.slice_mut(k * per_slot..(k + 1) * per_slot))
                    .map_err(driver("cuMemsetD8Async(history)"))?;
            }
        }
        Ok(())
    }

    /// The next launch's windows, `[slots, window_frames, ℓ·2r]` in the
    /// pool layout ([`MultiStream::pool_rows`]), page-locked: fill the first
    /// `used` slots' before [`Pipelined::submit`]`(used, …)`. Row k of slot
    /// s's window is frame `first[s] + k` of its stream; an idle slot reads
    /// row 0 of its window (fill it with finite values).
    pub fn stage(&mut self) -> Result<&mut [f32], GpuError> {
        self.check_free("staging windows")?;
        let b = self.next_buf();
        self.stage[b].as_mut_slice().map_err(driver("cuEventSynchronize(staging)"))
    }

    /// The next launch's windows' voicing, `[slots, window_frames]` (1
    /// voiced; row k of slot s as in [`Pipelined::stage`]), page-locked:
    /// read only under voiced-only temperature, when the first `used`
    /// slots' must be filled before the submit. Starts all voiced.
    pub fn stage_voiced(&mut self) -> Result<&mut [u8], GpuError> {
        self.check_free("staging voicing")?;
        let b = self.next_buf();
        self.stage_voiced[b].as_mut_slice().map_err(driver("cuEventSynchronize(staging voicing)"))
    }

    /// Uploads buffer `b`'s staged voicing of `launched` slots on the copy
    /// stream, when `sampling` reads it.
    fn upload_voicing(&mut self, b: usize, launched: usize, sampling: GpuSampling) -> Result<(), GpuError> {
        if !sampling.reads_voicing() {
            return Ok(());
        }
        let (base, rows) = (self.win.base, launched * self.win.frames);
        let stage = self.stage_voiced[b].as_mut_slice().map_err(driver("cuEventSynchronize(staging voicing)"))?;
        let pool = if b == 0 { &mut self.ms.voiced } else { &mut self.voiced1 };
        self.copy
            .memcpy_htod(&stage[..rows], &mut pool.slice_mut(base..base + rows))
            .map_err(driver("cuMemcpyHtoDAsync(window voicing)"))
    }

    /// Checks a launch's shape: the blocks it launches.
    fn launched(&self, used: usize, firsts: usize, steps: usize) -> Result<usize, GpuError> {
        self.check_free("submitting a launch")?;
        let n = self.ms.slots;
        if steps == 0 || steps > self.steps {
            return Err(GpuError::Shape {
                what: "steps per launch (at most the pipeline's)",
                expected: self.steps,
                got: steps,
            });
        }
        if used == 0 || used > n || firsts != used {
            return Err(GpuError::Shape {
                what: "first frames of the used slots",
                expected: used.clamp(1, n),
                got: firsts,
            });
        }
        let spb = self.ms.plan.streams_per_block;
        Ok((used.div_ceil(spb) * spb).min(n))
    }

    /// Writes the launch's window offsets into buffer `b`'s staging: slot s
    /// reads its window from frame `first[s]` (0 past `first`).
    fn stage_offsets(&mut self, b: usize, launched: usize, first: impl Fn(usize) -> usize) -> Result<(), GpuError> {
        let width = self.ms.sizes.conditioning_width();
        let win = self.win;
        let offs = self.stage_off[b].as_mut_slice().map_err(driver("cuEventSynchronize(offsets)"))?;
        for (slot, o) in offs[..launched].iter_mut().enumerate() {
            let f = first(slot);
            if f > win.base {
                return Err(GpuError::Shape {
                    what: "first frame of a window (past the longest stream)",
                    expected: win.base,
                    got: f,
                });
            }
            // At or past the pool's start: a dead slot reads row 0 of its window.
            *o = ((win.base + slot * win.frames - f) * width) as i64;
        }
        Ok(())
    }

    /// Queues one launch of `steps` samples over slots `0 .. used` (rounded
    /// up to whole blocks) with the staged windows: slot s's window starts
    /// at frame `first[s]` of its stream (`first.len() == used`). Uploads on
    /// the copy stream; the kernel waits for that upload and for the
    /// launches and starts before it; the codes come back asynchronously.
    pub fn submit(
        &mut self,
        used: usize,
        first: &[usize],
        steps: usize,
        sampling: GpuSampling,
    ) -> Result<(), GpuError> {
        let launched = self.launched(used, first.len(), steps)?;
        let width = self.ms.sizes.conditioning_width();
        let b = self.next_buf();
        self.stage_offsets(b, launched, |s| first.get(s).copied().unwrap_or(0))?;
        // The upload, on the copy stream.
        let c = self.copy.clone();
        let win = self.win;
        let rows = launched * win.frames * width;
        let start = win.base * width;
        self.up[b].0.record(&c).map_err(driver("cuEventRecord(upload start)"))?;
        {
            let stage = self.stage[b].as_mut_slice().map_err(driver("cuEventSynchronize(staging)"))?;
            let pool = if b == 0 { &mut self.ms.pool } else { &mut self.pool1 };
            c.memcpy_htod(&stage[..rows], &mut pool.slice_mut(start..start + rows))
                .map_err(driver("cuMemcpyHtoDAsync(conditioning windows)"))?;
            let offs = self.stage_off[b].as_mut_slice().map_err(driver("cuEventSynchronize(offsets)"))?;
            c.memcpy_htod(&offs[..launched], &mut self.off[b].slice_mut(0..launched))
                .map_err(driver("cuMemcpyHtoDAsync(conditioning offsets)"))?;
        }
        self.upload_voicing(b, launched, sampling)?;
        self.up[b].1.record(&c).map_err(driver("cuEventRecord(upload end)"))?;
        self.enqueue(b, launched, steps, sampling)
    }

    /// [`Pipelined::submit`] with the windows projected on the device from
    /// `proj`'s arena instead of staged: `sources[s]` is slot s's u rows
    /// (`(arena frame of its frame 0, its frames)`, `None` idle) and its
    /// window's first frame. Only the offsets cross PCIe; the projection
    /// (`cond_project`) runs on the copy stream while the launch before
    /// runs.
    pub fn submit_projected(
        &mut self,
        proj: &super::Projector,
        sources: &[(Option<(usize, usize)>, usize)],
        steps: usize,
        sampling: GpuSampling,
    ) -> Result<(), GpuError> {
        let used = sources.len();
        let launched = self.launched(used, used, steps)?;
        if proj.out != self.ms.sizes.conditioning_width() {
            return Err(GpuError::Shape {
                what: "projected conditioning width",
                expected: self.ms.sizes.conditioning_width(),
                got: proj.out,
            });
        }
        let b = self.next_buf();
        self.stage_offsets(b, launched, |s| sources.get(s).map_or(0, |x| x.1))?;
        {
            let meta = self.stage_meta[b].as_mut_slice().map_err(driver("cuEventSynchronize(window sources)"))?;
            for slot in 0..launched {
                let (src, first) = sources.get(slot).copied().unwrap_or((None, 0));
                let (off, frames) = match src {
                    Some((at, frames)) => {
                        if at + frames > proj.arena_frames {
                            return Err(GpuError::Shape {
                                what: "arena frames of a slot's conditioning",
                                expected: proj.arena_frames,
                                got: at + frames,
                            });
                        }
                        ((at * proj.u_width) as i64, frames as i64)
                    }
                    None => (-1, 0),
                };
                meta[3 * slot..3 * slot + 3].copy_from_slice(&[off, frames, first as i64]);
            }
        }
        let c = self.copy.clone();
        let win = self.win;
        self.up[b].0.record(&c).map_err(driver("cuEventRecord(upload start)"))?;
        {
            let meta = self.stage_meta[b].as_mut_slice().map_err(driver("cuEventSynchronize(window sources)"))?;
            c.memcpy_htod(&meta[..3 * launched], &mut self.meta[b].slice_mut(0..3 * launched))
                .map_err(driver("cuMemcpyHtoDAsync(window sources)"))?;
            let offs = self.stage_off[b].as_mut_slice().map_err(driver("cuEventSynchronize(offsets)"))?;
            c.memcpy_htod(&offs[..launched], &mut self.off[b].slice_mut(0..launched))
                .map_err(driver("cuMemcpyHtoDAsync(conditioning offsets)"))?;
            let pool = if b == 0 { &mut self.ms.pool } else { &mut self.pool1 };
            proj.launch(&c, pool, &self.meta[b], win.base, launched, win.frames)?;
        }
        self.upload_voicing(b, launched, sampling)?;
        self.up[b].1.record(&c).map_err(driver("cuEventRecord(upload end)"))?;
        self.enqueue(b, launched, steps, sampling)
    }

    /// The launch itself on the compute stream, after buffer `b`'s upload.
    fn enqueue(&mut self, b: usize, launched: usize, steps: usize, sampling: GpuSampling) -> Result<(), GpuError> {
        let spb = self.ms.plan.streams_per_block;
        let e = (self.submitted % 3) as usize;
        // The launch, on the compute stream, after the upload.
        let dev = self.ms.dev.clone();
        let s = &dev.stream;
        s.wait(&self.up[b].1).map_err(driver("cuStreamWaitEvent(upload)"))?;
        s.memcpy_dtod(&self.minus.slice(0..launched * steps), &mut self.out[b].slice_mut(0..launched * steps))
            .map_err(driver("cuMemcpyDtoDAsync(−1 codes)"))?;
        let null = 0u64;
        let steps_i = steps as i32;
        let cfg = LaunchConfig {
            grid_dim: ((launched / spb) as u32, 1, 1),
            block_dim: (self.ms.plan.threads as u32, 1, 1),
            shared_mem_bytes: self.ms.plan.smem_bytes as u32,
        };
        self.kern[e].0.record(s).map_err(driver("cuEventRecord(kernel start)"))?;
        {
            let ms = &mut self.ms;
            let pool = if b == 0 { &ms.pool } else { &self.pool1 };
            let voiced = if b == 0 { &ms.voiced } else { &self.voiced1 };
            let mut lb = s.launch_builder(&ms.func);
            for m in &ms.mats {
                m.push(&mut lb);
            }
            ms.vectors.push(&mut lb);
            lb.arg(pool).arg(&mut ms.hist).arg(&mut ms.pos).arg(&ms.len).arg(&mut ms.y);
            lb.arg(&mut ms.rng).arg(&self.off[b]).arg(&steps_i).arg(&sampling.mode).arg(&sampling.inv_tau);
            lb.arg(voiced).arg(&ms.lead).arg(&mut self.out[b]);
            lb.arg(&null).arg(&null).arg(&null);
            // SAFETY: as in `MultiStream::launch`: the arguments match `wavenet_multi`'s (and
            // `wavenet_tiles`') parameters in order and type, no forcing, probabilities or clock;
            // the slot arrays hold `slots` entries (a whole number of blocks, `launched` of them
            // launched), the histories `slots × HIST_ROWS × r`, `out[b]` `slots × steps`; each
            // launched slot's offset points into its own window of this buffer's pool, at or past
            // the pool's start (`first ≤ base`, checked above), and a live stream reads at most
            // `window_frames(steps, hop)` frames from its first (`start` checked its length); the
            // voicing pool holds one byte per pool row, at the same row index.
            unsafe { lb.launch(cfg) }.map_err(driver("cuLaunchKernel(wavenet_multi)"))?;
        }
        self.kern[e].1.record(s).map_err(driver("cuEventRecord(kernel end)"))?;
        {
            let host = self.host_out[b].as_mut_slice().map_err(driver("cuEventSynchronize(codes)"))?;
            s.memcpy_dtoh(&self.out[b].slice(0..launched * steps), &mut host[..launched * steps])
                .map_err(driver("cuMemcpyDtoHAsync(samples)"))?;
        }
        self.done[b].record(s).map_err(driver("cuEventRecord(codes)"))?;
        self.flights.push_back(Flight { buf: b, ev: e, launched, steps, back_to_back: !self.flights.is_empty() });
        self.submitted += 1;
        Ok(())
    }

    /// Waits for the oldest launch in flight and writes its codes to `out`
    /// (`[slots, steps]`, −1 where a slot was idle or past the launched
    /// blocks).
    pub fn collect(&mut self, out: &mut [i32]) -> Result<PipeTimes, GpuError> {
        let Some(f) = self.flights.pop_front() else {
            return Err(GpuError::Unsupported { what: "collecting with no launch in flight".into() });
        };
        let n = self.ms.slots;
        if out.len() != n * f.steps {
            return Err(GpuError::Shape { what: "codes [slots, steps]", expected: n * f.steps, got: out.len() });
        }
        self.done[f.buf].synchronize().map_err(driver("cuEventSynchronize(codes)"))?;
        let m = f.launched * f.steps;
        let host = self.host_out[f.buf].as_slice().map_err(driver("cuEventSynchronize(codes)"))?;
        out[..m].copy_from_slice(&host[..m]);
        out[m..].fill(-1);
        let ms = |a: &CudaEvent, b: &CudaEvent| a.elapsed_ms(b).map_err(driver("cuEventElapsedTime"));
        let (ks, ke) = &self.kern[f.ev];
        let gap_ms = if f.back_to_back { Some(ms(&self.kern[(f.ev + 2) % 3].1, ks)?.max(0.0)) } else { None };
        Ok(PipeTimes {
            upload_ms: ms(&self.up[f.buf].0, &self.up[f.buf].1)?,
            kernel_ms: ms(ks, ke)?,
            download_ms: ms(ke, &self.done[f.buf])?,
            gap_ms,
        })
    }
}
