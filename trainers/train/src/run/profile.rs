//! Per-phase wall time of a step, when `[train] profile` is on.

use std::time::Instant;

use dv_torch::tch;
use dv_torch::tch::Device;

/// Wall time per phase of a step, when `[train] profile` is on: the device
/// is synchronised at each boundary so that asynchronous GPU work is charged
/// to the phase that queued it.
pub(super) struct Phases {
    device: Option<Device>,
    last: Instant,
    ms: [f64; 4],
}

const PHASES: [&str; 4] = ["data", "fwd+bwd", "allreduce", "optim"];

impl Phases {
    pub(super) fn new(on: bool, device: Device) -> Phases {
        Phases { device: on.then_some(device), last: Instant::now(), ms: [0.0; 4] }
    }

    pub(super) fn mark(&mut self, phase: usize) {
        let Some(device) = self.device else { return };
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
        let now = Instant::now();
        self.ms[phase] += (now - self.last).as_secs_f64() * 1e3;
        self.last = now;
    }

    /// `" [data 1.2 fwd+bwd 30.0 … ms/step]"` over `steps` steps, then reset.
    pub(super) fn report(&mut self, steps: usize) -> String {
        if self.device.is_none() || steps == 0 {
            return String::new();
        }
        let parts: Vec<String> =
            PHASES.iter().zip(self.ms).map(|(n, v)| format!("{n} {:.1}", v / steps as f64)).collect();
        self.ms = [0.0; 4];
        format!(" [{} ms/step]", parts.join(" "))
    }
}
