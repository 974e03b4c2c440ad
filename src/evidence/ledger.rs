//! The ledger: every verification run (command, exit status, counts, duration, log, and the
//! working-tree version it ran against), every change to the workspace (by keel's tools, by
//! shell commands, from outside), and the tests weakened since the session began. Host state:
//! built from what keel executed and observed, never from what the model wrote.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::parse::Counts;
use super::runners::{Kind, Runner};
use super::weakened::Weakening;

/// What one run showed, on its own (freshness is judged later, against the ledger's version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran at least one test (or a check found no errors), nothing failed, exit 0.
    Passed,
    Failed,
    /// Zero tests executed: never a pass.
    NotRun,
    /// The output was not understood (or could not be attributed to the runner).
    Unknown,
    /// The check could not start or reach what it needs (program missing, no credentials, no
    /// database): it says nothing about the code, and the report names it as such.
    CouldNotRun,
}

/// A run's classification now: its outcome, or `stale` for a pass older than the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Passed,
    Failed,
    NotRun,
    Stale,
    Unknown,
    CouldNotRun,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Passed => "passed",
            RunStatus::Failed => "failed",
            RunStatus::NotRun => "not_run",
            RunStatus::Stale => "stale",
            RunStatus::Unknown => "unknown",
            RunStatus::CouldNotRun => "could_not_run",
        }
    }
}

/// The session's verification state, as the report and the stop gate state it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A test run against the current tree passed, and no current check failed.
    Passed,
    /// The newest evidence is a failure.
    Failed,
    /// Tests passed, but files changed since.
    Stale,
    /// The newest test run executed zero tests.
    NotRun,
    /// Files changed and no test run says anything about them (none ran, none understood, or
    /// only part of the suite ran since the last change).
    Unverified,
    /// Nothing changed and no tests ran.
    None,
    /// The newest test run could not run at all (its program is missing, a service or
    /// credentials it needs are absent): nothing was verified, and the report says why.
    CouldNotRun,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Stale => "stale",
            Status::NotRun => "not_run",
            Status::Unverified => "unverified",
            Status::None => "none",
            Status::CouldNotRun => "could_not_run",
        }
    }
}

/// One verification run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// 1-based, in the order the runs happened.
    pub id: u32,
    /// The whole command line given to Bash.
    pub command: String,
    /// The part of it that ran the runner.
    pub runner_command: String,
    pub runner: Runner,
    pub kind: Kind,
    /// The shell's exit status (`None`: killed, timed out, interrupted).
    pub exit_code: Option<i32>,
    /// The runner's own status: the shell's when it reaches the shell, else deduced from the
    /// runner's summary (`pytest | tail -1` exits 0 on failure).
    pub runner_exit: Option<i32>,
    /// The shell's status was not the runner's (a pipeline, `;` or `||` followed it).
    pub exit_hidden: bool,
    /// What the runner reported; `None`: not understood.
    pub counts: Option<Counts>,
    pub outcome: Outcome,
    /// Why the outcome is what it is, when that is not obvious (not understood, hidden status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub duration_ms: u64,
    /// The complete output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// The working-tree version the run tested.
    pub version: u64,
    /// When the run finished (RFC 3339).
    pub at: String,
    /// What selected part of the suite (`-k add`, a node id, a name filter); `None`: the whole
    /// suite as far as the command line tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
    /// The server the run talked to started before the last change: its pass is stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_target: Option<super::targets::StaleTarget>,
}

impl Run {
    /// Passed runs against an older tree are stale.
    pub fn status(&self, current: u64) -> RunStatus {
        match self.outcome {
            Outcome::Passed if self.version != current || self.stale_target.is_some() => RunStatus::Stale,
            Outcome::Passed => RunStatus::Passed,
            Outcome::Failed => RunStatus::Failed,
            Outcome::NotRun => RunStatus::NotRun,
            Outcome::Unknown => RunStatus::Unknown,
            Outcome::CouldNotRun => RunStatus::CouldNotRun,
        }
    }

    /// `only a subset ran (`-k add`) since the last change; run the whole suite`.
    pub fn subset_note(&self) -> Option<String> {
        let subset = self.subset.as_deref()?;
        Some(format!(
            "only a subset ran (`{subset}`) since the last change; run the whole suite"
        ))
    }

    /// Runs of the same check (the runner's command as written).
    fn key(&self) -> &str {
        &self.runner_command
    }

    /// A short account: `` `pytest -q`: 3 passed, 1 failed (exit 1) ``.
    pub fn describe(&self) -> String {
        let what = match (&self.counts, self.kind) {
            (None, _) => "output not understood".to_string(),
            (Some(c), Kind::Test) => {
                let mut s = format!("{} executed", c.executed);
                if c.executed > 0 {
                    s = format!("{} passed, {} failed", c.passed, c.failed);
                    if c.errors > 0 {
                        s.push_str(&format!(", {} errors", c.errors));
                    }
                } else if c.errors > 0 {
                    s = format!("0 tests executed, {} errors", c.errors);
                } else {
                    s = "0 tests executed".to_string();
                }
                if c.skipped > 0 {
                    s.push_str(&format!(", {} skipped", c.skipped));
                }
                s
            }
            (Some(c), _) => format!("{} errors", c.errors),
        };
        let exit = match (self.exit_code, self.runner_exit, self.exit_hidden) {
            (Some(shell), Some(own), true) if shell != own => {
                format!("exit {shell}; the runner's own status {own} was hidden by the command line")
            }
            (Some(shell), _, _) => format!("exit {shell}"),
            (None, _, _) => "did not finish".to_string(),
        };
        format!("`{}`: {what} ({exit})", self.runner_command)
    }
}

/// Who changed the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum Source {
    /// keel's Edit / Write.
    Tool { tool: String },
    /// A shell command (`verification`: the line only ran checks and observers, so the change
    /// is their by-product, such as a log file or a cache; never a test file, a snapshot or a
    /// test configuration, which are work whoever rewrote them).
    Shell { command: String, verification: bool },
    /// Something outside this session's tools: the user, a background process, or while the
    /// session was closed.
    Outside,
}

/// One change of the working tree (one version step).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The version this change produced.
    pub version: u64,
    /// Paths relative to the workspace root.
    pub paths: Vec<String>,
    #[serde(flatten)]
    pub source: Source,
    /// The workspace was too large to fingerprint whole: files beyond the limit may have changed.
    #[serde(default)]
    pub uncertain: bool,
}

impl Change {
    /// Whether the change is the agent's work (not a verification by-product, not outside).
    pub fn is_work(&self) -> bool {
        match &self.source {
            Source::Tool { .. } => true,
            Source::Shell { verification, .. } => !verification,
            Source::Outside => false,
        }
    }

    pub fn describe_source(&self) -> String {
        match &self.source {
            Source::Tool { tool } => tool.clone(),
            Source::Shell { command, .. } => format!("shell `{}`", clip(command, 60)),
            Source::Outside => "outside keel's tools".to_string(),
        }
    }
}

/// A test file that is weaker now than when the session first saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Weakened {
    pub file: String,
    #[serde(flatten)]
    pub weakening: Weakening,
    /// The tool or command of the latest weakening change.
    pub by: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// The working-tree version: one step per observed change.
    pub version: u64,
    pub runs: Vec<Run>,
    pub changes: Vec<Change>,
    /// Test files weaker than their baseline, by relative path.
    pub weakened: BTreeMap<String, Weakened>,
    /// Test files' content when the session first saw them (what weakening is measured from);
    /// saved in a file of its own.
    #[serde(skip)]
    pub baselines: BTreeMap<String, String>,
    /// Digest of the last workspace fingerprint (to notice changes while a session was closed).
    #[serde(default)]
    pub digest: Option<u64>,
}

impl Ledger {
    /// Records a change; returns the new version.
    pub fn change(&mut self, paths: Vec<String>, source: Source, uncertain: bool) -> u64 {
        self.version += 1;
        self.changes.push(Change {
            version: self.version,
            paths,
            source,
            uncertain,
        });
        self.version
    }

    pub fn push_run(&mut self, mut run: Run) -> &Run {
        let i = self.runs.len();
        run.id = i as u32 + 1;
        self.runs.push(run);
        &self.runs[i]
    }

    /// The session's status (see [`Status`]).
    pub fn status(&self) -> Status {
        let fresh = self.latest_per_check(|r| r.version == self.version);
        if fresh.iter().any(|r| r.outcome == Outcome::Failed) {
            return Status::Failed;
        }
        let fresh_tests: Vec<&Run> = fresh.iter().copied().filter(|r| r.kind == Kind::Test).collect();
        let mut passes = fresh_tests.iter().filter(|r| r.outcome == Outcome::Passed).peekable();
        // A pass against a server older than the code is no pass of the code.
        if passes.peek().is_some() && passes.all(|r| r.stale_target.is_some()) {
            return Status::Stale;
        }
        if fresh_tests.iter().any(|r| r.outcome == Outcome::Passed) {
            // A passing run of part of a suite counts only beside a passing run of the whole.
            return match unbacked(&fresh_tests) {
                Some(_) => Status::Unverified,
                None => Status::Passed,
            };
        }
        if fresh_tests.iter().any(|r| r.outcome == Outcome::NotRun) {
            return Status::NotRun;
        }
        if !fresh_tests.is_empty() && fresh_tests.iter().all(|r| r.outcome == Outcome::CouldNotRun) {
            return Status::CouldNotRun;
        }
        if !fresh_tests.is_empty() {
            return Status::Unverified;
        }
        match self.runs.iter().rev().find(|r| r.kind == Kind::Test) {
            Some(last) => match last.outcome {
                Outcome::Passed => Status::Stale,
                Outcome::Failed => Status::Failed,
                Outcome::NotRun => Status::NotRun,
                Outcome::Unknown => Status::Unverified,
                Outcome::CouldNotRun => Status::CouldNotRun,
            },
            None if self.changes.iter().any(Change::is_work) => Status::Unverified,
            None => Status::None,
        }
    }

    /// The newest run of each check among the runs `keep` accepts, in run order.
    fn latest_per_check(&self, keep: impl Fn(&Run) -> bool) -> Vec<&Run> {
        let mut out: Vec<&Run> = Vec::new();
        for r in self.runs.iter().filter(|r| keep(r)) {
            out.retain(|o| o.key() != r.key());
            out.push(r);
        }
        out
    }

    /// The checks whose newest run could not run at all, in run order.
    pub fn could_not_run(&self) -> Vec<&Run> {
        self.latest_per_check(|_| true)
            .into_iter()
            .filter(|r| r.outcome == Outcome::CouldNotRun)
            .collect()
    }

    /// The checks whose newest run gave no result keel could read, in run order.
    pub fn unread(&self) -> Vec<&Run> {
        self.latest_per_check(|_| true)
            .into_iter()
            .filter(|r| r.outcome == Outcome::Unknown)
            .collect()
    }

    /// The newest passing run of part of the suite against the current tree, when no passing run
    /// of the whole stands beside it (the session is then `unverified`).
    pub fn unbacked_subset(&self) -> Option<&Run> {
        let fresh = self.latest_per_check(|r| r.version == self.version && r.kind == Kind::Test);
        if fresh.iter().any(|r| r.outcome == Outcome::Failed) {
            return None;
        }
        unbacked(&fresh)
    }

    /// The newest test run, if any.
    pub fn last_test_run(&self) -> Option<&Run> {
        self.runs.iter().rev().find(|r| r.kind == Kind::Test)
    }

    /// Changes of the agent's work after `version`, oldest first.
    pub fn work_since(&self, version: u64) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(move |c| c.version > version && c.is_work())
    }

    /// Files the agent changed during the session, in the order first changed.
    pub fn files_changed(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.changes.iter().filter(|c| c.is_work()) {
            for p in &c.paths {
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
        }
        out
    }

    /// Files changed (by anyone) after `version`, each with who changed it last.
    pub fn changed_since(&self, version: u64) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for c in self.changes.iter().filter(|c| c.version > version) {
            if c.paths.is_empty() && c.uncertain {
                out.push(("(files beyond the fingerprint's limit)".into(), c.describe_source()));
            }
            for p in &c.paths {
                out.retain(|(q, _)| q != p);
                out.push((p.clone(), c.describe_source()));
            }
        }
        out
    }
}

/// The newest passing run of part of a suite among `runs` with no passing run of the whole suite
/// by the same runner beside it.
fn unbacked<'a>(runs: &[&'a Run]) -> Option<&'a Run> {
    let passed = |r: &&&Run| r.outcome == Outcome::Passed;
    runs.iter().filter(passed).rev().copied().find(|r| {
        r.subset.is_some()
            && !runs
                .iter()
                .filter(passed)
                .any(|whole| whole.subset.is_none() && whole.runner == r.runner)
    })
}

pub fn clip(s: &str, max: usize) -> String {
    let one_line = s.lines().next().unwrap_or("");
    if one_line.chars().count() <= max && !s.contains('\n') {
        return one_line.to_string();
    }
    let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
