//! The fused-gate conformance suite (issue 33): the WaveNet gate with its
//! conditioning, forward and backward (`kernels/gate.cu`), on every backend
//! this machine has, each against an f64 oracle written here from the
//! kernel's stated arithmetic, through `dv-conformance`'s harness.
//!
//! Backends: `cpu-libtorch` (the gate as libtorch operations on the CPU,
//! the arithmetic `dv-train`'s `Gate::Reference` runs) always; `cuda-fused`
//! (`GateKernels` on `cuda:0`) when libtorch sees a CUDA device and the
//! kernels load, else it prints `skipped: no CUDA device …`. Each in float32
//! and in bfloat16 storage (inputs rounded to bfloat16 before the oracle
//! reads them).
//!
//! Bounds per element (`|Δ| ≤ abs + rel · |oracle|`): float32 z and gp
//! `1e-5 + 1e-5·|ref|`; bfloat16 z and gp one unit in the last place
//! (`2^-7·|ref|`, plus `2^-24`); gl, float32 sums over a frame's `hop`
//! samples, `1e-4` · the largest |gl| (at least `1e-4`).

use dv_conformance::{Checked, Measure, Outcome, Report, Suite, Tolerance};
use dv_fused::{cuda_available, GateKernels, GateShape};
use dv_torch::tch;
use dv_torch::tch::{Device, Kind, Tensor};

enum Backend {
    Cpu,
    Cuda(GateKernels),
    /// The libtorch gate with the sigmoid half's bias read 1e-3 too high: must fail.
    Perturbed,
}

struct Case {
    name: &'static str,
    shape: GateShape,
    kind: Kind,
}

fn cases() -> Vec<Case> {
    let s = |r, batch, hop, frames| GateShape { r, batch, hop, frames };
    let mut v = Vec::new();
    for kind in [Kind::Float, Kind::BFloat16] {
        let k = if kind == Kind::Float { "f32" } else { "bf16" };
        v.extend([
            // The shipped voice: r = 64, hop 64.
            Case { name: leak(format!("shipped r=64 hop=64, batch 3, 5 frames, {k}")), shape: s(64, 3, 64, 5), kind },
            Case { name: leak(format!("r=32 hop=64, batch 2, 3 frames, {k}")), shape: s(32, 2, 64, 3), kind },
            Case { name: leak(format!("r=256 hop=16, batch 1, 2 frames, {k}")), shape: s(256, 1, 16, 2), kind },
            Case { name: leak(format!("odd r=33 hop=7, batch 1, 3 frames, {k}")), shape: s(33, 1, 7, 3), kind },
            Case { name: leak(format!("r=1 hop=1, batch 1, 1 frame, {k}")), shape: s(1, 1, 1, 1), kind },
        ]);
    }
    v
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Seeded values in `[-scale, scale)`.
fn uniform(rng: &mut dv_util::SplitMix64, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale).collect()
}

/// The inputs, as stored in `kind` and read back as f32 (what the oracle sees).
struct Inputs {
    p: Vec<f32>,
    l: Vec<f32>,
    bias: Vec<f32>,
    gz: Vec<f32>,
}

fn inputs(s: GateShape, kind: Kind) -> Result<Inputs, String> {
    let (rows, fb, r) = ((s.rows()) as usize, (s.frames * s.batch) as usize, s.r as usize);
    let mut rng = dv_util::SplitMix64::new(1234 + r as u64);
    let stored = |v: Vec<f32>| -> Result<Vec<f32>, String> {
        let t =
            Tensor::from_slice(&v).f_to_kind(kind).and_then(|t| t.f_to_kind(Kind::Float)).map_err(|e| e.to_string())?;
        Vec::<f32>::try_from(&t).map_err(|e| e.to_string())
    };
    Ok(Inputs {
        p: stored(uniform(&mut rng, rows * 2 * r, 3.0))?,
        l: stored(uniform(&mut rng, fb * 2 * r, 1.5))?,
        bias: stored(uniform(&mut rng, 2 * r, 0.3))?,
        gz: stored(uniform(&mut rng, rows * r, 1.0))?,
    })
}

/// The oracle in f64: `z [rows, r]`, `gp [rows, 2r]`, `gl [frames · batch, 2r]`.
fn oracle(s: GateShape, x: &Inputs) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (rows, r, batch, hop) = (s.rows() as usize, s.r as usize, s.batch as usize, s.hop as usize);
    let mut z = vec![0.0; rows * r];
    let mut gp = vec![0.0; rows * 2 * r];
    let mut gl = vec![0.0; (s.frames * s.batch) as usize * 2 * r];
    for row in 0..rows {
        let (t, b) = (row / batch, row % batch);
        let f = (t / hop) * batch + b;
        for c in 0..r {
            let a = (x.p[row * 2 * r + c] as f64 + x.l[f * 2 * r + c] as f64 + x.bias[c] as f64).tanh();
            let sg = 1.0
                / (1.0
                    + (-(x.p[row * 2 * r + r + c] as f64 + x.l[f * 2 * r + r + c] as f64 + x.bias[r + c] as f64))
                        .exp());
            let g = x.gz[row * r + c] as f64;
            z[row * r + c] = a * sg;
            let (ga, gb) = (g * sg * (1.0 - a * a), g * a * sg * (1.0 - sg));
            gp[row * 2 * r + c] = ga;
            gp[row * 2 * r + r + c] = gb;
            gl[f * 2 * r + c] += ga;
            gl[f * 2 * r + r + c] += gb;
        }
    }
    (z, gp, gl)
}

fn tensor(v: &[f32], shape: &[i64], kind: Kind, device: Device) -> Result<Tensor, tch::TchError> {
    Tensor::from_slice(v).f_view(shape)?.f_to_kind(kind)?.f_to_device(device)
}

fn values(t: &Tensor) -> Result<Vec<f32>, String> {
    let t = t.f_to_kind(Kind::Float).and_then(|t| t.f_to_device(Device::Cpu)).and_then(|t| t.f_flatten(0, -1));
    Vec::<f32>::try_from(&t.map_err(|e| e.to_string())?).map_err(|e| e.to_string())
}

/// The gate as libtorch operations (as `dv-train`'s reference computes it): `[z, gp, gl]`.
fn libtorch_gate(
    s: GateShape,
    p: &Tensor,
    l: &Tensor,
    bias: &Tensor,
    gz: &Tensor,
    kind: Kind,
) -> Result<[Tensor; 3], tch::TchError> {
    let r = s.r;
    let lb = l.f_to_kind(Kind::Float)?.f_add(&bias.f_to_kind(Kind::Float)?)?.f_view([s.frames, 1, s.batch, 2 * r])?;
    let h = p.f_to_kind(Kind::Float)?.f_view([s.frames, s.hop, s.batch, 2 * r])?.f_add(&lb)?;
    let halves = h.f_chunk(2, 3)?;
    let (ta, sb) = (halves[0].f_tanh()?, halves[1].f_sigmoid()?);
    let z = ta.f_mul(&sb)?.f_reshape([s.rows(), r])?.f_to_kind(kind)?;
    let g = gz.f_to_kind(Kind::Float)?.f_reshape([s.frames, s.hop, s.batch, r])?;
    let ga = g.f_mul(&sb)?.f_mul(&ta.f_square()?.f_neg()?.f_add_scalar(1.0)?)?;
    let gb = g.f_mul(&ta)?.f_mul(&sb)?.f_mul(&sb.f_neg()?.f_add_scalar(1.0)?)?;
    let both = Tensor::f_cat(&[ga, gb], 3)?; // [F, hop, batch, 2r]
    let gp = both.f_reshape([s.rows(), 2 * r])?.f_to_kind(kind)?;
    let gl = both.f_sum_dim_intlist(1, false, Kind::Float)?.f_reshape([s.frames * s.batch, 2 * r])?;
    Ok([z, gp, gl])
}

fn check(b: &Backend, c: &Case) -> Checked<String> {
    let (s, kind) = (c.shape, c.kind);
    let x = inputs(s, kind)?;
    let (rows, fb, r) = (s.rows(), s.frames * s.batch, s.r);
    let device = if matches!(b, Backend::Cuda(_)) { Device::Cuda(0) } else { Device::Cpu };
    let e = |e: tch::TchError| e.to_string();
    let p = tensor(&x.p, &[rows, 2 * r], kind, device).map_err(e)?;
    let l = tensor(&x.l, &[fb, 2 * r], kind, device).map_err(e)?;
    let mut bias_v = x.bias.clone();
    if matches!(b, Backend::Perturbed) {
        bias_v[r as usize] += 1e-3;
    }
    let bias = tensor(&bias_v, &[2 * r], kind, device).map_err(e)?;
    let gz = tensor(&x.gz, &[rows, r], kind, device).map_err(e)?;
    let [z, gp, gl] = match b {
        Backend::Cpu | Backend::Perturbed => libtorch_gate(s, &p, &l, &bias, &gz, kind).map_err(e)?,
        Backend::Cuda(k) => {
            let z = Tensor::f_zeros([rows, r], (kind, device)).map_err(e)?;
            let gp = Tensor::f_zeros([rows, 2 * r], (kind, device)).map_err(e)?;
            let gl = Tensor::f_zeros([fb, 2 * r], (Kind::Float, device)).map_err(e)?;
            k.forward(s, &p, &l, &bias, &z).map_err(|e| e.to_string())?;
            k.backward(s, &p, &l, &bias, &gz, &gp, &gl).map_err(|e| e.to_string())?;
            [z, gp, gl]
        }
    };
    let (wz, wgp, wgl) = oracle(s, &x);
    let out = if kind == Kind::Float {
        Tolerance { abs: 1e-5, rel: 1e-5 }
    } else {
        Tolerance { abs: 2f64.powi(-24), rel: 2f64.powi(-7) }
    };
    let gl_scale = wgl.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1.0);
    Ok(Outcome::Measured(vec![
        Measure::close_f32("z", &values(&z)?, &wz, out),
        Measure::close_f32("gp", &values(&gp)?, &wgp, out),
        Measure::close_f32("gl", &values(&gl)?, &wgl, Tolerance::abs(1e-4 * gl_scale)),
    ]))
}

fn run(suite: &Suite<Backend>) -> Report {
    suite.run(&cases(), |c| c.name.to_string(), check)
}

#[test]
fn every_gate_conforms_to_the_f64_oracle() {
    let suite = Suite::new("fused gate").backend("cpu-libtorch", Backend::Cpu);
    let cuda: Result<Backend, String> = if !tch::Cuda::is_available() {
        Err("no CUDA device (libtorch sees none)".into())
    } else if !cuda_available() {
        Err("no CUDA device usable by the kernels (driver or NVRTC cannot be loaded)".into())
    } else {
        GateKernels::new(0).map(Backend::Cuda).map_err(|e| format!("no CUDA device ({e})"))
    };
    let report = run(&suite.backend_or_skip("cuda-fused", cuda));
    report.assert_passed();
    assert_eq!(report.measured("cpu-libtorch"), cases().len());
}

#[test]
fn a_perturbed_gate_is_caught() {
    let report = run(&Suite::new("fused gate (perturbed)").backend("cpu-libtorch, bias + 1e-3", Backend::Perturbed));
    // float32 cases all fail; in bfloat16 a 1e-3 shift is within an ulp of most outputs, but the
    // float32 sums gl see it wherever hop · |Δ| passes 1e-4 of the scale.
    assert!(report.failures().len() >= 5, "{:?}", report.lines);
}
