//! The optional duration and F0 model: config section, tensors, golden data.

use std::fs;

use dv_voice::{
    expected_tensors, DurationConfig, DurationGolden, Golden, Tensor, Voice, VoiceConfig, VoiceError, CONFIG_FILE,
    GOLDEN_FILE,
};

use crate::package::{edit_config, small_config, weights, write_raw_model};

/// `small_config` (2 phonemes, 5 stress levels) with a tiny duration model.
fn duration_config() -> VoiceConfig {
    let mut c = small_config();
    c.conditioning.stress = false;
    c.duration = Some(DurationConfig {
        input_dim: 7,
        fc: 6,
        gru: 4,
        gru_layers: 2,
        f0_points: 3,
        duration_unit_s: 0.01,
        f0_unit_hz: 100.0,
        stress: false,
        bidirectional: false,
    });
    c
}

fn golden(config: &VoiceConfig, duration: Option<DurationGolden>) -> Golden {
    let width = config.conditioning_width();
    Golden {
        features: Tensor::zeros(vec![1, 227]),
        conditioning: Tensor::zeros(vec![1, width]),
        samples: vec![128; 10],
        logits: Tensor::zeros(vec![10, 256]),
        duration,
        g2p: None,
    }
}

fn duration_golden(config: &VoiceConfig) -> DurationGolden {
    let output = Tensor::new("o", vec![3, 5], (0..15).map(|i| i as f32 * 0.25 - 1.0).collect()).unwrap();
    DurationGolden::new(config, &[(0, 0), (1, 4), (1, 0)], output).unwrap()
}

#[test]
fn paper_sizes() {
    let d = DurationConfig::paper(false);
    assert_eq!((d.input_dim, d.fc, d.gru, d.gru_layers, d.f0_points, d.output_dim()), (45, 256, 128, 2, 20, 22));
    let mut c = small_config();
    c.phonemes = (0..40).map(|i| format!("P{i}")).collect();
    c.duration = Some(d);
    c.validate().unwrap();
    let names: Vec<(String, Vec<usize>)> =
        expected_tensors(&c).into_iter().filter(|(n, _)| n.starts_with("duration.")).collect();
    let get = |name: &str| names.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone());
    assert_eq!(names.len(), 4 + 2 * 4 + 2);
    assert_eq!(get("duration.fc1.weight"), Some(vec![256, 45]));
    assert_eq!(get("duration.fc2.weight"), Some(vec![256, 256]));
    assert_eq!(get("duration.gru.0.weight_ih_l0"), Some(vec![384, 256]));
    assert_eq!(get("duration.gru.1.weight_ih_l0"), Some(vec![384, 128]));
    assert_eq!(get("duration.gru.1.weight_hh_l0"), Some(vec![384, 128]));
    assert_eq!(get("duration.gru.1.bias_hh_l0"), Some(vec![384]));
    assert_eq!(get("duration.out.weight"), Some(vec![22, 128]));
    assert_eq!(get("duration.out.bias"), Some(vec![22]));
    // A WaveNet-only config calls for none of them.
    assert!(expected_tensors(&small_config()).iter().all(|(n, _)| !n.starts_with("duration.")));
}

#[test]
fn round_trip_with_duration_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let config = duration_config();
    let w = weights(&config);
    assert_eq!(w.keys().filter(|n| n.starts_with("duration.")).count(), 14);
    let voice = Voice::new(config.clone(), w.clone()).unwrap().with_golden(golden(&config, None)).unwrap();
    let g = golden(&config, Some(duration_golden(&config)));
    let voice = voice.with_golden(g.clone()).unwrap();
    voice.save(dir.path()).unwrap();
    let back = Voice::read(dir.path()).unwrap();
    assert_eq!(back.config(), &config);
    assert_eq!(back.config().duration, config.duration);
    assert!(!back.config().conditioning.stress);
    assert_eq!(back.weights().len(), w.len());
    for (name, t) in &w {
        let got = back.weights().get(name).unwrap();
        assert_eq!(got.shape(), t.shape(), "{name}");
        assert!(got.data().iter().zip(t.data()).all(|(a, b)| a.to_bits() == b.to_bits()), "{name}");
    }
    assert_eq!(back.golden(), Some(&g));
    let dg = back.golden().unwrap().duration.as_ref().unwrap();
    assert_eq!(dg.decode(&config).unwrap(), vec![(0, 0), (1, 4), (1, 0)]);
    // Row (1, 4): phoneme column 1, stress column 2 + 4.
    assert_eq!(&dg.input.data()[7..14], &[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    let json = fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
    assert!(json.contains("\"duration_unit_s\"") && json.contains("\"stress\": false"), "{json}");
}

#[test]
fn wavenet_only_package_has_no_duration_section_and_stress_defaults_to_true() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config();
    Voice::write(dir.path(), &config, &weights(&config)).unwrap();
    let json = fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
    assert!(!json.contains("duration"), "{json}");
    // A package written before `conditioning.stress` existed reads as stressed.
    edit_config(dir.path(), |v| {
        v["conditioning"].as_object_mut().unwrap().remove("stress").unwrap();
    });
    let v = Voice::read(dir.path()).unwrap();
    assert!(v.config().conditioning.stress);
    assert!(v.config().duration.is_none());
}

#[test]
fn missing_or_misshapen_duration_tensors_are_named() {
    let config = duration_config();
    let dir = tempfile::tempdir().unwrap();
    Voice::write(dir.path(), &config, &weights(&config)).unwrap();

    let mut w = weights(&config);
    w.remove("duration.gru.1.weight_hh_l0");
    write_raw_model(dir.path(), &w);
    match Voice::read(dir.path()) {
        Err(VoiceError::MissingTensor { name, expected }) => {
            assert_eq!((name.as_str(), expected), ("duration.gru.1.weight_hh_l0", vec![12, 4]));
        }
        other => panic!("expected a missing tensor, got {other:?}"),
    }

    let mut w = weights(&config);
    w.insert("duration.out.weight".into(), Tensor::zeros(vec![22, 4]));
    write_raw_model(dir.path(), &w);
    match Voice::read(dir.path()) {
        Err(VoiceError::ShapeMismatch { name, expected, got }) => {
            assert_eq!(name, "duration.out.weight");
            assert_eq!((expected, got), (vec![5, 4], vec![22, 4]));
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    let err = Voice::new(config.clone(), w).unwrap_err().to_string();
    assert!(err.contains("duration.out.weight"), "{err}");

    // Duration weights in a package whose config has no duration model.
    let plain = small_config();
    let mut w = weights(&plain);
    w.insert("duration.fc1.bias".into(), Tensor::zeros(vec![6]));
    match Voice::new(plain, w) {
        Err(VoiceError::UnexpectedTensor { name, .. }) => assert_eq!(name, "duration.fc1.bias"),
        other => panic!("expected an unexpected tensor, got {other:?}"),
    }
}

#[test]
fn duration_config_values_are_checked() {
    let mut c = duration_config();
    c.duration.as_mut().unwrap().input_dim = 45;
    assert!(matches!(c.validate(), Err(VoiceError::InvalidValue { key: "duration.input_dim", .. })));
    let mut c = duration_config();
    c.duration.as_mut().unwrap().f0_unit_hz = 0.0;
    assert!(matches!(c.validate(), Err(VoiceError::InvalidValue { key: "duration.f0_unit_hz", .. })));
    let mut c = duration_config();
    c.duration.as_mut().unwrap().gru_layers = 0;
    assert!(matches!(c.validate(), Err(VoiceError::InvalidValue { key: "duration", .. })));
    let mut c = duration_config();
    c.duration.as_mut().unwrap().fc = 1 << 20;
    assert!(matches!(c.validate(), Err(VoiceError::Unsupported { .. })));

    // Unknown keys inside the section are named; a missing one is a config error.
    let config = duration_config();
    let dir = tempfile::tempdir().unwrap();
    Voice::write(dir.path(), &config, &weights(&config)).unwrap();
    edit_config(dir.path(), |v| v["duration"]["hidden"] = serde_json::json!(3));
    match Voice::read(dir.path()) {
        Err(VoiceError::UnknownKey { key, .. }) => assert_eq!(key, "duration.hidden"),
        other => panic!("expected an unknown key, got {other:?}"),
    }
    edit_config(dir.path(), |v| {
        let d = v["duration"].as_object_mut().unwrap();
        d.remove("hidden");
        d.remove("f0_points");
    });
    assert!(matches!(Voice::read(dir.path()), Err(VoiceError::Config { .. })));
}

#[test]
fn duration_golden_is_checked() {
    let config = duration_config();
    let w = weights(&config);
    let good = duration_golden(&config);

    // Output of the wrong width, named with both shapes.
    let bad = DurationGolden { output: Tensor::zeros(vec![3, 22]), ..good.clone() };
    match Voice::new(config.clone(), w.clone()).unwrap().with_golden(golden(&config, Some(bad))) {
        Err(VoiceError::ShapeMismatch { name, expected, got }) => {
            assert_eq!(name, "golden.duration.output");
            assert_eq!((expected, got), (vec![3, 5], vec![3, 22]));
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    // Fewer output rows than input rows.
    let bad = DurationGolden { output: Tensor::zeros(vec![2, 5]), ..good.clone() };
    assert!(matches!(bad.check(&config), Err(VoiceError::ShapeMismatch { .. })));
    // Input of the wrong width.
    let bad = DurationGolden { input: Tensor::zeros(vec![3, 45]), ..good.clone() };
    match bad.check(&config) {
        Err(VoiceError::ShapeMismatch { name, expected, .. }) => {
            assert_eq!((name.as_str(), expected), ("golden.duration.input", vec![3, 7]))
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    // A row that is not one-hot (two phonemes, or no stress).
    for (i, v) in [(1usize, 1.0f32), (2, 0.0), (0, 0.5)] {
        let mut input = good.input.clone();
        input.data_mut()[i] = v;
        let bad = DurationGolden { input, ..good.clone() };
        assert!(matches!(bad.check(&config), Err(VoiceError::Golden { .. })), "index {i} = {v}");
    }
    // Indices out of range.
    let out = Tensor::zeros(vec![1, 5]);
    assert!(matches!(DurationGolden::new(&config, &[(2, 0)], out.clone()), Err(VoiceError::Golden { .. })));
    assert!(matches!(DurationGolden::new(&config, &[(0, 5)], out), Err(VoiceError::Golden { .. })));
    // Duration golden data in a package without a duration model.
    let plain = small_config();
    let g = golden(&plain, Some(good.clone()));
    let err = Voice::new(plain.clone(), weights(&plain)).unwrap().with_golden(g).unwrap_err();
    assert!(matches!(err, VoiceError::Golden { .. }) && err.to_string().contains("no duration model"), "{err}");

    // A golden file holding one of the two duration tensors: the other is named.
    let dir = tempfile::tempdir().unwrap();
    let voice = Voice::new(config.clone(), w).unwrap().with_golden(golden(&config, Some(good))).unwrap();
    voice.save(dir.path()).unwrap();
    let path = dir.path().join(GOLDEN_FILE);
    let bytes = fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let kept: Vec<(String, safetensors::tensor::TensorView<'_>)> =
        st.tensors().into_iter().filter(|(n, _)| n != "golden.duration.output").collect();
    let rewritten = safetensors::tensor::serialize(kept, &None).unwrap();
    fs::write(&path, rewritten).unwrap();
    match Voice::read(dir.path()) {
        Err(VoiceError::MissingTensor { name, .. }) => assert_eq!(name, "golden.duration.output"),
        other => panic!("expected a missing tensor, got {other:?}"),
    }
}
