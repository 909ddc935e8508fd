//! The whole server on slot schedulers (`--device cpu-slots`, and
//! `--device cuda` without a GPU): concurrent requests get what the worker
//! pool gives each alone, a client that leaves frees its slot, and a full
//! queue is 429. The scheduler itself is tested in `dv-slots`.

use std::time::Duration;

use dv_serve::{SlotBackend, SlotConfig};
use futures::StreamExt;
use serde_json::json;

use crate::{body, eventually, voices, Server};

fn on_slots(c: &mut dv_serve::ServeConfig, slots: usize) {
    let mut sc = SlotConfig::new(SlotBackend::Cpu, slots);
    sc.block = 512;
    c.slots = Some(sc);
}

async fn pcm_of(s: &Server, seed: u64, voice: &str) -> Vec<u8> {
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        // The voice's own rate: samples as the sampler made them.
        .json(&body(json!({ "seed": seed, "voice": voice, "response_format": "pcm", "sample_rate": 16384 })))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.bytes().await.unwrap().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_slots_concurrent_requests_get_what_the_worker_pool_gives_each_alone() {
    let pool = Server::start(voices(false), |_| {}).await;
    let slots = Server::start(voices(false), |c| on_slots(c, 3)).await;
    let mut want = Vec::new();
    for seed in [1, 2, 3, 4] {
        want.push(pcm_of(&pool, seed, "test").await);
    }
    // Four at once on three slots: one waits for a slot, all share launches.
    let got = futures::future::join_all([1, 2, 3, 4].map(|seed| pcm_of(&slots, seed, "test"))).await;
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(!w.is_empty());
        assert!(g == w, "seed {}: {} bytes on slots, {} from the pool", k + 1, g.len(), w.len());
    }
    assert_ne!(want[0], want[1]);
    assert_eq!(slots.metric("dv_serve_slots").await, 3.0);
    assert!(slots.metric("dv_serve_slot_launches_total").await > 0.0);
    let audio: usize = want.iter().map(|w| w.len() / 2).sum();
    assert_eq!(slots.metric("dv_serve_slot_samples_total").await, audio as f64);
    assert_eq!(slots.metric("dv_serve_rendering").await, 0.0);
    assert_eq!(slots.metric("dv_serve_real_time_factor_count").await, 4.0);
    assert_eq!(slots.metric("dv_serve_time_to_first_audio_seconds_count").await, 4.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_slots_a_client_that_leaves_frees_its_slot_and_a_full_queue_is_429() {
    let s = Server::start(voices(true), |c| {
        on_slots(c, 1);
        c.queue = 0;
        c.default_voice = "slow".into();
    })
    .await;
    let long = body(json!({ "voice": "slow", "input": "Hello world good speech. ".repeat(20), "speed": 0.5 }));
    let r = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&long).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let mut stream = r.bytes_stream();
    assert!(!stream.next().await.unwrap().unwrap().is_empty());
    assert_eq!(s.metric("dv_serve_slots_busy").await, 1.0);
    // The one slot is taken and there is no queue.
    let busy = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&long).send().await.unwrap();
    assert_eq!(busy.status(), 429);
    drop(stream);
    assert!(
        eventually(Duration::from_secs(5), || async {
            s.metric("dv_serve_slots_busy").await == 0.0
                && s.metric("dv_serve_rendering").await == 0.0
                && s.metric("dv_serve_renders_cancelled_total").await == 1.0
                && s.metric("dv_serve_slot_leaves_total").await == 1.0
        })
        .await,
        "the slot was not freed"
    );
    // The freed slot serves the next request.
    let r = reqwest::Client::new()
        .post(s.url("/v1/audio/speech"))
        .json(&body(json!({ "voice": "slow", "input": "Bye now.", "response_format": "pcm" })))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.bytes().await.unwrap().len() > 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_cuda_slots_without_a_gpu_the_voice_fails_to_load_with_the_reason() {
    if dv_gpu::driver_available() {
        eprintln!("a CUDA driver is present: this test is for machines without one");
        return;
    }
    let s = Server::start(voices(false), |c| {
        c.slots = Some(SlotConfig::new(SlotBackend::Cuda { device: 0 }, 4));
        c.preload = false;
    })
    .await;
    let r = reqwest::Client::new().post(s.url("/v1/audio/speech")).json(&body(json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 500);
    let e: serde_json::Value = r.json().await.unwrap();
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(msg.contains("CUDA is unavailable"), "{msg}");
    // The server is still up.
    assert_eq!(reqwest::get(s.url("/healthz")).await.unwrap().status(), 200);
}
