use dv_train::checkpoint::{decode, encode, step_name, steps_present};
use dv_train::CheckpointState;
use tch::Tensor;

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

#[test]
fn checkpoint_names_sort_newest_first() {
    assert_eq!(step_name(120), "step-0000000120.safetensors");
    let names: Vec<String> = ["best.safetensors", &step_name(5), &step_name(120), &step_name(40), "step-x.safetensors"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(steps_present(&names), vec![120, 40, 5]);
}
