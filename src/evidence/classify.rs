//! From one executed command line to its verification runs: which runners ran, what their output
//! says, and the outcome of each — with the runner's own status kept when the line hid it, and
//! output that cannot be attributed to the runner said to be so. Pure functions.

use super::command;
use super::expand::Expanded;
use super::ledger::Outcome;
use super::own::{Facts, Own};
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
/// (`None`: it did not finish), every runner's report taken to be in the output. Several
/// invocations of one runner make one run.
pub fn drafts(command: &str, reading: &Reading, output: &str, exit: Option<i32>) -> Vec<Draft> {
    drafts_split(&command::split(command), reading, output, exit)
}

/// [`drafts`] of a command line already split.
pub fn drafts_split(segments: &[command::Segment], reading: &Reading, output: &str, exit: Option<i32>) -> Vec<Draft> {
    drafts_with(segments, reading, &Facts::output_only(reading), output, exit)
}

/// The runs of a line, each read from its runner's own report as `facts` place it.
pub fn drafts_with(
    segments: &[command::Segment],
    reading: &Reading,
    facts: &Facts,
    output: &str,
    exit: Option<i32>,
) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    let mut done: Vec<(Runner, Kind)> = Vec::new();
    let runner_segments: Vec<usize> = reading.runs.iter().map(|o| o.segment).collect();
    let others: Vec<&command::Segment> = segments
        .iter()
        .enumerate()
        .filter(|(i, _)| !runner_segments.contains(i))
        .map(|(_, s)| s)
        .collect();
    for r in &reading.runs {
        if done.contains(&(r.runner, r.kind)) {
            continue;
        }
        done.push((r.runner, r.kind));
        let group: Vec<usize> = (0..reading.runs.len())
            .filter(|&k| reading.runs[k].runner == r.runner && reading.runs[k].kind == r.kind)
            .collect();
        let members: Vec<&Recognised> = group.iter().map(|&k| &reading.runs[k]).collect();
        let heard = heard(&group, facts, output);
        let mut d = draft(&members, &heard, exit, &others, facts);
        if let Some(body) = group.iter().find_map(|&k| facts.bodies.get(k).and_then(Option::as_ref)) {
            let hidden_before = d.exit_hidden;
            judge_body(&mut d, body, exit);
            if d.exit_hidden && !hidden_before {
                // The script's status is not its runner's: say the runner's, from its report.
                d.runner_exit = match d.outcome {
                    Outcome::Passed => Some(0),
                    Outcome::Failed => Some(d.runner.failure_exit()),
                    Outcome::NotRun => Some(d.runner.no_tests_exit()),
                    Outcome::Unknown | Outcome::CouldNotRun => None,
                };
            }
        }
        // Only the runner's own, readable report can say it could not run.
        let readable =
            heard.lost.is_none() && d.counts.is_none() && d.note.as_deref().is_none_or(|n| !n.contains("cannot tell"));
        if readable && let Some(why) = could_not_run(&members, segments, &heard, exit, &others) {
            d.outcome = Outcome::CouldNotRun;
            d.counts = None;
            d.runner_exit = Some(why.0);
            d.note = Some(why.1);
        }
        out.push(d);
    }
    out
}

/// What a group of invocations reported: the output, the files they wrote their report to, or
/// why nothing of theirs can be read.
struct Heard {
    text: String,
    /// The text is the command's whole output (other commands' output included).
    from_output: bool,
    lost: Option<String>,
}

fn heard(group: &[usize], facts: &Facts, output: &str) -> Heard {
    let owns: Vec<&Own> = group
        .iter()
        .map(|&k| facts.own.get(k).unwrap_or(&Own::Output))
        .collect();
    if owns.iter().any(|o| **o == Own::Output) {
        return Heard {
            text: output.to_string(),
            from_output: true,
            lost: None,
        };
    }
    let mut text = String::new();
    let mut paths: Vec<&str> = Vec::new();
    let mut lost = None;
    for o in owns {
        match o {
            Own::File { path, text: t } if !paths.contains(&path.as_str()) => {
                paths.push(path);
                text.push_str(t);
                text.push('\n');
            }
            Own::Lost(why) => lost = Some(why.clone()),
            _ => {}
        }
    }
    Heard {
        lost: text.is_empty().then_some(lost).flatten(),
        text,
        from_output: false,
    }
}

fn draft(
    group: &[&Recognised],
    heard: &Heard,
    exit: Option<i32>,
    others: &[&command::Segment],
    facts: &Facts,
) -> Draft {
    let first = group[0];
    let (runner, kind) = (first.runner, first.kind);
    let exit_visible = group.iter().all(|r| r.exit_visible);
    let runner_command = group.iter().map(|r| r.text.as_str()).collect::<Vec<_>>().join(" ; ");
    let parsed = parse::parse(runner, kind, &heard.text);
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
    if let Some(why) = &heard.lost {
        d.note = Some(why.clone());
        d.counts = None;
        d.runner_exit = exit.filter(|_| exit_visible);
        if d.runner_exit.is_some_and(|e| e != 0) {
            d.outcome = Outcome::Failed;
        }
        return d;
    }
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
    if heard.from_output
        && let Some((_, printer, _)) = facts
            .printed
            .iter()
            .find(|(_, _, text)| parse::parse(runner, kind, text).is_some())
    {
        d.note = Some(format!(
            "`{}` prints a file holding a report of this runner that the runner did not write in this command, \
             so keel cannot tell the runner's own report from it",
            super::ledger::clip(printer, 60)
        ));
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
        let timed = first
            .text
            .split_whitespace()
            .position(|w| w == "timeout")
            .and_then(|i| first.text.split_whitespace().nth(i + 1).map(|t| (i, t)));
        d.note = Some(match (exit, timed) {
            (None, _) => "the command did not finish".into(),
            (_, Some((_, limit))) => format!(
                "it printed no summary: `timeout {limit}` may have stopped it before it reported, and the command \
                 line's status is not the runner's"
            ),
            _ => "the output holds no summary keel understands from this runner".into(),
        });
    }
    d.runner_exit = match visible_exit {
        Some(e) => Some(e),
        None if exit.is_none() => None,
        None => match d.outcome {
            Outcome::Passed => Some(0),
            Outcome::Failed => Some(runner.failure_exit()),
            Outcome::NotRun => Some(runner.no_tests_exit()),
            Outcome::Unknown | Outcome::CouldNotRun => None,
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

/// A script whose body keel read: one that only prints runs no tests, whatever it prints; a
/// body that prints text reading like a summary besides its runner is not its runner's report;
/// a runner whose status the body hides is not the script's status.
fn judge_body(d: &mut Draft, body: &Expanded, exit: Option<i32>) {
    let shown = super::ledger::clip(&body.body, 80);
    if body.only_prints() {
        d.counts = None;
        d.outcome = Outcome::Unknown;
        d.runner_exit = None;
        d.note = Some(format!(
            "`{}` runs `{shown}` ({}), which prints text and runs no tests",
            d.runner_command, body.source
        ));
        return;
    }
    let runs: Vec<usize> = body.inner.runs.iter().map(|r| r.segment).collect();
    let printers: Vec<&command::Segment> = body
        .segments
        .iter()
        .enumerate()
        .filter(|(i, _)| !runs.contains(i))
        .map(|(_, s)| s)
        .collect();
    if d.counts.is_some() && forged(d.runner, d.kind, &printers) {
        d.counts = None;
        d.outcome = Outcome::Unknown;
        d.runner_exit = exit.filter(|_| !d.exit_hidden);
        d.note = Some(format!(
            "`{}` runs `{shown}` ({}), which itself prints text that reads like a summary, so keel cannot tell the \
             runner's own report from it",
            d.runner_command, body.source
        ));
        return;
    }
    if !body.exit_visible() && !d.exit_hidden {
        d.exit_hidden = true;
    }
}

/// Output by which a shell or interpreter says a program could not start, in its exact forms:
/// `sh: 1: ruff: not found`, `bash: ruff: command not found`, `python3: No module named mypy`,
/// `npm ERR! could not determine executable to run`.
fn missing_program(text: &str, program: &str, module: Option<&str>) -> Option<String> {
    text.lines().map(str::trim).find_map(|l| {
        let said = |tail: &str| {
            l.strip_suffix(tail)
                .and_then(|head| head.strip_suffix(&format!("{program}: ")))
                .is_some_and(|shell| shell.is_empty() || shell.ends_with(": "))
        };
        let hit = said("command not found")
            || said("not found")
            || module.is_some_and(|m| l.ends_with(&format!(": No module named {m}")))
            || l == "npm ERR! could not determine executable to run"
            || l == "npm error could not determine executable to run";
        hit.then(|| super::ledger::clip(l, 120))
    })
}

/// Lines by which a check says what it needs is not there (a service, credentials).
const UNAVAILABLE: &[&str] = &[
    "connection refused",
    "could not connect to",
    "unable to locate credentials",
    "no credentials",
    "authentication failed",
    "access denied for user",
    "could not translate host name",
    "is the server running",
];

/// Why a check could not run at all, with the status its program had: its program is missing
/// (exit 127, or the shell's "not found" in its report when a later command hid the status), or
/// its report says a service or credentials it needs are absent and it reported no results.
fn could_not_run(
    group: &[&Recognised],
    segments: &[command::Segment],
    heard: &Heard,
    exit: Option<i32>,
    others: &[&command::Segment],
) -> Option<(i32, String)> {
    let first = group[0];
    let words = super::runners::strip_wrappers(&segments.get(first.segment)?.words);
    let program = words.first()?;
    let (program, module) = match program.strip_prefix("python -m ") {
        Some(m) => (m.to_string(), Some(m.to_string())),
        None => (command::base_name(program).to_string(), None),
    };
    if parse::parse(first.runner, first.kind, &heard.text).is_some() {
        return None;
    }
    // What the line itself prints cannot say a program is missing.
    let text: String = heard
        .text
        .lines()
        .filter(|l| {
            !others
                .iter()
                .any(|s| s.words.iter().any(|w| w.contains(l.trim()) && !l.trim().is_empty()))
        })
        .collect::<Vec<_>>()
        .join("\n");
    let visible = exit.filter(|_| first.exit_visible && group.iter().all(|r| r.exit_visible));
    if let Some(line) = missing_program(&text, &program, module.as_deref()) {
        return Some((127, format!("could not run: {line}")));
    }
    if visible == Some(127) {
        return Some((127, format!("could not run: `{program}` was not found (exit 127)")));
    }
    if visible == Some(126) {
        return Some((
            126,
            format!("could not run: `{program}` could not be executed (exit 126)"),
        ));
    }
    let lower = text.to_ascii_lowercase();
    // A service or credentials missing: only with the runner's own failing status in view.
    if visible.is_some_and(|e| e != 0)
        && let Some(line) = lower.lines().find(|l| UNAVAILABLE.iter().any(|p| l.contains(p)))
    {
        let code = visible.unwrap_or(1);
        return Some((
            code,
            format!("could not run: {}", super::ledger::clip(line.trim(), 120)),
        ));
    }
    None
}
