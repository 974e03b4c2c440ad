//! Parsers of runner output: what a test runner, compiler or linter reported, read from its
//! own summary lines. Pure functions over the captured text; fixtures of real output of several
//! versions of each runner live in `tests/fixtures/evidence/`.
//!
//! Each parser returns `None` when the output holds no summary it knows: "not understood" is
//! said, never guessed.

mod checks;
mod js;
mod native;
mod python;
mod rust;
mod various;

use serde::{Deserialize, Serialize};

use super::runners::{Kind, Runner};

/// What a run reported. Tests: `executed` = `passed` + `failed` (+ `errors` where the runner
/// counts erroring tests apart); `skipped` ran nothing. Checks: `errors`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub executed: u64,
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub errors: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.executed += o.executed;
        self.passed += o.passed;
        self.failed += o.failed;
        self.skipped += o.skipped;
        self.errors += o.errors;
    }

    /// Tests where only passed, failed and errors are known.
    pub fn tests(passed: u64, failed: u64, skipped: u64, errors: u64) -> Counts {
        Counts {
            executed: passed + failed + errors,
            passed,
            failed,
            skipped,
            errors,
        }
    }
}

/// A parse result: the counts and how many summaries they came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Parsed {
    pub counts: Counts,
    /// Summary lines (or blocks) found; several for runners that report per package/binary.
    pub summaries: usize,
}

impl Parsed {
    pub fn one(counts: Counts) -> Parsed {
        Parsed { counts, summaries: 1 }
    }

    fn sum(parts: impl IntoIterator<Item = Counts>) -> Option<Parsed> {
        let mut p = Parsed::default();
        for c in parts {
            p.counts.add(&c);
            p.summaries += 1;
        }
        (p.summaries > 0).then_some(p)
    }
}

type Parser = fn(&str) -> Option<Parsed>;

/// Test-runner parsers tried on the output of a script (`npm test`, `make check`, a declared
/// command), most specific first.
const TEST_PARSERS: &[Parser] = &[
    python::pytest,
    python::unittest,
    rust::cargo_test,
    rust::nextest,
    native::go_test,
    native::gotestsum,
    js::jest,
    js::vitest,
    js::mocha,
    js::node_test,
    js::bun_test,
    various::rspec,
    various::minitest,
    various::phpunit,
    various::maven,
    various::gradle,
    various::dotnet,
    native::ctest,
    various::plain,
];

const CHECK_PARSERS: &[Parser] = &[
    rust::cargo_check,
    checks::tsc,
    checks::eslint,
    checks::ruff,
    checks::mypy,
    checks::pyright,
    checks::flake8,
    native::go_build,
];

/// Parses the output of `runner` (ANSI colours removed first).
pub fn parse(runner: Runner, kind: Kind, output: &str) -> Option<Parsed> {
    let clean = strip_ansi(output);
    let text = clean.as_str();
    match runner {
        Runner::Pytest => python::pytest(text),
        Runner::Unittest => python::unittest(text),
        Runner::CargoTest => rust::cargo_test(text),
        Runner::Nextest => rust::nextest(text),
        Runner::GoTest => native::go_test(text),
        Runner::Gotestsum => native::gotestsum(text),
        Runner::Jest => js::jest(text),
        Runner::Vitest => js::vitest(text),
        Runner::Mocha => js::mocha(text),
        Runner::NodeTest => js::node_test(text),
        Runner::BunTest => js::bun_test(text),
        Runner::Rspec => various::rspec(text),
        Runner::Minitest => various::minitest(text),
        Runner::Phpunit => various::phpunit(text),
        Runner::Maven => match kind {
            Kind::Test => various::maven(text),
            _ => various::maven_build(text),
        },
        Runner::Gradle => various::gradle(text),
        Runner::Dotnet => match kind {
            Kind::Test => various::dotnet(text),
            _ => various::dotnet_build(text),
        },
        Runner::Ctest => native::ctest(text),
        Runner::Script => match kind {
            Kind::Test => any(TEST_PARSERS, text),
            _ => any(CHECK_PARSERS, text),
        },
        Runner::Cargo => rust::cargo_check(text),
        Runner::GoBuild => native::go_build(text),
        Runner::Tsc => checks::tsc(text),
        Runner::Eslint => checks::eslint(text),
        Runner::Ruff => checks::ruff(text),
        Runner::Mypy => checks::mypy(text),
        Runner::Pyright => checks::pyright(text),
        Runner::Flake8 => checks::flake8(text),
    }
}

/// Every parser that understood the output, added up (a script may run several runners).
fn any(parsers: &[Parser], text: &str) -> Option<Parsed> {
    let mut out: Option<Parsed> = None;
    for p in parsers {
        if let Some(found) = p(text) {
            let o = out.get_or_insert_with(Parsed::default);
            o.counts.add(&found.counts);
            o.summaries += found.summaries;
        }
    }
    out
}

/// Removes ANSI escape sequences (`--color=always` output).
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\u{1b}') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // CSI: parameters, then one final byte in @..~
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            Some(']') => {
                // OSC: until BEL or ST
                chars.next();
                while let Some(d) = chars.next() {
                    if d == '\u{7}' || (d == '\u{1b}' && chars.peek() == Some(&'\\')) {
                        if d == '\u{1b}' {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            _ => {
                chars.next();
            }
        }
    }
    out
}

/// `N word` pairs in a list such as `1 failed, 2 passed, 1 skipped`: the number before each
/// word, by the word's first token.
fn numbered(list: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for part in list.split([',', '|']) {
        let mut words = part.split_whitespace();
        let (Some(n), Some(w)) = (words.next(), words.next()) else {
            continue;
        };
        if let Ok(n) = n.parse::<u64>() {
            out.push((n, w.trim_end_matches(['.', ';', ':']).to_ascii_lowercase()));
        }
    }
    out
}

fn count_of(pairs: &[(u64, String)], names: &[&str]) -> u64 {
    pairs
        .iter()
        .filter(|(_, w)| names.contains(&w.as_str()))
        .map(|(n, _)| n)
        .sum()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
