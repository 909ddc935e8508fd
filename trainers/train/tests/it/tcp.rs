//! The TCP collective (CPU ranks as processes), here with each rank a
//! thread holding its own [`TcpCollective`] over loopback: the conformance
//! suite, sums bit-identical to [`LocalCollective`]'s, and the failure
//! behaviour (a closed socket, an abort, the watchdog, disagreeing ranks).

use std::time::{Duration, Instant};

use dv_torch::tch;
use dv_torch::tch::Tensor;
use dv_train::{splitmix64, Collective, CollectiveError, LocalCollective, RankEnv, TcpCollective};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn env(rank: usize, world: usize, port: u16) -> RankEnv {
    RankEnv { rank, world, local_rank: rank, master_addr: "127.0.0.1".into(), master_port: port }
}

/// Runs `f` on `world` threads, each with its own TCP collective; a rank
/// whose `f` returns without calling `finish` aborts when dropped.
fn on_tcp_ranks<T: Send>(world: usize, timeout: Duration, f: impl Fn(TcpCollective) -> T + Sync) -> Vec<T> {
    let port = free_port();
    std::thread::scope(|s| {
        let joins: Vec<_> = (0..world)
            .map(|r| {
                let f = &f;
                s.spawn(move || {
                    f(TcpCollective::connect(&env(r, world, port), timeout, Duration::from_secs(30)).unwrap())
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    })
}

/// Rank `rank`'s inputs: values of many magnitudes and both signs, so that
/// a different summation order gives different bits.
fn inputs(rank: usize, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let h = splitmix64(((rank as u64) << 32) | i as u64);
            let mantissa = (h % 2_000_001) as f32 / 1e6 - 1.0;
            mantissa * 10f32.powi(((h >> 32) % 9) as i32 - 4)
        })
        .collect()
}

#[test]
fn tcp_sums_are_bit_identical_to_the_in_process_collective() {
    let len = 10_007;
    for world in [2, 3, 5] {
        let local: Vec<Vec<u32>> = {
            let handles = LocalCollective::group(world, Duration::from_secs(30));
            std::thread::scope(|s| {
                let joins: Vec<_> = handles
                    .into_iter()
                    .map(|mut c| {
                        s.spawn(move || {
                            let mut t = Tensor::from_slice(&inputs(c.rank(), len));
                            c.all_reduce_sum(&mut t, "grads").unwrap();
                            c.finish();
                            Vec::<f32>::try_from(&t).unwrap().iter().map(|x| x.to_bits()).collect()
                        })
                    })
                    .collect();
                joins.into_iter().map(|j| j.join().unwrap()).collect()
            })
        };
        let tcp: Vec<Vec<u32>> = on_tcp_ranks(world, Duration::from_secs(30), |mut c| {
            let mut t = Tensor::from_slice(&inputs(c.rank(), len));
            c.all_reduce_sum(&mut t, "grads").unwrap();
            c.finish();
            Vec::<f32>::try_from(&t).unwrap().iter().map(|x| x.to_bits()).collect()
        });
        for r in 0..world {
            assert!(tcp[r] == tcp[0], "world {world}: rank {r} differs from rank 0");
            assert!(tcp[r] == local[r], "world {world}: rank {r} differs from the in-process collective");
        }
        // From three ranks on the order matters for these inputs: summing in reverse gives other bits.
        if world >= 3 {
            let all: Vec<Vec<f32>> = (0..world).map(|r| inputs(r, len)).collect();
            let reverse: Vec<u32> =
                (0..len).map(|i| (0..world).rev().fold(0.0f32, |a, r| a + all[r][i]).to_bits()).collect();
            assert!(reverse != tcp[0], "world {world}: inputs too tame to show the summation order");
        }
    }
}

#[test]
fn the_conformance_suite_passes_over_tcp() {
    for world in [1, 2, 3] {
        for result in on_tcp_ranks(world, Duration::from_secs(60), |mut c| {
            let r = dv_train::conformance::run_suite(&mut c, tch::Device::Cpu);
            c.finish();
            r
        }) {
            assert_eq!(result.unwrap().len(), 4, "world {world}");
        }
    }
}

#[test]
fn a_rank_whose_socket_closes_is_named_by_the_others_at_once() {
    let started = Instant::now();
    let out = on_tcp_ranks(3, Duration::from_secs(120), |mut c| {
        if c.rank() == 2 {
            // Finished: its socket closes with no abort message, as when a process is killed.
            c.finish();
            return None;
        }
        let e = c.all_reduce_sum(&mut Tensor::from_slice(&[1.0f32]), "grads[0]").err();
        c.finish();
        e
    });
    assert!(started.elapsed() < Duration::from_secs(5), "waited {:?} for a closed socket", started.elapsed());
    let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    for e in errs {
        match e {
            CollectiveError::PeerFailed { peer, reason, what, .. } => {
                assert_eq!(peer, 2);
                assert_eq!(what, "grads[0]");
                assert!(reason.contains("connection closed"), "{reason}");
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn an_aborting_rank_fails_the_others_with_its_reason() {
    let started = Instant::now();
    let out = on_tcp_ranks(3, Duration::from_secs(120), |mut c| {
        if c.rank() == 1 {
            c.abort("out of memory");
            return None;
        }
        let e = c.all_reduce_sum(&mut Tensor::from_slice(&[1.0f32]), "grads[0]").err();
        // Later calls fail the same way, without waiting.
        let again = c.broadcast(&mut Tensor::from_slice(&[1.0f32]), 0, "params[0]").err();
        assert_eq!(e, again);
        e
    });
    assert!(started.elapsed() < Duration::from_secs(5), "waited {:?} for an abort", started.elapsed());
    let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    for e in errs {
        assert!(matches!(&e, CollectiveError::PeerFailed { peer: 1, reason, .. } if reason == "out of memory"), "{e}");
    }
}

#[test]
fn a_rank_arriving_after_the_hub_closed_still_hears_the_aborting_ranks_reason() {
    // Rank 2 calls only after rank 1 aborted and the hub failed and closed:
    // its write meets a closed socket, yet the hub's reason is what it reports.
    let out = on_tcp_ranks(3, Duration::from_secs(120), |mut c| {
        match c.rank() {
            1 => {
                c.abort("out of memory");
                None
            }
            0 => c.all_reduce_sum(&mut Tensor::from_slice(&[1.0f32]), "grads[0]").err(),
            _ => {
                std::thread::sleep(Duration::from_millis(500));
                c.all_reduce_sum(&mut Tensor::from_slice(&[1.0f32, 2.0, 3.0]), "grads[0]").err()
            }
        }
    });
    let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    for e in errs {
        assert!(matches!(&e, CollectiveError::PeerFailed { peer: 1, reason, .. } if reason == "out of memory"), "{e}");
    }
}

#[test]
fn the_watchdog_names_a_rank_that_never_arrives_on_every_rank() {
    let started = Instant::now();
    let out = on_tcp_ranks(3, Duration::from_millis(400), |c| {
        let mut c = c;
        if c.rank() == 2 {
            // Alive (its socket open) but elsewhere for longer than the timeout.
            std::thread::sleep(Duration::from_millis(1500));
            c.finish();
            return None;
        }
        let e = c.all_reduce_sum(&mut Tensor::from_slice(&[1.0f32]), "grads[0]").err();
        c.finish();
        e
    });
    assert!(started.elapsed() < Duration::from_secs(10));
    let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    for e in &errs {
        assert!(matches!(e, CollectiveError::Stalled { missing, .. } if missing == &vec![2]), "{e}");
        let text = e.to_string();
        assert!(text.contains("\"grads[0]\"") && text.contains("ranks [2] did not arrive"), "{text}");
    }
}

#[test]
fn ranks_that_disagree_over_tcp_are_an_error_on_every_rank() {
    for case in ["length", "name", "op"] {
        let out = on_tcp_ranks(2, Duration::from_secs(30), |mut c| {
            let r = c.rank();
            let mut t = if case == "length" && r == 1 {
                Tensor::from_slice(&[1.0f32, 2.0])
            } else {
                Tensor::from_slice(&[1.0f32])
            };
            let what = if case == "name" && r == 1 { "loss" } else { "grads[0]" };
            let e = if case == "op" && r == 1 {
                c.broadcast(&mut t, 0, what).err()
            } else {
                c.all_reduce_sum(&mut t, what).err()
            };
            c.finish();
            e
        });
        let errs: Vec<CollectiveError> = out.into_iter().flatten().collect();
        assert_eq!(errs.len(), 2, "{case}: {errs:?}");
        assert!(errs.iter().all(|e| matches!(e, CollectiveError::Mismatch { .. })), "{case}: {errs:?}");
    }
}

#[test]
fn a_rank_that_never_joins_is_named_by_rank_zero() {
    let started = Instant::now();
    let e = TcpCollective::connect(&env(0, 3, free_port()), Duration::from_secs(1), Duration::from_millis(500))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("ranks [1, 2] did not join"), "{e}");
    let e = TcpCollective::connect(&env(1, 2, free_port()), Duration::from_secs(1), Duration::from_millis(500))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("rank 1: no TCP collective with rank 0 at 127.0.0.1"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
}
