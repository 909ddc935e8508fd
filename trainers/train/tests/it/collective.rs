//! The collective conformance suite, run here against the in-process
//! implementation (the NCCL one runs the same checks on GPU machines).

use std::time::{Duration, Instant};

use dv_torch::tch;
use dv_torch::tch::Tensor;
use dv_train::{Collective, CollectiveError, LocalCollective};

fn on_ranks<T: Send>(world: usize, timeout: Duration, f: impl Fn(&mut LocalCollective) -> T + Sync) -> Vec<T> {
    let handles = LocalCollective::group(world, timeout);
    std::thread::scope(|s| {
        let joins: Vec<_> = handles
            .into_iter()
            .map(|mut c| {
                let f = &f;
                s.spawn(move || {
                    let r = f(&mut c);
                    c.finish();
                    r
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    })
}

#[test]
fn all_reduce_sums_and_broadcast_copies_on_every_world_size() {
    for world in [1, 2, 3, 4] {
        let out = on_ranks(world, Duration::from_secs(30), |c| {
            let r = c.rank() as f32;
            let mut t = Tensor::from_slice(&[r, 10.0 * r, 1.0]).view([3, 1]);
            c.all_reduce_sum(&mut t, "sum").unwrap();
            let summed = Vec::<f32>::try_from(&t.view([-1])).unwrap();
            let mut b = Tensor::from_slice(&[r + 100.0; 5]);
            c.broadcast(&mut b, world - 1, "bcast").unwrap();
            let got = Vec::<f32>::try_from(&b).unwrap();
            // Many collectives in a row keep their order.
            let mut acc = Tensor::from_slice(&[1.0f32]);
            for k in 0..50 {
                c.all_reduce_sum(&mut acc, &format!("again {k}")).unwrap();
                acc /= world as f64;
            }
            (summed, got, acc.double_value(&[0]))
        });
        let n = world as f32;
        let tri = n * (n - 1.0) / 2.0;
        for (summed, got, acc) in out {
            assert_eq!(summed, vec![tri, 10.0 * tri, n], "world {world}");
            assert_eq!(got, vec![world as f32 - 1.0 + 100.0; 5]);
            assert_eq!(acc, 1.0);
        }
    }
}

#[test]
fn the_conformance_suite_passes_on_threads() {
    for world in [1, 2, 3] {
        for result in
            on_ranks(world, Duration::from_secs(60), |c| dv_train::conformance::run_suite(c, tch::Device::Cpu))
        {
            assert_eq!(result.unwrap().len(), 4, "world {world}");
        }
    }
}

#[test]
fn a_rank_that_never_arrives_is_named_after_the_timeout() {
    let started = Instant::now();
    let out = on_ranks(3, Duration::from_millis(300), |c| {
        if c.rank() == 2 {
            return None;
        }
        let mut t = Tensor::from_slice(&[1.0f32]);
        c.all_reduce_sum(&mut t, "grads[0]").err()
    });
    assert!(started.elapsed() < Duration::from_secs(10));
    let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
    assert_eq!(errs.len(), 2);
    // Whichever rank timed out first names rank 2; the other either does too or reports it.
    let text: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert!(text.iter().any(|t| t.contains("\"grads[0]\"") && t.contains("[2]") && t.contains("stalled")), "{text:?}");
}

#[test]
fn a_dead_rank_fails_the_others_at_once() {
    let started = Instant::now();
    let out = on_ranks(3, Duration::from_secs(120), |c| {
        if c.rank() == 1 {
            c.abort("out of memory");
            return None;
        }
        let mut t = Tensor::from_slice(&[1.0f32]);
        c.all_reduce_sum(&mut t, "grads[0]").err()
    });
    assert!(started.elapsed() < Duration::from_secs(5), "waited {:?} for a dead rank", started.elapsed());
    for e in out.into_iter().flatten() {
        match e {
            CollectiveError::PeerFailed { peer, reason, .. } => {
                assert_eq!(peer, 1);
                assert_eq!(reason, "out of memory");
            }
            other => panic!("{other}"),
        }
    }
    // A handle dropped without finish() counts as a dead rank too.
    let mut handles = LocalCollective::group(2, Duration::from_secs(120));
    let survivor = handles.remove(0);
    drop(handles);
    let mut s = survivor;
    let e = s.all_reduce_sum(&mut Tensor::from_slice(&[1.0f32]), "x").unwrap_err();
    assert!(matches!(e, CollectiveError::PeerFailed { peer: 1, .. }), "{e}");
    s.finish();
}

#[test]
fn ranks_that_disagree_are_an_error_not_a_wrong_sum() {
    let out = on_ranks(2, Duration::from_secs(30), |c| {
        let mut t = if c.rank() == 0 { Tensor::from_slice(&[1.0f32, 2.0]) } else { Tensor::from_slice(&[1.0f32]) };
        c.all_reduce_sum(&mut t, "grads[0]").err()
    });
    let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
    assert!(errs.iter().any(|e| matches!(e, CollectiveError::Mismatch { .. })), "{errs:?}");
    let out = on_ranks(2, Duration::from_secs(30), |c| {
        let mut t = Tensor::from_slice(&[1.0f32]);
        let what = if c.rank() == 0 { "grads[0]" } else { "loss" };
        c.all_reduce_sum(&mut t, what).err()
    });
    let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
    assert!(errs.iter().any(|e| matches!(e, CollectiveError::Mismatch { .. })), "{errs:?}");
    let mut one = LocalCollective::group(1, Duration::from_secs(1)).remove(0);
    let e = one.all_reduce_sum(&mut Tensor::from_slice(&[1i64]), "ints").unwrap_err();
    assert!(matches!(e, CollectiveError::Tensor { .. }), "{e}");
    one.finish();
}

/// A backend for the suite's failure cases: rank 0 of 2 whose sums leave the
/// tensor as it is, or fail.
struct Broken {
    fail: bool,
}

impl Collective for Broken {
    fn rank(&self) -> usize {
        0
    }
    fn world_size(&self) -> usize {
        2
    }
    fn all_reduce_sum(&mut self, _: &mut Tensor, what: &str) -> Result<(), CollectiveError> {
        if self.fail {
            return Err(CollectiveError::Tensor { rank: 0, what: what.into(), reason: "broken".into() });
        }
        Ok(())
    }
    fn broadcast(&mut self, _: &mut Tensor, _: usize, _: &str) -> Result<(), CollectiveError> {
        Ok(())
    }
    fn abort(&mut self, _: &str) {}
}

#[test]
fn the_conformance_suite_fails_a_wrong_or_failing_backend_naming_the_check() {
    use dv_train::conformance::{run_suite, ConformanceError};
    match run_suite(&mut Broken { fail: false }, tch::Device::Cpu) {
        Err(e @ ConformanceError::Wrong { rank: 0, check: "all_reduce_sum", .. }) => {
            assert_eq!(e.to_string(), "rank 0: all_reduce_sum: gave [0.0, 0.0, 1.0], expected [1.0, 10.0, 2.0]");
        }
        other => panic!("expected a wrong sum, got {other:?}"),
    }
    match run_suite(&mut Broken { fail: true }, tch::Device::Cpu) {
        Err(ConformanceError::Collective(CollectiveError::Tensor { what, .. })) => assert_eq!(what, "sum"),
        other => panic!("expected the collective's error, got {other:?}"),
    }
}

/// A failed peer is named when the backend knows it, and said to be unknown
/// otherwise (NCCL's asynchronous error), never printed as a number.
#[test]
fn a_failed_peer_is_named_or_said_to_be_unknown() {
    let e = |peer| {
        CollectiveError::PeerFailed { rank: 0, seq: 3, what: "grads".into(), peer, reason: "gone".into() }.to_string()
    };
    assert_eq!(e(1), "rank 0: collective #3 \"grads\" abandoned: rank 1 failed (gone)");
    let unknown = e(CollectiveError::UNKNOWN_PEER);
    assert!(unknown.contains("a peer rank failed (the backend cannot tell which)"), "{unknown}");
    assert!(!unknown.contains(&usize::MAX.to_string()), "{unknown}");
}
