//! RSpec, minitest / Test::Unit, PHPUnit, Maven Surefire, Gradle, dotnet test, and the plain
//! `N passed, N failed` closing line any script may print.

use std::sync::OnceLock;

use regex::Regex;

use super::{Counts, Parsed};

// Only called with literal patterns, each compiled by the tests: it cannot fail at run time.
#[allow(clippy::expect_used)]
fn re(cell: &'static OnceLock<Regex>, pattern: &'static str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("constant regex"))
}

fn num(c: &regex::Captures<'_>, i: usize) -> u64 {
    c.get(i).and_then(|m| m.as_str().parse().ok()).unwrap_or(0)
}

/// `3 examples, 1 failure, 1 pending`; `…, 1 error occurred outside of examples`.
pub fn rspec(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(
        &RE,
        r"(?m)^(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?(?:, (\d+) errors? occurred outside of examples)?",
    );
    Parsed::sum(re.captures_iter(text).map(|c| {
        let (examples, failed, pending, errors) = (num(&c, 1), num(&c, 2), num(&c, 3), num(&c, 4));
        Counts::tests(examples.saturating_sub(failed + pending), failed, pending, errors)
    }))
}

/// minitest `3 runs, 2 assertions, 1 failures, 0 errors, 1 skips`; Test::Unit `3 tests, 5
/// assertions, 0 failures, 0 errors, 0 pendings, 0 omissions, 0 notifications`.
pub fn minitest(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(
        &RE,
        r"(?m)^(\d+) (?:runs|tests), (\d+) assertions, (\d+) failures, (\d+) errors, (\d+) (?:skips|pendings)(?:, (\d+) omissions)?",
    );
    Parsed::sum(re.captures_iter(text).map(|c| {
        let (runs, failed, errors, skipped) = (num(&c, 1), num(&c, 3), num(&c, 4), num(&c, 5) + num(&c, 6));
        Counts::tests(runs.saturating_sub(failed + errors + skipped), failed, skipped, errors)
    }))
}

/// `OK (3 tests, 5 assertions)`; `Tests: 3, Assertions: 4, Failures: 1, Skipped: 1.`;
/// `No tests executed!`.
pub fn phpunit(text: &str) -> Option<Parsed> {
    static OK: OnceLock<Regex> = OnceLock::new();
    static LONG: OnceLock<Regex> = OnceLock::new();
    let ok = re(&OK, r"(?m)^OK \((\d+) tests?, \d+ assertions?\)");
    let long = re(&LONG, r"(?m)^Tests: (\d+), Assertions: \d+((?:, \w+: \d+)*)\.?\s*$");
    let mut parts: Vec<Counts> = ok
        .captures_iter(text)
        .map(|c| Counts::tests(num(&c, 1), 0, 0, 0))
        .collect();
    for c in long.captures_iter(text) {
        let total = num(&c, 1);
        let (mut failed, mut errors, mut skipped) = (0, 0, 0);
        for item in c[2].split(',').filter(|s| !s.trim().is_empty()) {
            let Some((k, v)) = item.split_once(':') else { continue };
            let v: u64 = v.trim().parse().unwrap_or(0);
            match k.trim() {
                "Failures" => failed += v,
                "Errors" => errors += v,
                "Skipped" | "Incomplete" => skipped += v,
                _ => {}
            }
        }
        parts.push(Counts::tests(
            total.saturating_sub(failed + errors + skipped),
            failed,
            skipped,
            errors,
        ));
    }
    let found = Parsed::sum(parts);
    if found.is_none() && text.lines().any(|l| l.trim() == "No tests executed!") {
        return Some(Parsed::one(Counts::default()));
    }
    found
}

/// Maven Surefire/Failsafe: the `Tests run: N, Failures: F, Errors: E, Skipped: S` totals after
/// `Results:` (one per module), else the per-class lines; a build that failed to compile gives
/// its compiler errors.
pub fn maven(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(
        &RE,
        r"(?m)^(?:\[\w+\] )?Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)(.*)$",
    );
    let lines: Vec<(Counts, bool)> = re
        .captures_iter(text)
        .map(|c| {
            let (run, failed, errors, skipped) = (num(&c, 1), num(&c, 2), num(&c, 3), num(&c, 4));
            let per_class = c[5].contains("elapsed");
            (
                Counts::tests(run.saturating_sub(failed + errors + skipped), failed, skipped, errors),
                per_class,
            )
        })
        .collect();
    let totals: Vec<Counts> = lines
        .iter()
        .filter(|(_, per_class)| !per_class)
        .map(|(c, _)| *c)
        .collect();
    let found = if totals.is_empty() {
        Parsed::sum(lines.iter().map(|(c, _)| *c))
    } else {
        Parsed::sum(totals)
    };
    if found.is_some() {
        return found;
    }
    if let Some(p) = maven_build(text).filter(|p| p.counts.errors > 0) {
        return Some(p);
    }
    text.lines()
        .any(|l| l.trim_start_matches("[INFO] ").trim() == "No tests to run.")
        .then(|| Parsed::one(Counts::default()))
}

/// Maven compile: `[ERROR] /src/Foo.java:[10,5] cannot find symbol`; `BUILD SUCCESS`.
pub fn maven_build(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(&RE, r"(?m)^\[ERROR\] \S+\.(?:java|kt|scala|groovy):\[\d+,\d+\] ");
    let mut errors = re.find_iter(text).count() as u64;
    let failure = text
        .lines()
        .any(|l| l.trim_start_matches("[INFO] ").trim() == "BUILD FAILURE");
    let success = text
        .lines()
        .any(|l| l.trim_start_matches("[INFO] ").trim() == "BUILD SUCCESS");
    if failure && errors == 0 {
        errors = 1;
    }
    (failure || success).then(|| {
        Parsed::one(Counts {
            errors,
            ..Counts::default()
        })
    })
}

/// Gradle: `3 tests completed, 1 failed, 1 skipped` (printed only when something failed or was
/// skipped: a passing test task prints no counts, so its output is not understood).
pub fn gradle(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(
        &RE,
        r"(?m)^(\d+) tests? completed(?:, (\d+) failed)?(?:, (\d+) skipped)?",
    );
    let found = Parsed::sum(re.captures_iter(text).map(|c| {
        let (total, failed, skipped) = (num(&c, 1), num(&c, 2), num(&c, 3));
        Counts::tests(total.saturating_sub(failed + skipped), failed, skipped, 0)
    }));
    if found.is_some() {
        return found;
    }
    text.lines()
        .any(|l| {
            l.contains("Compilation failed")
                || (l.starts_with("> Task :") && l.contains("compile") && l.ends_with("FAILED"))
        })
        .then(|| {
            Parsed::one(Counts {
                errors: 1,
                ..Counts::default()
            })
        })
}

/// dotnet test: `Failed!  - Failed: 1, Passed: 2, Skipped: 0, Total: 3, Duration: …` per
/// assembly; older `Total tests: 3` blocks; the testing platform's `Test run summary` block.
pub fn dotnet(text: &str) -> Option<Parsed> {
    static LINE: OnceLock<Regex> = OnceLock::new();
    static OLD: OnceLock<Regex> = OnceLock::new();
    static MTP: OnceLock<Regex> = OnceLock::new();
    let line = re(
        &LINE,
        r"(?m)^\s*(?:Passed|Failed)!\s+-\s+Failed:\s+(\d+), Passed:\s+(\d+), Skipped:\s+(\d+), Total:\s+(\d+)",
    );
    let old = re(
        &OLD,
        r"(?m)^\s*Total tests: (\d+)\s*\n(?:\s*Passed: (\d+)\s*\n)?(?:\s*Failed: (\d+)\s*\n)?(?:\s*Skipped: (\d+)\s*\n)?",
    );
    let mtp = re(
        &MTP,
        r"(?m)^Test run summary: \w+!?.*\n\s*total: (\d+)\s*\n\s*failed: (\d+)\s*\n\s*succeeded: (\d+)\s*\n\s*skipped: (\d+)",
    );
    let mut parts: Vec<Counts> = line
        .captures_iter(text)
        .map(|c| Counts::tests(num(&c, 2), num(&c, 1), num(&c, 3), 0))
        .collect();
    if parts.is_empty() {
        parts.extend(
            old.captures_iter(text)
                .map(|c| Counts::tests(num(&c, 2), num(&c, 3), num(&c, 4), 0)),
        );
    }
    if parts.is_empty() {
        parts.extend(
            mtp.captures_iter(text)
                .map(|c| Counts::tests(num(&c, 3), num(&c, 2), num(&c, 4), 0)),
        );
    }
    Parsed::sum(parts).or_else(|| dotnet_build(text).filter(|p| p.counts.errors > 0))
}

/// dotnet build: `    2 Error(s)`; `Build succeeded.`
pub fn dotnet_build(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(&RE, r"(?m)^\s*(\d+) Error\(s\)\s*$");
    let errors = re.captures_iter(text).map(|c| num(&c, 1)).max();
    let succeeded = text.lines().any(|l| l.trim() == "Build succeeded.");
    match errors {
        Some(e) => Some(Parsed::one(Counts {
            errors: e,
            ..Counts::default()
        })),
        None => succeeded.then(|| Parsed::one(Counts::default())),
    }
}

/// The plain closing line: `N passed, N failed` alone on a line (`, N skipped` may follow, one
/// word with a colon may stand before it).
pub fn plain(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(
        &RE,
        r"(?m)^(?:\w+:\s*)?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$",
    );
    Parsed::sum(
        re.captures_iter(text)
            .map(|c| Counts::tests(num(&c, 1), num(&c, 2), num(&c, 3), 0)),
    )
}
