//! Rank discovery from the environment (torchrun and Slurm variables) and
//! the TCP rendezvous that hands NCCL's unique id to every rank.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use dv_train::{share_id, RankEnv};

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k| m.get(k).cloned()
}

#[test]
fn torchrun_and_slurm_variables_name_the_rank() {
    let torchrun =
        [("RANK", "3"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "1"), ("MASTER_ADDR", "n0"), ("MASTER_PORT", "29500")];
    let e = RankEnv::from_vars(vars(&torchrun)).unwrap().unwrap();
    assert_eq!(e, RankEnv { rank: 3, world: 8, local_rank: 1, master_addr: "n0".into(), master_port: 29500 });
    let slurm = [
        ("SLURM_PROCID", "5"),
        ("SLURM_NTASKS", "16"),
        ("SLURM_LOCALID", "5"),
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "1"),
    ];
    let e = RankEnv::from_vars(vars(&slurm)).unwrap().unwrap();
    assert_eq!((e.rank, e.world, e.local_rank), (5, 16, 5));
    // Nothing set: not a multi-process run.
    assert_eq!(RankEnv::from_vars(vars(&[])).unwrap(), None);
}

#[test]
fn inconsistent_rank_variables_are_errors_that_say_which() {
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[("RANK", "0")], "WORLD_SIZE"),
        (&[("RANK", "4"), ("WORLD_SIZE", "4"), ("MASTER_ADDR", "a"), ("MASTER_PORT", "1")], "outside a world of 4"),
        (&[("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_PORT", "1")], "MASTER_ADDR"),
        (&[("RANK", "x"), ("WORLD_SIZE", "2")], "RANK=\"x\""),
    ];
    for (pairs, want) in cases {
        let e = RankEnv::from_vars(vars(pairs)).unwrap_err().to_string();
        assert!(e.contains(want), "{pairs:?}: {e}");
    }
}

fn env(rank: usize, world: usize, port: u16) -> RankEnv {
    RankEnv { rank, world, local_rank: rank, master_addr: "127.0.0.1".into(), master_port: port }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn every_rank_receives_rank_zeros_id() {
    let port = free_port();
    let id: Vec<u8> = (0..128).map(|i| (i * 7 + 3) as u8).collect();
    let got: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|r| {
                let id = id.clone();
                s.spawn(move || {
                    let mine = if r == 0 { Some(id.as_slice()) } else { None };
                    share_id(&env(r, 4, port), mine, 128, Duration::from_secs(30)).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (r, g) in got.iter().enumerate() {
        assert_eq!(g, &id, "rank {r}");
    }
}

#[test]
fn a_rank_that_never_arrives_is_named_by_rank_zero() {
    let port = free_port();
    let started = Instant::now();
    let id = vec![1u8; 128];
    let e = std::thread::scope(|s| {
        let zero = s.spawn(|| share_id(&env(0, 3, port), Some(&id), 128, Duration::from_secs(2)));
        // Rank 1 arrives; rank 2 never does.
        s.spawn(|| share_id(&env(1, 3, port), None, 128, Duration::from_secs(5)).unwrap());
        zero.join().unwrap().unwrap_err().to_string()
    });
    assert!(e.contains("ranks [2]") && e.contains("did not reach the rendezvous"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // A non-zero rank with no rank 0 gives up after its timeout too.
    let e = share_id(&env(1, 2, free_port()), None, 128, Duration::from_millis(500)).unwrap_err().to_string();
    assert!(e.contains("no rendezvous with rank 0"), "{e}");
}
