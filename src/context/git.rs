//! A snapshot of the repository state at session start, from the real `git`.
//!
//! Taken once so the project context stays byte-identical for the whole session (prompt
//! caching); the model is told it is a snapshot and runs git itself for the current state.
//!
//! keel runs no program a repository names: every git call of keel's own goes through
//! [`command`], which switches off what repository configuration can make git execute.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Status lines shown before the rest is summarised as a count.
pub const MAX_STATUS_LINES: usize = 40;
/// Recent commits shown.
pub const RECENT_COMMITS: usize = 5;
/// A git call that takes longer than this is abandoned (huge repositories, network mounts).
const GIT_TIMEOUT: Duration = Duration::from_secs(3);

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
    // Submodules are left out: their own configuration could name programs too.
    let status = run_git(cwd, &["status", "--short", "--branch", "--ignore-submodules=all"])?;
    let mut lines = status.lines();
    let branch = lines
        .next()
        .and_then(|l| l.strip_prefix("## "))
        .unwrap_or("(unknown)")
        .to_string();
    let all: Vec<String> = lines.map(str::to_string).collect();
    let more_status = all.len().saturating_sub(MAX_STATUS_LINES);
    let status = all.into_iter().take(MAX_STATUS_LINES).collect();
    let recent_commits = run_git(cwd, &["log", "--oneline", "--no-decorate", "-n", "5"])
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default();
    Some(GitSnapshot {
        branch,
        status,
        more_status,
        recent_commits,
    })
}

/// A `git` command in `cwd` for keel's own use: repository configuration (which a cloned
/// repository or a command may have written) gets to run nothing. Switched off: hooks,
/// fsmonitor, the pager, external diff, diff textconv and commands, signature checks, trace
/// targets, and every configured filter driver (clean, smudge, process; `required` dropped so
/// git does not refuse to work without them). Driver names are free-form, so the configured
/// ones are listed first (`git config` runs nothing) and each is emptied by name.
pub fn command(cwd: &Path) -> Command {
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
    for (kind, name) in configured_drivers(cwd) {
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
    quiet_env(&mut cmd);
    cmd.stdin(Stdio::null());
    cmd
}

/// The environment of keel's git calls: no locks taken, no prompts, no pager or external
/// diff from the user's environment, trace output off (repository configuration could point
/// it at any file).
fn quiet_env(cmd: &mut Command) {
    cmd.env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
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
fn configured_drivers(cwd: &Path) -> Vec<(String, String)> {
    let query = |scoped: bool| {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(cwd).arg("config");
        if scoped {
            cmd.arg("--show-scope");
        }
        cmd.args(["--null", "--name-only", "--get-regexp"])
            .arg(r"^(filter|diff)\..*\.(clean|smudge|process|textconv|command)$");
        quiet_env(&mut cmd);
        wait_output(cmd)
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

/// Runs git without touching the index lock; `None` on any failure or timeout.
fn run_git(cwd: &Path, args: &[&str]) -> Option<String> {
    let mut cmd = command(cwd);
    cmd.args(args);
    wait_output(cmd)
}

/// Runs a prepared git command with the timeout; its stdout when it succeeded.
fn wait_output(mut cmd: Command) -> Option<String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < GIT_TIMEOUT => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
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
    for dir in cwd.ancestors() {
        let dot_git = dir.join(".git");
        let head = if dot_git.is_dir() {
            dot_git.join("HEAD")
        } else if dot_git.is_file() {
            // A worktree or submodule: `gitdir: <path>`.
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.strip_prefix("gitdir:")?.trim();
            dir.join(target).join("HEAD")
        } else {
            continue;
        };
        let text = std::fs::read_to_string(head).ok()?;
        return text.trim().strip_prefix("ref: refs/heads/").map(str::to_string);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn snapshot_of_a_real_repository() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        git(dir, &["init", "-q", "-b", "trunk"]);
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        git(dir, &["add", "a.txt"]);
        git(dir, &["commit", "-q", "-m", "first commit"]);
        std::fs::write(dir.join("a.txt"), "changed\n").unwrap();
        std::fs::write(dir.join("new.txt"), "n\n").unwrap();
        let snap = snapshot(dir).expect("a repository");
        assert_eq!(snap.branch, "trunk");
        assert_eq!(snap.status, vec![" M a.txt", "?? new.txt"]);
        assert_eq!(snap.recent_commits.len(), 1);
        assert!(snap.recent_commits[0].ends_with("first commit"));
        let text = snap.render();
        assert!(text.contains("- Branch: trunk"), "{text}");
        assert!(text.contains("?? new.txt"), "{text}");
        assert_eq!(head_branch(&dir.join("sub/dir")), Some("trunk".into()));
        git(dir, &["checkout", "-q", "--detach"]);
        assert_eq!(head_branch(dir), None);
    }

    /// A repository whose configuration names programs for every hook git has; each writes a
    /// marker. A plain `git status` runs the filter (the fixture works); keel's snapshot runs
    /// none of them.
    #[test]
    fn the_snapshot_runs_no_program_the_repository_names() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let marker = dir.join("ran");
        git(dir, &["init", "-q", "-b", "trunk"]);
        std::fs::write(dir.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        git(dir, &["add", "."]);
        git(dir, &["commit", "-q", "-m", "first"]);
        let plant = |what: &str| format!("sh -c 'echo {what} >> \"{}\"; cat'", marker.display());
        git(dir, &["config", "filter.x.clean", &plant("clean")]);
        git(dir, &["config", "filter.x.smudge", &plant("smudge")]);
        git(dir, &["config", "filter.x.required", "true"]);
        git(dir, &["config", "diff.x.textconv", &plant("textconv")]);
        git(dir, &["config", "core.fsmonitor", &plant("fsmonitor")]);
        git(dir, &["config", "core.pager", &plant("pager")]);
        git(dir, &["config", "log.showSignature", "true"]);
        git(dir, &["config", "gpg.program", &plant("gpg")]);
        git(dir, &["config", "trace2.normalTarget", &marker.display().to_string()]);
        let touch = || {
            // Same content, new mtime: git must read the file again, through its clean filter.
            std::thread::sleep(Duration::from_millis(1100));
            std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        };
        touch();
        let plain = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["status", "--short"])
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .unwrap();
        assert!(plain.status.success());
        assert!(
            marker.exists(),
            "the fixture must make a plain git status run the filter"
        );
        std::fs::remove_file(&marker).unwrap();
        touch();
        let snap = snapshot(dir).expect("a snapshot despite the hostile configuration");
        assert_eq!(snap.branch, "trunk");
        assert_eq!(snap.recent_commits.len(), 1);
        assert!(
            !marker.exists(),
            "keel's snapshot ran a repository program: {}",
            std::fs::read_to_string(&marker).unwrap_or_default()
        );
    }

    #[test]
    fn no_snapshot_where_git_cannot_run() {
        let t = tempfile::tempdir().unwrap();
        assert!(snapshot(&t.path().join("does-not-exist")).is_none());
    }
}
