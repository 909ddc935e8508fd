//! `dv align` end to end on a small embedded corpus: featurize, train a tiny
//! phoneme-pair segmentation model for a few steps, align, and check what is
//! written (every utterance aligned, one TextGrid each covering the whole
//! utterance with its phones, the report's boundary error against the
//! corpus's exact boundaries).

use std::path::Path;

use super::dv;

fn config(dir: &Path, features: &Path, steps: u64) -> std::path::PathBuf {
    let text = format!(
        r#"
[model]
kind = "segmentation"
[model.sizes]
mfcc = 20
conv_channels = 2
kernel_freq = 9
kernel_time = 5
gru = 16
gru_layers = 1
classes = 1601
dropout = 0.0

[data]
kind = "features"
url = "{features}"
validation_fraction = 0.3
seed = 5

[optimizer]
lr = 3e-3

[schedule]
rate = 1.0
every = 1000

[train]
steps = {steps}
batch = 4
threads_per_rank = 1

[checkpoint]
url = "{ck}"
every = {steps}
keep_last = 1
"#,
        features = features.display(),
        ck = dir.join("ck").display(),
    );
    let path = dir.join("seg.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn align_writes_textgrids_parquet_and_a_scored_report() {
    let d = tempfile::tempdir().unwrap();
    let corpus = d.path().join("slt");
    let features = d.path().join("features");
    ok(&dv(&["corpus", "make-default", "--utterances", "8", "--out", corpus.to_str().unwrap()]));
    ok(&dv(&["featurize", "--corpus", corpus.to_str().unwrap(), "--out", features.to_str().unwrap()]));
    ok(&dv(&["train", "--config", config(d.path(), &features, 6).to_str().unwrap()]));
    let ck = d.path().join("ck/step-0000000006.safetensors");
    let out = d.path().join("aligned");
    let printed = ok(&dv(&[
        "align",
        "--features",
        features.to_str().unwrap(),
        "--checkpoint",
        ck.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--batch",
        "3",
        "--plot",
        "slt_fortune_00002",
    ]));
    let png = std::fs::read(out.join("plots/slt_fortune_00002.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let o = dv(&["align", "--features", features.to_str().unwrap(), "--checkpoint", ck.to_str().unwrap()]);
    assert!(!o.status.success(), "--out is required");
    let o = dv(&[
        "align",
        "--features",
        features.to_str().unwrap(),
        "--checkpoint",
        ck.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--plot",
        "no_such_id",
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--plot no_such_id: no such utterance"));
    assert!(printed.contains("aligned        8 of 8 utterances (0 failed)"), "{printed}");

    // Viterbi on a GPU that is not there: a clear error, not a silent CPU run.
    let o = dv(&[
        "align",
        "--features",
        features.to_str().unwrap(),
        "--checkpoint",
        ck.to_str().unwrap(),
        "--out",
        out.join("gpu").to_str().unwrap(),
        "--viterbi",
        "cuda",
    ]);
    if !dv_align::cuda_available() {
        assert!(!o.status.success());
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("CUDA unavailable"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["aligned"], 8);
    assert_eq!(report["viterbi"], "cpu", "--viterbi auto with a CPU model runs the CPU reference");
    assert_eq!(report["trim_db"], 45.0, "edge pauses end where speech starts by default");
    assert!(report["edge_boundaries_trimmed"].as_u64().unwrap() <= 2 * 8);
    assert_eq!(report["without_reference"], 0, "the embedded corpus has exact boundaries for every utterance");
    let b = &report["boundary_error"];
    assert_eq!(b["utterances"], 8);
    assert!(b["boundaries"].as_u64().unwrap() > 8 * 5);
    let (mae, w25) = (b["mean_abs_ms"].as_f64().unwrap(), b["within_25ms"].as_f64().unwrap());
    assert!(mae.is_finite() && mae >= 0.0 && (0.0..=1.0).contains(&w25), "{b}");

    // One TextGrid per utterance, one tier, intervals covering 0..duration
    // with as many phones as the utterance's pair labels + 1.
    let grids: Vec<_> = std::fs::read_dir(out.join("textgrid")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(grids.len(), 8);
    for g in &grids {
        let text = std::fs::read_to_string(g).unwrap();
        let grid = dv_align::TextGrid::parse(&text).unwrap();
        let tier = grid.tier("phones").expect("a phones tier");
        assert_eq!(tier.intervals.first().unwrap().xmin, 0.0);
        assert_eq!(tier.intervals.last().unwrap().xmax, grid.xmax);
        assert_eq!(tier.intervals.first().unwrap().text, "sil", "{}", g.display());
        assert_eq!(tier.intervals.last().unwrap().text, "sil", "{}", g.display());
        for w in tier.intervals.windows(2) {
            assert_eq!(w[0].xmax, w[1].xmin);
            assert!(w[0].xmin < w[0].xmax);
        }
    }
    // Every output is written through a temporary file and a rename: none is left behind.
    for dir in [out.clone(), out.join("textgrid"), out.join("plots")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(!name.ends_with(".partial"), "{name} left in {}", dir.display());
        }
    }
    let df = dv_manifest::read_parquet(&out.join("alignments.parquet")).unwrap();
    assert_eq!(df.height(), 8);
    for c in ["id", "phones", "starts", "ends", "confidence", "quarantined"] {
        assert!(df.column(c).is_ok(), "column {c}");
    }
    // PPER is reported with the Viterbi decoder (a barely trained model: any rate in [0, ∞)).
    let pper = report["pper"]["error_rate"].as_f64().expect("report.json has the PPER");
    assert!(pper.is_finite() && pper >= 0.0 && report["pper"]["reference_pairs"].as_u64().unwrap() > 8 * 5);

    let o = dv(&[
        "align",
        "--features",
        features.to_str().unwrap(),
        "--checkpoint",
        ck.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--trim-db=-3",
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--trim-db -3: expected a level in dB"));

    // --held-out: only the utterances the run held out (its fraction and seed).
    let held_out = d.path().join("aligned-held-out");
    ok(&dv(&[
        "align",
        "--features",
        features.to_str().unwrap(),
        "--checkpoint",
        ck.to_str().unwrap(),
        "--out",
        held_out.to_str().unwrap(),
        "--held-out",
        "--pper-beam",
        "0",
    ]));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(held_out.join("report.json")).unwrap()).unwrap();
    let ids: Vec<String> = (1..=8).map(|i| format!("slt_fortune_{i:05}")).collect();
    let expected: Vec<&String> = ids.iter().filter(|id| dv_train::is_validation(id, 5, 0.3)).collect();
    assert!(!expected.is_empty() && expected.len() < 8, "this seed holds out some but not all: {expected:?}");
    assert_eq!((report["held_out"].as_bool(), report["aligned"].as_u64()), (Some(true), Some(expected.len() as u64)));
    let df = dv_manifest::read_parquet(&held_out.join("alignments.parquet")).unwrap();
    let mut got: Vec<String> = df.column("id").unwrap().str().unwrap().iter().map(|s| s.unwrap().to_string()).collect();
    got.sort();
    assert_eq!(got.iter().collect::<Vec<_>>(), expected);

    // §3.2's decoder: no transcript, chained pairs; every utterance gets boundaries, and
    // only those decoding the reference pairs are scored against it.
    let beam_out = d.path().join("aligned-beam");
    let printed = ok(&dv(&[
        "align",
        "--features",
        features.to_str().unwrap(),
        "--checkpoint",
        ck.to_str().unwrap(),
        "--out",
        beam_out.to_str().unwrap(),
        "--decoder",
        "beam",
        "--beam-width",
        "8",
        "--pper-beam",
        "0",
    ]));
    assert!(printed.contains("decoder        beam of 8 over chained pairs"), "{printed}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(beam_out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["decoder"], "beam");
    let scored = report["boundary_error"]["utterances"].as_u64().unwrap_or(0);
    assert_eq!(scored + report["decoded_other_pairs"].as_u64().unwrap(), report["aligned"].as_u64().unwrap());
    assert!(report["pper"].is_null());
    let o = dv(&[
        "align",
        "--features",
        features.to_str().unwrap(),
        "--checkpoint",
        ck.to_str().unwrap(),
        "--out",
        beam_out.to_str().unwrap(),
        "--decoder",
        "nope",
    ]);
    // clap refuses it, listing the choices.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("invalid value 'nope' for '--decoder") && stderr.contains("[possible values: viterbi, beam]"),
        "{stderr}"
    );
}

#[test]
fn align_refuses_a_model_not_trained_on_phoneme_pairs() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("none.safetensors");
    let o = dv(&["align", "--features", "/nonexistent", "--checkpoint", missing.to_str().unwrap(), "--out", "/tmp/x"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("none.safetensors"));
    // A synthetic-data model has 17 classes, not 1601.
    let cfg = d.path().join("syn.toml");
    std::fs::write(
        &cfg,
        format!(
            "[model]\nkind = \"segmentation\"\npreset = \"tiny\"\n[data]\nkind = \"synthetic\"\nexamples = 8\nfeatures = 20\nclasses = 16\nseed = 1\n[optimizer]\nlr = 1e-3\n[schedule]\nrate = 1.0\nevery = 10\n[train]\nsteps = 1\nbatch = 4\n[checkpoint]\nurl = \"{}\"\nevery = 1\n",
            d.path().join("ck").display()
        ),
    )
    .unwrap();
    ok(&dv(&["train", "--config", cfg.to_str().unwrap()]));
    let ck = d.path().join("ck/step-0000000001.safetensors");
    let o = dv(&["align", "--features", "/nonexistent", "--checkpoint", ck.to_str().unwrap(), "--out", "/tmp/x"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("17 output classes") && err.contains("phoneme pairs"), "{err}");
}
