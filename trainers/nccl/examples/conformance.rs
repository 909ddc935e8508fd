//! The collective conformance suite on NCCL, one process per GPU, and the
//! dead-rank check: run on a machine with GPUs.
//!
//! `conformance [gpus]` spawns one process per GPU (itself, with RANK,
//! WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set), each running
//! `dv_train::conformance::run_suite` on an `NcclCollective`; then a second
//! group where rank 1 exits right after joining, to show rank 0's
//! collective failing with a clear error within the timeout.

use std::process::Command;
use std::time::{Duration, Instant};

use dv_nccl::{unique_id, NcclCollective, UNIQUE_ID_BYTES};
use dv_torch::tch;
use dv_train::{share_id, Collective, RankEnv};

fn rank_main(env: RankEnv, mode: &str) -> i32 {
    let timeout = Duration::from_secs(20);
    let id = if env.rank == 0 { Some(unique_id().expect("NCCL id")) } else { None };
    let id = share_id(&env, id.as_deref(), UNIQUE_ID_BYTES, Duration::from_secs(60)).expect("rendezvous");
    let mut c = NcclCollective::new(&id, env.rank, env.world, env.local_rank, timeout).expect("communicator");
    let device = tch::Device::Cuda(env.local_rank);
    if mode == "dead" {
        if env.rank == 1 {
            std::process::exit(3);
        }
        let started = Instant::now();
        let mut t = tch::Tensor::ones([1 << 20], (tch::Kind::Float, device));
        let mut result = Ok(());
        for k in 0..1000 {
            result = c.all_reduce_sum(&mut t, &format!("grads[{k}]"));
            if result.is_err() {
                break;
            }
        }
        match result {
            Err(e) => {
                println!("dead-rank: rank 0 failed after {:.1} s: {e}", started.elapsed().as_secs_f64());
                return 0;
            }
            Ok(()) => {
                println!("dead-rank: rank 0 never noticed");
                return 1;
            }
        }
    }
    match dv_train::conformance::run_suite(&mut c, device) {
        Ok(passed) => {
            println!("rank {} of {}: passed {passed:?}", env.rank, env.world);
            // Latency and bandwidth of one all-reduce, as the trainer calls it.
            for floats in [1i64, 1 << 20, 16 << 20] {
                let mut t = tch::Tensor::ones([floats], (tch::Kind::Float, device));
                for k in 0..5 {
                    c.all_reduce_sum(&mut t, &format!("warm {k}")).expect("warm-up");
                }
                let reps = 50;
                let started = Instant::now();
                for k in 0..reps {
                    c.all_reduce_sum(&mut t, &format!("timed {k}")).expect("timed");
                }
                let ms = started.elapsed().as_secs_f64() * 1e3 / reps as f64;
                if env.rank == 0 {
                    let gbs = floats as f64 * 4.0 / (ms * 1e-3) / 1e9;
                    println!(
                        "all_reduce {floats} floats ({} B): {ms:.3} ms, {gbs:.2} GB/s algorithm bandwidth",
                        floats * 4
                    );
                }
            }
            0
        }
        Err(e) => {
            println!("rank {}: FAILED {e}", env.rank);
            1
        }
    }
}

fn launch(gpus: usize, mode: &str) -> bool {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<_> = (0..gpus)
        .map(|r| {
            Command::new(&exe)
                .arg(mode)
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", gpus.to_string())
                .env("LOCAL_RANK", r.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<i32> = children.iter_mut().map(|c| c.wait().unwrap().code().unwrap_or(-1)).collect();
    println!("{mode}: exit codes {codes:?}");
    match mode {
        "dead" => codes[0] == 0,
        _ => codes.iter().all(|&c| c == 0),
    }
}

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    if let Some(env) = RankEnv::from_env().expect("rank environment") {
        std::process::exit(rank_main(env, &arg));
    }
    let gpus: usize = arg.parse().unwrap_or(2);
    println!("NCCL available: {}", dv_nccl::available());
    let ok = launch(gpus, "suite") && (gpus < 2 || launch(gpus, "dead"));
    println!("conformance on {gpus} GPU(s): {}", if ok { "PASS" } else { "FAIL" });
    std::process::exit(if ok { 0 } else { 1 });
}
