//! The server's counters in Prometheus text format (version 0.0.4), written
//! by hand: a few counters, gauges and two histograms need no crate.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

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
}
