//! `keel export`: a session written out on stdout in another tool's format (the conversion
//! lives in `crate::export`).

use std::process::ExitCode;

use super::args::{ExportArgs, ExportFormat};
use crate::config::paths;

pub fn run(args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let cwd = cwd.canonicalize().unwrap_or(cwd);
    let home = paths::keel_home().ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set KEEL_HOME"))?;
    let transcript = crate::export::locate(&home, &cwd, &args.session)?;
    let document = match args.format {
        ExportFormat::Atif => crate::export::atif::export(&transcript)?,
    };
    let mut text = serde_json::to_string_pretty(&document)?;
    text.push('\n');
    crate::console::write_out(&crate::console::json_safe(text));
    Ok(ExitCode::SUCCESS)
}
