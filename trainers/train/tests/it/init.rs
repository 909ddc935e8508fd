//! `[init] from`: a new run starts from another run's or a voice package's
//! weights; once it has its own checkpoint it resumes from that instead.

use std::path::Path;

use dv_train::checkpoint::{decode, step_name};
use dv_train::{train_threads, InitConfig};
use safetensors::tensor::{Dtype, TensorView};

use crate::run::config;

/// `model.*` of a run's step-`steps` checkpoint, by parameter name.
fn weights(dir: &Path, steps: u64) -> Vec<(String, Vec<f32>)> {
    let c = decode("ck", &std::fs::read(dir.join("ck").join(step_name(steps))).unwrap()).unwrap();
    let mut out: Vec<(String, Vec<f32>)> = c
        .tensors
        .iter()
        .filter_map(|(n, t)| Some((n.strip_prefix("model.")?.to_string(), Vec::<f32>::try_from(&t.view([-1])).ok()?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A run at learning rate 0 from `[init] from`: its weights after one step
/// are the ones it started from. Returns the run's directory and its log.
fn frozen_run_from(from: &str) -> (tempfile::TempDir, Result<Vec<String>, String>) {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = config(d.path(), 1, 1);
    cfg.optimizer.lr = 0.0;
    cfg.train.seed = 99; // its own random init differs from the source run's
    cfg.init = Some(InitConfig { from: from.to_string() });
    let mut lines = Vec::new();
    let r = train_threads(&cfg, 2, &mut |l: &str| lines.push(l.to_string())).map(|_| lines).map_err(|e| e.to_string());
    (d, r)
}

#[test]
fn a_run_starts_from_a_checkpoints_weights_and_not_its_own_random_ones() {
    let src = tempfile::tempdir().unwrap();
    train_threads(&config(src.path(), 6, 6), 1, &mut |_: &str| {}).unwrap();
    let want = weights(src.path(), 6);

    let from = src.path().join("ck").join(step_name(6));
    let (d, log) = frozen_run_from(from.to_str().unwrap());
    let log = log.unwrap();
    assert!(log.iter().any(|l| l.starts_with("initialised") && l.contains(&step_name(6))), "{log:?}");
    assert_eq!(weights(d.path(), 1), want);

    // Without [init], the same run keeps its own random weights (so the check above can fail).
    let plain = tempfile::tempdir().unwrap();
    let mut cfg = config(plain.path(), 1, 1);
    cfg.optimizer.lr = 0.0;
    cfg.train.seed = 99;
    train_threads(&cfg, 2, &mut |_: &str| {}).unwrap();
    assert_ne!(weights(plain.path(), 1), want);
}

#[test]
fn a_voice_package_directory_in_half_precision_is_read_by_parameter_name() {
    let src = tempfile::tempdir().unwrap();
    train_threads(&config(src.path(), 4, 4), 1, &mut |_: &str| {}).unwrap();
    // As a voice package stores them: bare parameter names, binary16, other models' tensors beside.
    // (name, binary16 bytes, the values they hold)
    type Half = (String, Vec<u8>, Vec<f32>);
    let halves: Vec<Half> = weights(src.path(), 4)
        .into_iter()
        .map(|(n, v)| {
            let h: Vec<half::f16> = v.iter().map(|&x| half::f16::from_f32(x)).collect();
            let bytes = h.iter().flat_map(|x| x.to_le_bytes()).collect();
            (n, bytes, h.iter().map(|x| x.to_f32()).collect())
        })
        .collect();
    let shapes = decode("ck", &std::fs::read(src.path().join("ck").join(step_name(4))).unwrap()).unwrap();
    let extra = [0u8; 8];
    let mut views: Vec<(String, TensorView<'_>)> = halves
        .iter()
        .map(|(n, b, _)| {
            let shape = shapes.tensors[&format!("model.{n}")].size().iter().map(|&s| s as usize).collect();
            (n.clone(), TensorView::new(Dtype::F16, shape, b).unwrap())
        })
        .collect();
    views.push(("duration.other.weight".into(), TensorView::new(Dtype::F16, vec![4], &extra).unwrap()));
    let voice = tempfile::tempdir().unwrap();
    std::fs::write(voice.path().join("model.safetensors"), safetensors::tensor::serialize(views, &None).unwrap())
        .unwrap();

    let (d, log) = frozen_run_from(&format!("{}/", voice.path().display()));
    log.unwrap();
    let got = weights(d.path(), 1);
    assert_eq!(got.len(), halves.len());
    for ((n, v), (m, _, want)) in got.iter().zip(&halves) {
        assert_eq!(n, m);
        assert_eq!(v, want, "{n}");
    }
}

#[test]
fn another_models_weights_or_a_missing_file_are_errors_naming_them() {
    let voice = tempfile::tempdir().unwrap();
    let one = [0u8; 4];
    let views = vec![("not.this.model".to_string(), TensorView::new(Dtype::F32, vec![1], &one).unwrap())];
    std::fs::write(voice.path().join("model.safetensors"), safetensors::tensor::serialize(views, &None).unwrap())
        .unwrap();
    let e = frozen_run_from(voice.path().to_str().unwrap()).1.unwrap_err();
    assert!(e.contains("model.safetensors") && e.contains("no tensor for parameter"), "{e}");

    let e = frozen_run_from("/nonexistent/voice").1.unwrap_err();
    assert!(e.contains("/nonexistent/voice/model.safetensors"), "{e}");

    // The same names with other shapes (every tensor flattened): refused, not broadcast.
    let src = tempfile::tempdir().unwrap();
    train_threads(&config(src.path(), 1, 1), 1, &mut |_: &str| {}).unwrap();
    let flat: Vec<(String, Vec<u8>)> = weights(src.path(), 1)
        .into_iter()
        .map(|(n, v)| (n, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
        .collect();
    let views: Vec<(String, TensorView<'_>)> =
        flat.iter().map(|(n, b)| (n.clone(), TensorView::new(Dtype::F32, vec![b.len() / 4], b).unwrap())).collect();
    let file = voice.path().join("flat.safetensors");
    std::fs::write(&file, safetensors::tensor::serialize(views, &None).unwrap()).unwrap();
    let e = frozen_run_from(file.to_str().unwrap()).1.unwrap_err();
    assert!(e.contains("flat.safetensors") && e.contains("not the same size"), "{e}");
}

#[test]
fn a_run_with_its_own_checkpoint_resumes_from_it_and_never_reads_init_again() {
    let src = tempfile::tempdir().unwrap();
    train_threads(&config(src.path(), 2, 2), 1, &mut |_: &str| {}).unwrap();
    let from = src.path().join("ck").join(step_name(2));
    let d = tempfile::tempdir().unwrap();
    let mut cfg = config(d.path(), 2, 2);
    cfg.init = Some(InitConfig { from: from.to_str().unwrap().to_string() });
    train_threads(&cfg, 1, &mut |_: &str| {}).unwrap();
    // The source is gone: a resumed run must not need it.
    drop(src);
    cfg.train.steps = 4;
    let s = train_threads(&cfg, 1, &mut |_: &str| {}).unwrap();
    assert_eq!(s.start_step, 2);
    assert!(d.path().join("ck").join(step_name(4)).exists());
}
