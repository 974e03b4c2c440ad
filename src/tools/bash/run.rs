//! Running one command in the foreground: until it exits, times out or the call is cancelled.
//! In every case the command's whole process group is killed before the call returns, so
//! nothing it started outlives it (use `run_in_background` for servers and watchers).

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::output::{Captured, read_output};
use super::process::ProcessGroup;
use super::spawn::{Confine, shell_command};
use crate::sandbox::Policy;
use crate::tools::ToolError;

#[derive(Debug)]
pub enum Ending {
    Exited(ExitStatus),
    TimedOut(Duration),
    Cancelled,
}

#[derive(Debug)]
pub struct Finished {
    pub ending: Ending,
    pub output: Captured,
    /// The shell's working directory when the command ended normally.
    pub final_cwd: Option<PathBuf>,
    /// How the command was confined (`None`: not at all).
    pub policy: Option<Policy>,
}

/// Runs `command` in `cwd`; its output goes to `<out_dir>/<name>.log` while it runs.
pub async fn run_foreground(
    command: &str,
    cwd: &Path,
    out_dir: &Path,
    name: &str,
    timeout: Duration,
    cancel: &CancellationToken,
    confine: &Confine<'_>,
) -> Result<Finished, ToolError> {
    let io = |e: std::io::Error| {
        ToolError::invalid(format!(
            "keel could not create the file that captures the command's output in {} ({e}), so the command \
             was NOT run. This is a problem with keel's own storage (KEEL_HOME), not with the command.",
            out_dir.display()
        ))
    };
    std::fs::create_dir_all(out_dir).map_err(io)?;
    let log = out_dir.join(format!("{name}.log"));
    let cwd_file = out_dir.join(format!("{name}.cwd"));
    let file = std::fs::File::create(&log).map_err(io)?;
    let (mut cmd, policy) = shell_command(command, cwd, &file, &cwd_file, confine).map_err(|e| refused(cwd, e))?;
    let mut child = cmd.spawn().map_err(|e| refused(cwd, e))?;
    drop(file);
    let mut group = ProcessGroup::of(&child);

    let ending = tokio::select! {
        biased;
        status = child.wait() => match status {
            Ok(s) => Ending::Exited(s),
            Err(e) => return Err(ToolError::io("waiting for the shell failed", e)),
        },
        _ = tokio::time::sleep(timeout) => Ending::TimedOut(timeout),
        _ = cancel.cancelled() => Ending::Cancelled,
    };
    // Processes the command left running (or the whole tree, on timeout and cancellation).
    group.kill_and_disarm();
    if !matches!(ending, Ending::Exited(_)) {
        // Also the shell itself, in case it was stopped before it had made its own group.
        let _ = child.start_kill();
        let _ = child.wait().await;
    }

    let output = read_output(&log).map_err(|e| ToolError::io(format!("cannot read {}", log.display()), e))?;
    let final_cwd = match ending {
        Ending::Exited(_) => read_cwd_report(&cwd_file),
        _ => None,
    };
    let _ = std::fs::remove_file(&cwd_file);
    if output.kept_file.is_none() {
        let _ = std::fs::remove_file(&log);
    }
    Ok(Finished {
        ending,
        output,
        final_cwd,
        policy,
    })
}

/// The shell's final directory from its report. The command can write that file too (it is
/// writable even in the jail), so only its first few KiB are read: a path is never longer.
fn read_cwd_report(path: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(8192)
        .read_to_string(&mut text)
        .ok()?;
    Some(PathBuf::from(text.trim_end_matches('\n')))
}

/// Free bytes below which the file system holding the output counts as full.
const FULL_BELOW: u64 = 64 * 1024;

/// A note for the model when the file system that holds the command's captured output is full:
/// the capture, not necessarily the command, failed (missing output, "No space left on device",
/// a nonzero exit from a failed write).
pub fn capture_note(out_dir: &Path) -> Option<String> {
    let stat = nix::sys::statvfs::statvfs(out_dir).ok()?;
    let free = stat.blocks_available().saturating_mul(stat.fragment_size());
    (free < FULL_BELOW).then(|| {
        format!(
            "Note: keel's own capture of this command's output failed: the file system holding keel's session data \
             ({}) is full ({free} bytes free). The output above may be incomplete, and a \"No space left on device\" \
             or write error and the exit code may come from keel's capture, not from the command itself. Free \
             space there (KEEL_HOME) before relying on this result.",
            out_dir.display()
        )
    })
}

/// A shell that could not start, or a confinement that could not be set up.
pub fn refused(cwd: &Path, e: std::io::Error) -> ToolError {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        return ToolError::invalid(format!(
            "the command was not run: {e}. Tell the user; keel cannot run shell commands safely here."
        ));
    }
    ToolError::io(format!("cannot start the shell in {}", cwd.display()), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command can fill its own working-directory report: keel reads no more than a path's
    /// worth of it.
    #[test]
    fn a_flooded_cwd_report_is_read_only_in_part() {
        let d = tempfile::tempdir().unwrap();
        let report = d.path().join("r.cwd");
        std::fs::write(&report, "/x".repeat(1 << 20)).unwrap();
        assert!(read_cwd_report(&report).unwrap().as_os_str().len() <= 8192);
        std::fs::write(&report, "/work/sub\n").unwrap();
        assert_eq!(read_cwd_report(&report), Some(PathBuf::from("/work/sub")));
    }
}
