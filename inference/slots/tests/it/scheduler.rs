//! The slot scheduler (`--device cuda`'s path) on its CPU backend: requests
//! joining and leaving mid-flight, each hearing exactly what it would hear
//! alone; cancellation and departures freeing slots; a failing backend
//! failing its requests without a panic; the launch windows, the GPU
//! conditioning arena and its thread (on the CPU reference).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dv_slots::{
    fill_windows, ConditionBatches, CpuSlots, FrameArena, FrameSpan, GpuConditioning, LaunchTimes, MultiBackend,
    Prepare, Scheduler, SlotCond, SlotError, SlotEvent, SlotSentence,
};
use dv_speak::{CancelToken, Ramp};
use dv_synth::random::{random_conditioning, random_voice};
use dv_synth::{Conditioning, Kernel, Rng, Sampler, SamplerOptions, SILENCE};
use dv_voice::Voice;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::{eventually, FAST};

const BLOCK: usize = 64;

fn voice() -> Voice {
    random_voice(FAST, 3).unwrap()
}

fn sentence(v: &Voice, frames: usize, seed: u64, lead: usize) -> SlotSentence {
    // Runs of voiced and unvoiced frames, so that voiced-only temperature (the default) switches.
    let voiced: Vec<bool> = (0..frames).map(|f| (f / 3) % 2 == 0).collect();
    let cond = random_conditioning(v.config(), frames, seed).with_voiced(voiced.clone()).unwrap();
    SlotSentence { samples: frames * v.config().hop(), cond: SlotCond::Rows(cond), seed, lead, voiced: voiced.into() }
}

/// What the sampler makes of `s` alone, as `Speaker::render` drives it: the
/// lead fed as silence, then sampled in one call.
fn alone(v: &Voice, s: &SlotSentence) -> Vec<i16> {
    let sampler = Sampler::new(v, Kernel::detect(), SamplerOptions::default()).unwrap();
    let mut scratch = sampler.make_scratch();
    let mut codes = vec![SILENCE; s.samples];
    let cond = s.cond.rows().unwrap();
    sampler.force(&mut scratch, cond, &codes[..s.lead]).unwrap();
    sampler
        .generate(&mut scratch, cond, dv_speak::DEFAULT_SAMPLING, &mut Rng::new(s.seed), &mut codes[s.lead..])
        .unwrap();
    codes.iter().map(|&c| dv_speak::pcm(c)).collect()
}

/// Each launch's codes per slot, as the backend returned them.
type Log = Arc<Mutex<Vec<Vec<Vec<i32>>>>>;

/// A backend around [`CpuSlots`] that waits `pace` per launch (so a test can
/// act between launches), records every collected launch, and fails the
/// submissions numbered in `fail_at`.
struct Recorded {
    inner: CpuSlots,
    pace: Duration,
    log: Log,
    fail_at: Vec<usize>,
    submitted: usize,
}

impl MultiBackend for Recorded {
    fn slots(&self) -> usize {
        self.inner.slots()
    }
    fn feeds_lead(&self) -> bool {
        self.inner.feeds_lead()
    }
    fn prepare(&self) -> Prepare {
        self.inner.prepare()
    }
    fn max_samples(&self) -> usize {
        self.inner.max_samples()
    }
    fn start(&mut self, starts: &[(usize, Arc<SlotSentence>)]) -> Result<(), SlotError> {
        self.inner.start(starts)
    }
    fn stop(&mut self, slots: &[usize]) -> Result<(), SlotError> {
        self.inner.stop(slots)
    }
    fn depth(&self) -> usize {
        self.inner.depth()
    }
    fn submit(&mut self, steps: usize) -> Result<(), SlotError> {
        std::thread::sleep(self.pace);
        let k = self.submitted;
        self.submitted += 1;
        if self.fail_at.contains(&k) {
            return Err(SlotError::Slot { slot: 0, reason: "injected failure".into() });
        }
        self.inner.submit(steps)
    }
    fn collect(&mut self, out: &mut [i32]) -> Result<LaunchTimes, SlotError> {
        let t = self.inner.collect(out)?;
        let steps = out.len() / self.inner.slots();
        self.log.lock().unwrap().push(out.chunks(steps).map(|c| c.to_vec()).collect());
        Ok(t)
    }
}

/// A scheduler on `slots` CPU slots keeping up to `depth` launches in flight.
fn scheduler(v: &Voice, slots: usize, pace_ms: u64, fail_at: Vec<usize>, depth: usize) -> (Scheduler, Log) {
    ramped(v, slots, pace_ms, fail_at, depth, None)
}

/// [`scheduler`] with a new request's first launches short ([`Ramp`]).
fn ramped(
    v: &Voice,
    slots: usize,
    pace_ms: u64,
    fail_at: Vec<usize>,
    depth: usize,
    ramp: Option<Ramp>,
) -> (Scheduler, Log) {
    let inner =
        CpuSlots::new(v, Kernel::detect(), SamplerOptions::default(), slots, 1 << 20).unwrap().with_depth(depth);
    let log = Log::default();
    let b = Recorded { inner, pace: Duration::from_millis(pace_ms), log: log.clone(), fail_at, submitted: 0 };
    (Scheduler::spawn_ramped(b, BLOCK, ramp).unwrap(), log)
}

/// Each collected launch's steps.
fn launch_steps(log: &Log) -> Vec<usize> {
    log.lock().unwrap().iter().map(|l| l[0].len()).collect()
}

/// A member's audio until its channel closes: the PCM, the sentences done,
/// and the failure if any.
async fn drain(rx: &mut UnboundedReceiver<SlotEvent>) -> (Vec<i16>, usize, Option<String>) {
    let (mut pcm, mut done, mut failed) = (Vec::new(), 0, None);
    while let Some(e) = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.expect("events stalled") {
        match e {
            SlotEvent::Audio(b) => pcm.extend(b),
            SlotEvent::SentenceDone => done += 1,
            SlotEvent::Failed(m) => failed = Some(m),
            SlotEvent::Assigned => {}
        }
    }
    (pcm, done, failed)
}

/// The slot's codes over every launch, idle launches skipped.
fn slot_codes(log: &Log, slot: usize) -> Vec<i32> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|l| !l.is_empty())
        .flat_map(|l| l[slot].iter().copied().filter(|&c| c >= 0))
        .collect()
}

fn codes_of(pcm: &[i16]) -> Vec<i32> {
    let table: Vec<i16> = (0..=255u8).map(dv_speak::pcm).collect();
    pcm.iter().map(|p| table.iter().position(|t| t == p).unwrap() as i32).collect()
}

/// Launches in which `slot` produced samples.
fn active_launches(log: &Log, slot: usize) -> Vec<usize> {
    log.lock()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, l)| l.get(slot).is_some_and(|r| r[0] >= 0))
        .map(|(k, _)| k)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_join_and_leave_mid_flight_and_each_hears_what_it_hears_alone() {
    // One launch at a time, and pipelined as on the GPU (launch k + 1 submitted before k is handed out).
    for depth in [1, 2] {
        join_and_leave(depth).await;
    }
}

async fn join_and_leave(depth: usize) {
    let v = voice();
    let (sched, log) = scheduler(&v, 2, 2, vec![], depth);
    let a1 = sentence(&v, 30, 11, 150); // 1920 samples, 30 launches, its first 150 fed as silence
    let a2 = sentence(&v, 12, 12, 0);
    let b1 = sentence(&v, 20, 21, 70);
    let c1 = sentence(&v, 9, 31, 0);
    // A joins and runs.
    let (a, mut a_rx) = sched.join(CancelToken::new()).unwrap();
    a.push(a1.clone()).unwrap();
    a.push(a2.clone()).unwrap();
    a.end().unwrap();
    let mut a_pcm = Vec::new();
    assert_eq!(a_rx.recv().await, Some(SlotEvent::Assigned));
    for _ in 0..3 {
        match a_rx.recv().await.unwrap() {
            SlotEvent::Audio(b) => a_pcm.extend(b),
            e => panic!("{e:?}"),
        }
    }
    // B joins mid-flight (A's first sentence lasts 30 launches, B's 20); C finds both slots busy and waits.
    let (b, mut b_rx) = sched.join(CancelToken::new()).unwrap();
    b.push(b1.clone()).unwrap();
    b.end().unwrap();
    let (c, mut c_rx) = sched.join(CancelToken::new()).unwrap();
    c.push(c1.clone()).unwrap();
    c.end().unwrap();
    let (a_rest, a_done, a_fail) = drain(&mut a_rx).await;
    a_pcm.extend(a_rest);
    let (b_pcm, b_done, b_fail) = drain(&mut b_rx).await;
    let (c_pcm, c_done, c_fail) = drain(&mut c_rx).await;
    assert_eq!((a_done, b_done, c_done), (2, 1, 1));
    assert_eq!((a_fail, b_fail, c_fail), (None, None, None));
    // Sample for sample what each sentence gives alone.
    let mut a_alone = alone(&v, &a1);
    a_alone.extend(alone(&v, &a2));
    assert_eq!(a_pcm, a_alone, "depth {depth}: A's audio changed when B and C joined");
    assert_eq!(b_pcm, alone(&v, &b1), "depth {depth}: B's audio differs from B alone");
    assert_eq!(c_pcm, alone(&v, &c1), "depth {depth}: C's audio differs from C alone");
    // No launch lost at a sentence boundary: A's second sentence starts in the launch after its first ends.
    let l0 = active_launches(&log, 0);
    assert_eq!(l0.len(), a1.samples.div_ceil(BLOCK) + a2.samples.div_ceil(BLOCK), "depth {depth}");
    assert_eq!(l0.last().unwrap() - l0[0] + 1, l0.len(), "depth {depth}: slot 0 idled between A's sentences: {l0:?}");
    assert!(a_pcm[..150].iter().all(|&p| p == a_pcm[0]), "the lead is sent as silence");
    // Slot 0 held A; slot 1 held B, then C (which waited for B, the first to leave).
    assert_eq!(slot_codes(&log, 0), codes_of(&a_pcm));
    let mut s1 = codes_of(&b_pcm);
    s1.extend(codes_of(&c_pcm));
    assert_eq!(slot_codes(&log, 1), s1);
    // B joined while A was mid-sentence, and they shared launches.
    let (l0, l1) = (active_launches(&log, 0), active_launches(&log, 1));
    assert!(l1[0] > l0[0] && l1[0] < l0[0] + a1.samples / BLOCK, "B did not join mid-sentence: {l0:?} {l1:?}");
    let shared = l1.iter().filter(|k| l0.contains(k)).count();
    assert!(shared >= 10, "A and B shared only {shared} launches");
    // Everyone left: no slot held.
    assert!(
        eventually(Duration::from_secs(5), || async {
            sched.stats().busy.load(std::sync::atomic::Ordering::Relaxed) == 0
        })
        .await
    );
    assert_eq!(sched.stats().left.load(std::sync::atomic::Ordering::Relaxed), 0);
    drop((a, b, c));
    assert!(sched.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_leaving_or_dropping_the_receiver_frees_the_slot() {
    for depth in [1, 2] {
        cancel_leave_drop(depth).await;
    }
}

async fn cancel_leave_drop(depth: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    let v = voice();
    let (sched, _log) = scheduler(&v, 1, 2, vec![], depth);
    let long = sentence(&v, 400, 1, 0); // 400 launches: never finishes within the test
    let short = sentence(&v, 5, 2, 0);
    for how in ["cancel", "leave", "receiver"] {
        let cancel = CancelToken::new();
        let (a, mut a_rx) = sched.join(cancel.clone()).unwrap();
        a.push(long.clone()).unwrap();
        a.end().unwrap();
        assert_eq!(a_rx.recv().await, Some(SlotEvent::Assigned), "{how}");
        assert!(matches!(a_rx.recv().await, Some(SlotEvent::Audio(_))), "{how}");
        // The only slot is A's: B waits, and hears nothing until it has one.
        let (b, mut b_rx) = sched.join(CancelToken::new()).unwrap();
        b.push(short.clone()).unwrap();
        b.end().unwrap();
        assert!(
            eventually(Duration::from_secs(5), || async { sched.stats().waiting.load(Relaxed) == 1 }).await,
            "{how}"
        );
        assert!(b_rx.try_recv().is_err(), "{how}: B heard something before it had a slot");
        let t = Instant::now();
        let mut a_rx = Some(a_rx);
        let mut a = Some(a);
        match how {
            "cancel" => cancel.cancel(),
            "leave" => drop(a.take()),
            _ => drop(a_rx.take()),
        }
        // B gets the slot, and hears exactly its sentence.
        let first = tokio::time::timeout(Duration::from_secs(5), b_rx.recv()).await.expect("B never got the slot");
        assert_eq!(first, Some(SlotEvent::Assigned), "{how}");
        let (b_pcm, b_done, b_fail) = drain(&mut b_rx).await;
        assert_eq!((b_done, b_fail), (1, None), "{how}");
        assert_eq!(b_pcm, alone(&v, &short), "{how}");
        assert!(t.elapsed() < Duration::from_secs(2), "{how}: the slot was freed after {:?}", t.elapsed());
        if let Some(rx) = a_rx.as_mut() {
            // A's channel closes without its sentence done.
            let (_, a_done, _) = drain(rx).await;
            assert_eq!(a_done, 0, "{how}");
        }
        drop((a, b));
    }
    assert_eq!(sched.stats().left.load(Relaxed), 3);
    assert!(eventually(Duration::from_secs(5), || async { sched.stats().busy.load(Relaxed) == 0 }).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_backend_fails_its_requests_and_the_scheduler_goes_on() {
    for depth in [1, 2] {
        failing_backend(depth).await;
    }
}

async fn failing_backend(depth: usize) {
    let v = voice();
    let (sched, _log) = scheduler(&v, 2, 0, vec![3], depth);
    let s = sentence(&v, 10, 5, 0);
    let (a, mut a_rx) = sched.join(CancelToken::new()).unwrap();
    a.push(s.clone()).unwrap();
    a.end().unwrap();
    let (pcm, done, failed) = drain(&mut a_rx).await;
    assert_eq!(done, 0);
    assert_eq!(pcm.len(), 3 * BLOCK, "the three launches before the failure were delivered");
    assert!(failed.as_deref().is_some_and(|m| m.contains("injected failure")), "{failed:?}");
    // A sentence too long for a slot fails at start; the next request is served.
    let (b, mut b_rx) = sched.join(CancelToken::new()).unwrap();
    b.push(SlotSentence { samples: s.samples + 1, ..s.clone() }).unwrap();
    let (_, done, failed) = drain(&mut b_rx).await;
    assert_eq!(done, 0);
    assert!(failed.is_some_and(|m| m.contains("samples")));
    let (c, mut c_rx) = sched.join(CancelToken::new()).unwrap();
    c.push(s.clone()).unwrap();
    c.end().unwrap();
    let (pcm, done, failed) = drain(&mut c_rx).await;
    assert_eq!((done, failed), (1, None));
    assert_eq!(pcm, alone(&v, &s));
    assert!(sched.is_running());
    drop((a, b, c));
}

/// `Conditioning` is what both backends take.
#[test]
fn the_cpu_backend_takes_conditioning_as_the_network_makes_it() {
    let v = voice();
    let b = CpuSlots::new(&v, Kernel::detect(), SamplerOptions::default(), 1, 100).unwrap();
    let c =
        Conditioning::new(2, v.config().conditioning_width(), vec![0.5; 2 * v.config().conditioning_width()]).unwrap();
    let p = (b.prepare())(c.clone()).unwrap();
    assert_eq!(p.data(), c.data());
    assert!(b.feeds_lead());
}

#[test]
fn windows_hold_each_busy_slot_s_next_frames_and_threads_change_nothing() {
    let (hop, window, width) = (4, 5, 3);
    // Slot 0: 12 frames at sample 9 (frame 2); slot 1 idle; slot 2: 7 frames at sample 20 (frame 5: 2 left).
    let rows = |frames: usize, base: f32| (0..frames * width).map(|i| base + i as f32).collect::<Vec<f32>>();
    let (r0, r2) = (rows(12, 1000.0), rows(7, 2000.0));
    let sources = [Some((&r0[..], 9)), None, Some((&r2[..], 20))];
    let mut want = vec![-1.0f32; 3 * window * width];
    want[..window * width].copy_from_slice(&r0[2 * width..7 * width]);
    want[window * width..window * width + width].fill(0.0);
    want[2 * window * width..2 * window * width + 2 * width].copy_from_slice(&r2[5 * width..]);
    for threads in [1, 2, 3, 8] {
        let mut stage = vec![-1.0f32; 4 * window * width];
        let mut first = vec![99];
        let frames = fill_windows(&sources, hop, window, width, &mut stage, &mut first, threads);
        assert_eq!(first, [2, 0, 5], "threads {threads}");
        assert_eq!(frames, window + 2, "threads {threads}");
        assert_eq!(&stage[..3 * window * width], &want[..], "threads {threads}");
        assert!(stage[3 * window * width..].iter().all(|&x| x == -1.0), "threads {threads}: wrote past the used slots");
    }
}

#[test]
fn cpu_slots_keep_launches_in_flight_in_order_and_starts_wait_for_the_boundary() {
    let v = voice();
    // Two blocks each.
    let frames = 2 * BLOCK / v.config().hop();
    let s1 = Arc::new(sentence(&v, frames, 7, 0));
    let s2 = Arc::new(sentence(&v, frames, 8, 0));
    assert_eq!(s1.samples, 2 * BLOCK);
    let mut b = CpuSlots::new(&v, Kernel::detect(), SamplerOptions::default(), 1, 1 << 20).unwrap().with_depth(2);
    b.start(&[(0, s1.clone())]).unwrap();
    let (mut got, mut out) = (Vec::new(), vec![0; BLOCK]);
    // Both of s1's launches in flight; a third is refused.
    b.submit(BLOCK).unwrap();
    b.submit(BLOCK).unwrap();
    assert!(b.submit(BLOCK).is_err(), "a third launch in flight");
    b.collect(&mut out).unwrap();
    got.extend_from_slice(&out);
    // s2 starts on the slot while s1's last launch is still in flight: from the next launch on.
    b.start(&[(0, s2.clone())]).unwrap();
    b.submit(BLOCK).unwrap();
    for _ in 0..2 {
        b.collect(&mut out).unwrap();
        got.extend_from_slice(&out);
    }
    assert!(b.collect(&mut out).is_err(), "nothing left in flight");
    let codes: Vec<i32> = got.iter().copied().filter(|&c| c >= 0).collect();
    let mut want = codes_of(&alone(&v, &s1));
    want.extend(codes_of(&alone(&v, &s2))[..BLOCK].iter());
    assert_eq!(codes, want);
}

/// The GPU conditioning arena's frames: first fit, no span overlaps
/// another, every frame comes back when the spans are dropped (neighbours
/// merged, so the whole arena fits one sentence again).
#[test]
fn arena_spans_never_overlap_and_all_frames_come_back() {
    let arena = FrameArena::new(100);
    let a = arena.alloc(30).unwrap();
    let b = arena.alloc(50).unwrap();
    assert_eq!((a.at(), b.at()), (0, 30));
    assert!(arena.alloc(21).is_none(), "only 20 frames are left");
    let c = arena.alloc(20).unwrap();
    assert_eq!(c.at(), 80);
    assert_eq!(arena.free_frames(), 0);
    assert!(arena.alloc(0).is_none());
    drop(a);
    // 30 free at 0: a span of 10 goes there, first fit.
    let d = arena.alloc(10).unwrap();
    assert_eq!(d.at(), 0);
    drop(c);
    drop(b);
    assert_eq!(arena.free_frames(), 90);
    assert!(arena.alloc(91).is_none());
    drop(d);
    let whole = arena.alloc(100).unwrap();
    assert_eq!((whole.at(), whole.frames()), (0, 100));
    drop(whole);
    // Random spans: the allocated ones are disjoint and within the arena.
    let mut rng = Rng::new(9);
    let mut held: Vec<FrameSpan> = Vec::new();
    for _ in 0..2000 {
        if rng.uniform() < 0.55 {
            if let Some(s) = arena.alloc(1 + (rng.uniform() * 20.0) as usize) {
                assert!(s.at() + s.frames() <= 100);
                for h in &held {
                    assert!(s.at() + s.frames() <= h.at() || h.at() + h.frames() <= s.at(), "overlap");
                }
                held.push(s);
            }
        } else if !held.is_empty() {
            let k = (rng.uniform() * held.len() as f32) as usize % held.len();
            held.swap_remove(k);
        }
        let used: usize = held.iter().map(|s| s.frames()).sum();
        assert_eq!(arena.free_frames(), 100 - used);
    }
    held.clear();
    assert_eq!(arena.alloc(100).map(|s| s.frames()), Some(100));
}

/// The conditioning network `--device cuda` runs on the GPU, here on the CPU
/// (`CondLayout`'s reference of the kernels) over a host arena, so that CI
/// drives the conditioning thread itself: batching, arena spans, waiting
/// for frames to be freed, refusals.
struct CpuBatches {
    lay: dv_gpu::CondLayout,
    arena: Arc<Mutex<Vec<f32>>>,
    frames: usize,
    batches: Arc<Mutex<Vec<usize>>>,
}

impl ConditionBatches for CpuBatches {
    fn input_dim(&self) -> usize {
        self.lay.input_dim
    }
    fn batch_frames(&self) -> usize {
        48
    }
    fn max_batch(&self) -> usize {
        3
    }
    fn arena_frames(&self) -> usize {
        self.frames
    }
    fn run(&mut self, sentences: &[&[f32]], at: &[usize]) -> Result<(), dv_slots::SlotError> {
        let w = self.lay.u_width;
        let mut arena = self.arena.lock().unwrap();
        for (f, &a) in sentences.iter().zip(at) {
            let u = self.lay.u_reference(f);
            arena[a * w..a * w + u.len()].copy_from_slice(&u);
        }
        self.batches.lock().unwrap().push(sentences.len());
        Ok(())
    }
    /// Phases the thread reports as counted: 1, 2, 3 and 4 ms per batch.
    fn phases(&self) -> dv_gpu::CondPhases {
        let b = self.batches.lock().unwrap().len() as f64;
        dv_gpu::CondPhases { staging: 1e-3 * b, upload: 2e-3 * b, products: 3e-3 * b, pooling: 4e-3 * b }
    }
}

#[test]
fn the_conditioning_thread_batches_sentences_into_disjoint_spans_and_waits_for_room() {
    let voice = random_voice(dv_voice::WavenetConfig::preset("20x32x128").unwrap(), 4).unwrap();
    let w = dv_gpu::Weights::from_voice(&voice).unwrap();
    let plan = dv_gpu::MultiPlan::tiles_wg(&w.sizes, 256, 2, 0, false, 227 * 1024).unwrap();
    let lay = dv_gpu::CondLayout::new(&voice, &plan, &w).unwrap();
    let (d, uw) = (lay.input_dim, lay.u_width);
    let frames = 60;
    let arena = Arc::new(Mutex::new(vec![f32::NAN; frames * uw]));
    let batches = Arc::new(Mutex::new(Vec::new()));
    let reference = lay.clone();
    let svc = Arc::new(
        GpuConditioning::spawn(CpuBatches { lay, arena: arena.clone(), frames, batches: batches.clone() }).unwrap(),
    );
    // 16 sentences of 1 to 30 frames (about 4 arenas' worth) from 16 threads at once; each
    // holds its span a moment, as a slot would, then lets go.
    let held = Arc::new(Mutex::new(Vec::<(usize, usize)>::new()));
    let threads: Vec<_> = (0..16)
        .map(|k| {
            let (svc, arena, held, reference) = (svc.clone(), arena.clone(), held.clone(), reference.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(k as u64 + 1);
                let f = 1 + (rng.uniform() * 30.0) as usize % 30;
                let features: Vec<f32> = (0..f * d).map(|_| rng.uniform()).collect();
                let cond = svc.condition(&features).unwrap().blocking_recv().unwrap().unwrap();
                let SlotCond::Device(rows) = &cond else { panic!("host rows from the conditioning thread") };
                let (at, n) = (rows.span.at(), rows.span.frames());
                assert_eq!(n, f);
                {
                    let mut h = held.lock().unwrap();
                    for &(a, m) in h.iter() {
                        assert!(at + n <= a || a + m <= at, "spans {at}+{n} and {a}+{m} overlap");
                    }
                    h.push((at, n));
                }
                let want = reference.u_reference(&features);
                assert_eq!(&arena.lock().unwrap()[at * uw..(at + n) * uw], &want[..], "sentence {k}'s rows");
                std::thread::sleep(Duration::from_millis(20));
                held.lock().unwrap().retain(|&(a, _)| a != at);
                drop(cond);
                f
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let b = batches.lock().unwrap().clone();
    assert_eq!(b.iter().sum::<usize>(), 16, "every sentence ran once: {b:?}");
    // The counters /metrics shows.
    let st = svc.stats();
    let r = std::sync::atomic::Ordering::Relaxed;
    assert_eq!(st.batches.load(r) as usize, b.len());
    assert_eq!((st.sentences.load(r), st.frames.load(r) as usize), (16, total));
    assert_eq!(st.pending.load(r), 0);
    let phases: Vec<u64> = st.phase_us.iter().map(|p| p.load(r)).collect();
    let n = b.len() as u64;
    assert_eq!(phases, [1000 * n, 2000 * n, 3000 * n, 4000 * n], "the network's phases, as /metrics shows them");
    assert!(b.iter().all(|&n| (1..=3).contains(&n)), "batches of at most 3: {b:?}");
    assert_eq!(svc.arena().free_frames(), frames, "every span came back");
    // Refusals: longer than a batch takes, and not whole frames.
    let long = vec![0.5f32; 49 * d];
    let e = svc.condition(&long).unwrap().blocking_recv().unwrap().unwrap_err().to_string();
    assert!(e.contains("49 frames") && e.contains("at most 48"), "{e}");
    assert_eq!(st.pending.load(r), 0, "a refused sentence is not pending");
    assert!(svc.condition(&[0.5; 3]).is_err());
    assert!(svc.condition(&[]).is_err());
}

#[test]
fn the_ramp_grows_a_new_requests_launches_without_an_underrun() {
    let r = Ramp { first: 256, sample_rate: 16384 };
    let (block, p) = (1638, 1.0 / 16384.0);
    assert_eq!(r.steps(None, None, block), 256, "the first launch");
    assert_eq!(r.steps(None, Some(0.5 * p), block), 256, "nothing played yet: the first launch");
    assert_eq!(r.steps(Some(0.01), None, block), 256, "no launch timed yet: as short as the first");
    assert_eq!(r.steps(None, Some(0.9 * p), block), block, "near capacity every launch is a whole block");
    assert_eq!(Ramp { first: 4000, sample_rate: 16384 }.steps(None, None, block), block, "clamped to the block");
    assert_eq!(r.steps(Some(1.0), Some(0.5 * p), block), block, "a second buffered: whole blocks");
    // Launches back to back on a device that takes u of real time per sample: playback starts when
    // the first launch is in, and no later launch is in after its first sample is due; once a
    // launch starts with more than the slack buffered, it is in with the slack to spare.
    for u in [0.05, 0.3, 0.6, 0.8] {
        let c = u * p;
        let (mut sent, mut t, mut launches, mut last) = (0usize, 0.0f64, 0, 0);
        let mut start: Option<f64> = None;
        while sent < 30 * block {
            let ahead = start.map(|t0| sent as f64 * p - (t - t0));
            let b = r.steps(ahead, Some(c), block);
            t += b as f64 * c;
            match (start, ahead) {
                (None, _) => start = Some(t),
                (Some(t0), Some(a)) => {
                    let due = t0 + sent as f64 * p;
                    assert!(t <= due, "u {u}: launch {launches} is late");
                    if a > Ramp::SLACK_S + b as f64 * c * Ramp::MARGIN {
                        assert!(t <= due - Ramp::SLACK_S, "u {u}: launch {launches} ate the slack");
                    }
                }
                (Some(_), None) => unreachable!(),
            }
            sent += b;
            launches += 1;
            last = b;
        }
        assert_eq!(last, block, "u {u}: the launches reach the block");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_first_launches_change_no_sample_and_shorten_the_wait_for_audio() {
    for depth in [1, 2] {
        let v = voice();
        let (sched, log) = ramped(&v, 2, 0, vec![], depth, Some(Ramp { first: 16, sample_rate: 16384 }));
        let a1 = sentence(&v, 400, 41, 100);
        let b1 = sentence(&v, 30, 42, 0);
        let (a, mut a_rx) = sched.join(CancelToken::new()).unwrap();
        a.push(a1.clone()).unwrap();
        a.end().unwrap();
        assert_eq!(a_rx.recv().await, Some(SlotEvent::Assigned));
        let Some(SlotEvent::Audio(first)) = a_rx.recv().await else { panic!("no audio") };
        assert_eq!(first.len(), 16, "depth {depth}: A's first block is the ramp's first launch");
        let mut a_pcm = first;
        // A's launches grow to whole blocks (as fast as its buffered audio allows).
        loop {
            match a_rx.recv().await.unwrap() {
                SlotEvent::Audio(b) => {
                    let whole = b.len() == BLOCK;
                    a_pcm.extend(b);
                    if whole {
                        break;
                    }
                }
                e => panic!("depth {depth}: A's blocks never reached {BLOCK} samples: {e:?}"),
            }
        }
        let before = log.lock().unwrap().len();
        // B joins while A samples whole blocks: the launches shorten again for B, and neither hears a different sample.
        let (b, mut b_rx) = sched.join(CancelToken::new()).unwrap();
        b.push(b1.clone()).unwrap();
        b.end().unwrap();
        let (a_rest, a_done, a_fail) = drain(&mut a_rx).await;
        a_pcm.extend(a_rest);
        let (b_pcm, b_done, b_fail) = drain(&mut b_rx).await;
        assert_eq!((a_done, b_done, a_fail, b_fail), (1, 1, None, None));
        assert_eq!(a_pcm, alone(&v, &a1), "depth {depth}: A's audio changed with short launches");
        assert_eq!(b_pcm, alone(&v, &b1), "depth {depth}: B's audio differs from B alone");
        let steps = launch_steps(&log);
        assert_eq!(steps[0], 16, "depth {depth}: {steps:?}");
        assert!(steps[..before].contains(&BLOCK), "depth {depth}: A's launches reach the block: {steps:?}");
        let b_first = active_launches(&log, 1)[0];
        assert_eq!(steps[b_first], 16, "depth {depth}: B's first launch is short: {steps:?}");
        assert!(sched.stats().short.load(std::sync::atomic::Ordering::Relaxed) >= 2, "depth {depth}");
    }
}
