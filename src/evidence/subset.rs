//! Runs that select part of a suite: `pytest -k add`, `cargo test parser`, `go test -run TestX`,
//! `jest -t adds`, `rspec spec/a_spec.rb:12`, `mvn test -Dtest=SumTest`… A passing run of part of
//! the suite is evidence for the tests it ran, not for the suite. Pure functions over a runner and
//! the words of its command.
//!
//! Plain file and directory arguments (`pytest tests/test_a.py`, `jest src/`, `go test ./pkg`) are
//! not read as a selection: a project is often tested one directory at a time, and the ledger has
//! no way to tell whether the rest of the suite is elsewhere.

#[path = "subset_options.rs"]
mod options;

use super::command::{self, Segment};
use super::runners::{self, Kind, Reading, Runner};
use options::{LIBTEST, PASSED_ON, Positional, Table, table};

/// What one command's arguments hold.
#[derive(Debug, Default, PartialEq, Eq)]
struct Scan {
    /// The selecting options and arguments, each as written (`-k add`, `tests/a.py::test_x`).
    selectors: Vec<String>,
    /// Every positional argument (files, directories, filters).
    positionals: Vec<String>,
}

/// What selects part of the suite in one invocation of `runner`: `words` are the simple
/// command's words with wrappers stripped ([`runners::strip_wrappers`]), the program first. Empty:
/// the whole suite (as far as the words tell).
pub fn selectors(runner: Runner, words: &[String]) -> Vec<String> {
    scan(runner, words).selectors
}

/// The positional arguments of an invocation (`pytest tests/a.py` → `tests/a.py`), for a
/// configuration's `addopts`, where a file argument narrows every run.
pub fn positionals(runner: Runner, words: &[String]) -> Vec<String> {
    scan(runner, words).positionals
}

fn scan(runner: Runner, words: &[String]) -> Scan {
    let Some(program) = words.first() else {
        return Scan::default();
    };
    let args = &words[1..];
    if runner == Runner::Script {
        return passed_on(command::base_name(program), args);
    }
    let mut out = scan_args(table(runner), args);
    if matches!(runner, Runner::CargoTest | Runner::Nextest)
        && let Some(dash) = args.iter().position(|a| a == "--")
    {
        let before = scan_args(table(runner), &args[..dash]);
        let after = scan_args(&LIBTEST, &args[dash + 1..]);
        out = Scan {
            selectors: before.selectors.into_iter().chain(after.selectors).collect(),
            positionals: before.positionals.into_iter().chain(after.positionals).collect(),
        };
    }
    if runner == Runner::Gradle {
        out.selectors.extend(excluded_test_tasks(args));
    }
    if runner == Runner::Minitest {
        // `rake test TESTOPTS="-n test_add"`
        out.selectors.extend(
            args.iter()
                .filter(|a| a.starts_with("TESTOPTS=") && (a.contains("-n") || a.contains("--name")))
                .map(|a| quote(a)),
        );
    }
    out
}

/// `npm test -- -t add`, `yarn test -t add`, `tox -e py -- -k add`.
fn passed_on(program: &str, args: &[String]) -> Scan {
    let rest = match args.iter().position(|a| a == "--") {
        Some(dash) => &args[dash + 1..],
        // yarn, pnpm and bun pass what follows the script's name on without `--`.
        None if matches!(program, "yarn" | "pnpm" | "bun") => {
            let script = args.iter().position(|a| !a.starts_with('-'));
            let script = match script {
                Some(i) if matches!(args[i].as_str(), "run" | "run-script") => i + 1,
                Some(i) => i,
                None => return Scan::default(),
            };
            args.get(script + 1..).unwrap_or_default()
        }
        None => return Scan::default(),
    };
    scan_args(&PASSED_ON, rest)
}

/// Gradle's `-x integrationTest`: a test task left out (other tasks left out select nothing).
fn excluded_test_tasks(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if (a == "-x" || a == "--exclude-task")
            && let Some(task) = args.get(i + 1)
            && (task.to_ascii_lowercase().contains("test") || task.ends_with("check"))
        {
            out.push(format!("{a} {}", quote(task)));
        }
    }
    out
}

fn scan_args(t: &Table, args: &[String]) -> Scan {
    let mut out = Scan::default();
    let mut modifiers = Vec::new();
    let mut positional_index = 0;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1);
        if a.starts_with('-') && a.len() > 1 {
            let (name, inline) = match a.split_once('=') {
                Some((n, v)) if n.starts_with('-') => (n, Some(v)),
                _ => (a, None),
            };
            if t.select_valued.contains(&name) {
                match (inline, next) {
                    (Some(_), _) => out.selectors.push(quote(a)),
                    (None, Some(v)) => {
                        out.selectors.push(format!("{a} {}", quote(v)));
                        i += 1;
                    }
                    (None, None) => out.selectors.push(quote(a)),
                }
            } else if t.select_flags.contains(&name) {
                out.selectors.push(a.to_string());
            } else if t.modifiers.contains(&name) {
                modifiers.push(a.to_string());
            } else if let Some(prop) = a.strip_prefix("-D").filter(|_| !t.properties.is_empty()) {
                // Maven: `-Dtest=SumTest` or `-D test=SumTest`.
                let (prop, consumed) = if prop.is_empty() {
                    (next.map(String::as_str).unwrap_or(""), true)
                } else {
                    (prop, false)
                };
                if t.properties.iter().any(|p| prop.starts_with(p)) {
                    out.selectors.push(quote(&format!("-D{prop}")));
                }
                if consumed {
                    i += 1;
                }
            } else if t.valued.contains(&name) {
                if inline.is_none() {
                    i += 1;
                }
            } else if attached_short(a, t.select_valued) {
                // `-kadd`
                out.selectors.push(quote(a));
            }
            i += 1;
            continue;
        }
        if a.starts_with('+') {
            // `cargo +nightly test`
            i += 1;
            continue;
        }
        out.positionals.push(a.to_string());
        let selects = match t.positional {
            Positional::Never => false,
            Positional::NodeId => a.contains("::"),
            Positional::Filter { skip } => positional_index >= skip,
            Positional::Dotted => dotted_into_module(a),
            Positional::Location => location(a),
            Positional::Subcommand(subs) => positional_index == 0 && subs.contains(&a),
        };
        if selects {
            out.selectors.push(quote(a));
        }
        positional_index += 1;
        i += 1;
    }
    if !out.selectors.is_empty() {
        out.selectors.extend(modifiers);
    }
    out
}

/// `-kadd` for a one-letter option that takes a value.
fn attached_short(word: &str, valued: &[&str]) -> bool {
    !word.starts_with("--")
        && valued
            .iter()
            .any(|o| o.len() == 2 && word.len() > 2 && word.starts_with(o))
}

/// `tests.test_a.TestA` or `tests.test_a.TestA.test_x`: a class (or less) inside a module. A
/// module's dotted name alone (`tests.test_a`) is a file.
fn dotted_into_module(word: &str) -> bool {
    if word.contains('/') || word.ends_with(".py") || word.contains('=') {
        return false;
    }
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() >= 2
        && parts.iter().all(|p| !p.is_empty())
        && parts[1..]
            .iter()
            .any(|p| p.chars().next().is_some_and(char::is_uppercase))
}

/// `spec/a_spec.rb:12`, `test/a_test.rb:3:9`, `spec/a_spec.rb[1:2]`.
fn location(word: &str) -> bool {
    if let Some(open) = word.find('[') {
        return word.ends_with(']') && open > 0;
    }
    match word.split_once(':') {
        Some((file, lines)) => {
            !file.is_empty() && !lines.is_empty() && lines.split(':').all(|l| l.chars().all(|c| c.is_ascii_digit()))
        }
        None => false,
    }
}

/// A word as it could be typed again (`-k 'not slow'`).
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%^~".contains(c))
        && !word.starts_with('~');
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What selected part of the suite in the run of `runner` (`kind`) that a line made, from the
/// words of each of its invocations; `None` when one of them ran the whole suite, or the run is
/// no test run.
pub fn of_run(segments: &[Segment], reading: &Reading, runner: Runner, kind: Kind) -> Option<String> {
    if kind != Kind::Test {
        return None;
    }
    let mut parts = Vec::new();
    for r in reading.runs.iter().filter(|r| r.runner == runner && r.kind == kind) {
        let words = invocation_words(segments, r.segment, &r.text);
        let s = selectors(runner, &words);
        if s.is_empty() {
            return None;
        }
        parts.push(s.join(" "));
    }
    (!parts.is_empty()).then(|| parts.join(" ; "))
}

/// The words of the runner's simple command, wrappers stripped; for a run inside `sh -c '…'`,
/// those of the nested line.
fn invocation_words(segments: &[Segment], segment: usize, text: &str) -> Vec<String> {
    let outer = segments
        .get(segment)
        .map(|s| runners::strip_wrappers(&s.words))
        .unwrap_or_default();
    let nested = outer
        .first()
        .is_some_and(|p| matches!(command::base_name(p), "sh" | "bash" | "zsh" | "dash"));
    if outer.is_empty() || nested {
        return command::split(text)
            .first()
            .map(|s| runners::strip_wrappers(&s.words))
            .unwrap_or_default();
    }
    outer
}

#[cfg(test)]
#[path = "subset_tests.rs"]
mod tests;
