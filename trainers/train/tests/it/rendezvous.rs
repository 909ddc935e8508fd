//! Rank discovery from the environment (torchrun and Slurm variables) and
//! the TCP rendezvous that hands NCCL's unique id to every rank.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use dv_train::{first_host, share_id, RankEnv, SLURM_PORT_BASE, SLURM_PORT_SPAN};

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
fn under_slurm_the_first_host_and_the_job_id_give_the_rendezvous() {
    let slurm = [
        ("SLURM_PROCID", "2"),
        ("SLURM_NTASKS", "8"),
        ("SLURM_LOCALID", "2"),
        ("SLURM_JOB_NODELIST", "gpu[03-04,11],cpu1"),
        ("SLURM_JOB_ID", "123456"),
    ];
    let e = RankEnv::from_vars(vars(&slurm)).unwrap().unwrap();
    assert_eq!(e.master_addr, "gpu03");
    assert_eq!(e.master_port as usize, SLURM_PORT_BASE + 123_456 % SLURM_PORT_SPAN);
    assert!(e.master_port as usize >= SLURM_PORT_BASE && (e.master_port as usize) < SLURM_PORT_BASE + SLURM_PORT_SPAN);
    // exported variables win
    let mut exported = slurm.to_vec();
    exported.extend([("MASTER_ADDR", "head"), ("MASTER_PORT", "7000")]);
    let e = RankEnv::from_vars(vars(&exported)).unwrap().unwrap();
    assert_eq!((e.master_addr.as_str(), e.master_port), ("head", 7000));
    // no node list and no MASTER_ADDR: an error naming both
    let e = RankEnv::from_vars(vars(&slurm[..3])).unwrap_err().to_string();
    assert!(e.contains("MASTER_ADDR") && e.contains("SLURM_JOB_NODELIST"), "{e}");
}

#[test]
fn slurm_node_lists_give_their_first_host() {
    for (list, want) in [
        ("node07", Some("node07")),
        ("node[01-04]", Some("node01")),
        ("gpu[03-08,11],cpu1", Some("gpu03")),
        ("a-b[1,4]", Some("a-b1")),
        ("n[007-009]x", Some("n007x")),
        ("host1,host2", Some("host1")),
        (" h.example.org ", Some("h.example.org")),
        ("", None),
        ("node[", None),
        ("node[a-b]", None),
        ("bad host", None),
    ] {
        assert_eq!(first_host(list).as_deref(), want, "{list:?}");
    }
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
