//! cargo test (libtest's summaries, one per test binary and for doc-tests), cargo-nextest, and
//! cargo build / check / clippy.

use std::sync::OnceLock;

use regex::Regex;

use super::{Counts, Parsed, count_of, numbered};

/// `test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; …`, added
/// up over the binaries; a crate that did not compile adds its errors.
pub fn cargo_test(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(r"(?m)^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored")
            .expect("constant regex")
    });
    let results = Parsed::sum(re.captures_iter(text).map(|c| {
        let n = |i: usize| c[i].parse::<u64>().unwrap_or(0);
        Counts::tests(n(1), n(2), n(3), 0)
    }));
    let errors = compile_errors(text);
    match (results, errors) {
        (Some(mut p), e) => {
            p.counts.errors += e;
            Some(p)
        }
        (None, 0) => None,
        (None, e) => Some(Parsed::one(Counts {
            errors: e,
            ..Counts::default()
        })),
    }
}

/// `Summary [   0.003s] 3 tests run: 2 passed, 1 failed, 1 skipped`; `error: no tests to run`.
pub fn nextest(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re =
        RE.get_or_init(|| Regex::new(r"(?m)^\s*Summary \[[^\]]*\]\s+(\d+) tests? run: (.*)$").expect("constant regex"));
    let found = Parsed::sum(re.captures_iter(text).map(|c| {
        let pairs = numbered(&c[2]);
        let passed = count_of(&pairs, &["passed"]);
        let failed = count_of(&pairs, &["failed", "timed"]);
        let skipped = count_of(&pairs, &["skipped"]);
        Counts::tests(passed, failed, skipped, 0)
    }));
    if found.is_none() && text.lines().any(|l| l.trim() == "error: no tests to run") {
        return Some(Parsed::one(Counts::default()));
    }
    found
}

/// cargo build / check / clippy: the errors, or a clean `Finished` line.
pub fn cargo_check(text: &str) -> Option<Parsed> {
    let errors = compile_errors(text);
    let finished = text.lines().any(|l| l.trim_start().starts_with("Finished "));
    (errors > 0 || finished).then(|| {
        Parsed::one(Counts {
            errors,
            ..Counts::default()
        })
    })
}

/// Errors rustc reported: the larger of the `error…:` lines and the "due to N previous errors"
/// totals (which repeat for each target of one crate).
fn compile_errors(text: &str) -> u64 {
    static DUE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let due = DUE.get_or_init(|| {
        Regex::new(r"(?m)^error: could not compile `[^`]+`.* due to (\d+) previous errors?").expect("constant regex")
    });
    let totals = due
        .captures_iter(text)
        .filter_map(|c| c[1].parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    let lines = text
        .lines()
        .filter(|l| {
            (l.starts_with("error: ") || l.starts_with("error["))
                && !l.starts_with("error: could not compile")
                && !l.starts_with("error: aborting due to")
                && !l.starts_with("error: test failed")
                && !l.starts_with("error: no tests to run")
                && !l.contains("targets failed")
        })
        .count() as u64;
    totals.max(lines)
}
