//! `dv recipe`'s recipe file: parsed and checked
//! (`dv_config::recipe::Recipe::from_toml`), then each training stage's run
//! config built and validated as `dv recipe run` does before any stage runs
//! (`stage_table`, `stage_run_config`), and checked as the `run_config`
//! target checks one. The run config a stage names is read from the
//! repository's `trainers/train/configs` by file name (embedded; the stage's
//! usual one when the name is not there); nothing is read from disk.
#![no_main]
use dv_config::recipe::{stage_run_config, stage_table, Recipe};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
mod trainer;

macro_rules! configs {
    ($($name:literal),*) => {
        [$(($name, include_str!(concat!("../../trainers/train/configs/", $name)))),*]
    };
}

const CONFIGS: [(&str, &str); 8] = configs!(
    "segmentation-embedded.toml",
    "duration-embedded.toml",
    "duration-embedded-aligned.toml",
    "wavenet-embedded.toml",
    "wavenet-embedded-cpu.toml",
    "g2p-compact.toml",
    "g2p-compact-attention.toml",
    "g2p-compact-r2l.toml"
);

/// The run config `config` names, parsed as `dv` parses it.
fn base(field: &str, config: &str) -> toml::Table {
    let usual = match field {
        "train_segmentation" => "segmentation-embedded.toml",
        "train_duration" => "duration-embedded-aligned.toml",
        _ => "wavenet-embedded-cpu.toml",
    };
    let name = Path::new(config).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let (_, text) =
        CONFIGS.iter().find(|(n, _)| *n == name).or_else(|| CONFIGS.iter().find(|(n, _)| *n == usual)).unwrap();
    toml::from_str(text).expect("the repository's run configs parse")
}

fuzz_target!(|text: &str| {
    let Ok(recipe) = Recipe::from_toml("fuzz.toml", text) else { return };
    // Each stage's key hashes the JSON of its section of the recipe.
    let _ = serde_json::to_string(&recipe);
    for (field, stage) in recipe.train_stages() {
        let table = stage_table(base(field, &stage.config), field, recipe.init.clone(), stage);
        let _ = serde_json::to_string(&table);
        if let Ok(cfg) = stage_run_config(field, &table, Path::new("out/runs/x"), Path::new("out/features")) {
            trainer::check(&cfg);
        }
    }
});
