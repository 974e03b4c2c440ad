//! From one executed command line to its verification runs: which runners ran, what their output
//! says, and the outcome of each — with the runner's own status kept when the line hid it, and
//! output that cannot be attributed to the runner said to be so. Pure functions.

use super::command;
use super::ledger::Outcome;
use super::parse::{self, Counts};
use super::runners::{Kind, Reading, Recognised, Runner};

/// A run before it gets its place in the ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub runner: Runner,
    pub kind: Kind,
    pub runner_command: String,
    pub exit_hidden: bool,
    pub runner_exit: Option<i32>,
    pub counts: Option<Counts>,
    pub outcome: Outcome,
    pub note: Option<String>,
}

/// Linters and compilers that print nothing when there is nothing wrong.
fn silent_when_clean(r: Runner) -> bool {
    matches!(r, Runner::Tsc | Runner::Eslint | Runner::Flake8 | Runner::GoBuild)
}

/// The runs of `command` given its reading, its combined output and the shell's exit status
/// (`None`: it did not finish). Several invocations of one runner make one run.
pub fn drafts(command: &str, reading: &Reading, output: &str, exit: Option<i32>) -> Vec<Draft> {
    drafts_split(&command::split(command), reading, output, exit)
}

/// [`drafts`] of a command line already split.
pub fn drafts_split(segments: &[command::Segment], reading: &Reading, output: &str, exit: Option<i32>) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    let mut done: Vec<(Runner, Kind)> = Vec::new();
    for r in &reading.runs {
        if done.contains(&(r.runner, r.kind)) {
            continue;
        }
        done.push((r.runner, r.kind));
        let group: Vec<&Recognised> = reading
            .runs
            .iter()
            .filter(|o| o.runner == r.runner && o.kind == r.kind)
            .collect();
        let runner_segments: Vec<usize> = reading.runs.iter().map(|o| o.segment).collect();
        let others: Vec<&command::Segment> = segments
            .iter()
            .enumerate()
            .filter(|(i, _)| !runner_segments.contains(i))
            .map(|(_, s)| s)
            .collect();
        out.push(draft(&group, output, exit, &others));
    }
    out
}

fn draft(group: &[&Recognised], output: &str, exit: Option<i32>, others: &[&command::Segment]) -> Draft {
    let first = group[0];
    let (runner, kind) = (first.runner, first.kind);
    let exit_visible = group.iter().all(|r| r.exit_visible);
    let runner_command = group.iter().map(|r| r.text.as_str()).collect::<Vec<_>>().join(" ; ");
    let parsed = parse::parse(runner, kind, output);
    let mut d = Draft {
        runner,
        kind,
        runner_command,
        exit_hidden: !exit_visible,
        runner_exit: None,
        counts: parsed.map(|p| p.counts),
        outcome: Outcome::Unknown,
        note: None,
    };
    if forged(runner, kind, others) {
        d.note = Some(
            "the command line itself prints text that reads like this runner's summary, so keel cannot tell the \
             runner's own report from it"
                .into(),
        );
        d.counts = None;
        d.runner_exit = exit.filter(|_| exit_visible);
        return d;
    }
    if let Some(p) = parsed
        && runner.single_summary()
        && p.summaries > group.len()
    {
        d.note = Some(format!(
            "the output holds {} summaries of this runner for {} run(s), so keel cannot tell which are the runner's",
            p.summaries,
            group.len()
        ));
        d.counts = None;
        d.runner_exit = exit.filter(|_| exit_visible);
        return d;
    }
    let visible_exit = exit.filter(|_| exit_visible);
    d.outcome = match (kind, d.counts) {
        (_, Some(c)) if c.failed > 0 || c.errors > 0 => Outcome::Failed,
        (Kind::Test, Some(c)) if c.executed == 0 => Outcome::NotRun,
        (_, Some(_)) if visible_exit.is_some_and(|e| e != 0) => Outcome::Failed,
        (_, Some(_)) if exit.is_none() => Outcome::Unknown,
        (_, Some(_)) => Outcome::Passed,
        (_, None) if visible_exit.is_some_and(|e| e != 0) => Outcome::Failed,
        (Kind::Build | Kind::Lint, None) if silent_when_clean(runner) && exit.is_some() => {
            if visible_exit.is_none() {
                d.note = Some("its output shows no errors; its own exit status was hidden by the command line".into());
            }
            d.counts = Some(Counts::default());
            Outcome::Passed
        }
        (_, None) => Outcome::Unknown,
    };
    if d.outcome == Outcome::Unknown && d.note.is_none() {
        d.note = Some(if exit.is_none() {
            "the command did not finish".into()
        } else {
            "the output holds no summary keel understands from this runner".into()
        });
    }
    d.runner_exit = match visible_exit {
        Some(e) => Some(e),
        None if exit.is_none() => None,
        None => match d.outcome {
            Outcome::Passed => Some(0),
            Outcome::Failed => Some(runner.failure_exit()),
            Outcome::NotRun => Some(runner.no_tests_exit()),
            Outcome::Unknown => None,
        },
    };
    if d.exit_hidden
        && let (Some(shell), Some(own)) = (exit, d.runner_exit)
        && shell != own
    {
        d.note = Some(format!(
            "the command line exited {shell}, but the runner's own summary means it exited {own}: a pipeline, `;` or \
             `||` after it hid its status"
        ));
    }
    d
}

/// Whether the non-runner parts of the line contain a summary this runner's parser would read
/// (`pytest; echo "=== 5 passed in 0.1s ==="`).
fn forged(runner: Runner, kind: Kind, others: &[&command::Segment]) -> bool {
    others.iter().any(|s| {
        let by_line = s.words.join("\n").replace("\\n", "\n");
        let by_space = s.words.join(" ");
        parse::parse(runner, kind, &by_line).is_some() || parse::parse(runner, kind, &by_space).is_some()
    })
}
