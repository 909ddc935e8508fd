//! The hashed dropout mask: its tensor ops against the scalar definition,
//! its keep rate, independence of padding and of the example's place.
use dv_torch::tch::{Device, Kind, Tensor};
use dv_train::{dropout, dropout_keeps};

fn mask(b: usize, t: i64, f: i64, p: f64, seed: u64, site: u64, ids: &[usize]) -> Vec<f32> {
    let x = Tensor::ones([b as i64, t, f], (Kind::Float, Device::Cpu));
    Vec::<f32>::try_from(&dropout(&x, p, true, seed, site, ids).unwrap().view([-1])).unwrap()
}

#[test]
fn the_tensor_mask_is_the_scalar_definition_bit_for_bit() {
    let (t, f, p) = (7, 33, 0.3);
    let ids = [0usize, 5, 123_456_789, usize::MAX];
    let got = mask(ids.len(), t, f, p, 0xdead_beef_0123_4567, 30, &ids);
    for (e, &id) in ids.iter().enumerate() {
        for i in 0..(t * f) as usize {
            let want = if dropout_keeps(p, 0xdead_beef_0123_4567, 30, id, i as u32) { 1.0 / 0.7 } else { 0.0 };
            assert_eq!(got[e * (t * f) as usize + i], want as f32, "example {id}, element {i}");
        }
    }
}

#[test]
fn it_keeps_one_minus_p_and_examples_sites_and_seeds_get_different_masks() {
    for p in [0.05, 0.3, 0.5] {
        let m = mask(16, 20, 512, p, 1, 10, &(0..16).collect::<Vec<_>>());
        let kept = m.iter().filter(|v| **v > 0.0).count() as f64 / m.len() as f64;
        assert!((kept - (1.0 - p)).abs() < 0.005, "p {p}: kept {kept}");
    }
    // two examples (or sites, or seeds) agree on about p² + (1 − p)² of the elements, as independent masks do
    let agree = |a: &[f32], b: &[f32]| {
        a.iter().zip(b).filter(|(x, y)| (**x > 0.0) == (**y > 0.0)).count() as f64 / a.len() as f64
    };
    let m = mask(2, 40, 512, 0.5, 1, 10, &[3, 4]);
    let (a, b) = m.split_at(m.len() / 2);
    assert!((agree(a, b) - 0.5).abs() < 0.01, "examples agree on {}", agree(a, b));
    let other_site = mask(1, 40, 512, 0.5, 1, 11, &[3]);
    assert!((agree(a, &other_site) - 0.5).abs() < 0.01);
    let other_seed = mask(1, 40, 512, 0.5, 2, 10, &[3]);
    assert!((agree(a, &other_seed) - 0.5).abs() < 0.01);
}

#[test]
fn an_example_has_its_mask_whatever_its_padding_and_its_place_in_the_batch() {
    let short = mask(2, 5, 16, 0.3, 7, 1, &[11, 42]);
    let long = mask(2, 9, 16, 0.3, 7, 1, &[42, 11]); // padded to 9 frames, order swapped
    let (s11, s42) = short.split_at(5 * 16);
    let (l42, l11) = long.split_at(9 * 16);
    assert_eq!(s11, &l11[..5 * 16]);
    assert_eq!(s42, &l42[..5 * 16]);
    // and off in evaluation
    let x = Tensor::ones([1, 3, 4], (Kind::Float, Device::Cpu));
    assert!(dropout(&x, 0.3, false, 7, 1, &[0]).unwrap().equal(&x));
}

#[test]
fn an_example_too_large_for_the_32_bit_index_is_an_error_not_a_wrong_mask() {
    // a view with 2^32 elements per example and no storage behind it: expand of a scalar
    let x = Tensor::zeros([1, 1, 1], (Kind::Float, Device::Cpu)).expand([1, 1 << 16, 1 << 16], false);
    let err = dropout(&x, 0.3, true, 1, 1, &[0]).unwrap_err().to_string();
    assert!(err.contains("2^32"), "{err}");
}
