use dv_torch::tch::Tensor;
use dv_train::checkpoint::{average, decode, encode, encode_half, step_name, steps_present};
use dv_train::CheckpointState;

fn state() -> CheckpointState {
    CheckpointState {
        step: 40,
        adam_step: 40,
        best: Some(1.25),
        config: "[train]\nsteps = 3\n".into(),
        code_version: "test".into(),
        seed: 9,
        mlflow_run_id: Some("abc".into()),
    }
}

#[test]
fn checkpoints_round_trip_and_detect_corruption() {
    let tensors = vec![
        ("model.w".to_string(), Tensor::from_slice(&[1.5f32, -2.0, 3.25, 0.0, 1e-30, -7.0]).view([2, 3])),
        ("adam.m.w".to_string(), Tensor::from_slice(&[0.1f32; 6]).view([2, 3])),
        ("model.b".to_string(), Tensor::from_slice(&[42.0f32])),
    ];
    let bytes = encode(&state(), &tensors).unwrap();
    let c = decode("ck", &bytes).unwrap();
    assert_eq!(c.state, state());
    for (name, t) in &tensors {
        let got = &c.tensors[name];
        assert_eq!(got.size(), t.size());
        assert_eq!(Vec::<f32>::try_from(&got.view([-1])).unwrap(), Vec::<f32>::try_from(&t.view([-1])).unwrap());
    }
    // One flipped bit in the tensor data: the CRC catches it.
    let mut bad = bytes.clone();
    let last = bad.len() - 3;
    bad[last] ^= 0x10;
    let e = decode("ck", &bad).err().unwrap().to_string();
    assert!(e.contains("ck") && e.contains("CRC-32"), "{e}");
    // Truncated: an error naming the object.
    let e = decode("ck2", &bytes[..bytes.len() / 2]).err().unwrap().to_string();
    assert!(e.contains("ck2"), "{e}");
    assert!(decode("ck3", b"").is_err());
}

/// A half-precision model-only checkpoint reads back as the binary16-rounded
/// weights, in about half the bytes; optimizer state in half precision and
/// values beyond binary16's range are refused.
#[test]
fn half_precision_weights_round_trip() {
    let w: Vec<f32> = (0..4096).map(|i| ((i as f32) * 0.377).sin() * 3.0 + 1e-3).collect();
    let model = vec![
        ("model.w".to_string(), Tensor::from_slice(&w).view([64, 64])),
        ("model.b".to_string(), Tensor::from_slice(&[0.1f32, -65504.0, 6e-8, 0.0])),
    ];
    let full = encode(&state(), &model).unwrap();
    let half = encode_half(&state(), &model).unwrap();
    assert!(half.len() * 10 < full.len() * 6, "{} vs {} bytes", half.len(), full.len());
    let c = decode("half", &half).unwrap();
    assert_eq!(c.state, state());
    for (name, t) in &model {
        let want: Vec<f32> =
            Vec::<f32>::try_from(&t.view([-1])).unwrap().iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
        let got = Vec::<f32>::try_from(&c.tensors[name].view([-1])).unwrap();
        assert_eq!(got, want, "{name}");
        assert_eq!(c.tensors[name].size(), t.size());
    }
    // Rounded, not truncated: within half a binary16 step (2^-11 relative).
    let got = Vec::<f32>::try_from(&c.tensors["model.w"].view([-1])).unwrap();
    let worst = w.iter().zip(&got).map(|(a, b)| ((a - b) / a).abs()).fold(0f32, f32::max);
    assert!(worst > 0.0 && worst <= 1.0 / 2048.0, "{worst}");
    // A flipped bit is still caught.
    let mut bad = half.clone();
    let last = bad.len() - 3;
    bad[last] ^= 0x10;
    assert!(decode("half", &bad).err().unwrap().to_string().contains("CRC-32"));
    // Adam's moments stay float32: a half-precision one is refused by name.
    let with_adam = vec![("adam.m.w".to_string(), Tensor::from_slice(&[0.5f32]))];
    let e = decode("h2", &encode_half(&state(), &with_adam).unwrap()).err().unwrap().to_string();
    assert!(e.contains("h2") && e.contains("adam.m.w"), "{e}");
    let e = encode_half(&state(), &[("model.big".to_string(), Tensor::from_slice(&[7e4f32]))]).err().unwrap();
    assert!(e.to_string().contains("model.big"), "{e}");
}

#[test]
fn checkpoint_names_sort_newest_first() {
    assert_eq!(step_name(120), "step-0000000120.safetensors");
    let names: Vec<String> = ["best.safetensors", &step_name(5), &step_name(120), &step_name(40), "step-x.safetensors"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(steps_present(&names), vec![120, 40, 5]);
}

#[test]
fn averaging_is_the_elementwise_mean_of_one_models_checkpoints() {
    let ck = |step: u64, a: &[f32], b: f32, model: &str| {
        let s = CheckpointState { step, config: format!("[model]\nkind = \"{model}\"\n"), best: Some(1.0), ..state() };
        let tensors = vec![
            ("model.a".to_string(), Tensor::from_slice(a).view([2, 2])),
            ("model.b".to_string(), Tensor::from_slice(&[b])),
            ("adam.m.a".to_string(), Tensor::from_slice(&[9.0f32; 4]).view([2, 2])),
        ];
        (format!("step-{step}"), decode("x", &encode(&s, &tensors).unwrap()).unwrap())
    };
    let cks = vec![
        ck(100, &[1.0, 2.0, 3.0, 4.0], 0.5, "g2p"),
        ck(300, &[3.0, 2.0, 1.0, 0.0], 1.5, "g2p"),
        ck(200, &[2.0, 2.0, 2.0, 2.0], 1.0, "g2p"),
    ];
    let (s, t) = average(&cks).unwrap();
    assert_eq!((s.step, s.best), (300, None), "the newest state, never validated");
    let names: Vec<&str> = t.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["model.a", "model.b"], "model tensors only, sorted");
    assert!(t[0].1.equal(&Tensor::from_slice(&[2.0f32, 2.0, 2.0, 2.0]).view([2, 2])));
    assert_eq!(t[1].1.double_value(&[0]), 1.0);
    // One checkpoint: itself, its best kept.
    let (s1, t1) = average(&cks[..1]).unwrap();
    assert_eq!((s1.step, s1.best), (100, Some(1.0)));
    assert!(t1[0].1.equal(&Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]).view([2, 2])));
    // Another model, or other tensors: an error naming the checkpoint.
    let other = vec![ck(100, &[1.0; 4], 0.5, "g2p"), ck(200, &[1.0; 4], 0.5, "duration")];
    let e = average(&other).err().unwrap().to_string();
    assert!(e.contains("step-200") && e.contains("[model]"), "{e}");
    let (name, mut odd) = ck(400, &[1.0; 4], 0.5, "g2p");
    odd.tensors.remove("model.b");
    let e = average(&[ck(100, &[1.0; 4], 0.5, "g2p"), (name, odd)]).err().unwrap().to_string();
    assert!(e.contains("step-400") && e.contains("tensors differ"), "{e}");
    assert!(average(&[]).is_err());
}
