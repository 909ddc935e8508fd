//! The optional grapheme-to-phoneme model: config section, tensors, golden data.

use std::fs;

use dv_voice::{
    expected_tensors, G2pConfig, G2pGolden, G2pWord, Golden, Tensor, Voice, VoiceConfig, VoiceError, CONFIG_FILE,
    G2P_GRAPHEMES, GOLDEN_FILE,
};

use crate::package::{edit_config, small_config, weights, write_raw_model};

/// `small_config` (2 phonemes, 5 stress levels: 11 outputs) with a tiny G2P model.
fn g2p_config() -> VoiceConfig {
    let mut c = small_config();
    c.g2p = Some(G2pConfig::new(3, 4, 2, 2, 5));
    c
}

fn golden(config: &VoiceConfig, g2p: Option<G2pGolden>) -> Golden {
    Golden {
        features: Tensor::zeros(vec![1, 227]),
        conditioning: Tensor::zeros(vec![1, config.conditioning_width()]),
        samples: vec![128; 10],
        logits: Tensor::zeros(vec![10, 256]),
        duration: None,
        g2p,
    }
}

fn words() -> Vec<G2pWord> {
    let w = |letters: &[usize], tokens: &[usize]| G2pWord { letters: letters.to_vec(), tokens: tokens.to_vec() };
    vec![w(&[3, 1, 20], &[6, 2, 10]), w(&[29], &[]), w(&[1, 27, 28, 29], &[1])]
}

#[test]
fn vocabularies_and_sizes() {
    let g = G2pConfig::new(64, 160, 3, 40, 5);
    assert_eq!((g.outputs, g.bos(), g.grapheme_rows(), g.beam), (201, 201, 30, 5));
    assert_eq!(g.graphemes, G2P_GRAPHEMES);
    let idx: Vec<Option<usize>> =
        ['a', 'Z', '\'', '-', '.', ' ', 'é', '1'].iter().map(|&c| g.grapheme_index(c)).collect();
    assert_eq!(idx, vec![Some(1), Some(26), Some(27), Some(28), Some(29), None, None, None]);

    let mut c = small_config();
    c.phonemes = (0..40).map(|i| format!("P{i}")).collect();
    c.g2p = Some(g);
    c.validate().unwrap();
    let names: Vec<(String, Vec<usize>)> =
        expected_tensors(&c).into_iter().filter(|(n, _)| n.starts_with("g2p.")).collect();
    assert_eq!(names.len(), 2 + 3 * 2 * 4 + 3 * 4 + 2);
    let get = |name: &str| names.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone());
    assert_eq!(get("g2p.enc_embed"), Some(vec![30, 64]));
    assert_eq!(get("g2p.dec_embed"), Some(vec![202, 64]));
    assert_eq!(get("g2p.enc.0.fwd.weight_ih_l0"), Some(vec![480, 64]));
    assert_eq!(get("g2p.enc.1.bwd.weight_ih_l0"), Some(vec![480, 320]));
    assert_eq!(get("g2p.enc.2.fwd.weight_hh_l0"), Some(vec![480, 160]));
    assert_eq!(get("g2p.enc.2.bwd.bias_hh_l0"), Some(vec![480]));
    assert_eq!(get("g2p.dec.0.weight_ih_l0"), Some(vec![480, 64]));
    assert_eq!(get("g2p.dec.2.weight_ih_l0"), Some(vec![480, 160]));
    assert_eq!(get("g2p.dec.1.bias_ih_l0"), Some(vec![480]));
    assert_eq!(get("g2p.out.weight"), Some(vec![201, 160]));
    assert_eq!(get("g2p.out.bias"), Some(vec![201]));
    assert!(expected_tensors(&small_config()).iter().all(|(n, _)| !n.starts_with("g2p.")));
}

#[test]
fn round_trip_with_g2p_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let config = g2p_config();
    let w = weights(&config);
    assert_eq!(w.keys().filter(|n| n.starts_with("g2p.")).count(), 2 + 2 * 2 * 4 + 2 * 4 + 2);
    let g = golden(&config, Some(G2pGolden::new(&config, &words()).unwrap()));
    let voice = Voice::new(config.clone(), w.clone()).unwrap().with_golden(g.clone()).unwrap();
    voice.save(dir.path()).unwrap();
    let back = Voice::read(dir.path()).unwrap();
    assert_eq!(back.config(), &config);
    for (name, t) in &w {
        let got = back.weights().get(name).unwrap();
        assert_eq!(got.shape(), t.shape(), "{name}");
        assert!(got.data().iter().zip(t.data()).all(|(a, b)| a.to_bits() == b.to_bits()), "{name}");
    }
    assert_eq!(back.golden(), Some(&g));
    let gg = back.golden().unwrap().g2p.as_ref().unwrap();
    assert_eq!(gg.letters.shape(), &[3, 4]);
    assert_eq!(gg.tokens.shape(), &[3, 3]);
    assert_eq!(&gg.letters.data()[..4], &[3.0, 1.0, 20.0, 0.0]);
    assert_eq!(&gg.tokens.data()[3..], &[-1.0, -1.0, -1.0, 1.0, -1.0, -1.0]);
    assert_eq!(gg.decode(&config).unwrap(), words());
    let json = fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
    assert!(json.contains("\"g2p\"") && json.contains("\"graphemes\": \"abcdefghijklmnopqrstuvwxyz'-.\""), "{json}");
    // A package without the section does not write it.
    let plain = small_config();
    fs::remove_file(dir.path().join(GOLDEN_FILE)).unwrap();
    Voice::write(dir.path(), &plain, &weights(&plain)).unwrap();
    assert!(!fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap().contains("g2p"));
    assert_eq!(Voice::read(dir.path()).unwrap().config().g2p, None);
}

#[test]
fn missing_or_misshapen_g2p_tensors_are_named() {
    let config = g2p_config();
    let dir = tempfile::tempdir().unwrap();
    Voice::write(dir.path(), &config, &weights(&config)).unwrap();

    let mut w = weights(&config);
    w.remove("g2p.enc.1.bwd.weight_ih_l0");
    write_raw_model(dir.path(), &w);
    match Voice::read(dir.path()) {
        Err(VoiceError::MissingTensor { name, expected }) => {
            assert_eq!((name.as_str(), expected), ("g2p.enc.1.bwd.weight_ih_l0", vec![12, 8]));
        }
        other => panic!("expected a missing tensor, got {other:?}"),
    }

    let mut w = weights(&config);
    w.insert("g2p.dec_embed".into(), Tensor::zeros(vec![11, 3]));
    write_raw_model(dir.path(), &w);
    match Voice::read(dir.path()) {
        Err(VoiceError::ShapeMismatch { name, expected, got }) => {
            assert_eq!(name, "g2p.dec_embed");
            assert_eq!((expected, got), (vec![12, 3], vec![11, 3]));
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    let err = Voice::new(config, w).unwrap_err().to_string();
    assert!(err.contains("g2p.dec_embed"), "{err}");

    let plain = small_config();
    let mut w = weights(&plain);
    w.insert("g2p.out.bias".into(), Tensor::zeros(vec![11]));
    match Voice::new(plain, w) {
        Err(VoiceError::UnexpectedTensor { name, .. }) => assert_eq!(name, "g2p.out.bias"),
        other => panic!("expected an unexpected tensor, got {other:?}"),
    }
}

#[test]
fn g2p_config_values_are_checked() {
    let edit = |f: &dyn Fn(&mut G2pConfig)| {
        let mut c = g2p_config();
        f(c.g2p.as_mut().unwrap());
        c.validate()
    };
    assert!(matches!(edit(&|g| g.outputs = 201), Err(VoiceError::InvalidValue { key: "g2p.outputs", .. })));
    assert!(matches!(edit(&|g| g.beam = 0), Err(VoiceError::InvalidValue { key: "g2p.beam", .. })));
    assert!(matches!(edit(&|g| g.layers = 0), Err(VoiceError::InvalidValue { key: "g2p", .. })));
    assert!(matches!(edit(&|g| g.hidden = 1 << 20), Err(VoiceError::Unsupported { .. })));
    let err = edit(&|g| g.graphemes = "abc".into()).unwrap_err();
    assert!(matches!(err, VoiceError::Unsupported { .. }) && err.to_string().contains("g2p.graphemes"), "{err}");

    // Unknown keys inside the section are named; a missing one is a config error.
    let config = g2p_config();
    let dir = tempfile::tempdir().unwrap();
    Voice::write(dir.path(), &config, &weights(&config)).unwrap();
    Voice::read(dir.path()).unwrap();
    edit_config(dir.path(), |v| v["g2p"]["dropout"] = serde_json::json!(0.05));
    match Voice::read(dir.path()) {
        Err(VoiceError::UnknownKey { key, .. }) => assert_eq!(key, "g2p.dropout"),
        other => panic!("expected an unknown key, got {other:?}"),
    }
    edit_config(dir.path(), |v| {
        let g = v["g2p"].as_object_mut().unwrap();
        g.remove("dropout");
        g.remove("beam");
    });
    assert!(matches!(Voice::read(dir.path()), Err(VoiceError::Config { .. })));
}

#[test]
fn g2p_golden_is_checked() {
    let config = g2p_config();
    let good = G2pGolden::new(&config, &words()).unwrap();
    let bad_value = |letters: bool, i: usize, v: f32| {
        let mut g = good.clone();
        let t = if letters { &mut g.letters } else { &mut g.tokens };
        t.data_mut()[i] = v;
        g.check(&config)
    };
    // Letters: 30 is past '.', 1.5 is no index, a letter after the padding,
    // a word with no letters.
    for (i, v) in [(0, 30.0f32), (1, 1.5), (6, 4.0), (4, 0.0)] {
        let err = bad_value(true, i, v).unwrap_err();
        assert!(matches!(&err, VoiceError::Golden { name, .. } if name == "golden.g2p.letters"), "{i}: {err}");
    }
    // Tokens: EOS (0) is dropped, 11 is past the last output, a token after −1.
    for (i, v) in [(0, 0.0f32), (2, 11.0), (5, 3.0)] {
        let err = bad_value(false, i, v).unwrap_err();
        assert!(matches!(&err, VoiceError::Golden { name, .. } if name == "golden.g2p.tokens"), "{i}: {err}");
    }
    // Row counts must agree.
    let bad = G2pGolden { tokens: Tensor::new("t", vec![2, 1], vec![1.0, 2.0]).unwrap(), ..good.clone() };
    match bad.check(&config) {
        Err(VoiceError::ShapeMismatch { name, expected, got }) => {
            assert_eq!((name.as_str(), expected, got), ("golden.g2p.tokens", vec![3, 1], vec![2, 1]));
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    // G2P golden data in a package without a G2P model.
    let plain = small_config();
    let err = Voice::new(plain.clone(), weights(&plain)).unwrap().with_golden(golden(&plain, Some(good.clone())));
    let err = err.unwrap_err();
    assert!(matches!(err, VoiceError::Golden { .. }) && err.to_string().contains("no G2P model"), "{err}");

    // A golden file holding one of the two G2P tensors: the other is named.
    let dir = tempfile::tempdir().unwrap();
    let voice = Voice::new(config.clone(), weights(&config)).unwrap().with_golden(golden(&config, Some(good))).unwrap();
    voice.save(dir.path()).unwrap();
    let path = dir.path().join(GOLDEN_FILE);
    let bytes = fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let kept: Vec<(String, safetensors::tensor::TensorView<'_>)> =
        st.tensors().into_iter().filter(|(n, _)| n != "golden.g2p.letters").collect();
    fs::write(&path, safetensors::tensor::serialize(kept, &None).unwrap()).unwrap();
    match Voice::read(dir.path()) {
        Err(VoiceError::MissingTensor { name, .. }) => assert_eq!(name, "golden.g2p.letters"),
        other => panic!("expected a missing tensor, got {other:?}"),
    }
}
