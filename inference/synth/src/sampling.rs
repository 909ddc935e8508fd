//! Choosing a sample from the output distribution (Deep Voice App. A.4,
//! FORMAT.md "Sampling").
//!
//! * `Direct` (default): with u uniform in `[0, 1)` (one [`Rng::uniform`]
//!   draw), the smallest k with `p_0 + … + p_k > u`, summed in f32 in index
//!   order; if rounding leaves none, the last k with `p_k > 0`.
//! * `Temperature(τ)`: `p^(1/τ)` renormalized, then direct (the mode if
//!   every power underflows to 0, the τ → 0 limit).
//! * `Mean`: `encode(Σ_k p_k · decode(k))`, the mean amplitude re-encoded.
//! * `Mode`: the argmax, lowest index on ties. Draws no random number.
//! * `TopK(k)`: the k largest (lowest index on ties) renormalized, then
//!   direct.
//! * `VoicedTemperature(τ)`: `Temperature(τ)` where the conditioning frame
//!   is voiced, `Direct` elsewhere ([`Sampling::for_frame`]): a cleaner
//!   voiced signal without flattening the noise of fricatives and stops.
//!   Without a voicing mask (a [`crate::Conditioning`] built without one)
//!   every frame counts as voiced.
//!
//! Every mode but `Mode` and `Mean` draws exactly one uniform per sample, so
//! a seed fixes the whole stream.
//!
//! As text (`dv synth --sampling`, [`FromStr`] and [`Display`], which round
//! trip): `direct`, `temperature:T`, `voiced-temperature:T`, `mean`, `mode`
//! or `top-k:K`.

use std::fmt::{self, Display};
use std::str::FromStr;

use dv_audio::mulaw;

use crate::error::SynthError;
use crate::rng::Rng;

/// The size of the output alphabet (8-bit mu-law).
pub const ALPHABET: usize = 256;

/// How to turn a distribution into a sample (App. A.4).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Sampling {
    #[default]
    Direct,
    Temperature(f32),
    VoicedTemperature(f32),
    Mean,
    Mode,
    TopK(usize),
}

impl Sampling {
    /// Rejects a non-positive or non-finite temperature and k outside 1..=256.
    pub fn validate(self) -> Result<Self, SynthError> {
        match self {
            Self::Temperature(t) | Self::VoicedTemperature(t) if !(t.is_finite() && t > 0.0) => {
                Err(SynthError::InvalidOption { what: "temperature", reason: format!("{t} is not a positive number") })
            }
            Self::TopK(k) if k == 0 || k > ALPHABET => {
                Err(SynthError::InvalidOption { what: "top-k", reason: format!("k = {k} is outside 1..={ALPHABET}") })
            }
            s => Ok(s),
        }
    }

    /// The mode for a sample whose conditioning frame is (`voiced`) or is
    /// not voiced: `VoicedTemperature(τ)` is `Temperature(τ)` or `Direct`;
    /// every other mode is itself.
    #[inline]
    pub fn for_frame(self, voiced: bool) -> Self {
        match self {
            Self::VoicedTemperature(t) if voiced => Self::Temperature(t),
            Self::VoicedTemperature(_) => Self::Direct,
            s => s,
        }
    }

    /// One sample from `p` (`[256]`, summing to 1). `work` is scratch of the
    /// same length; nothing is allocated.
    pub fn sample(self, p: &[f32; ALPHABET], rng: &mut Rng, work: &mut [f32; ALPHABET]) -> u8 {
        match self {
            Self::Direct => direct(p, rng.uniform()),
            Self::Mode => mode(p),
            Self::Mean => {
                let m: f32 = p.iter().enumerate().map(|(k, &pk)| pk * mulaw::decode(k as u8)).sum();
                mulaw::encode(m)
            }
            Self::Temperature(t) | Self::VoicedTemperature(t) => {
                let inv = 1.0 / t;
                for (w, &pk) in work.iter_mut().zip(p) {
                    *w = pk.powf(inv);
                }
                if !renormalize(work) {
                    // Every p^(1/τ) underflowed (τ near 0): the limit is the mode.
                    let _ = rng.uniform();
                    return mode(p);
                }
                direct(work, rng.uniform())
            }
            Self::TopK(k) => {
                // The k-th largest value with ties broken towards the lower
                // index: keep index j when fewer than k entries beat it.
                let mut order = [0u8; ALPHABET];
                for (j, o) in order.iter_mut().enumerate() {
                    *o = j as u8;
                }
                order.sort_unstable_by(|&a, &b| p[b as usize].total_cmp(&p[a as usize]).then(a.cmp(&b)));
                work.fill(0.0);
                for &j in &order[..k.min(ALPHABET)] {
                    work[j as usize] = p[j as usize];
                }
                let _ = renormalize(work);
                direct(work, rng.uniform())
            }
        }
    }
}

impl FromStr for Sampling {
    type Err = SynthError;

    /// `direct`, `temperature:T`, `voiced-temperature:T`, `mean`, `mode` or
    /// `top-k:K` (App. A.4),
    /// validated ([`Sampling::validate`]). Errors are
    /// [`SynthError::InvalidOption`] naming `sampling`, or the validation's.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| SynthError::InvalidOption { what: "sampling", reason };
        let (name, arg) = s.split_once(':').map_or((s, None), |(a, b)| (a, Some(b)));
        let value = |what: &str| arg.ok_or_else(|| bad(format!("{name} needs a value: {name}:{what}")));
        let m = match name {
            "direct" => Self::Direct,
            "mean" => Self::Mean,
            "mode" => Self::Mode,
            "temperature" => {
                Self::Temperature(value("T")?.parse::<f32>().map_err(|_| bad(format!("{s}: not a number")))?)
            }
            "voiced-temperature" => {
                Self::VoicedTemperature(value("T")?.parse::<f32>().map_err(|_| bad(format!("{s}: not a number")))?)
            }
            "top-k" => {
                // A whole number written as a float (`top-k:3.0`) is k too.
                let k = value("K")?.parse::<f64>().map_err(|_| bad(format!("{s}: not a number")))?;
                if !(k >= 0.0 && k.fract() == 0.0) {
                    return Err(bad(format!("{s}: k must be a whole number")));
                }
                Self::TopK(k as usize)
            }
            _ => {
                return Err(bad(format!(
                    "{s}: one of direct, temperature:T, voiced-temperature:T, mean, mode, top-k:K"
                )))
            }
        };
        m.validate()
    }
}

impl Display for Sampling {
    /// The spelling [`FromStr`] reads: `direct`, `temperature:T` (the
    /// shortest T that parses back to the same f32), `mean`, `mode`,
    /// `top-k:K`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Direct => f.write_str("direct"),
            Self::Temperature(t) => write!(f, "temperature:{t}"),
            Self::VoicedTemperature(t) => write!(f, "voiced-temperature:{t}"),
            Self::Mean => f.write_str("mean"),
            Self::Mode => f.write_str("mode"),
            Self::TopK(k) => write!(f, "top-k:{k}"),
        }
    }
}

/// Divides by the sum; false (and `w` untouched) when the sum is 0 or not finite.
fn renormalize(w: &mut [f32; ALPHABET]) -> bool {
    let z: f32 = w.iter().sum();
    if !(z > 0.0 && z.is_finite()) {
        return false;
    }
    let inv = 1.0 / z;
    for v in w.iter_mut() {
        *v *= inv;
    }
    true
}

/// The smallest k with `p_0 + … + p_k > u`, else the last k with `p_k > 0`
/// (0 if none).
pub fn direct(p: &[f32; ALPHABET], u: f32) -> u8 {
    let mut c = 0.0f32;
    for (k, &pk) in p.iter().enumerate() {
        c += pk;
        if c > u {
            return k as u8;
        }
    }
    p.iter().rposition(|&pk| pk > 0.0).unwrap_or(0) as u8
}

/// The argmax of `p`, lowest index on ties.
pub fn mode(p: &[f32; ALPHABET]) -> u8 {
    let mut best = 0;
    for (k, &pk) in p.iter().enumerate() {
        if pk > p[best] {
            best = k;
        }
    }
    best as u8
}
