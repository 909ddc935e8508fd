//! Axis scales and tick positions.

/// A map from data values to pixels: linear, or linear in log10 of the value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
    log: bool,
}

impl Scale {
    /// `lo..hi` (widened to 1-2-5 tick marks; a single value gets a unit
    /// around it) onto pixels `from..to`.
    pub fn linear(lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - 0.5 * lo.abs().max(1.0), hi + 0.5 * hi.abs().max(1.0)) };
        let step = nice_step((hi - lo) / 6.0);
        Scale { lo: (lo / step).floor() * step, hi: (hi / step).ceil() * step, from, to, log: false }
    }

    /// Positive `lo..hi` on a log10 axis, widened to whole decades.
    pub fn log10(lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let (a, b) = (lo.log10().floor(), hi.log10().ceil());
        let b = if b > a { b } else { a + 1.0 };
        Scale { lo: a, hi: b, from, to, log: true }
    }

    /// The pixel of `v`.
    pub fn map(&self, v: f64) -> f64 {
        let u = if self.log { v.log10() } else { v };
        self.from + (u - self.lo) / (self.hi - self.lo) * (self.to - self.from)
    }

    /// The data range shown, `(low, high)`.
    pub fn range(&self) -> (f64, f64) {
        if self.log {
            (10f64.powf(self.lo), 10f64.powf(self.hi))
        } else {
            (self.lo, self.hi)
        }
    }

    /// Tick spacing (linear axes; decades on log axes).
    pub fn step(&self) -> f64 {
        if self.log {
            1.0
        } else {
            nice_step((self.hi - self.lo) / 6.0)
        }
    }

    /// A tick's label: decimals as the step needs on a linear axis, as the
    /// value itself needs on a log axis (0.01, 0.1, 1, 10).
    pub fn tick_label(&self, v: f64) -> String {
        label(v, if self.log { v } else { self.step() })
    }

    /// Tick values, low to high.
    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            let every = ((self.hi - self.lo) / 8.0).ceil().max(1.0);
            let mut out = Vec::new();
            let mut e = self.lo;
            while e <= self.hi + 1e-9 {
                out.push(10f64.powf(e));
                e += every;
            }
            return out;
        }
        ticks(self.lo, self.hi, self.step())
    }
}

/// The 1, 2 or 5 × 10^k at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = if raw > 0.0 && raw.is_finite() { raw } else { 1.0 };
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Multiples of `step` in `lo..=hi`.
pub fn ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A tick label with as many decimals as the step needs.
pub(crate) fn label(v: f64, step: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        return format!("{v:.0e}");
    }
    let decimals = if step >= 1.0 { 0 } else { (-step.log10()).ceil() as usize };
    let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
    format!("{v:.decimals$}")
}
