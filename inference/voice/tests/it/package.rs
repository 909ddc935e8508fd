use std::fs;
use std::path::Path;

use dv_voice::{
    expected_tensors, ConditioningConfig, F0Config, Golden, Lineage, Tensor, Voice, VoiceConfig, VoiceError,
    WavenetConfig, Weights, CHECKSUM_FILE, CONFIG_FILE, MODEL_FILE, PRESETS,
};

pub fn small_config() -> VoiceConfig {
    VoiceConfig::new(
        WavenetConfig { layers: 3, residual_channels: 8, skip_channels: 16, dilation_cycle: 2 },
        ConditioningConfig { input_dim: 227, qrnn_layers: 2, hidden: 4, stress: true },
        vec!["AA".into(), "SIL".into()],
        5,
        F0Config { min_hz: 75.0, max_hz: 500.0 },
        Lineage {
            corpus_manifest_sha256: "00".repeat(32),
            featurizer: serde_json::json!({"mfcc": 20}),
            checkpoint: "ckpt-1".into(),
            step: 1234,
            code_version: "v0".into(),
            created: "2026-11-23T02:00:00Z".into(),
        },
    )
}

/// Deterministic, distinct, non-trivial values (exact round trip of odd bit patterns).
pub fn weights(config: &VoiceConfig) -> Weights {
    let mut state = 0x1234_5678u32;
    let mut w = Weights::new();
    for (name, shape) in expected_tensors(config) {
        let n = shape.iter().product();
        let data = (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state as i32 as f32) * 1e-9 + f32::EPSILON * 3.0
            })
            .collect();
        w.insert(name.clone(), Tensor::new(&name, shape, data).unwrap());
    }
    w
}

pub fn write_ok(dir: &Path) -> (VoiceConfig, Weights) {
    let config = small_config();
    let w = weights(&config);
    Voice::write(dir, &config, &w).unwrap();
    (config, w)
}

#[test]
fn round_trip_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (config, w) = write_ok(dir.path());
    let v = Voice::read(dir.path()).unwrap();
    assert_eq!(v.config(), &config);
    assert_eq!(v.weights().len(), w.len());
    for (name, t) in &w {
        let got = v.weights().get(name).unwrap();
        assert_eq!(got.shape(), t.shape(), "{name}");
        let same = got.data().iter().zip(t.data()).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name} changed in the round trip");
    }
    assert!(v.golden().is_none());
    // No temporary files are left behind.
    let names: Vec<String> =
        fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names.len(), 3, "config, model and SHA256SUMS: {names:?}");
}

#[test]
fn golden_round_trip_and_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (config, w) = write_ok(dir.path());
    let f = 2;
    let width = config.conditioning_width();
    let golden = Golden {
        features: Tensor::new("f", vec![f, 227], (0..f * 227).map(|i| i as f32 * 0.01).collect()).unwrap(),
        conditioning: Tensor::new("c", vec![f, width], (0..f * width).map(|i| -(i as f32)).collect()).unwrap(),
        samples: (0..100).map(|i| (i * 7 % 256) as u8).collect(),
        logits: Tensor::new("l", vec![100, 256], (0..100 * 256).map(|i| i as f32 * 1e-3).collect()).unwrap(),
        duration: None,
        g2p: None,
    };
    let v = Voice::new(config.clone(), w).unwrap().with_golden(golden.clone()).unwrap();
    v.save(dir.path()).unwrap();
    let back = Voice::read(dir.path()).unwrap();
    assert_eq!(back.golden(), Some(&golden));

    // More samples than the frames cover (2 × 64 = 128) is refused.
    let mut long = golden.clone();
    long.samples = vec![1; 129];
    long.logits = Tensor::zeros(vec![129, 256]);
    assert!(matches!(long.write(dir.path(), &config), Err(VoiceError::Golden { .. })));
    // Wrong logits width is named.
    let mut bad = golden;
    bad.logits = Tensor::zeros(vec![100, 255]);
    match bad.write(dir.path(), &config) {
        Err(VoiceError::ShapeMismatch { name, expected, got }) => {
            assert_eq!(name, "golden.logits");
            assert_eq!(expected, vec![100, 256]);
            assert_eq!(got, vec![100, 255]);
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
}

/// Writes `weights` with safetensors directly (bypassing the checking writer).
pub fn write_raw_model(dir: &Path, w: &Weights) {
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = w
        .iter()
        .map(|(k, t)| (k.clone(), t.shape().to_vec(), t.data().iter().flat_map(|v| v.to_le_bytes()).collect()))
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = bytes
        .iter()
        .map(|(k, s, b)| {
            (k.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b).unwrap())
        })
        .collect();
    fs::write(dir.join(MODEL_FILE), safetensors::tensor::serialize(views, &None).unwrap()).unwrap();
}

#[test]
fn missing_tensor_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut w) = write_ok(dir.path());
    w.remove("wavenet.layers.1.w_cur");
    write_raw_model(dir.path(), &w);
    match Voice::read(dir.path()) {
        Err(VoiceError::MissingTensor { name, expected }) => {
            assert_eq!(name, "wavenet.layers.1.w_cur");
            assert_eq!(expected, vec![16, 8]);
        }
        other => panic!("expected a missing tensor, got {other:?}"),
    }
    let err = Voice::read(dir.path()).unwrap_err().to_string();
    assert!(err.contains("wavenet.layers.1.w_cur"), "{err}");
}

#[test]
fn wrong_shape_is_named_with_both_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut w) = write_ok(dir.path());
    w.insert("wavenet.skip.weight".into(), Tensor::zeros(vec![16, 23]));
    write_raw_model(dir.path(), &w);
    match Voice::read(dir.path()) {
        Err(VoiceError::ShapeMismatch { name, expected, got }) => {
            assert_eq!(name, "wavenet.skip.weight");
            assert_eq!(expected, vec![16, 24]);
            assert_eq!(got, vec![16, 23]);
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    // The writer refuses the same weights and writes nothing.
    let fresh = tempfile::tempdir().unwrap();
    assert!(matches!(Voice::write(fresh.path(), &small_config(), &w), Err(VoiceError::ShapeMismatch { .. })));
    assert!(!fresh.path().join(MODEL_FILE).exists());
}

#[test]
fn unexpected_tensor_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut w) = write_ok(dir.path());
    // The last layer has no residual output.
    w.insert("wavenet.layers.2.w_res".into(), Tensor::zeros(vec![8, 8]));
    write_raw_model(dir.path(), &w);
    match Voice::read(dir.path()) {
        Err(VoiceError::UnexpectedTensor { name, .. }) => assert_eq!(name, "wavenet.layers.2.w_res"),
        other => panic!("expected an unexpected tensor, got {other:?}"),
    }
}

#[test]
fn dtype_other_than_f32_or_f16_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    let data = [0u8; 8 * 2];
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::BF16, vec![8], &data).unwrap();
    let bytes = safetensors::tensor::serialize([("wavenet.embed_bias", view)], &None).unwrap();
    fs::write(dir.path().join(MODEL_FILE), bytes).unwrap();
    match Voice::read(dir.path()) {
        Err(VoiceError::Dtype { name, dtype }) => {
            assert_eq!(name, "wavenet.embed_bias");
            assert_eq!(dtype, "BF16");
        }
        other => panic!("expected a dtype error, got {other:?}"),
    }
}

/// Tensors whose values are all binary16 values are stored in half precision (half the
/// bytes) and read back bit for bit; a tensor with one value that is not stays float32.
#[test]
fn half_exact_tensors_are_stored_in_half_precision_losslessly() {
    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    let v = Voice::read(dir.path()).unwrap();
    let full = fs::metadata(dir.path().join(MODEL_FILE)).unwrap().len();
    let mut w = v.weights().clone();
    let mut k = 0u32;
    for t in w.values_mut() {
        for x in t.data_mut() {
            // values with more than 11 significant bits, so that rounding changes them
            k = k.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            *x = (k >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
        }
    }
    let odd = "wavenet.embed_bias";
    assert!(!w[odd].is_half_exact());
    for (name, t) in w.iter_mut() {
        if name != odd {
            t.round_to_half();
            assert!(t.is_half_exact());
        }
    }
    let half_dir = tempfile::tempdir().unwrap();
    Voice::write(half_dir.path(), v.config(), &w).unwrap();
    let bytes = fs::read(half_dir.path().join(MODEL_FILE)).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for (name, view) in st.iter() {
        let want = if name == odd { safetensors::Dtype::F32 } else { safetensors::Dtype::F16 };
        assert_eq!(view.dtype(), want, "{name}");
    }
    assert!((bytes.len() as u64) < full * 6 / 10, "{} bytes against {full} in float32", bytes.len());
    let back = Voice::read(half_dir.path()).unwrap();
    for (name, t) in &w {
        let got = back.tensor(name).unwrap();
        let same = t.data().iter().zip(got.data()).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name} changed in the round trip");
    }
}

/// Edits `config.json` by hand and drops `SHA256SUMS`, as in a package
/// written before the checksum file existed (which is read unchecked).
pub fn edit_config(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join(CONFIG_FILE);
    let mut v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut v);
    fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let _ = fs::remove_file(dir.join(CHECKSUM_FILE));
}

#[test]
fn a_file_changed_after_writing_is_refused_by_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    let sums = fs::read_to_string(dir.path().join(CHECKSUM_FILE)).unwrap();
    assert_eq!(sums.lines().count(), 2, "{sums}");
    assert!(sums.contains("  config.json\n") && sums.contains("  model.safetensors\n"), "{sums}");
    // A valid edit (a free-form lineage key), but not the written file.
    let p = dir.path().join(CONFIG_FILE);
    let text = fs::read_to_string(&p).unwrap().replacen("\"mfcc\": 20", "\"mfcc\": 21", 1);
    fs::write(&p, text).unwrap();
    match Voice::read(dir.path()) {
        Err(e @ VoiceError::Checksum { .. }) => assert!(e.to_string().contains(&p.display().to_string()), "{e}"),
        other => panic!("expected a checksum error, got {other:?}"),
    }
    // Without SHA256SUMS (an older package) the same package reads.
    fs::remove_file(dir.path().join(CHECKSUM_FILE)).unwrap();
    Voice::read(dir.path()).unwrap();
}

#[test]
fn a_truncated_model_file_is_called_truncated() {
    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    let p = dir.path().join("model.safetensors");
    let bytes = fs::read(&p).unwrap();
    fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let err = Voice::read(dir.path()).unwrap_err().to_string();
    assert!(err.contains(&p.display().to_string()) && err.contains("a truncated copy?"), "{err}");
}

#[test]
fn unknown_config_keys_are_named() {
    for (section, key, expect) in [
        (None, "vocoder", "vocoder"),
        (Some("wavenet"), "kernel_size", "wavenet.kernel_size"),
        (Some("lineage"), "host", "lineage.host"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_ok(dir.path());
        edit_config(dir.path(), |v| {
            let obj = match section {
                None => v.as_object_mut().unwrap(),
                Some(s) => v[s].as_object_mut().unwrap(),
            };
            obj.insert(key.into(), serde_json::json!(1));
        });
        match Voice::read(dir.path()) {
            Err(VoiceError::UnknownKey { key, .. }) => assert_eq!(key, expect),
            other => panic!("expected unknown key {expect}, got {other:?}"),
        }
    }
    // lineage.featurizer is free-form: extra keys inside it are fine.
    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    edit_config(dir.path(), |v| v["lineage"]["featurizer"]["anything"] = serde_json::json!([1, 2]));
    Voice::read(dir.path()).unwrap();
}

#[test]
fn other_versions_and_bad_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    edit_config(dir.path(), |v| v["version"] = serde_json::json!(2));
    assert!(matches!(Voice::read(dir.path()), Err(VoiceError::Version { version: 2, .. })));

    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    edit_config(dir.path(), |v| v["sample_rate"] = serde_json::json!(16000));
    assert!(matches!(Voice::read(dir.path()), Err(VoiceError::InvalidValue { key: "sample_rate", .. })));

    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    edit_config(dir.path(), |v| v["wavenet"]["residual_channels"] = serde_json::json!(12));
    assert!(matches!(Voice::read(dir.path()), Err(VoiceError::Unsupported { .. })));

    let dir = tempfile::tempdir().unwrap();
    write_ok(dir.path());
    edit_config(dir.path(), |v| v["f0"]["max_hz"] = serde_json::json!("high"));
    assert!(matches!(Voice::read(dir.path()), Err(VoiceError::Config { .. })));
}

#[test]
fn non_finite_weights_are_refused() {
    let config = small_config();
    let mut w = weights(&config);
    w.get_mut("wavenet.out.bias").unwrap().data_mut()[3] = f32::NAN;
    match Voice::new(config, w) {
        Err(VoiceError::NonFinite { name, index }) => assert_eq!((name.as_str(), index), ("wavenet.out.bias", 3)),
        other => panic!("expected a non-finite error, got {other:?}"),
    }
}

#[test]
fn presets_are_table_2() {
    let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["20x32x128", "20x64x128", "40x64x256", "40x64x128", "40x32x128"]);
    for (name, c) in PRESETS {
        assert_eq!(c.name(), name);
        assert_eq!(WavenetConfig::preset(name), Some(c));
    }
    let big = WavenetConfig::preset("40x64x256").unwrap();
    assert_eq!((big.dilation(0), big.dilation(9), big.dilation(10), big.dilation(39)), (1, 512, 1, 512));
    assert_eq!(big.receptive_field(), 2 + 4 * 1023);
    // ~1.6M WaveNet parameters for the big model (§5).
    let mut config = small_config();
    config.wavenet = big;
    let n: usize = expected_tensors(&config)
        .iter()
        .filter(|(n, _)| n.starts_with("wavenet."))
        .map(|(_, s)| s.iter().product::<usize>())
        .sum();
    assert!((1_500_000..1_700_000).contains(&n), "{n}");
}

#[test]
fn the_digest_names_the_package_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (config, w) = write_ok(dir.path());
    let v = Voice::read(dir.path()).unwrap();
    let digest = v.digest().expect("a voice read from disk has a digest").to_string();
    assert_eq!(digest.len(), 64, "{digest}");
    assert_eq!(Voice::read(dir.path()).unwrap().digest(), Some(digest.as_str()), "the same bytes, the same digest");
    assert_eq!(v.clone().digest(), Some(digest.as_str()));
    // It covers the files, not SHA256SUMS: an older package without it has the same digest.
    fs::remove_file(dir.path().join(CHECKSUM_FILE)).unwrap();
    assert_eq!(Voice::read(dir.path()).unwrap().digest(), Some(digest.as_str()));
    // One weight changed by one ulp: another digest.
    let mut w2 = w.clone();
    let name = w2.keys().next().unwrap().clone();
    let t = w2.get_mut(&name).unwrap();
    t.data_mut()[0] = f32::from_bits(t.data()[0].to_bits() + 1);
    Voice::write(dir.path(), &config, &w2).unwrap();
    let changed = Voice::read(dir.path()).unwrap();
    assert_ne!(changed.digest(), Some(digest.as_str()), "a changed weight keeps the digest");
    // A voice made in memory, or given other golden data, names no files.
    assert_eq!(Voice::new(config, w).unwrap().digest(), None);
    let g = Golden {
        features: Tensor::zeros(vec![1, 227]),
        conditioning: Tensor::zeros(vec![1, changed.config().conditioning_width()]),
        samples: vec![128; 4],
        logits: Tensor::zeros(vec![4, 256]),
        duration: None,
        g2p: None,
    };
    assert_eq!(changed.with_golden(g).unwrap().digest(), None);
}
