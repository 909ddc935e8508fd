//! `gpu-emulate`: no GPU needed. The tile kernel's activation rounding
//! modelled on the CPU (`dv_gpu::emulate`): the |Δp| its parity check would
//! find for each voice, with two-term bfloat16 and with half-precision
//! activations, and for each of the four rounded inputs alone (within 7 %
//! of the H200's for the 20-layer sizes, the same pass/fail everywhere:
//! `benchmarks/gpu.md`).

use clap::Args;
use dv_synth::random::random_conditioning;
use serde_json::json;

use crate::{tolerance, voices, Common, JsonOut};

#[derive(Args, Debug)]
pub(crate) struct EmulateArgs {
    #[command(flatten)]
    common: Common,
    /// The streams emulated per voice, by the conditioning-pool row each starts from, as
    /// `gpu-streams` starts its slots (default: the four it checks at 32 streams per block;
    /// the last runs 3/4 of the steps, as there).
    #[arg(long, value_delimiter = ',', default_value = "0,1,35,62")]
    rows: Vec<usize>,
}

pub(crate) fn run(a: EmulateArgs) -> anyhow::Result<()> {
    use dv_gpu::emulate::{drift, Activations, Rounding};
    let mut json = JsonOut::new(&a.common.json)?;
    let n = a.common.parity_steps;
    if a.rows.is_empty() || n == 0 {
        anyhow::bail!("--rows and --parity-steps: at least one stream of at least one step to emulate");
    }
    println!("| voice | activations | rounded | predicted max|Δp| (pool rows {:?}, {n} steps) | bound |", a.rows);
    println!("|---|---|---|---|---|");
    for (name, voice) in voices(&a.common)? {
        let hop = voice.config().hop();
        // The pool and stream starts of `gpu-streams`' parity check (seed 5, stream k from row k).
        let slots = a.rows.iter().max().map_or(0, |m| m + 1);
        let pool = random_conditioning(voice.config(), n.div_ceil(hop) + slots + 1, 5);
        let w = pool.width();
        let mut cases: Vec<(&str, Activations, Rounding)> = vec![
            ("all four", Activations::Bf16TwoTerms, Rounding::kernel(Activations::Bf16TwoTerms)),
            ("all four", Activations::F16, Rounding::kernel(Activations::F16)),
        ];
        let none = Rounding { kind: Activations::F16, ..Rounding::none() };
        cases.push(("[x(t-d), x(t)] only", Activations::F16, Rounding { dilated_input: true, ..none }));
        cases.push(("h only", Activations::F16, Rounding { gate_output: true, ..none }));
        cases.push(("relu(skip) only", Activations::F16, Rounding { skip_relu: true, ..none }));
        cases.push(("relu layer output only", Activations::F16, Rounding { relu_output: true, ..none }));
        cases.push((
            "all but [x(t-d), x(t)]",
            Activations::F16,
            Rounding { dilated_input: false, ..Rounding::kernel(Activations::F16) },
        ));
        for (what, kind, round) in cases {
            let mut worst = 0f64;
            for (i, &k) in a.rows.iter().enumerate() {
                let steps = if i + 1 == a.rows.len() { n / 2 + n / 4 } else { n };
                let frames = n.div_ceil(hop);
                let rows = dv_synth::Conditioning::new(frames, w, pool.data()[k * w..(k + frames) * w].to_vec())?;
                worst = worst.max(drift(&voice, &rows, steps, &round)?);
            }
            let kind_name = match kind {
                Activations::Bf16TwoTerms => "bf16 two terms (tiles)",
                Activations::F16 => "f16 (tiles-f16)",
                Activations::F32 => "f32",
            };
            let verdict = if worst <= tolerance(true) { "pass" } else { "FAIL" };
            println!("| {name} | {kind_name} | {what} | {worst:.2e} | 1e-3: {verdict} |");
            json.put(json!({
                "bench": "gpu-emulate", "voice": name, "activations": kind_name, "rounded": what,
                "rows": a.rows, "steps": n, "max_prob_diff": worst,
            }))?;
        }
    }
    Ok(())
}
