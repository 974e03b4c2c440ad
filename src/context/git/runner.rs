//! keel's one way of running git: repository configuration (which a cloned repository or a
//! command may have written) gets to run nothing, and no call waits on git for ever.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A git call that takes longer than this is abandoned (huge repositories, network mounts).
pub(super) const GIT_TIMEOUT: Duration = Duration::from_secs(3);
/// Output kept from one git call at most; a call that prints more is abandoned.
pub(super) const MAX_OUTPUT: usize = 64 * 1024 * 1024;

/// A `git` command in `cwd` for keel's own use: repository configuration gets to run nothing.
/// Switched off: hooks, fsmonitor, the pager, external diff, diff textconv and commands,
/// signature checks, trace targets, lazy fetches of a partial clone, and every configured
/// filter driver (clean, smudge, process; `required` dropped so git does not refuse to work
/// without them). Driver names are free-form, so the configured ones are listed first
/// (`git config` runs nothing) and each is emptied by name.
pub fn command(cwd: &Path) -> Command {
    command_with(cwd, &configured_drivers(cwd))
}

/// [`command`] with the driver list already read (one list for several calls made together).
pub(super) fn command_with(cwd: &Path, drivers: &[(String, String)]) -> Command {
    let mut cmd = plain(cwd);
    for (kind, name) in drivers {
        let keys: &[&str] = if kind == "filter" {
            &["clean", "smudge", "process"]
        } else {
            &["textconv", "command"]
        };
        for key in keys {
            cmd.arg("-c").arg(format!("{kind}.{name}.{key}="));
        }
        if kind == "filter" {
            cmd.arg("-c").arg(format!("filter.{name}.required=false"));
        }
    }
    cmd
}

/// The switches every call of keel's gets, without the driver list: enough for a command that
/// runs no filter or diff driver whatever the configuration says.
pub(super) fn plain(cwd: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(cwd).arg("--no-pager");
    for (key, value) in [
        ("safe.bareRepository", "explicit"),
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
        ("diff.external", ""),
        ("log.showSignature", "false"),
    ] {
        cmd.arg("-c").arg(format!("{key}={value}"));
    }
    quiet_env(&mut cmd);
    cmd.stdin(Stdio::null());
    cmd
}

/// The environment of keel's git calls: no locks taken, no prompts, no pager or external
/// diff from the user's environment, trace output off (repository configuration could point
/// it at any file), and no fetch from a partial clone's promisor remote for an object that is
/// not there locally (that would run the transport the remote's configuration names, and
/// wait on the network).
fn quiet_env(cmd: &mut Command) {
    cmd.env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_TRACE2", "0")
        .env("GIT_TRACE2_EVENT", "0")
        .env("GIT_TRACE2_PERF", "0")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GIT_PAGER")
        .env_remove("PAGER");
}

/// Filter and diff drivers that configuration defines with something to run: `(kind, name)`.
/// Those of the user's own (global and system) configuration stay, such as git-lfs: they are
/// the user's programs, and a worktree checked out without them would hold pointer files.
/// Where git cannot say which file a key comes from (before 2.26), every driver is emptied.
pub(super) fn configured_drivers(cwd: &Path) -> Vec<(String, String)> {
    let query = |scoped: bool| {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(cwd).arg("config");
        if scoped {
            cmd.arg("--show-scope");
        }
        cmd.args(["--null", "--name-only", "--get-regexp"])
            .arg(r"^(filter|diff)\..*\.(clean|smudge|process|textconv|command)$");
        quiet_env(&mut cmd);
        let (status, out) = Running::start(cmd, MAX_OUTPUT)?.finish(GIT_TIMEOUT)?;
        let out = String::from_utf8_lossy(&out).into_owned();
        // `--get-regexp` exits 1 when no key matches (the usual case): nothing is configured.
        // Any other failure (an old git without `--show-scope` exits 129) is not an answer.
        match status.code() {
            Some(0) => Some(out),
            Some(1) if out.is_empty() => Some(String::new()),
            _ => None,
        }
    };
    let keys: Vec<String> = match query(true) {
        Some(out) => {
            let fields: Vec<&str> = out.split('\0').collect();
            fields
                .chunks(2)
                .filter(|pair| pair.len() == 2 && !matches!(pair[0], "global" | "system"))
                .map(|pair| pair[1].to_string())
                .collect()
        }
        None => match query(false) {
            Some(out) => out.split('\0').map(str::to_string).collect(),
            None => return Vec::new(),
        },
    };
    let mut drivers: Vec<(String, String)> = keys
        .iter()
        .filter_map(|key| {
            let (kind, rest) = key.split_once('.')?;
            let (name, _) = rest.rsplit_once('.')?;
            Some((kind.to_string(), name.to_string()))
        })
        .collect();
    drivers.sort();
    drivers.dedup();
    drivers
}

/// The committed content of `rel` (relative to `cwd`) at `HEAD`; `None` outside a repository,
/// for a file `HEAD` does not have, one over `cap` bytes, or any failure.
///
/// `git cat-file blob` prints the object as stored: git's documentation of cat-file says the
/// content is transformed by a textconv filter only with `--textconv` and converted by the
/// working tree's filters (smudge, end-of-line) only with `--filters`. So this call needs no
/// driver list, which saves the `git config` process in front of it. With lazy fetching off
/// (see [`quiet_env`]), a blob a partial clone does not hold is simply missing.
pub fn committed(cwd: &Path, rel: &str, cap: usize) -> Option<Vec<u8>> {
    let mut cmd = plain(cwd);
    cmd.args(["cat-file", "blob", &format!("HEAD:./{rel}")]);
    let (status, out) = Running::start(cmd, cap)?.finish(GIT_TIMEOUT)?;
    status.success().then_some(out)
}

/// A git process whose standard output is read while it runs: git writing more than the pipe
/// holds (64 KiB: the status of a repository with many changed files) would otherwise block
/// until the timeout killed it.
pub(super) struct Running {
    child: Child,
    /// The whole output, or `None` when it was over the cap or could not be read.
    read: mpsc::Receiver<Option<Vec<u8>>>,
}

impl Running {
    /// Starts `cmd` (stdout piped, stdin and stderr closed); output over `cap` bytes is not an
    /// answer.
    pub(super) fn start(mut cmd: Command, cap: usize) -> Option<Running> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let Some(mut stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        };
        let (send, read) = mpsc::channel();
        let reader = std::thread::Builder::new().name("keel-git-read".into()).spawn(move || {
            let mut out = Vec::new();
            let whole = match (&mut stdout).take(cap as u64 + 1).read_to_end(&mut out) {
                Ok(n) => n <= cap,
                Err(_) => false,
            };
            let _ = send.send(whole.then_some(out));
        });
        if reader.is_err() {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        Some(Running { child, read })
    }

    /// Waits until git has closed its output and exited, at most `timeout` from now; killed
    /// and `None` past it, or when the output was over the cap.
    pub(super) fn finish(mut self, timeout: Duration) -> Option<(ExitStatus, Vec<u8>)> {
        let deadline = Instant::now() + timeout;
        let out = self.read.recv_timeout(timeout).ok().flatten();
        let Some(out) = out else {
            self.stop();
            return None;
        };
        // The output ended: git is exiting; only a process that closed its stdout and then
        // hung is waited for until the deadline. The first looks come soon (git is usually
        // gone within a fraction of a millisecond), later ones every millisecond.
        let mut pause = Duration::from_micros(50);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some((status, out)),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(1));
                }
                _ => {
                    self.stop();
                    return None;
                }
            }
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
