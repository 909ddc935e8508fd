use std::collections::HashSet;

use dv_train::Sampler;

#[test]
fn global_batches_do_not_depend_on_the_rank_count() {
    let s = Sampler { len: 103, batch: 12, seed: 7 };
    assert_eq!(s.batches_per_epoch(), 8);
    for step in 0..30 {
        let global = s.global_batch(step);
        assert_eq!(global.len(), 12);
        for world in [1, 2, 3, 4, 6] {
            let joined: Vec<usize> = (0..world).flat_map(|r| s.rank_batch(step, r, world)).collect();
            assert_eq!(joined, global, "step {step} world {world}");
        }
    }
    // An epoch visits distinct examples; epochs differ in order.
    let epoch0: Vec<usize> = (0..8).flat_map(|k| s.global_batch(k)).collect();
    assert_eq!(epoch0.iter().collect::<HashSet<_>>().len(), 96);
    assert_ne!(s.global_batch(0), s.global_batch(8));
    // Same seed, same order; another seed, another order.
    assert_eq!(Sampler { seed: 7, ..s.clone() }.global_batch(5), s.global_batch(5));
    assert_ne!(Sampler { seed: 8, ..s.clone() }.global_batch(5), s.global_batch(5));
}

#[test]
fn length_buckets_keep_the_epoch_a_partition_and_cut_padding() {
    use dv_train::{splitmix64, Buckets};
    let s = Sampler { len: 500, batch: 10, seed: 3 };
    let lengths: Vec<usize> = (0..500).map(|i| 100 + (splitmix64(i as u64) % 700) as usize).collect();
    let b = Buckets { window_batches: 10, lengths: lengths.clone() };
    let per = s.batches_per_epoch();
    // Each epoch still visits every example at most once, in full batches,
    // and rank slices still join to the global batch.
    for epoch in 0..2u64 {
        let all: Vec<usize> = (0..per).flat_map(|k| s.global_batch_in(epoch * per + k, Some(&b))).collect();
        assert_eq!(all.len(), 500);
        assert_eq!(all.iter().collect::<HashSet<_>>().len(), 500, "epoch {epoch}");
    }
    for step in 0..20 {
        let g = s.global_batch_in(step, Some(&b));
        let joined: Vec<usize> = (0..2).flat_map(|r| s.rank_batch_in(step, r, 2, Some(&b))).collect();
        assert_eq!(joined, g);
        assert_eq!(g, s.global_batch_in(step, Some(&b)), "deterministic");
    }
    // Padding: frames a padded batch holds over the frames it carries.
    let padding = |batches: Vec<Vec<usize>>| -> f64 {
        let (mut padded, mut real) = (0usize, 0usize);
        for bt in batches {
            let m = bt.iter().map(|&i| lengths[i]).max().unwrap();
            padded += m * bt.len();
            real += bt.iter().map(|&i| lengths[i]).sum::<usize>();
        }
        padded as f64 / real as f64
    };
    let plain = padding((0..per).map(|k| s.global_batch(k)).collect());
    let bucketed = padding((0..per).map(|k| s.global_batch_in(k, Some(&b))).collect());
    assert!(plain > 1.4 && bucketed < 1.1, "padding ratio {plain:.3} plain vs {bucketed:.3} bucketed");
    // Off (0 windows) is the plain order.
    let off = Buckets { window_batches: 0, lengths };
    assert_eq!(s.global_batch_in(7, Some(&off)), s.global_batch(7));
}
