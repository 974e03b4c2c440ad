//! How the ledger is reported: the `verification` object of the headless result, the one line
//! text mode prints, the TUI's status label and `/evidence` listing, and the section the
//! compaction hand-off carries (from the ledger, so a summary can never turn a failure into a
//! pass).

use std::fmt::Write;

use serde_json::{Value, json};

use super::ledger::{Ledger, Status};
use super::runners::Kind;

/// `{"status", "files_changed", "runs": [...], "weakened_tests": [...]}`.
pub fn json(ledger: &Ledger) -> Value {
    let runs: Vec<Value> = ledger
        .runs
        .iter()
        .map(|r| {
            let count = |f: fn(&super::parse::Counts) -> u64| match (r.kind, &r.counts) {
                (Kind::Test, Some(c)) => json!(f(c)),
                _ => Value::Null,
            };
            // The runner's own status: the shell's only when it reached the shell.
            let exit_code = if r.exit_hidden {
                r.runner_exit
            } else {
                r.runner_exit.or(r.exit_code)
            };
            json!({
                "command": r.command,
                "exit_code": exit_code,
                "status": r.status(ledger.version).as_str(),
                "executed": count(|c| c.executed),
                "passed": count(|c| c.passed),
                "failed": count(|c| c.failed),
                "skipped": count(|c| c.skipped),
                "fresh": r.version == ledger.version && r.stale_target.is_none(),
                "subset": r.subset,
                "stale_target": r.stale_target,
            })
        })
        .collect();
    let weakened: Vec<Value> = ledger
        .weakened
        .values()
        .map(|w| {
            json!({
                "file": w.file,
                "removed_assertions": w.weakening.removed_assertions,
                "replaced_with_trivial": w.weakening.replaced_with_trivial,
                "added_skips": w.weakening.added_skips,
                "added_deselections": w.weakening.added_deselections,
                "changed_snapshots": w.weakening.changed_snapshots,
            })
        })
        .collect();
    let could_not_run: Vec<Value> = ledger
        .could_not_run()
        .into_iter()
        .map(|r| json!({"command": r.runner_command, "reason": r.note}))
        .collect();
    json!({
        "status": ledger.status().as_str(),
        "files_changed": ledger.files_changed(),
        "runs": runs,
        "weakened_tests": weakened,
        "could_not_run": could_not_run,
    })
}

/// The line text mode prints on stderr when the work is not shown to be verified.
pub fn text_line(ledger: &Ledger) -> Option<String> {
    let status = ledger.status();
    let mut parts: Vec<String> = Vec::new();
    match status {
        Status::Passed | Status::None => {}
        Status::Stale => parts.push("tests passed before the last changes and were not run since".into()),
        Status::Failed => parts.push("the last verification run failed".into()),
        Status::NotRun => parts.push("the last test run executed zero tests".into()),
        Status::Unverified => parts.push(
            ledger
                .unbacked_subset()
                .and_then(|r| r.subset_note())
                .unwrap_or_else(|| "files changed and no test run verified them".into()),
        ),
        Status::CouldNotRun => parts.push("the tests could not run here, so nothing was verified".into()),
    }
    for r in ledger.could_not_run() {
        parts.push(format!(
            "`{}` {}",
            super::ledger::clip(&r.runner_command, 60),
            r.note.as_deref().unwrap_or("could not run")
        ));
    }
    // Runs that ended with no result keel could read, when newer than the last passing run of
    // their check (a run cut short by `timeout`, a report that went nowhere).
    for r in ledger.unread() {
        parts.push(format!(
            "`{}` gave no result ({})",
            super::ledger::clip(&r.runner_command, 60),
            r.note.as_deref().unwrap_or("output not understood")
        ));
    }
    if !ledger.weakened.is_empty() {
        let files: Vec<&str> = ledger.weakened.keys().map(String::as_str).collect();
        parts.push(format!("tests were weakened in {}", files.join(", ")));
    }
    if parts.is_empty() {
        return None;
    }
    let last = ledger
        .last_test_run()
        .map(|r| format!("; last run {}", r.describe()))
        .unwrap_or_default();
    Some(format!(
        "keel: verification {}: {}{last}",
        status.as_str(),
        parts.join("; ")
    ))
}

/// The TUI status line's label: `tests: stale`; none before anything happened.
pub fn status_label(ledger: &Ledger) -> Option<String> {
    let status = ledger.status();
    if status == Status::None && ledger.weakened.is_empty() {
        return None;
    }
    let word = match status {
        Status::NotRun => "not run",
        Status::CouldNotRun => "could not run",
        other => other.as_str(),
    };
    let weakened = if ledger.weakened.is_empty() { "" } else { " (weakened)" };
    Some(format!("tests: {word}{weakened}"))
}

/// `/evidence`: the whole ledger, newest runs last.
pub fn listing(ledger: &Ledger, gate: &str) -> String {
    let mut out = format!(
        "Verification: {} (working tree version {}, stop gate: {gate})\n",
        ledger.status().as_str(),
        ledger.version
    );
    if ledger.runs.is_empty() {
        out.push_str("\nNo verification runs yet.\n");
    } else {
        out.push_str("\nRuns:\n");
        for r in &ledger.runs {
            let _ = write!(
                out,
                "  {:>2}. {:<8} {} — {} ms, against version {}",
                r.id,
                r.status(ledger.version).as_str(),
                r.describe(),
                r.duration_ms,
                r.version
            );
            if let Some(subset) = &r.subset {
                let _ = write!(out, "\n      part of the suite: {subset}");
            }
            if let Some(note) = &r.note {
                let _ = write!(out, "\n      {note}");
            }
            if let Some(log) = &r.log {
                let _ = write!(out, "\n      log: {}", log.display());
            }
            out.push('\n');
        }
    }
    let changes: Vec<_> = ledger.changes.iter().rev().take(20).collect();
    if !changes.is_empty() {
        out.push_str("\nChanges (newest first):\n");
        for c in changes {
            let paths = if c.paths.is_empty() {
                "(unknown files)".to_string()
            } else {
                let mut s = c.paths.iter().take(6).cloned().collect::<Vec<_>>().join(", ");
                if c.paths.len() > 6 {
                    let _ = write!(s, " and {} more", c.paths.len() - 6);
                }
                s
            };
            let _ = writeln!(out, "  v{} {} — {}", c.version, paths, c.describe_source());
        }
    }
    if !ledger.weakened.is_empty() {
        out.push_str("\nWeakened tests:\n");
        for w in ledger.weakened.values() {
            let _ = writeln!(out, "  {}: {} (by {})", w.file, w.weakening.describe(), w.by);
        }
    }
    out
}

/// The hand-off's verification section, written by keel from the ledger.
pub fn handoff_section(ledger: &Ledger) -> String {
    let mut out = format!(
        "Verification status recorded by keel: {} (working tree version {}). Only a run after the last change \
         that passes counts; this summary is not evidence.",
        ledger.status().as_str(),
        ledger.version
    );
    let skip = ledger.runs.len().saturating_sub(8);
    if skip > 0 {
        let _ = write!(out, "\n- {skip} earlier runs are in the ledger (/evidence)");
    }
    for r in &ledger.runs[skip..] {
        let _ = write!(
            out,
            "\n- run {} {}: {}",
            r.id,
            r.status(ledger.version).as_str(),
            r.describe()
        );
        if let Some(log) = &r.log {
            let _ = write!(out, "\n    log: {}", log.display());
        }
    }
    for w in ledger.weakened.values() {
        let _ = write!(out, "\n- weakened tests in {}: {}", w.file, w.weakening.describe());
    }
    out
}
