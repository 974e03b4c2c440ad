//! A snapshot of the repository state at session start, from the real `git`.
//!
//! Taken once so the project context stays byte-identical for the whole session (prompt
//! caching); the model is told it is a snapshot and runs git itself for the current state.

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
    let status = run_git(cwd, &["status", "--short", "--branch"])?;
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

/// Runs git without touching the index lock; `None` on any failure or timeout.
fn run_git(cwd: &Path, args: &[&str]) -> Option<String> {
    // Repository configuration can name programs git runs (fsmonitor, pagers, hooks); a
    // repository a command wrote to must not get to run code through keel's own snapshot.
    let mut child = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.pager=cat",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
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
    }

    #[test]
    fn no_snapshot_where_git_cannot_run() {
        let t = tempfile::tempdir().unwrap();
        assert!(snapshot(&t.path().join("does-not-exist")).is_none());
    }
}
