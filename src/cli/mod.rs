//! The command-line front: argument parsing, setup, and dispatch to headless mode or the TUI.

pub mod args;
pub mod setup;

use std::process::ExitCode;

use clap::Parser;

/// Entry point used by `main`: parses arguments and runs the chosen mode.
pub async fn run() -> anyhow::Result<ExitCode> {
    let cli = args::Cli::parse();
    if let Some(args::Command::Context) = cli.command {
        print!("{}", setup::context_report(&cli)?);
        return Ok(ExitCode::SUCCESS);
    }
    if cli.print {
        return Ok(crate::headless::run(cli).await?);
    }
    anyhow::bail!("interactive mode is not available in this build yet; use -p for headless mode")
}
