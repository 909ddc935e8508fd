//! The server's counters in Prometheus text format (version 0.0.4), written
//! by hand: a few counters, gauges and two histograms need no crate.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use dv_slots::{CondStats, SlotStats};

/// Seconds from the request's arrival to its first audio byte.
const TTFA_BUCKETS: [f64; 12] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0];
/// Render seconds per second of audio (below 1 is faster than real time).
const RTF_BUCKETS: [f64; 10] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0];

#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Self { bounds, counts: vec![0; bounds.len()], sum: 0.0, count: 0 }
    }

    fn observe(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        for (c, &b) in self.counts.iter_mut().zip(self.bounds) {
            if v <= b {
                *c += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }

    fn write(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (c, b) in self.counts.iter().zip(self.bounds) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {c}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum {}", self.sum);
        let _ = writeln!(out, "{name}_count {}", self.count);
    }
}

/// Everything `/metrics` reports. Shared by the handlers and the render
/// threads.
#[derive(Debug)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    ttfa: Mutex<Histogram>,
    rtf: Mutex<Histogram>,
    /// Requests admitted and waiting for a worker.
    pub(crate) queued: AtomicI64,
    /// Renders running on a worker.
    pub(crate) rendering: AtomicI64,
    /// Responses whose body is being sent.
    pub(crate) streams: AtomicI64,
    cancelled: AtomicU64,
    /// Microseconds of audio rendered.
    audio_us: AtomicU64,
    pub(crate) voices_loaded: AtomicI64,
    /// Every slot scheduler's counters (one per loaded voice, on slots).
    slots: Mutex<Vec<Weak<SlotStats>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Mutex::default(),
            ttfa: Mutex::new(Histogram::new(&TTFA_BUCKETS)),
            rtf: Mutex::new(Histogram::new(&RTF_BUCKETS)),
            queued: AtomicI64::new(0),
            rendering: AtomicI64::new(0),
            streams: AtomicI64::new(0),
            cancelled: AtomicU64::new(0),
            audio_us: AtomicU64::new(0),
            voices_loaded: AtomicI64::new(0),
            slots: Mutex::default(),
        }
    }
}

impl Metrics {
    pub(crate) fn request(&self, endpoint: &'static str, status: u16) {
        let mut m = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry((endpoint, status)).or_default() += 1;
    }

    pub(crate) fn first_audio(&self, seconds: f64) {
        self.ttfa.lock().unwrap_or_else(|e| e.into_inner()).observe(seconds);
    }

    /// A finished render: its audio and the seconds it took.
    pub(crate) fn rendered(&self, samples: usize, rate: u32, seconds: f64) {
        let rate = rate.max(1) as f64;
        self.audio_us.fetch_add((samples as f64 / rate * 1e6) as u64, Ordering::Relaxed);
        if samples > 0 {
            let rtf = seconds / (samples as f64 / rate);
            self.rtf.lock().unwrap_or_else(|e| e.into_inner()).observe(rtf);
        }
    }

    /// A voice's slot scheduler, reported until it is dropped.
    pub(crate) fn add_slots(&self, stats: Arc<SlotStats>) {
        let mut v = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        v.retain(|w| w.strong_count() > 0);
        v.push(Arc::downgrade(&stats));
    }

    pub(crate) fn cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    /// Renders cancelled because the client went away, stalled, or the
    /// server shut down.
    pub fn cancelled_renders(&self) -> u64 {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP dv_serve_requests_total Requests answered, by endpoint and status.\n\
             # TYPE dv_serve_requests_total counter"
        );
        for ((endpoint, status), n) in self.requests.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = writeln!(out, "dv_serve_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}} {n}");
        }
        self.ttfa.lock().unwrap_or_else(|e| e.into_inner()).write(
            &mut out,
            "dv_serve_time_to_first_audio_seconds",
            "Seconds from a speech request's arrival to its first audio byte.",
        );
        self.rtf.lock().unwrap_or_else(|e| e.into_inner()).write(
            &mut out,
            "dv_serve_real_time_factor",
            "Render seconds per second of audio of each finished request (below 1: faster than real time).",
        );
        let gauges = [
            ("dv_serve_queue_depth", "Admitted requests waiting for a worker.", self.queued.load(Ordering::Relaxed)),
            ("dv_serve_rendering", "Renders running on a worker.", self.rendering.load(Ordering::Relaxed)),
            ("dv_serve_active_streams", "Responses being sent.", self.streams.load(Ordering::Relaxed)),
            ("dv_serve_voices_loaded", "Voice packages in the cache.", self.voices_loaded.load(Ordering::Relaxed)),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        self.render_slots(&mut out);
        let _ = writeln!(
            out,
            "# HELP dv_serve_renders_cancelled_total Renders stopped early (client gone or stalled, shutdown).\n\
             # TYPE dv_serve_renders_cancelled_total counter\n\
             dv_serve_renders_cancelled_total {}\n\
             # HELP dv_serve_audio_seconds_total Seconds of audio rendered.\n\
             # TYPE dv_serve_audio_seconds_total counter\n\
             dv_serve_audio_seconds_total {}",
            self.cancelled.load(Ordering::Relaxed),
            self.audio_us.load(Ordering::Relaxed) as f64 / 1e6
        );
        out
    }

    /// The slot schedulers' sums (absent on the worker pool).
    fn render_slots(&self, out: &mut String) {
        let live: Vec<Arc<SlotStats>> =
            self.slots.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect();
        if live.is_empty() {
            return;
        }
        let sum = |f: &dyn Fn(&SlotStats) -> u64| live.iter().map(|s| f(s)).sum::<u64>();
        let r = Ordering::Relaxed;
        let gauges = [
            ("dv_serve_slots", "Slots of the voices' multi-stream samplers.", sum(&|s| s.slots.load(r) as u64)),
            ("dv_serve_slots_busy", "Slots held by a request.", sum(&|s| s.busy.load(r) as u64)),
            ("dv_serve_slots_sampling", "Slots sampling in the last launch.", sum(&|s| s.sampling.load(r) as u64)),
            ("dv_serve_slots_waiting", "Requests waiting for a free slot.", sum(&|s| s.waiting.load(r) as u64)),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let _ = writeln!(
            out,
            "# HELP dv_serve_slot_launches_total Launches of the multi-stream samplers.\n\
             # TYPE dv_serve_slot_launches_total counter\n\
             dv_serve_slot_launches_total {}\n\
             # HELP dv_serve_slot_launch_seconds_total Seconds the launches took (host and device).\n\
             # TYPE dv_serve_slot_launch_seconds_total counter\n\
             dv_serve_slot_launch_seconds_total {}\n\
             # HELP dv_serve_slot_samples_total Samples the slots produced.\n\
             # TYPE dv_serve_slot_samples_total counter\n\
             dv_serve_slot_samples_total {}\n\
             # HELP dv_serve_slot_leaves_total Requests that left their slot before their last sample.\n\
             # TYPE dv_serve_slot_leaves_total counter\n\
             dv_serve_slot_leaves_total {}",
            sum(&|s| s.launches.load(r)),
            sum(&|s| s.launch_us.load(r)) as f64 / 1e6,
            sum(&|s| s.samples.load(r)),
            sum(&|s| s.left.load(r)),
        );
        let seconds = [
            ("stage", "Host seconds filling launches' conditioning windows (page-locked, while the launch before runs).", sum(&|s| s.stage_us.load(r))),
            ("upload", "Device seconds preparing launches' windows on the copy stream: copied from the host, or projected from the GPU conditioning arena.", sum(&|s| s.upload_us.load(r))),
            ("kernel", "Device seconds in the sampling kernel (CPU slots: sampling).", sum(&|s| s.kernel_us.load(r))),
            ("download", "Device seconds copying launches' codes back.", sum(&|s| s.download_us.load(r))),
            ("gap", "Device idle seconds between back-to-back launches: the kernel waiting for the host.", sum(&|s| s.gap_us.load(r))),
            ("wait", "Scheduler seconds blocked waiting for a launch's codes.", sum(&|s| s.wait_us.load(r))),
            ("scheduler_busy", "Scheduler seconds working while launches were in flight (commands, starts, staging, handing out audio).", sum(&|s| s.busy_us.load(r))),
        ];
        for (what, help, us) in seconds {
            let name = format!("dv_serve_slot_{what}_seconds_total");
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", us as f64 / 1e6);
        }
        let name = "dv_serve_slot_starved_total";
        let _ = writeln!(
            out,
            "# HELP {name} Slot-launches lost: slots held by a request with nothing to sample yet (conditioning not ready).\n# TYPE {name} counter\n{name} {}",
            sum(&|s| s.starved.load(r))
        );
        let name = "dv_serve_slot_short_launches_total";
        let _ = writeln!(
            out,
            "# HELP {name} Launches shorter than the block: new requests' first launches while the device had room (--first-block).\n# TYPE {name} counter\n{name} {}",
            sum(&|s| s.short.load(r))
        );
        // The GPU conditioning networks (absent when the CPU runs it).
        let cond: Vec<&Arc<CondStats>> = live.iter().filter_map(|s| s.conditioning.as_ref()).collect();
        if cond.is_empty() {
            return;
        }
        let csum = |f: &dyn Fn(&CondStats) -> u64| cond.iter().map(|c| f(c)).sum::<u64>();
        let counters = [
            (
                "dv_serve_conditioning_batches_total",
                "Batches the GPU conditioning networks ran.",
                csum(&|c| c.batches.load(r)) as f64,
            ),
            ("dv_serve_conditioning_sentences_total", "Sentences in them.", csum(&|c| c.sentences.load(r)) as f64),
            ("dv_serve_conditioning_frames_total", "Frames in them.", csum(&|c| c.frames.load(r)) as f64),
            (
                "dv_serve_conditioning_seconds_total",
                "Seconds running them (host clock, launch to finish).",
                csum(&|c| c.run_us.load(r)) as f64 / 1e6,
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        }
        let name = "dv_serve_conditioning_phase_seconds_total";
        let _ = writeln!(
            out,
            "# HELP {name} Of those seconds: host staging of the features, then on the device their upload, the QRNN products and the pooling (waits for the sampling kernel's multiprocessors included).\n# TYPE {name} counter"
        );
        for (i, phase) in ["staging", "upload", "products", "pooling"].iter().enumerate() {
            let _ = writeln!(out, "{name}{{phase=\"{phase}\"}} {}", csum(&|c| c.phase_us[i].load(r)) as f64 / 1e6);
        }
        let gauges = [
            (
                "dv_serve_conditioning_pending",
                "Sentences waiting for a batch or for arena room.",
                csum(&|c| c.pending.load(r) as u64),
            ),
            (
                "dv_serve_conditioning_arena_frames",
                "Frames of the arenas of conditioning rows.",
                csum(&|c| c.arena.frames() as u64),
            ),
            (
                "dv_serve_conditioning_arena_free_frames",
                "Frames of them free now.",
                csum(&|c| c.arena.free_frames() as u64),
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
    }
}
