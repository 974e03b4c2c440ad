//! Jest, Vitest, Mocha, node's test runner and bun's.

use std::sync::OnceLock;

use regex::Regex;

use super::{Counts, Parsed, count_of, numbered};

/// `Tests:       1 failed, 1 skipped, 1 passed, 3 total` (a suite that failed to run counts as
/// an error); `No tests found, exiting with code 1`.
pub fn jest(text: &str) -> Option<Parsed> {
    static TESTS: OnceLock<Regex> = OnceLock::new();
    static SUITES: OnceLock<Regex> = OnceLock::new();
    // Literal patterns, compiled by the tests: they cannot fail at run time.
    #[allow(clippy::expect_used)]
    let tests = TESTS.get_or_init(|| Regex::new(r"(?m)^Tests:\s+(.*\d+ total)\s*$").expect("constant regex"));
    #[allow(clippy::expect_used)]
    let suites = SUITES.get_or_init(|| Regex::new(r"(?m)^Test Suites:\s+(.*\d+ total)\s*$").expect("constant regex"));
    let failed_suites: Vec<u64> = suites
        .captures_iter(text)
        .map(|c| count_of(&numbered(&c[1]), &["failed"]))
        .collect();
    let found = Parsed::sum(tests.captures_iter(text).enumerate().map(|(i, c)| {
        let pairs = numbered(&c[1]);
        let failed = count_of(&pairs, &["failed"]);
        let passed = count_of(&pairs, &["passed"]);
        let skipped = count_of(&pairs, &["skipped", "todo", "pending"]);
        let suite_errors = if failed == 0 {
            failed_suites.get(i).copied().unwrap_or(0)
        } else {
            0
        };
        Counts::tests(passed, failed, skipped, suite_errors)
    }));
    if found.is_none() && text.lines().any(|l| l.starts_with("No tests found, exiting with code")) {
        return Some(Parsed::one(Counts::default()));
    }
    found
}

/// ` Tests  1 failed | 1 passed | 1 skipped (3)`; `No test files found, exiting with code 1`.
pub fn vitest(text: &str) -> Option<Parsed> {
    static TESTS: OnceLock<Regex> = OnceLock::new();
    static FILES: OnceLock<Regex> = OnceLock::new();
    // Literal patterns, compiled by the tests: they cannot fail at run time.
    #[allow(clippy::expect_used)]
    let tests = TESTS.get_or_init(|| Regex::new(r"(?m)^\s*Tests\s+(\d+ [^(]*)\((\d+)\)\s*$").expect("constant regex"));
    #[allow(clippy::expect_used)]
    let files =
        FILES.get_or_init(|| Regex::new(r"(?m)^\s*Test Files\s+(\d+ [^(]*)\((\d+)\)\s*$").expect("constant regex"));
    let failed_files: Vec<u64> = files
        .captures_iter(text)
        .map(|c| count_of(&numbered(&c[1]), &["failed"]))
        .collect();
    let found = Parsed::sum(tests.captures_iter(text).enumerate().map(|(i, c)| {
        let pairs = numbered(&c[1]);
        let failed = count_of(&pairs, &["failed"]);
        let passed = count_of(&pairs, &["passed"]);
        let skipped = count_of(&pairs, &["skipped", "todo"]);
        let file_errors = if failed == 0 {
            failed_files.get(i).copied().unwrap_or(0)
        } else {
            0
        };
        Counts::tests(passed, failed, skipped, file_errors)
    }));
    if found.is_none() {
        let files_only: u64 = failed_files.iter().sum();
        if files_only > 0 {
            return Some(Parsed::one(Counts::tests(0, 0, 0, files_only)));
        }
        if text.lines().any(|l| l.trim_start().starts_with("No test files found")) {
            return Some(Parsed::one(Counts::default()));
        }
    }
    found
}

/// Mocha's spec reporter: `3 passing (5ms)`, `1 pending`, `2 failing`.
pub fn mocha(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(r"(?m)^\s*(\d+) (passing|failing|pending)(?: \(\d+m?s\))?\s*$").expect("constant regex")
    });
    let mut counts = Counts::default();
    let mut summaries = 0;
    for c in re.captures_iter(text) {
        let n: u64 = c[1].parse().unwrap_or(0);
        match &c[2] {
            "passing" => {
                summaries += 1;
                counts.passed += n;
            }
            "failing" => counts.failed += n,
            _ => counts.skipped += n,
        }
    }
    counts.executed = counts.passed + counts.failed;
    (summaries > 0).then_some(Parsed { counts, summaries })
}

/// node --test, TAP (`# pass 1`) or spec (`ℹ pass 1`) reporter.
pub fn node_test(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(r"(?m)^(?:#|ℹ) (tests|pass|fail|cancelled|skipped|todo) (\d+)\s*$").expect("constant regex")
    });
    let mut summaries = 0;
    let (mut pass, mut fail, mut skip) = (0u64, 0u64, 0u64);
    for c in re.captures_iter(text) {
        let n: u64 = c[2].parse().unwrap_or(0);
        match &c[1] {
            "tests" => summaries += 1,
            "pass" => pass += n,
            "fail" | "cancelled" => fail += n,
            _ => skip += n,
        }
    }
    (summaries > 0).then(|| Parsed {
        counts: Counts::tests(pass, fail, skip, 0),
        summaries,
    })
}

/// bun test: ` 2 pass`, ` 1 fail`, ` 1 skip`, `Ran 4 tests across 2 files.`
pub fn bun_test(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| Regex::new(r"(?m)^\s*(\d+) (pass|fail|skip|todo)\s*$").expect("constant regex"));
    let ran = text
        .lines()
        .filter(|l| l.starts_with("Ran ") && l.contains(" across "))
        .count();
    if ran == 0 {
        return None;
    }
    let (mut pass, mut fail, mut skip) = (0u64, 0u64, 0u64);
    for c in re.captures_iter(text) {
        let n: u64 = c[1].parse().unwrap_or(0);
        match &c[2] {
            "pass" => pass += n,
            "fail" => fail += n,
            _ => skip += n,
        }
    }
    Some(Parsed {
        counts: Counts::tests(pass, fail, skip, 0),
        summaries: ran,
    })
}
