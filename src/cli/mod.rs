//! The command-line front: argument parsing, setup, and dispatch to headless mode or the TUI.

pub mod args;
pub mod doctor;
mod doctor_models;
mod doctor_web;
pub mod export;
pub mod mcp;
pub mod plugin;
pub mod rewind;

use std::process::ExitCode;

use clap::Parser;
use tracing::Instrument;

use crate::console::{err_line, out_line};

/// Entry point used by `main`: starts the async runtime and runs the chosen mode; errors
/// become one line on stderr and exit status 1.
pub fn main() -> ExitCode {
    limit_malloc_arenas();
    // One thread drives the agent loop and the UI (it is one logical thread of control); blocking
    // work (file reads, searches) runs on tokio's blocking pool. The multi-threaded scheduler's
    // cross-thread wake-ups cost more CPU than they saved (docs/PERFORMANCE.md).
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            err_line!("Error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(run());
    // A blocking task still running (a search past its budget, a read a cancelled call left
    // behind) must not hold the exit: the answer is already out.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(code) => code,
        Err(e) => {
            err_line!("Error: {e}");
            ExitCode::from(1)
        }
    }
}

/// glibc gives each thread that allocates its own malloc arena (64 MiB of address space, and
/// resident pages it keeps after a burst). keel's allocating work runs on one thread; the blocking
/// pool's threads only read files and search, so one shared arena costs no measurable contention
/// and keeps the peak resident set down (docs/PERFORMANCE.md, "Memory").
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: called first thing in `main`, before any other thread exists; mallopt only sets a
    // tuning parameter of the allocator and reports failure by its return value, which is harmless
    // to ignore (the default stays).
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Parses arguments and runs the chosen mode.
pub async fn run() -> anyhow::Result<ExitCode> {
    let cli = args::Cli::parse();
    // Before any settings are read: what sandboxed commands of a keel that died while they ran
    // created among the configuration names is moved away first.
    for line in crate::sandbox::quarantine::recover() {
        err_line!("{line}");
    }
    match cli.command {
        Some(args::Command::Doctor {
            offline,
            provider,
            model,
        }) => return Ok(doctor::run(provider, model, offline).await),
        Some(args::Command::Hooks) => return list_hooks(),
        Some(args::Command::Rewind(ref a)) => return rewind::run(a),
        Some(args::Command::Export(ref a)) => return export::run(a),
        Some(args::Command::Mcp(command)) => return Ok(mcp::run(command).await),
        Some(args::Command::Plugin(ref command)) => return plugin::run(command),
        Some(args::Command::Context) => {
            crate::console::write_out(&crate::launch::setup::context_report(&cli.lower())?);
            return Ok(ExitCode::SUCCESS);
        }
        None => {}
    }
    crate::debug::init(cli.debug.as_deref(), cli.print && cli.debug.is_some())?;
    let headless = cli.print || cli.programs.input_format == args::InputFormat::StreamJson;
    let mode = if headless { "headless" } else { "tui" };
    let span = tracing::info_span!("session", mode);
    if headless {
        return Ok(crate::headless::run(cli.lower()).instrument(span).await?);
    }
    Ok(crate::tui::run(cli.lower()).instrument(span).await?)
}

/// `keel hooks`: what is configured, by event and source file.
fn list_hooks() -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let keel_home = crate::config::paths::keel_home().unwrap_or_else(|| cwd.join(".keel"));
    let mut settings = crate::config::settings::Settings::load(dirs::home_dir().as_deref(), &keel_home, &cwd, None)?;
    crate::config::precedence::check_managed(&settings)?;
    // What a session would run: the layers weighed as setup weighs them (a project's
    // `disableAllHooks` turns off only its own hooks).
    let trusted = cwd
        .canonicalize()
        .is_ok_and(|c| crate::config::trust::is_trusted(&keel_home, &c));
    let weigh = crate::config::precedence::Weigh {
        project_trusted: trusted,
        lower_only: &[],
    };
    for notice in crate::config::precedence::enforce(&mut settings, weigh) {
        out_line!("note: {notice}");
    }
    let disabled = settings
        .scalar("disableAllHooks")
        .is_some_and(|(v, _)| v == &serde_json::Value::Bool(true));
    let config = crate::hooks::HookConfig::from_settings(&settings)?;
    if disabled && config.events.is_empty() {
        out_line!("All hooks are disabled (disableAllHooks).");
    } else {
        crate::console::write_out(&config.describe());
    }
    // A misspelt top-level key may be the `hooks` the user thinks is there.
    for line in settings.unknown_keys() {
        out_line!("warning: {line}");
    }
    Ok(ExitCode::SUCCESS)
}
