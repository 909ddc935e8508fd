//! What validation refuses that the trainer would otherwise meet only
//! later, or meet with a panic.

use dv_config::RunConfig;

fn every_key() -> String {
    let p = format!(
        "{}/../../fuzz/seeds/run_config/every-key-synthetic.toml",
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(p).unwrap()
}

fn refused(text: &str) -> String {
    RunConfig::from_toml("run.toml", text).unwrap_err().to_string()
}

#[test]
fn a_collective_timeout_that_is_no_duration_is_refused() {
    let good = every_key();
    RunConfig::from_toml("run.toml", &good).unwrap();
    for bad in ["-1.0", "0.0", "-0.0", "nan", "inf", "1e10", "1e300"] {
        let e = refused(&good.replace("collective_timeout_s = 60.0", &format!("collective_timeout_s = {bad}")));
        assert!(
            e.starts_with("config run.toml: train.collective_timeout_s = ") && e.contains("(0, 1e9]"),
            "{bad}: {e}"
        );
    }
    let cfg =
        RunConfig::from_toml("run.toml", &good.replace("collective_timeout_s = 60.0", "collective_timeout_s = 1e9"))
            .unwrap();
    assert_eq!(cfg.train.collective_timeout().as_secs(), 1_000_000_000);
}

#[test]
fn log_every_zero_is_refused() {
    let e = refused(&every_key().replace("log_every = 10", "log_every = 0"));
    assert_eq!(e, "config run.toml: train.log_every must be positive");
}

#[test]
fn sizes_the_model_would_refuse_are_refused_before_anything_runs() {
    let wavenet = std::fs::read_to_string(format!(
        "{}/../../fuzz/seeds/run_config/every-key-wavenet.toml",
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let e = refused(&wavenet.replace("dilation_cycle = 10", "dilation_cycle = 0"));
    assert!(e.starts_with("config run.toml: [model]: bad wavenet sizes WavenetConfig { "), "{e}");
    let e = refused(&every_key().replace("frames_per_label = [3, 6]", "frames_per_label = [6, 3]"));
    assert!(e.starts_with("config run.toml: [data]: bad synthetic data SyntheticConfig { "), "{e}");
}
