//! `dv train --config`'s run config: parsed and validated
//! (`dv_config::RunConfig::from_toml`, re-exported as `dv_train::RunConfig`),
//! then what the trainer does with one before it builds the model
//! (`trainer::check`).
#![no_main]
use libfuzzer_sys::fuzz_target;
mod trainer;

fuzz_target!(|text: &str| {
    if let Ok(cfg) = dv_config::RunConfig::from_toml("fuzz.toml", text) {
        trainer::check(&cfg);
    }
});
