//! One conformance harness, written once, that every backend family runs
//! (issue 33, "GPU code under tests"): the WaveNet samplers (CPU scalar,
//! AVX2/FMA, CUDA; `inference/gpu/tests/it/conformance.rs`), the aligners
//! (CPU, CUDA; `trainers/align/tests/it/conformance.rs`) and the fused
//! training gate (libtorch on the CPU, CUDA;
//! `trainers/fused/tests/it/conformance.rs`).
//!
//! # The contract
//!
//! * A [`Suite`] is a family's list of backends, built at run time: the CPU
//!   backends always, a CUDA backend when a device is present. A backend
//!   that cannot run here is listed with the reason
//!   ([`Suite::skip`], e.g. `"no CUDA device"`) and reported, never dropped
//!   silently.
//! * [`Suite::run`] runs every case on every backend. A case's check returns
//!   [`Measure`]s (each a measured value and the limit it must not exceed)
//!   or an [`Outcome::NotApplicable`] reason (a size a kernel does not take,
//!   by its own typed refusal); an `Err` is a failure. The error is the
//!   family's own type ([`Checked`]`<E>`, any `E: Display`, e.g. the
//!   backend crate's error enum): the harness only reports its message.
//! * [`Report::assert_passed`] panics naming every failed measure, and also
//!   when no case was checked at all (a suite that checks nothing cannot
//!   fail, so it fails).
//! * Every line is printed as it is measured
//!   (`conformance <family> <backend> <case>: …`), and a skipped backend
//!   prints `conformance <family> <backend>: skipped: <reason>`. Cargo shows
//!   them with `--nocapture` (what `benchmarks/conformance/gpu.sh` runs).
//!
//! # Comparisons
//!
//! [`Tolerance`] is `|got − want| ≤ abs + rel · |want|` per element;
//! [`Measure::close`] reports the largest |Δ| and the worst ratio of |Δ| to
//! what was allowed (≤ 1 passes). A NaN or an infinity where the reference
//! is finite is an infinite ratio: it fails (a plain `f64::max` fold would
//! drop a NaN). [`Measure::count`] is for exact comparisons (mismatched
//! samples, illegal path steps).
#![forbid(unsafe_code)]

use std::fmt;

/// `|got − want| ≤ abs + rel · |want|`, per element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

impl Tolerance {
    /// Only an absolute bound.
    pub const fn abs(abs: f64) -> Self {
        Self { abs, rel: 0.0 }
    }

    /// Equality (for values that must be bit-identical).
    pub const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };
}

/// One measured quantity of a case and the limit it must not exceed.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// What was measured (`"p"`, `"mode mismatches"`, …).
    pub what: String,
    /// The value judged against `limit`: the worst |Δ|/allowed ratio for
    /// [`Measure::close`], the count for [`Measure::count`].
    pub value: f64,
    pub limit: f64,
    /// How `value` came about, for the report.
    pub detail: String,
}

impl Measure {
    /// Element-wise closeness of `got` to `want` under `tol`; a length
    /// difference is an infinite ratio.
    pub fn close(what: impl Into<String>, got: &[f64], want: &[f64], tol: Tolerance) -> Measure {
        let mut max_abs = 0.0f64;
        let mut worst = 0.0f64;
        for (&g, &w) in got.iter().zip(want) {
            let d = (g - w).abs();
            let ratio = if g == w {
                0.0
            } else if d.is_nan() || d.is_infinite() {
                f64::INFINITY
            } else {
                let allowed = tol.abs + tol.rel * w.abs();
                if allowed > 0.0 {
                    d / allowed
                } else {
                    f64::INFINITY
                }
            };
            max_abs = if d.is_nan() { f64::INFINITY } else { max_abs.max(d) };
            worst = worst.max(ratio);
        }
        if got.len() != want.len() {
            worst = f64::INFINITY;
        }
        let detail = if got.len() != want.len() {
            format!("{} values against {} in the reference", got.len(), want.len())
        } else {
            let rel = if tol.rel > 0.0 { format!(" + {:.0e}·|ref|", tol.rel) } else { String::new() };
            format!("max |Δ| {max_abs:.2e} (allowed {:.0e}{rel})", tol.abs)
        };
        Measure { what: what.into(), value: worst, limit: 1.0, detail }
    }

    /// [`Measure::close`] for `f32` outputs.
    pub fn close_f32(what: impl Into<String>, got: &[f32], want: &[f64], tol: Tolerance) -> Measure {
        let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
        Measure::close(what, &got, want, tol)
    }

    /// A count (of mismatches, illegal steps, …) that must not exceed `allowed`.
    pub fn count(what: impl Into<String>, count: usize, allowed: usize, of: usize) -> Measure {
        Measure {
            what: what.into(),
            value: count as f64,
            limit: allowed as f64,
            detail: format!("{count} of {of} (allowed {allowed})"),
        }
    }

    /// Positions where `got` and `want` differ, plus the length difference.
    pub fn mismatches<T: PartialEq>(what: impl Into<String>, got: &[T], want: &[T]) -> Measure {
        let n = got.iter().zip(want).filter(|(a, b)| a != b).count() + got.len().abs_diff(want.len());
        Measure::count(what, n, 0, want.len())
    }

    pub fn passed(&self) -> bool {
        self.value <= self.limit
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "ok" } else { "FAIL" };
        write!(f, "{} {} ({})", self.what, verdict, self.detail)
    }
}

/// What one case gave on one backend.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Compared; passed when every measure did.
    Measured(Vec<Measure>),
    /// The backend refuses this case by design (a size its kernel does not take).
    NotApplicable(String),
    /// The backend is not available on this machine.
    Skipped(String),
    /// The backend returned an error, or a case produced no measure.
    Error(String),
}

impl Outcome {
    pub fn failed(&self) -> bool {
        match self {
            Outcome::Measured(m) => m.is_empty() || m.iter().any(|m| !m.passed()),
            Outcome::Error(_) => true,
            Outcome::NotApplicable(_) | Outcome::Skipped(_) => false,
        }
    }
}

/// What a case's check returns: measures, a refusal by design, or the
/// error `E` (the family's own error type) that stopped it: a failure,
/// reported as [`Outcome::Error`] with `E`'s message.
pub type Checked<E> = Result<Outcome, E>;

/// A backend of a [`Suite`]: one that runs here, or why it cannot.
enum Availability<B> {
    Ready(B),
    Skipped { reason: String },
}

/// A family's backends, each ready or skipped with a reason.
pub struct Suite<B> {
    family: String,
    backends: Vec<(String, Availability<B>)>,
}

impl<B> Suite<B> {
    pub fn new(family: impl Into<String>) -> Self {
        Self { family: family.into(), backends: Vec::new() }
    }

    /// A backend that runs here.
    pub fn backend(mut self, name: impl Into<String>, b: B) -> Self {
        self.backends.push((name.into(), Availability::Ready(b)));
        self
    }

    /// A backend that cannot run here, and why (printed).
    pub fn skip(mut self, name: impl Into<String>, reason: impl Into<String>) -> Self {
        self.backends.push((name.into(), Availability::Skipped { reason: reason.into() }));
        self
    }

    /// [`Suite::backend`] or [`Suite::skip`] as `b` says: `Err`'s message
    /// is the reason.
    pub fn backend_or_skip<E: fmt::Display>(self, name: impl Into<String>, b: Result<B, E>) -> Self {
        match b {
            Ok(b) => self.backend(name, b),
            Err(reason) => self.skip(name, reason.to_string()),
        }
    }

    /// The names of the backends that run here.
    pub fn ready(&self) -> Vec<&str> {
        self.backends.iter().filter(|(_, b)| matches!(b, Availability::Ready(_))).map(|(n, _)| n.as_str()).collect()
    }

    /// Runs every case on every ready backend, printing each line; a
    /// skipped backend gets one line and one [`Outcome::Skipped`] entry.
    pub fn run<C, E: fmt::Display>(
        &self,
        cases: &[C],
        name: impl Fn(&C) -> String,
        check: impl Fn(&B, &C) -> Checked<E>,
    ) -> Report {
        let mut lines = Vec::new();
        for (backend, b) in &self.backends {
            let b = match b {
                Availability::Ready(b) => b,
                Availability::Skipped { reason } => {
                    println!("conformance {} {backend}: skipped: {reason}", self.family);
                    lines.push(Line {
                        backend: backend.clone(),
                        case: "*".into(),
                        outcome: Outcome::Skipped(reason.clone()),
                    });
                    continue;
                }
            };
            for c in cases {
                let case = name(c);
                let outcome = check(b, c).unwrap_or_else(|e| Outcome::Error(e.to_string()));
                let line = Line { backend: backend.clone(), case, outcome };
                println!("conformance {} {line}", self.family);
                lines.push(line);
            }
        }
        Report { family: self.family.clone(), lines }
    }
}

/// One backend × case result.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub backend: String,
    pub case: String,
    pub outcome: Outcome,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.backend, self.case)?;
        match &self.outcome {
            Outcome::Measured(m) if m.is_empty() => write!(f, "FAIL (nothing measured)"),
            Outcome::Measured(m) => {
                let parts: Vec<String> = m.iter().map(|m| m.to_string()).collect();
                write!(f, "{}", parts.join("; "))
            }
            Outcome::NotApplicable(why) => write!(f, "not applicable: {why}"),
            Outcome::Skipped(why) => write!(f, "skipped: {why}"),
            Outcome::Error(e) => write!(f, "FAIL (error: {e})"),
        }
    }
}

/// Every line of one [`Suite::run`].
#[derive(Debug, Clone)]
pub struct Report {
    pub family: String,
    pub lines: Vec<Line>,
}

impl Report {
    pub fn failures(&self) -> Vec<&Line> {
        self.lines.iter().filter(|l| l.outcome.failed()).collect()
    }

    /// Cases compared (measured) on `backend`.
    pub fn measured(&self, backend: &str) -> usize {
        self.lines.iter().filter(|l| l.backend == backend && matches!(l.outcome, Outcome::Measured(_))).count()
    }

    /// Panics naming every failure, or when nothing was measured at all.
    pub fn assert_passed(&self) {
        let failures = self.failures();
        let measured = self.lines.iter().filter(|l| matches!(l.outcome, Outcome::Measured(_))).count();
        let listed: Vec<String> = failures.iter().map(|l| format!("  {l}")).collect();
        assert!(
            failures.is_empty(),
            "conformance {}: {} failure(s):\n{}",
            self.family,
            failures.len(),
            listed.join("\n")
        );
        assert!(measured > 0, "conformance {}: no case was measured on any backend", self.family);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// A toy family: a sum, the reference in f64, one exact backend and one
    /// perturbed by a relative 1e-3 in one element.
    fn sums(perturb: bool) -> Report {
        let suite = Suite::new("toy")
            .backend("exact", false)
            .backend_or_skip("perturbed", if perturb { Ok(true) } else { Err("not asked for") })
            .skip("cuda", "no CUDA device");
        let cases = [3usize, 1, 8];
        suite.run(
            &cases,
            |n| format!("n={n}"),
            |&bad, &n| -> Checked<Infallible> {
                let want: Vec<f64> = (0..n).map(|i| (i as f64).sqrt()).collect();
                let mut got: Vec<f32> = want.iter().map(|&v| v as f32).collect();
                if bad {
                    got[n - 1] *= 1.001;
                }
                Ok(Outcome::Measured(vec![Measure::close_f32("v", &got, &want, Tolerance { abs: 1e-6, rel: 1e-6 })]))
            },
        )
    }

    #[test]
    fn a_perturbed_backend_is_caught_and_named() {
        let r = sums(true);
        let f = r.failures();
        // n = 1: sqrt(0) · 1.001 is still 0; the other two cases fail.
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().all(|l| l.backend == "perturbed"));
        let panic = std::panic::catch_unwind(|| r.assert_passed()).unwrap_err();
        let msg = panic.downcast_ref::<String>().unwrap();
        assert!(msg.contains("perturbed n=3") && msg.contains("FAIL"), "{msg}");
    }

    #[test]
    fn skipped_backends_are_reported_and_do_not_fail() {
        let r = sums(false);
        r.assert_passed();
        assert_eq!(r.measured("exact"), 3);
        let skipped: Vec<&Line> = r.lines.iter().filter(|l| matches!(l.outcome, Outcome::Skipped(_))).collect();
        assert_eq!(skipped.len(), 2);
        assert_eq!(skipped[1].to_string(), "cuda *: skipped: no CUDA device");
    }

    #[test]
    fn nan_infinity_and_length_fail_where_max_would_hide_them() {
        let tol = Tolerance::abs(1.0);
        assert!(!Measure::close("nan", &[f64::NAN, 0.0], &[0.0, 0.0], tol).passed());
        assert!(!Measure::close("inf", &[f64::INFINITY], &[0.0], tol).passed());
        assert!(!Measure::close("short", &[0.0], &[0.0, 0.0], tol).passed());
        assert!(Measure::close("same inf", &[f64::NEG_INFINITY], &[f64::NEG_INFINITY], Tolerance::EXACT).passed());
        assert!(!Measure::close("exact", &[1.0 + 1e-15], &[1.0], Tolerance::EXACT).passed());
        let rel = Tolerance { abs: 0.0, rel: 1e-3 };
        assert!(Measure::close("rel", &[1000.9], &[1000.0], rel).passed());
        assert!(!Measure::close("rel", &[1001.1], &[1000.0], rel).passed());
        assert_eq!(Measure::mismatches("m", &[1, 2, 3], &[1, 0, 3, 4]).value, 2.0);
    }

    #[test]
    fn a_suite_that_measures_nothing_fails() {
        let suite: Suite<()> = Suite::new("empty").skip("cuda", "no CUDA device");
        let r = suite.run(&[1], |_| "c".into(), |_, _| Checked::<Infallible>::Ok(Outcome::Measured(vec![])));
        assert!(std::panic::catch_unwind(|| r.assert_passed()).is_err());
        let r = Suite::new("nothing").backend("cpu", ()).run(
            &[1],
            |_| "c".into(),
            |_, _| Checked::<Infallible>::Ok(Outcome::Measured(vec![])),
        );
        assert_eq!(r.failures().len(), 1, "a case with no measure is a failure");
        let r = Suite::new("errors").backend("cpu", ()).run(&[1], |_| "c".into(), |_, _| Err("boom"));
        assert_eq!(r.failures()[0].to_string(), "cpu c: FAIL (error: boom)");
    }
}
