//! The verifier's brief: raw facts keel gathers itself — the user's requests verbatim, the diff
//! of the working tree, the files the session changed and the commands it ran — and never the
//! author's own summary of the work (the Agent call's `prompt` is not passed on).

use std::path::{Path, PathBuf};

use tokio::process::Command;

/// Most characters of diff put in the brief (the verifier can run `git diff` for the rest).
pub const MAX_DIFF: usize = 60_000;
/// Most characters of each user request quoted.
const MAX_REQUEST: usize = 4_000;
/// Most commands listed.
const MAX_COMMANDS: usize = 20;

/// What the session knows from its own record (not from the model's prose).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The user's requests, verbatim, oldest first.
    pub requests: Vec<String>,
    /// Files the session's tools changed.
    pub files_changed: Vec<PathBuf>,
    /// Shell commands the session ran, with their exit codes when known, oldest first.
    pub commands: Vec<(String, Option<i64>)>,
}

async fn git(cwd: &Path, args: &[&str]) -> Option<String> {
    // keel's own git: no hook, filter, fsmonitor or other program the repository names runs.
    let out = Command::from(crate::context::git::command(cwd))
        .args(args)
        .output()
        .await
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn clip(text: &str, max: usize, note: &str) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {} more characters not shown; {note}]",
        &text[..end],
        text.len() - end
    )
}

/// Whether a command looks like a check (tests, build, lint) rather than exploration.
pub fn looks_like_check(command: &str) -> bool {
    const WORDS: &[&str] = &[
        "test", "pytest", "jest", "vitest", "mocha", "check", "clippy", "lint", "tsc", "mypy", "ruff", "build", "make",
        "ctest", "rspec",
    ];
    let lower = command.to_lowercase();
    WORDS.iter().any(|w| lower.contains(w))
}

/// The verifier's first message.
pub async fn brief(facts: &Facts, cwd: &Path) -> String {
    let mut out = String::from(
        "Review the work done in this repository. These facts were gathered by keel, not written by the agent \
         that did the work.\n",
    );
    out.push_str("\n## What the user asked for (verbatim)\n");
    if facts.requests.is_empty() {
        out.push_str("(no user request recorded in this session)\n");
    }
    for (i, r) in facts.requests.iter().enumerate() {
        out.push_str(&format!(
            "\n<user-request n=\"{}\">\n{}\n</user-request>\n",
            i + 1,
            clip(r.trim(), MAX_REQUEST, "the request was longer")
        ));
    }

    out.push_str("\n## The working tree\n");
    match git(cwd, &["status", "--porcelain", "--untracked-files=all"]).await {
        Some(status) => {
            let diff = git(cwd, &["diff", "HEAD", "--no-color", "--no-ext-diff"])
                .await
                .unwrap_or_default();
            out.push_str(&format!(
                "`git status --porcelain`:\n```\n{}```\n",
                if status.is_empty() {
                    "(clean)\n".to_string()
                } else {
                    status.clone()
                }
            ));
            if diff.trim().is_empty() {
                out.push_str("\n`git diff HEAD`: no changes to tracked files.\n");
            } else {
                out.push_str(&format!(
                    "\n`git diff HEAD`:\n```diff\n{}\n```\n",
                    clip(diff.trim_end(), MAX_DIFF, "run `git diff HEAD` to see the rest")
                ));
            }
            let untracked: Vec<&str> = status.lines().filter_map(|l| l.strip_prefix("?? ")).collect();
            if !untracked.is_empty() {
                out.push_str(&format!(
                    "\nNew untracked files (read them): {}\n",
                    untracked.join(", ")
                ));
            }
        }
        None => out.push_str("Not a git repository: no diff is available; read the changed files below.\n"),
    }

    out.push_str("\n## Files this session changed (keel's record)\n");
    if facts.files_changed.is_empty() {
        out.push_str("(none recorded)\n");
    }
    for f in &facts.files_changed {
        out.push_str(&format!("- {}\n", f.display()));
    }

    out.push_str("\n## Commands this session ran (keel's record; re-run the checks yourself)\n");
    if facts.commands.is_empty() {
        out.push_str("(none)\n");
    }
    let skip = facts.commands.len().saturating_sub(MAX_COMMANDS);
    for (cmd, code) in facts.commands.iter().skip(skip) {
        let code = code
            .map(|c| format!("exit {c}"))
            .unwrap_or_else(|| "exit unknown".into());
        let check = if looks_like_check(cmd) {
            ", looks like a check"
        } else {
            ""
        };
        out.push_str(&format!("- `{cmd}` ({code}{check})\n"));
    }
    out.push_str(
        "\nRun the checks that matter, read what changed, and end with your VERDICT line. Do not modify files.",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn brief_holds_requests_diff_files_and_commands() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().canonicalize().unwrap();
        let git = |args: &[&str]| {
            assert!(
                std::process::Command::new("git")
                    .arg("-C")
                    .arg(&r)
                    .args(args)
                    .output()
                    .unwrap()
                    .status
                    .success()
            )
        };
        git(&["init", "-q"]);
        git(&["config", "user.email", "t@example.com"]);
        git(&["config", "user.name", "t"]);
        std::fs::write(r.join("lib.rs"), "fn a() {}\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "init"]);
        std::fs::write(r.join("lib.rs"), "fn a() { b() }\n").unwrap();
        std::fs::write(r.join("new.rs"), "fn b() {}\n").unwrap();
        let facts = Facts {
            requests: vec!["make a call b".into()],
            files_changed: vec![r.join("lib.rs")],
            commands: vec![("cargo test".into(), Some(0)), ("ls".into(), Some(0))],
        };
        let text = brief(&facts, &r).await;
        assert!(text.contains("make a call b"));
        assert!(text.contains("+fn a() { b() }"), "{text}");
        assert!(text.contains("new.rs"));
        assert!(text.contains("`cargo test` (exit 0, looks like a check)"));
        assert!(text.contains("`ls` (exit 0)"));
    }
}
