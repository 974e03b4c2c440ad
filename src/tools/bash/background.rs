//! Background shells: started by `Bash` with `run_in_background`, watched with `BashOutput`,
//! stopped with `KillShell`, and all killed when the session ends (explicitly at the end of a
//! run, and by `Drop` of the session state on every other path).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Mutex;

use nix::unistd::Pid;

use super::gate::UnconfinedLease;
use super::output::read_new;
use super::process::kill_group;
use super::spawn::{Confine, shell_command};
use crate::tools::ToolError;

/// Most new output one `BashOutput` call returns; the rest waits for the next call.
pub const MAX_POLL_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellStatus {
    Running,
    Exited(Option<i32>),
    Killed,
}

impl ShellStatus {
    /// The reference's status words.
    pub fn as_str(self) -> &'static str {
        match self {
            ShellStatus::Running => "running",
            ShellStatus::Exited(Some(0)) => "completed",
            ShellStatus::Exited(_) => "failed",
            ShellStatus::Killed => "killed",
        }
    }

    pub fn exit_code(self) -> Option<i32> {
        match self {
            ShellStatus::Exited(code) => code,
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Shell {
    command: String,
    child: tokio::process::Child,
    pgid: Option<Pid>,
    /// Lets a forced exit (a second signal) kill the group too.
    _registered: crate::shutdown::GroupGuard,
    log: PathBuf,
    read_to: u64,
    status: ShellStatus,
    /// An unsandboxed shell's place (see `gate`), given back when it ends.
    lease: Option<UnconfinedLease>,
}

impl Shell {
    /// Notices an exit; kills what the shell left running in its group the moment it is seen.
    fn refresh(&mut self) {
        if self.status != ShellStatus::Running {
            return;
        }
        if let Ok(Some(status)) = self.child.try_wait() {
            self.status = ShellStatus::Exited(exit_code(status));
            if let Some(pgid) = self.pgid.take() {
                kill_group(pgid);
            }
            self.lease = None;
        }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
        let _ = self.child.start_kill();
        let _ = self.child.try_wait();
        self.status = ShellStatus::Killed;
        self.lease = None;
    }
}

fn exit_code(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}

/// What `BashOutput` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Poll {
    pub id: String,
    pub command: String,
    pub status: ShellStatus,
    pub new_output: String,
    /// Lines dropped by the filter (they are consumed all the same).
    pub filtered_out: usize,
    /// More output is waiting beyond the per-call limit.
    pub more: bool,
    pub log: PathBuf,
}

#[derive(Debug, Default)]
struct Inner {
    next: u32,
    shells: BTreeMap<String, Shell>,
}

/// The session's background shells.
#[derive(Debug, Default)]
pub struct BackgroundShells {
    inner: Mutex<Inner>,
}

impl BackgroundShells {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `command` in `cwd`; returns its id and the file its output goes to. `lease`: the
    /// place of an unsandboxed shell, held while it runs. Sandboxed background shells keep the
    /// top of the workspace closed: keel could look at what they made only once they end.
    pub fn start(
        &self,
        command: &str,
        cwd: &Path,
        out_dir: &Path,
        confine: &Confine<'_>,
        lease: Option<UnconfinedLease>,
    ) -> Result<(String, PathBuf), ToolError> {
        std::fs::create_dir_all(out_dir)
            .map_err(|e| ToolError::io(format!("cannot create {}", out_dir.display()), e))?;
        let mut inner = self.lock();
        inner.next += 1;
        let id = format!("bash_{}", inner.next);
        let log = out_dir.join(format!("{id}.log"));
        let cwd_file = out_dir.join(format!("{id}.cwd"));
        let file =
            std::fs::File::create(&log).map_err(|e| ToolError::io(format!("cannot create {}", log.display()), e))?;
        let policy = confine.policy(&cwd_file).map_err(|e| super::run::refused(cwd, e))?;
        let mut cmd = shell_command(command, cwd, &file, &cwd_file, confine, policy.as_ref(), &[])
            .map_err(|e| super::run::refused(cwd, e))?;
        let child = cmd.spawn().map_err(|e| super::run::refused(cwd, e))?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
        inner.shells.insert(
            id.clone(),
            Shell {
                command: command.to_string(),
                child,
                pgid,
                _registered: pgid.map_or_else(crate::shutdown::GroupGuard::none, |p| {
                    crate::shutdown::GroupGuard::register(p.as_raw())
                }),
                log: log.clone(),
                read_to: 0,
                status: ShellStatus::Running,
                lease,
            },
        );
        Ok((id, log))
    }

    /// New output since the last poll, and the current status. The status is taken before the
    /// output is read, so an exited shell's output is complete.
    pub fn poll(&self, id: &str, filter: Option<&regex::Regex>) -> Result<Poll, ToolError> {
        let mut inner = self.lock();
        let known = known_ids(&inner);
        let shell = inner.shells.get_mut(id).ok_or_else(|| unknown(id, &known))?;
        shell.refresh();
        let (text, next) = read_new(&shell.log, shell.read_to, MAX_POLL_BYTES)
            .map_err(|e| ToolError::io(format!("cannot read {}", shell.log.display()), e))?;
        let more = std::fs::metadata(&shell.log).is_ok_and(|m| m.len() > next);
        shell.read_to = next;
        let (new_output, filtered_out) = match filter {
            None => (text, 0),
            Some(re) => {
                let mut kept = String::new();
                let mut dropped = 0;
                for line in text.split_inclusive('\n') {
                    if re.is_match(line.trim_end_matches('\n')) {
                        kept.push_str(line);
                    } else {
                        dropped += 1;
                    }
                }
                (kept, dropped)
            }
        };
        Ok(Poll {
            id: id.to_string(),
            command: shell.command.clone(),
            status: shell.status,
            new_output,
            filtered_out,
            more,
            log: shell.log.clone(),
        })
    }

    /// Stops a shell; returns its command and the status it had before (a finished shell is left
    /// as it was).
    pub fn kill(&self, id: &str) -> Result<(String, ShellStatus), ToolError> {
        let mut inner = self.lock();
        let known = known_ids(&inner);
        let shell = inner.shells.get_mut(id).ok_or_else(|| unknown(id, &known))?;
        shell.refresh();
        let before = shell.status;
        if before == ShellStatus::Running {
            shell.kill();
        }
        Ok((shell.command.clone(), before))
    }

    /// Kills every shell that is still running (the session is ending).
    pub fn kill_all(&self) {
        for shell in self.lock().shells.values_mut() {
            shell.refresh();
            if shell.status == ShellStatus::Running {
                shell.kill();
            }
        }
    }

    /// Ids of shells still running.
    pub fn running(&self) -> Vec<String> {
        let mut inner = self.lock();
        inner
            .shells
            .iter_mut()
            .filter_map(|(id, s)| {
                s.refresh();
                (s.status == ShellStatus::Running).then(|| id.clone())
            })
            .collect()
    }
}

impl Drop for BackgroundShells {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn known_ids(inner: &Inner) -> Vec<String> {
    inner.shells.keys().cloned().collect()
}

fn unknown(id: &str, known: &[String]) -> ToolError {
    if known.is_empty() {
        ToolError::invalid(format!(
            "there is no background shell `{id}`: none has been started in this session. Start one with Bash \
             and run_in_background: true."
        ))
    } else {
        ToolError::invalid(format!(
            "there is no background shell `{id}`. Shells of this session: {}.",
            known.join(", ")
        ))
    }
}
