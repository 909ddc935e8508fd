//! `dv serve`: the speech server. The server is its own binary, `dv-serve`
//! (crate `infra/serve`), which links no libtorch; `dv serve ARGS…` replaces
//! this process with the `dv-serve` found next to the `dv` executable, with
//! the same arguments (`dv serve --help` is `dv-serve --help`).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use anyhow::{bail, Context};

/// The server binary's name, next to `dv`.
const SERVER: &str = "dv-serve";

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub(crate) struct ServeArgs {
    /// Arguments for dv-serve (see `dv serve --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn server_path() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the dv executable")?;
    let dir = exe.parent().context("the dv executable has no folder")?;
    Ok(dir.join(SERVER))
}

pub(crate) fn run(a: ServeArgs) -> anyhow::Result<()> {
    let server = server_path()?;
    if !server.is_file() {
        bail!(
            "{} is missing: the server is a separate binary (no libtorch); build it with \
             `cargo build -p dv-serve` (infra/run builds it beside dv), or run it directly",
            server.display()
        );
    }
    // Only returns on failure.
    // argv[0] "dv serve": what the server's usage line shows (`dv serve --help`).
    let err = std::process::Command::new(&server).arg0("dv serve").args(&a.args).exec();
    Err(err).with_context(|| format!("starting {}", server.display()))
}
