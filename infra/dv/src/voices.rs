//! `dv voices`: the voice packages `dv synth`, `dv g2p` and `dv-serve` can
//! find by name (`dv_voice::catalog`: `DV_VOICES`, `$DV_HOME/voices`, the
//! installed share folder, the repository's shipped voices), which one is
//! used when none is named (listed first), and which are demonstrations
//! ([`catalog::is_demo`]).

use std::path::{Path, PathBuf};

use dv_voice::catalog;

/// The shipped voices of the source tree this binary was built from.
pub(crate) fn shipped_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inference/voices");
    dir.canonicalize().unwrap_or(dir)
}

/// The search path with the shipped voices last.
pub(crate) fn search_path() -> Vec<PathBuf> {
    catalog::search_path(Some(&shipped_dir()))
}

/// The package directory for `--voice` (a name or a path), or the default
/// voice when none is given.
pub(crate) fn resolve(voice: Option<&str>) -> anyhow::Result<PathBuf> {
    let name = voice.map_or_else(catalog::default_voice, str::to_string);
    Ok(catalog::resolve(&name, &search_path())?)
}

pub(crate) fn run() -> anyhow::Result<()> {
    let path = search_path();
    let default = catalog::default_voice();
    // The default first, as the server's voice list has it.
    let found = catalog::list_default_first(&path, &default);
    println!("{:<2}{:<16} {:<14} {:<6} {:<10} directory", "", "voice", "wavenet", "text", "step");
    for e in &found {
        let mark = match (e.name == default, catalog::is_demo(&e.name)) {
            (true, true) => "*d",
            (true, false) => "*",
            (false, true) => "d",
            (false, false) => "",
        };
        match &e.config {
            Ok(c) => {
                let w = &c.wavenet;
                let text = match (c.duration.is_some(), c.g2p.is_some()) {
                    (true, true) => "yes",
                    (true, false) => "no g2p",
                    _ => "no",
                };
                println!(
                    "{mark:<2}{:<16} {:<14} {text:<6} {:<10} {}",
                    e.name,
                    format!("{}x{}x{}", w.layers, w.residual_channels, w.skip_channels),
                    c.lineage.step,
                    e.dir.display()
                );
            }
            Err(err) => println!("{mark:<2}{:<16} unreadable: {err}", e.name),
        }
    }
    if found.is_empty() {
        println!("(no voices found)");
    }
    println!("\n* the default voice (DV_VOICE, else {})", catalog::SHIPPED_VOICE);
    if found.iter().any(|e| catalog::is_demo(&e.name)) {
        println!("d a demonstration: a toy voice `infra/run demo` trained in minutes on the CPU (demo-…)");
    }
    println!("searched, in order:");
    for p in &path {
        println!("  {}", p.display());
    }
    Ok(())
}
