//! The command-line front: argument parsing, setup, and dispatch to headless mode or the TUI.

pub mod args;
pub mod doctor;
pub mod setup;

use std::process::ExitCode;

use clap::Parser;

/// Entry point used by `main`: starts the async runtime and runs the chosen mode; errors
/// become one line on stderr and exit status 1.
pub fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Parses arguments and runs the chosen mode.
pub async fn run() -> anyhow::Result<ExitCode> {
    let cli = args::Cli::parse();
    if let Some(args::Command::Doctor) = cli.command {
        return Ok(doctor::run());
    }
    if cli.print {
        return Ok(crate::headless::run(cli).await?);
    }
    anyhow::bail!("interactive mode is not available in this build yet; use -p for headless mode")
}
