//! The repository's run configs and recipes, and the fuzz targets' seeds
//! (`fuzz/seeds/run_config`, `fuzz/seeds/recipe_file`), are valid: a seed that
//! does not parse would start the fuzzer off the inputs it is meant to vary.

use std::path::{Path, PathBuf};

use dv_config::recipe::{stage_run_config, stage_table, Recipe};
use dv_config::RunConfig;

fn repo(p: &str) -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR")).join("../..").join(p)
}

fn tomls(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .toml in {dir}");
    files
}

#[test]
fn every_run_config_and_seed_validates_and_round_trips() {
    for file in tomls("trainers/train/configs").into_iter().chain(tomls("fuzz/seeds/run_config")) {
        let name = file.display().to_string();
        let cfg = RunConfig::load(&name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(RunConfig::from_toml(&name, &cfg.to_toml().unwrap()).unwrap(), cfg, "{name}");
    }
}

#[test]
fn every_recipe_and_seed_parses_and_its_stages_validate() {
    for file in tomls("infra/recipes").into_iter().chain(tomls("fuzz/seeds/recipe_file")) {
        let name = file.display().to_string();
        let recipe = Recipe::from_toml(&name, &std::fs::read_to_string(&file).unwrap()).unwrap();
        for (field, stage) in recipe.train_stages() {
            // Its run config: one of the repository's, by name (as the fuzz target reads it).
            let config = repo("trainers/train/configs").join(Path::new(&stage.config).file_name().unwrap());
            let text = std::fs::read_to_string(config).unwrap();
            let table = stage_table(toml::from_str(&text).unwrap(), field, recipe.init.clone(), stage);
            let run = Path::new("out/runs").join(field);
            stage_run_config(&format!("{name}: {field}"), &table, &run, Path::new("out/features"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn a_bad_format_or_key_names_the_recipe_and_the_field() {
    let text = std::fs::read_to_string(repo("infra/recipes/tiny-cpu.toml")).unwrap();
    let e = Recipe::from_toml("r.toml", &format!("format = \"wav\"\n{text}")).unwrap_err().to_string();
    assert!(e.starts_with("recipe r.toml: format: "), "{e}");
    let e = Recipe::from_toml("r.toml", &format!("colour = 1\n{text}")).unwrap_err().to_string();
    assert!(e.starts_with("recipe r.toml: ") && e.contains("colour"), "{e}");
}

#[test]
fn a_stage_with_init_false_trains_from_scratch_and_the_others_keep_init() {
    // finetune.toml's duration/F0 stage has `init = false`; without that line it starts from `init` too.
    let text = std::fs::read_to_string(repo("infra/recipes/finetune.toml")).unwrap();
    assert!(text.contains("\ninit = false\n"), "finetune.toml's duration stage trains from scratch");
    for (text, from_init) in [
        (text.clone(), vec!["train_wavenet"]),
        (text.replace("\ninit = false\n", "\n"), vec!["train_duration", "train_wavenet"]),
    ] {
        let recipe = Recipe::from_toml("finetune.toml", &text).unwrap();
        for (field, stage) in recipe.train_stages() {
            let table = stage_table(toml::Table::new(), field, recipe.init.clone(), stage);
            assert_eq!(table.contains_key("init"), from_init.contains(&field), "{field}: {table:?}");
        }
    }
}
