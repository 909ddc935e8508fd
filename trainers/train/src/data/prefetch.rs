//! A rank's training batches, built ahead on a data thread (`[train]
//! prefetch`).
//!
//! Building a batch is CPU work (a WaveNet batch gathers each chunk's
//! samples and computes its conditioning features: 2.6–6.3 ms a step on the
//! device machine's CPUs), and the training thread used to do it at the
//! start of each step, after the previous step's loss was read, so the GPU
//! sat idle for it. A data thread now builds the batches of the coming
//! steps on the CPU while the step runs, in page-locked memory when the
//! device is a GPU; the training thread only queues each one's copy to the
//! device. Which examples a step reads is a function of the
//! step alone ([`Sampler::rank_batch_in`]), so the batches, and therefore
//! the results, are the same with and without it (a test checks), and a
//! resumed run starts its thread at the resumed step.

use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use dv_torch::tch::Device;

use super::dataset::Dataset;
use super::sampler::{Buckets, Sampler};
use crate::{Batch, TrainError};

/// Which examples each step of one rank reads.
#[derive(Debug, Clone)]
pub struct Plan {
    pub sampler: Sampler,
    pub buckets: Option<Buckets>,
    pub rank: usize,
    pub world: usize,
}

impl Plan {
    fn build(&self, data: &dyn Dataset, step: u64, device: Device) -> Result<Batch, TrainError> {
        let idx = self.sampler.rank_batch_in(step, self.rank, self.world, self.buckets.as_ref());
        data.batch(&idx, device)
    }
}

/// The batches of steps `steps`, asked for in order with [`Batches::get`].
pub struct Batches {
    data: Arc<dyn Dataset>,
    plan: Arc<Plan>,
    device: Device,
    ahead: Option<Ahead>,
}

/// The data thread and the batches it has built, tagged with their step.
struct Ahead {
    rx: Option<Receiver<(u64, Result<Batch, TrainError>)>>,
    worker: Option<JoinHandle<()>>,
}

impl Drop for Ahead {
    fn drop(&mut self) {
        // Dropping the receiver ends the thread at its next send.
        self.rx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

impl Batches {
    /// `prefetch` batches at most are built ahead (0: each is built when
    /// asked for, in the calling thread).
    pub fn new(data: Arc<dyn Dataset>, plan: Plan, steps: Range<u64>, prefetch: usize, device: Device) -> Batches {
        let plan = Arc::new(plan);
        let ahead = (prefetch > 0 && !steps.is_empty()).then(|| {
            // A rendezvous channel (capacity 0) still lets the thread hold one
            // finished batch while it waits: `prefetch` in all.
            let (tx, rx) = sync_channel(prefetch - 1);
            let (data, plan) = (Arc::clone(&data), Arc::clone(&plan));
            let worker = std::thread::spawn(move || {
                for step in steps {
                    let batch = plan.build(data.as_ref(), step, Device::Cpu).map(|b| b.pinned_for(device));
                    let failed = batch.is_err();
                    if tx.send((step, batch)).is_err() || failed {
                        return; // the trainer is gone, or it will stop at this error
                    }
                }
            });
            Ahead { rx: Some(rx), worker: Some(worker) }
        });
        Batches { data, plan, device, ahead }
    }

    /// Step `step`'s batch on the device. Steps must be asked for in order.
    pub fn get(&mut self, step: u64) -> Result<Batch, TrainError> {
        let Some(ahead) = &self.ahead else {
            return self.plan.build(self.data.as_ref(), step, self.device);
        };
        let received = ahead.rx.as_ref().and_then(|rx| rx.recv().ok());
        match received {
            Some((s, batch)) if s == step => batch?.to_device(self.device),
            Some((s, _)) => Err(TrainError::Config {
                path: "[train] prefetch".into(),
                reason: format!("the data thread built step {s}'s batch where step {step}'s was asked for"),
            }),
            None => Err(TrainError::Panicked {
                rank: self.plan.rank,
                message: format!("the data thread stopped before step {step}'s batch"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::dataset::{Synthetic, SyntheticConfig};

    fn plan(len: usize) -> Plan {
        Plan { sampler: Sampler { len, batch: 4, seed: 3 }, buckets: None, rank: 1, world: 2 }
    }

    fn data() -> Arc<dyn Dataset> {
        let c = SyntheticConfig {
            examples: 40,
            features: 3,
            classes: 5,
            frames_per_label: (2, 4),
            labels: (1, 3),
            seed: 9,
        };
        Arc::new(Synthetic::new(&c).unwrap())
    }

    fn same(a: &Batch, b: &Batch) -> bool {
        a.inputs.equal(&b.inputs)
            && a.targets.equal(&b.targets)
            && a.input_lengths == b.input_lengths
            && a.target_lengths == b.target_lengths
            && a.example_ids == b.example_ids
    }

    #[test]
    fn prefetched_batches_equal_the_ones_built_in_the_training_thread() {
        let d = data();
        let mut inline = Batches::new(Arc::clone(&d), plan(d.len()), 5..17, 0, Device::Cpu);
        for prefetch in [1, 2, 5] {
            let mut ahead = Batches::new(Arc::clone(&d), plan(d.len()), 5..17, prefetch, Device::Cpu);
            for step in 5..17 {
                let (a, b) = (ahead.get(step).unwrap(), plan(d.len()).build(d.as_ref(), step, Device::Cpu).unwrap());
                assert!(same(&a, &b), "prefetch {prefetch}, step {step}");
            }
        }
        // and the inline source is the plan itself
        let a = inline.get(5).unwrap();
        assert!(same(&a, &plan(d.len()).build(d.as_ref(), 5, Device::Cpu).unwrap()));
    }

    #[test]
    fn steps_out_of_order_and_early_drops_are_reported_or_harmless() {
        let d = data();
        let mut ahead = Batches::new(Arc::clone(&d), plan(d.len()), 0..10, 2, Device::Cpu);
        ahead.get(0).unwrap();
        let err = ahead.get(5).unwrap_err().to_string();
        assert!(err.contains("step 1") && err.contains("step 5"), "{err}");
        // dropped with its thread blocked on a full channel: joins, no hang
        let stalled = Batches::new(Arc::clone(&d), plan(d.len()), 0..1000, 3, Device::Cpu);
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(stalled);
    }

    struct Broken;
    impl Dataset for Broken {
        fn len(&self) -> usize {
            40
        }
        fn batch(&self, indices: &[usize], _: Device) -> Result<Batch, TrainError> {
            Err(TrainError::Features { path: "shard-3.parquet".into(), reason: format!("bad example {}", indices[0]) })
        }
    }

    #[test]
    fn a_data_error_reaches_the_training_thread_at_its_step() {
        let mut ahead = Batches::new(Arc::new(Broken), plan(40), 7..20, 2, Device::Cpu);
        let err = ahead.get(7).unwrap_err().to_string();
        assert!(err.contains("shard-3.parquet"), "{err}");
        // the thread stopped after the error: later steps say so, they do not hang
        let later = ahead.get(8).unwrap_err().to_string();
        assert!(later.contains("data thread stopped"), "{later}");
    }
}
