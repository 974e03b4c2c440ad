//! The stop gate: when the model ends its turn after changing files and the ledger holds no
//! fresh passing test run (or tests were weakened), keel sends it back with a short factual
//! note. Setting `verification.stopGate`: `nudge` (once per turn, the default), `require` (up to
//! three times), `off`. Pure: the engine decides when to ask and counts the sends.

use std::sync::OnceLock;

use regex::Regex;

use super::ledger::{Ledger, Status};
use crate::types::todo_deps::Dependencies;
use crate::types::tool::{Todo, TodoStatus};

/// How every note of the gate begins: a resumed conversation tells keel's note from the
/// user's words by it.
pub const LEAD: &str = "[keel: verification]";

/// What a front end shows when the gate sent the model back (`status`: the ledger's, when
/// known), live and in a resumed conversation alike.
pub fn sent_back_notice(status: Option<&str>) -> String {
    let mut text = String::from("verification: the model was sent back to verify its changes");
    if let Some(s) = status {
        text.push_str(&format!(" ({s})"));
    }
    text
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GateMode {
    #[default]
    Nudge,
    Require,
    Off,
}

impl GateMode {
    pub fn parse(s: &str) -> Option<GateMode> {
        match s {
            "nudge" => Some(GateMode::Nudge),
            "require" => Some(GateMode::Require),
            "off" => Some(GateMode::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GateMode::Nudge => "nudge",
            GateMode::Require => "require",
            GateMode::Off => "off",
        }
    }

    /// How often one turn may be sent back.
    pub fn max_sends(self) -> u32 {
        match self {
            GateMode::Nudge => 1,
            GateMode::Require => 3,
            GateMode::Off => 0,
        }
    }
}

/// Whether a todo is about verifying (testing, checking, building, linting…).
pub fn is_verification_step(todo: &Todo) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(tests?|testing|verify|verif\w*|validat\w*|check\w*|lint\w*|build|compile|type-?check\w*|pytest|jest|vitest|ci|qa|run the suite)\b",
        )
        .expect("constant regex")
    });
    re.is_match(&todo.content) || re.is_match(&todo.active_form)
}

/// The todo-list rule: three or more completed todos and none of them a verification step.
pub fn todos_unverified(todos: &[Todo]) -> Option<usize> {
    let done: Vec<&Todo> = todos.iter().filter(|t| t.status == TodoStatus::Completed).collect();
    (done.len() >= 3 && !done.iter().any(|t| is_verification_step(t))).then_some(done.len())
}

/// What the list itself says about verifying: its first open verification entry the model can
/// start now, or, when every open one is blocked, what it waits on (a blocked entry is never
/// the one the note asks for).
pub fn verification_hint(todos: &[Todo]) -> Option<String> {
    let deps = Dependencies::resolve(todos).ok();
    let open: Vec<usize> = (0..todos.len())
        .filter(|&i| todos[i].status != TodoStatus::Completed && is_verification_step(&todos[i]))
        .collect();
    let blockers = |i: usize| deps.as_ref().map(|d| d.open_blockers(todos, i)).unwrap_or_default();
    if let Some(&i) = open.iter().find(|&&i| blockers(i).is_empty()) {
        return Some(format!(
            "Your task list still has \"{}\" open: do it now.",
            todos[i].content
        ));
    }
    let &i = open.first()?;
    let waits: Vec<String> = blockers(i).iter().map(|t| format!("\"{}\"", t.content)).collect();
    Some(format!(
        "Your task list's \"{}\" is blocked: it waits on {}, not completed yet; finish that first, then verify.",
        todos[i].content,
        waits.join(", ")
    ))
}

/// `Run 2 `pytest -k add`: 1 passed, 0 failed (exit 0) — only a subset ran (`-k add`) since the
/// last change; run the whole suite.`
fn subset_line(run: &super::ledger::Run) -> String {
    format!(
        "Run {} {} — {}.",
        run.id,
        run.describe(),
        run.subset_note().unwrap_or_default()
    )
}

/// The note that sends the model back, or `None` when the turn may end: a fresh passing run
/// stands and no test was weakened, or nothing changed in this turn (`turn_start` is the version
/// the turn began at) — except the task-list rule, which reminds once per turn whatever changed.
/// `send` is 1 for the first note of the turn.
pub fn note(ledger: &Ledger, turn_start: u64, todos: &[Todo], send: u32, mode: GateMode) -> Option<String> {
    if mode == GateMode::Off || send > mode.max_sends() {
        return None;
    }
    let status = ledger.status();
    // A check that could not run here is named in the report: an answer that says so is honest,
    // and sending the model back cannot install the program.
    if matches!(status, Status::Passed | Status::CouldNotRun) && ledger.weakened.is_empty() {
        return None;
    }
    if ledger.work_since(turn_start).next().is_none() {
        // Work claimed done in the task list, with no file changed: one reminder per turn.
        let n = todos_unverified(todos).filter(|_| send == 1)?;
        let hint = verification_hint(todos).map(|h| format!(" {h}")).unwrap_or_default();
        return Some(format!(
            "{LEAD} Before you finish: {n} todos are completed and none of them was a verification \
             step.{hint} If you verified the work, say how; if not, verify it, or say plainly in your answer that it \
             is not verified."
        ));
    }
    let mut lines: Vec<String> = Vec::new();
    let last = ledger.last_test_run();
    let since = |v: u64| -> String {
        let files = ledger.changed_since(v);
        let shown: Vec<String> = files.iter().take(8).map(|(p, by)| format!("{p} ({by})")).collect();
        let more = files.len().saturating_sub(8);
        let mut s = shown.join(", ");
        if more > 0 {
            s.push_str(&format!(" and {more} more"));
        }
        s
    };
    match (status, last) {
        (Status::Stale, Some(run)) if run.stale_target.is_some() && run.version == ledger.version => {
            if let Some(t) = &run.stale_target {
                lines.push(format!(
                    "Run {} {} passed, but {}; restart it and run the tests again.",
                    run.id,
                    run.describe(),
                    t.describe()
                ));
            }
        }
        (Status::Stale, Some(run)) => lines.push(format!(
            "Tests last passed in run {} {}, but files changed since: {}.",
            run.id,
            run.describe(),
            since(run.version)
        )),
        (Status::Failed, _) => {
            let failed = ledger
                .runs
                .iter()
                .rev()
                .find(|r| r.outcome == super::ledger::Outcome::Failed)
                .map(|r| (r.id, r.describe(), r.version));
            if let Some((id, what, version)) = failed {
                lines.push(format!("Run {id} failed: {what}."));
                if version < ledger.version {
                    lines.push(format!("Changed after it, not run since: {}.", since(version)));
                }
            }
        }
        (Status::NotRun, Some(run)) => lines.push(format!(
            "The last test run executed zero tests, which is not a pass: {}.",
            run.describe()
        )),
        (Status::Unverified, _) if ledger.unbacked_subset().is_some() => {
            lines.extend(ledger.unbacked_subset().map(subset_line))
        }
        (Status::Unverified, Some(run)) => lines.push(format!(
            "keel could not read a result from the last test run: {}{}.",
            run.describe(),
            run.note.as_deref().map(|n| format!(" — {n}")).unwrap_or_default()
        )),
        (Status::Unverified | Status::None, None) | (Status::Stale | Status::NotRun, None) => lines.push(format!(
            "No test run is recorded in this session, and these files changed: {}.",
            since(0)
        )),
        (Status::Passed | Status::None | Status::CouldNotRun, _) => {}
    }
    for w in ledger.weakened.values() {
        lines.push(format!(
            "Weakened tests in {}: {} (by {}). A pass with weakened tests is no evidence that the original tests pass.",
            w.file,
            w.weakening.describe(),
            w.by
        ));
    }
    if let Some(n) = todos_unverified(todos) {
        let hint = verification_hint(todos).map(|h| format!(" {h}")).unwrap_or_default();
        lines.push(format!(
            "{n} todos are completed and none of them was a verification step.{hint}"
        ));
    }
    let mut text = format!("{LEAD} Before you finish, the evidence ledger shows:\n");
    for l in &lines {
        text.push_str("- ");
        text.push_str(l);
        text.push('\n');
    }
    text.push_str(
        "Run the tests that cover your changes and read their result before you finish. If they cannot run \
         here, say so plainly in your answer instead of claiming they pass.",
    );
    if ledger.weakened.values().next().is_some() {
        text.push_str(" Restore the weakened tests, or tell the user exactly what you weakened and why.");
    }
    if mode == GateMode::Require {
        text.push_str(&format!(
            " (This check is required: reminder {send} of {}.)",
            mode.max_sends()
        ));
    }
    Some(text)
}
