//! A snapshot of the repository state at session start, from the real `git`.
//!
//! Taken once so the project context stays byte-identical for the whole session (prompt
//! caching); the model is told it is a snapshot and runs git itself for the current state.
//!
//! In a repository whose index lists many files, `git status` costs a `stat` of every one of
//! them and a read of every directory (about 0.2 s for 100,000 files): there the snapshot is
//! taken on a thread of its own ([`Start::Later`]) and nothing waits for it. The project layer
//! then says it comes later, and the engine sends it with the first message after it is
//! ready; a session that ends first kills the git processes with it.
//!
//! keel runs no program a repository names: every git call of keel's own goes through
//! [`command`] (or [`committed`], which needs no driver list), which switches off what
//! repository configuration can make git execute.

mod batch;
mod runner;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use batch::Blobs;
use runner::{GIT_TIMEOUT, MAX_OUTPUT, Running};
pub use runner::{command, committed};

/// Status lines shown before the rest is summarised as a count.
pub const MAX_STATUS_LINES: usize = 40;
/// Recent commits shown.
pub const RECENT_COMMITS: usize = 5;
/// An index listing more files than this makes the snapshot a background one: `git status`
/// there takes tens of milliseconds or more.
pub const LARGE_INDEX: u32 = 20_000;
/// A background snapshot delays nothing, so it may take longer before it is abandoned.
const BACKGROUND_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSnapshot {
    /// The branch line of `git status --short --branch`, e.g. `main...origin/main [ahead 1]`.
    pub branch: String,
    pub status: Vec<String>,
    /// Status lines not shown.
    pub more_status: usize,
    pub recent_commits: Vec<String>,
}

/// The snapshot, or `None` outside a repository or without a working `git`.
pub fn snapshot(cwd: &Path) -> Option<GitSnapshot> {
    snapshot_within(cwd, GIT_TIMEOUT, false)
}

/// The snapshot with each git call limited to `timeout`; `tied`: the git processes die with
/// the thread that starts them (a background snapshot must not outlive keel).
fn snapshot_within(cwd: &Path, timeout: Duration, tied: bool) -> Option<GitSnapshot> {
    // Outside a repository git would only say so, three processes later.
    if !may_be_repository(cwd, std::env::var_os("GIT_DIR").is_some()) {
        return None;
    }
    // One driver list for both calls, which run side by side. Submodules are left out: their
    // own configuration could name programs too.
    let drivers = runner::configured_drivers(cwd);
    let start = |args: &[&str]| {
        let mut cmd = runner::command_with(cwd, &drivers);
        cmd.args(args);
        if tied {
            die_with_parent(&mut cmd);
        }
        Running::start(cmd, MAX_OUTPUT)
    };
    let status = start(&["status", "--short", "--branch", "--ignore-submodules=all"])?;
    let log = start(&["log", "--oneline", "--no-decorate", "-n", &RECENT_COMMITS.to_string()]);
    let text = |run: Option<Running>| {
        let (code, out) = run?.finish(timeout)?;
        code.success().then(|| String::from_utf8_lossy(&out).into_owned())
    };
    let status = text(Some(status));
    let log = text(log);
    let status = status?;
    let mut lines = status.lines();
    let branch = lines
        .next()
        .and_then(|l| l.strip_prefix("## "))
        .unwrap_or("(unknown)")
        .to_string();
    let all: Vec<String> = lines.map(str::to_string).collect();
    let more_status = all.len().saturating_sub(MAX_STATUS_LINES);
    let status = all.into_iter().take(MAX_STATUS_LINES).collect();
    let recent_commits = log.map(|s| s.lines().map(str::to_string).collect()).unwrap_or_default();
    Some(GitSnapshot {
        branch,
        status,
        more_status,
        recent_commits,
    })
}

/// Asks the kernel to kill the child when the thread that started it ends, which includes
/// keel exiting.
fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the forked child before exec and makes one async-signal-safe
    // system call on the child itself.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// How a session's snapshot starts.
#[derive(Debug, Clone)]
pub enum Start {
    /// Taken right away (an ordinary repository, or none).
    Now(Option<GitSnapshot>),
    /// Being taken in the background (a large repository).
    Later(Pending),
}

/// Takes the snapshot now, or starts it in the background when the repository's index lists
/// more than [`LARGE_INDEX`] files.
pub fn start(cwd: &Path) -> Start {
    if index_entries(cwd).is_some_and(|n| n > LARGE_INDEX) {
        return Start::Later(Pending::start(cwd));
    }
    Start::Now(snapshot(cwd))
}

/// A snapshot being taken on a thread of its own. Clones share it: whoever delivers it to the
/// model takes it once ([`Pending::take`]); others may look at it ([`Pending::peek`]).
#[derive(Debug, Clone)]
pub struct Pending {
    slot: Arc<Mutex<Slot>>,
}

#[derive(Debug, Default)]
struct Slot {
    /// Git's answer, once it is in (`Some(None)`: no snapshot could be taken).
    done: Option<Option<GitSnapshot>>,
    taken: bool,
}

impl Pending {
    fn start(cwd: &Path) -> Pending {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let (cwd, to) = (cwd.to_path_buf(), slot.clone());
        let spawned = std::thread::Builder::new().name("keel-git".into()).spawn(move || {
            let snap = snapshot_within(&cwd, BACKGROUND_TIMEOUT, true);
            to.lock().unwrap_or_else(|p| p.into_inner()).done = Some(snap);
        });
        if spawned.is_err() {
            slot.lock().unwrap_or_else(|p| p.into_inner()).done = Some(None);
        }
        Pending { slot }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The snapshot, once it is ready and if nobody has taken it yet; from then on `None`.
    /// Never waits.
    pub fn take(&self) -> Option<GitSnapshot> {
        let mut slot = self.lock();
        let snap = slot.done.clone().flatten().filter(|_| !slot.taken)?;
        slot.taken = true;
        Some(snap)
    }

    /// The snapshot if it is ready (taken or not). Never waits.
    pub fn peek(&self) -> Option<GitSnapshot> {
        self.lock().done.clone().flatten()
    }

    /// Whether git has finished (with a snapshot or without one).
    pub fn is_done(&self) -> bool {
        self.lock().done.is_some()
    }
}

/// The number of files the index of the repository around `cwd` lists, read from the index
/// file's header (no process started); `None` without a readable index.
pub fn index_entries(cwd: &Path) -> Option<u32> {
    use std::io::Read;
    let mut header = [0u8; 12];
    std::fs::File::open(git_dir(cwd)?.join("index"))
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    if &header[..4] != b"DIRC" {
        return None;
    }
    Some(u32::from_be_bytes([header[8], header[9], header[10], header[11]]))
}

/// What `HEAD` stands for, read from the git directory without a process: the `HEAD` file and
/// the refs it leads to (loose ref files, followed through symbolic refs, or the packed refs'
/// size, time and inode). Equal stamps mean the same commit is checked out. `None` means
/// unknown, which a caller treats as changed: no repository, a git directory git itself would
/// not take (no `objects` or `refs`), a reftable store, a `HEAD` that is neither a symbolic ref
/// nor an object id, or a file that is not a small regular one.
pub fn head_stamp(cwd: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let dir = git_dir(cwd)?;
    // A linked worktree keeps its HEAD here and its refs in the common directory.
    let common = match small_file(&dir.join("commondir")) {
        Some(rel) => dir.join(String::from_utf8(rel).ok()?.trim()),
        None => dir.clone(),
    };
    if !common.join("objects").is_dir() || !common.join("refs").is_dir() || common.join("reftable").exists() {
        return None;
    }
    let mut stamp = Vec::new();
    let mut content = small_file(&dir.join("HEAD"))?;
    // Symbolic refs may chain (`HEAD` to a branch that is itself a symbolic ref); a few links.
    for _ in 0..5 {
        stamp.extend_from_slice(&content);
        let text = std::str::from_utf8(&content).ok()?.trim();
        let Some(name) = text.strip_prefix("ref:").map(str::trim_start) else {
            // An object id (detached, or the end of the chain).
            return text
                .bytes()
                .all(|b| b.is_ascii_hexdigit())
                .then_some(stamp)
                .filter(|_| text.len() >= 40);
        };
        if !name.starts_with("refs/")
            || name
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return None;
        }
        match small_file(&common.join(name)) {
            Some(next) => content = next,
            None => {
                // Only in the packed refs (or not yet born): what they hold now.
                let packed = std::fs::symlink_metadata(common.join("packed-refs"))
                    .ok()
                    .filter(|m| m.is_file());
                stamp.extend(
                    match packed {
                        Some(m) => format!("packed {} {} {} {}", m.len(), m.mtime(), m.mtime_nsec(), m.ino()),
                        None => "unborn".to_string(),
                    }
                    .bytes(),
                );
                return Some(stamp);
            }
        }
    }
    None
}

/// The bytes of a small regular file (never a FIFO or device, never more than 4 KiB).
fn small_file(path: &Path) -> Option<Vec<u8>> {
    crate::fsutil::open::read_file_capped(path, 4096).ok()
}

/// Whether git could find a repository at `cwd`: a `.git` in it or above it, or `GIT_DIR`
/// set (which names one anywhere). A bare repository is never found implicitly by keel's git
/// calls (`safe.bareRepository=explicit`).
pub fn may_be_repository(cwd: &Path, git_dir_set: bool) -> bool {
    git_dir_set || cwd.ancestors().any(|d| d.join(".git").symlink_metadata().is_ok())
}

/// The git directory of the repository around `cwd`: its `.git` folder, or where a `.git`
/// file (a worktree, a submodule) points.
fn git_dir(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return Some(dot_git);
        }
        if dot_git.is_file() {
            let text = String::from_utf8(small_file(&dot_git)?).ok()?;
            let target = text.strip_prefix("gitdir:")?.trim();
            return Some(dir.join(target));
        }
    }
    None
}

impl GitSnapshot {
    pub fn render(&self) -> String {
        let mut out = format!(
            "Git (a snapshot from the start of this session; run git for the current state):\n- Branch: {}",
            self.branch
        );
        if self.status.is_empty() {
            out.push_str("\n- Status: clean");
        } else {
            out.push_str("\n- Status (short):");
            for l in &self.status {
                out.push_str("\n    ");
                out.push_str(l);
            }
            if self.more_status > 0 {
                out.push_str(&format!("\n    ... and {} more", self.more_status));
            }
        }
        if !self.recent_commits.is_empty() {
            out.push_str("\n- Recent commits:");
            for c in &self.recent_commits {
                out.push_str("\n    ");
                out.push_str(c);
            }
        }
        out
    }
}

/// The branch checked out in the repository around `cwd`, read from `.git/HEAD` (no process
/// started); `None` outside a repository or on a detached head.
pub fn head_branch(cwd: &Path) -> Option<String> {
    let text = std::fs::read_to_string(git_dir(cwd)?.join("HEAD")).ok()?;
    text.trim().strip_prefix("ref: refs/heads/").map(str::to_string)
}

#[cfg(test)]
pub(crate) mod tests;
