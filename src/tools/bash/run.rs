//! Running one command in the foreground: until it exits, times out or the call is cancelled.
//! In every case the command's whole process group is killed before the call returns, so
//! nothing it started outlives it (use `run_in_background` for servers and watchers).

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::gate::Lease;
use super::output::{Captured, read_output};
use super::process::ProcessGroup;
use super::spawn::{Confine, shell_command};
use crate::sandbox::cgroup::Usage;
use crate::sandbox::quarantine::Outcome;
use crate::sandbox::{Kind, Policy};
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
    /// What its cgroups counted against its limits.
    pub usage: Usage,
    /// What became of configuration it created at the top of the workspace.
    pub swept: Vec<Outcome>,
    /// The top of the workspace stayed closed because an unsandboxed command ran meanwhile.
    pub top_closed: bool,
}

/// How long keel waits for a command's cgroups to empty after killing what is left in them.
const EMPTY_WAIT: Duration = Duration::from_secs(5);

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
    let mut policy = confine.policy(&cwd_file).map_err(|e| refused(cwd, e))?;
    // Unsandboxed commands and sandboxed ones that may create configuration at the top of the
    // workspace never run at the same time (see `gate`).
    let mut sweep = Vec::new();
    let mut top_closed = false;
    let _lease: Option<Lease> = match policy.as_mut() {
        None => tokio::select! {
            lease = confine.gate.unconfined() => Some(Lease::Unconfined(lease)),
            _ = cancel.cancelled() => return Ok(not_started(policy, Ending::Cancelled)),
        },
        Some(p) if p.kind == Kind::Sandbox && confine.quarantine.is_some() => match confine.gate.try_open() {
            Some(lease) => {
                sweep = crate::sandbox::policy::open_top(p);
                Some(Lease::Open(lease))
            }
            None => {
                top_closed = !p.reserved.is_empty();
                None
            }
        },
        Some(_) => None,
    };
    let file = std::fs::File::create(&log).map_err(io)?;
    let mut cmd =
        shell_command(command, cwd, &file, &cwd_file, confine, policy.as_ref(), &sweep).map_err(|e| refused(cwd, e))?;
    let mut aftermath = Aftermath::new(sweep, confine.quarantine.map(|q| q.join(name)));
    let mut child = cmd.spawn().map_err(|e| refused(cwd, e))?;
    drop(file);
    aftermath.started(child.id().and_then(|id| i32::try_from(id).ok()));
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
    // Processes the command left running (or the whole tree, on timeout and cancellation). A
    // helper that exited has killed what it left below itself; what left its tree before is
    // caught by the group and the cgroups.
    let pgid = match ending {
        Ending::Exited(_) => group.kill_members_and_disarm(),
        _ => group.kill_tree_and_disarm(),
    };
    if !matches!(ending, Ending::Exited(_)) {
        // Also the shell itself, in case it was stopped before it had made its own group.
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    // What is left in its cgroups is killed and awaited; only then is what it created at the
    // top looked at (nothing of it can still change it), and only then may another command
    // start.
    aftermath.pgid = pgid.map(|p| p.as_raw());
    let (usage, swept) = tokio::task::spawn_blocking(move || aftermath.finish())
        .await
        .map_err(|e| ToolError::invalid(format!("keel could not finish the command's clean-up: {e}")))?;

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
        usage,
        swept,
        top_closed,
    })
}

/// The end of one foreground command: what is left of it in its cgroups is killed and awaited,
/// their counters read, and only then what it created at the top of the workspace looked at.
/// Dropped unfinished (the call's future was dropped), it does the same, so nothing the
/// command made stays unexamined; if keel dies first, its record makes the next start do it.
struct Aftermath {
    /// The helper's pid (its group id, and its cgroups' name).
    pgid: Option<i32>,
    sweep: Vec<PathBuf>,
    quarantine: Option<PathBuf>,
    record: Option<PathBuf>,
    done: bool,
}

impl Aftermath {
    fn new(sweep: Vec<PathBuf>, quarantine: Option<PathBuf>) -> Self {
        let record = match &quarantine {
            Some(q) if !sweep.is_empty() => crate::sandbox::quarantine::record(&sweep, q),
            _ => None,
        };
        Aftermath {
            pgid: None,
            sweep,
            quarantine,
            record,
            done: false,
        }
    }

    fn started(&mut self, helper: Option<i32>) {
        self.pgid = helper;
        if let (Some(r), Some(h)) = (&self.record, helper) {
            crate::sandbox::quarantine::record_helper(r, h);
        }
    }

    fn finish(mut self) -> (Usage, Vec<Outcome>) {
        self.run()
    }

    fn run(&mut self) -> (Usage, Vec<Outcome>) {
        self.done = true;
        let ended = self.pgid.map(|p| crate::sandbox::cgroup::end(p, EMPTY_WAIT));
        if ended.is_some_and(|e| !e.emptied) {
            crate::debug::log(format!(
                "processes of the command with helper {:?} were still in its cgroups after {EMPTY_WAIT:?}",
                self.pgid
            ));
        }
        let swept = match &self.quarantine {
            Some(q) if !self.sweep.is_empty() => crate::sandbox::quarantine::sweep(&self.sweep, q),
            _ => Vec::new(),
        };
        if let Some(r) = self.record.take() {
            crate::sandbox::quarantine::clear(&r);
        }
        (ended.map(|e| e.usage).unwrap_or_default(), swept)
    }
}

impl Drop for Aftermath {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(p) = self.pgid {
            super::process::kill_group(nix::unistd::Pid::from_raw(p));
        }
        let _ = self.run();
    }
}

/// A command that never started (cancelled while it waited for its turn).
fn not_started(policy: Option<Policy>, ending: Ending) -> Finished {
    Finished {
        ending,
        output: Captured {
            text: String::new(),
            total_bytes: 0,
            kept_file: None,
        },
        final_cwd: None,
        policy,
        usage: Usage::default(),
        swept: Vec::new(),
        top_closed: false,
    }
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
