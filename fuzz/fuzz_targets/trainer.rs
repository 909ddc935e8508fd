//! What is done with a run config that validated, short of libtorch and the
//! data: the shared checks of the `run_config` and `recipe_file` targets.
use dv_config::{ModelConfig, RunConfig};

/// A checkpoint stores the run config as TOML, and `dv export`, `dv align`
/// and `dv evaluate` read it back: it must write, read back and write the
/// same text. Then what the trainer takes from it before it builds the
/// model: the collective timeout, the model's sizes (checked as the model's
/// constructor checks them), the learning rate at the last step.
pub fn check(cfg: &RunConfig) {
    let stored = cfg.to_toml().expect("a run config that validated writes as TOML");
    let back = dv_config::RunConfig::from_toml("checkpoint", &stored).expect("and reads back");
    assert_eq!(back.to_toml().expect("writes again"), stored, "the run config changed on its way through TOML");
    let _ = cfg.train.collective_timeout();
    let _ = match cfg.model {
        ModelConfig::Segmentation { .. } => cfg.segmentation_sizes("[model]").map(|s| s.check()),
        ModelConfig::G2p { .. } => cfg.g2p_sizes("[model]").map(|s| s.check()),
        ModelConfig::Duration { .. } => cfg.duration_sizes("[model]").map(|s| s.check()),
        ModelConfig::Wavenet { .. } => cfg.wavenet_sizes("[model]").map(|s| s.check()),
    };
    let _ = cfg.schedule.lr(cfg.optimizer.lr, cfg.train.steps.saturating_sub(1));
}
