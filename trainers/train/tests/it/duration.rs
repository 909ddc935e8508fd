//! The duration + F0 model (§3.3) and the loss of App. B (eq. 27): shapes,
//! the loss against a hand computation, a tiny batch overfits, targets from
//! reference phones and an F0 contour.

use dv_text::{Phoneme, Stress, StressedPhoneme, TimedPhoneme};
use dv_torch::tch;
use dv_torch::tch::{nn::OptimizerConfig, Device, Kind, Tensor};
use dv_train::prosody::prosody_example;
use dv_train::{Batch, ChunkUtterance, DurationConfig, DurationModel, Model};

fn batch(inputs: Tensor, targets: Tensor, lengths: Vec<i64>) -> Batch {
    let ids = (0..lengths.len()).collect();
    Batch {
        inputs,
        input_lengths: lengths.clone(),
        targets,
        target_lengths: lengths,
        example_ids: ids,
        audio_seconds: None,
    }
}

#[test]
fn outputs_have_the_paper_shape() {
    let m = DurationModel::new(&DurationConfig::paper(), Device::Cpu).unwrap();
    let x = Tensor::zeros([3, 7, 45], (Kind::Float, Device::Cpu));
    assert_eq!(m.forward(&x, &[7, 7, 7], false, 0, &[0, 1, 2]).unwrap().size(), vec![3, 7, 22]);
    let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
    for want in [
        "duration.fc1.weight",
        "duration.fc2.bias",
        "duration.gru.0.weight_ih_l0",
        "duration.gru.1.bias_hh_l0",
        "duration.out.weight",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
}

/// `n` phonemes' one-hot inputs `[1, n, 45]` from `(phoneme, stress)`.
fn one_hots(seq: &[(usize, usize)], pad_to: usize) -> Vec<f32> {
    let mut x = vec![0.0f32; pad_to * 45];
    for (n, &(p, s)) in seq.iter().enumerate() {
        x[n * 45 + p] = 1.0;
        x[n * 45 + 40 + s] = 1.0;
    }
    x
}

#[test]
fn a_bidirectional_model_reads_each_utterance_both_ways_whatever_its_padding() {
    let c = DurationConfig { dropout: 0.0, ..DurationConfig::tiny() };
    let both = DurationConfig { duration: dv_voice::DurationConfig { bidirectional: true, ..c.duration }, ..c.clone() };
    for (config, sees_ahead) in [(c, false), (both, true)] {
        let m = dv_train::with_rng(3, || DurationModel::new(&config, Device::Cpu)).unwrap();
        let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.iter().any(|n| n == "duration.gru_rev.1.weight_ih_l0"), sees_ahead, "{names:?}");
        let short = [(3, 1), (17, 0), (8, 2), (39, 0)];
        let long = [(5, 0), (6, 1), (7, 0), (9, 0), (11, 2), (39, 0)];
        let alone = m.forward(&Tensor::from_slice(&one_hots(&short, 4)).view([1, 4, 45]), &[4], false, 0, &[0]).unwrap();
        // The short utterance padded to 6 in a batch with a longer one: its rows are the same.
        let mut x = one_hots(&short, 6);
        x.extend(one_hots(&long, 6));
        let batch = m.forward(&Tensor::from_slice(&x).view([2, 6, 45]), &[4, 6], false, 0, &[0, 1]).unwrap();
        let diff = (batch.narrow(0, 0, 1).narrow(1, 0, 4) - &alone).abs().max().double_value(&[]);
        assert!(diff < 1e-6, "padding changed the outputs by {diff}");
        // Its first row sees a change to its last phoneme only when bidirectional.
        let changed = [(3, 1), (17, 0), (8, 2), (20, 1)];
        let other = m.forward(&Tensor::from_slice(&one_hots(&changed, 4)).view([1, 4, 45]), &[4], false, 0, &[0]).unwrap();
        let first = (other.narrow(1, 0, 1) - alone.narrow(1, 0, 1)).abs().max().double_value(&[]);
        assert_eq!(first > 1e-6, sees_ahead, "first row moved by {first}");
    }
}

#[test]
fn the_loss_is_eq_27_by_hand() {
    // Two F0 points, λ = (1, 0.5, 0.25); one phoneme, one padded.
    let mut c = DurationConfig { lambdas: [1.0, 0.5, 0.25], ..DurationConfig::tiny() };
    c.duration.f0_points = 2;
    let m = DurationModel::new(&c, Device::Cpu).unwrap();
    // outputs: duration 5, voicing logit 0, F0 (1.0, 1.5); padded row garbage.
    let out = Tensor::from_slice(&[5.0f32, 0.0, 1.0, 1.5, 9.0, 9.0, 9.0, 9.0]).view([1, 2, 4]);
    // targets: duration 7, voiced share 1, F0 (1.2, 9.9), mask (1, 0).
    let t = Tensor::from_slice(&[7.0f32, 1.0, 1.2, 9.9, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).view([1, 2, 6]);
    let got = m.losses(&out, &t, &[1]).unwrap().double_value(&[0]);
    let ce = (2.0f64).ln(); // −log σ(0)
    let want = 2.0 + 1.0 * ce + 0.5 * 0.2 + 0.25 * 0.5;
    assert!((got - want).abs() < 1e-5, "{got} vs {want}");
}

#[test]
fn a_tiny_batch_overfits() {
    let c = DurationConfig { dropout: 0.0, ..DurationConfig::tiny() };
    let m = dv_train::with_rng(1, || DurationModel::new(&c, Device::Cpu)).unwrap();
    let mut x = vec![0.0f32; 2 * 5 * 45];
    let mut t = vec![0.0f32; 2 * 5 * 42];
    for b in 0..2 {
        for n in 0..5 {
            let p = (b * 7 + n * 3) % 40;
            x[(b * 5 + n) * 45 + p] = 1.0;
            x[(b * 5 + n) * 45 + 40] = 1.0;
            let row = &mut t[(b * 5 + n) * 42..(b * 5 + n + 1) * 42];
            row[0] = 3.0 + p as f32 / 5.0;
            row[1] = (p % 2) as f32;
            for j in 0..20 {
                row[2 + j] = 1.5 + 0.01 * j as f32;
                row[22 + j] = (p % 2) as f32;
            }
        }
    }
    let bt = batch(Tensor::from_slice(&x).view([2, 5, 45]), Tensor::from_slice(&t).view([2, 5, 42]), vec![5, 4]);
    let mut opt = tch::nn::Adam::default().build(m.var_store(), 1e-2).unwrap();
    let first = m.loss_sum(&bt, true, 0).unwrap().double_value(&[]);
    let mut last = first;
    for _ in 0..800 {
        let l = m.loss_sum(&bt, true, 0).unwrap();
        opt.backward_step(&l);
        last = l.double_value(&[]);
    }
    assert!(last < 0.15 * first, "loss {first} → {last}: did not overfit");
}

#[test]
fn targets_come_from_phone_times_and_the_contour() {
    let ph = |p, s, e| TimedPhoneme { phoneme: StressedPhoneme::new(p, Stress::None), start: s, end: e };
    // 0.1 s silence, 0.2 s AA voiced at 200 Hz; the contour is voiced from 0.1 s.
    let f0: Vec<f32> = (0..77).map(|i| if i as f64 / 256.0 >= 0.1 { 200.0 } else { 0.0 }).collect();
    let u = ChunkUtterance {
        id: "u".into(),
        mulaw: vec![128; 4915],
        phones: vec![ph(Phoneme::Sil, 0.0, 0.1), ph(Phoneme::Aa, 0.1, 0.3)],
        f0_hz: f0,
        f0_start: 0.0,
    };
    let e = prosody_example(&u, 20);
    assert_eq!(e.phonemes, vec![(Phoneme::Sil.index(), 0), (Phoneme::Aa.index(), 0)]);
    let (sil, aa) = (&e.targets[..42], &e.targets[42..]);
    assert!((sil[0] - 10.0).abs() < 1e-4 && (aa[0] - 20.0).abs() < 1e-4, "durations {} {}", sil[0], aa[0]);
    assert_eq!(sil[1], 0.0);
    assert_eq!(aa[1], 1.0);
    assert!(aa[2..22].iter().all(|&v| (v - 2.0).abs() < 1e-6) && aa[22..].iter().all(|&m| m == 1.0));
    assert!(sil[22..].iter().all(|&m| m == 0.0));
}

#[test]
fn aligner_times_replace_the_reference_times_run_by_run() {
    let ph = |p: Phoneme, s, e| TimedPhoneme { phoneme: StressedPhoneme::new(p, Stress::None), start: s, end: e };
    // Two reference silences in a row (merged into one for the aligner), no silence at the end
    // (the aligner labels one more there).
    let reference = [
        ph(Phoneme::Sil, 0.0, 0.1),
        ph(Phoneme::Hh, 0.1, 0.2),
        ph(Phoneme::Sil, 0.2, 0.25),
        ph(Phoneme::Sil, 0.25, 0.35),
        ph(Phoneme::Ay, 0.35, 0.6),
    ];
    let aligned = [
        (Phoneme::Sil, 0.0, 0.12),
        (Phoneme::Hh, 0.12, 0.19),
        (Phoneme::Sil, 0.19, 0.39),
        (Phoneme::Ay, 0.39, 0.58),
        (Phoneme::Sil, 0.58, 0.6),
    ];
    let got = dv_train::prosody::retime(&reference, &aligned).expect("same phones");
    let times: Vec<(f64, f64)> = got.iter().map(|p| (p.start, p.end)).collect();
    // The merged silence's 0.2 s is shared 1:2 as the reference's 0.05 s and 0.1 s.
    let want = [(0.0, 0.12), (0.12, 0.19), (0.19, 0.19 + 0.2 / 3.0), (0.19 + 0.2 / 3.0, 0.39), (0.39, 0.58)];
    for (g, w) in times.iter().zip(want) {
        assert!((g.0 - w.0).abs() < 1e-12 && (g.1 - w.1).abs() < 1e-12, "{times:?}");
    }
    assert_eq!(
        got.iter().map(|p| p.phoneme).collect::<Vec<_>>(),
        reference.iter().map(|p| p.phoneme).collect::<Vec<_>>()
    );
    // Other phonemes, or another count: not this utterance's alignment.
    let mut wrong = aligned;
    wrong[1].0 = Phoneme::K;
    assert!(dv_train::prosody::retime(&reference, &wrong).is_none());
    assert!(dv_train::prosody::retime(&reference, &aligned[..4]).is_none());
}
