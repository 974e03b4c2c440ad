//! Type checkers and linters: tsc, ESLint, Ruff, mypy, Pyright, flake8. Several print nothing
//! when clean; they report `None` then and the exit status decides.

use std::sync::OnceLock;

use regex::Regex;

use super::{Counts, Parsed};

fn errors(n: u64) -> Parsed {
    Parsed::one(Counts {
        errors: n,
        ..Counts::default()
    })
}

// Only called with literal patterns, each compiled by the tests: it cannot fail at run time.
#[allow(clippy::expect_used)]
fn re(cell: &'static OnceLock<Regex>, pattern: &'static str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("constant regex"))
}

/// `Found 3 errors in 2 files.`, else `file.ts(1,7): error TS2322: …` lines.
pub fn tsc(text: &str) -> Option<Parsed> {
    static FOUND: OnceLock<Regex> = OnceLock::new();
    static LINE: OnceLock<Regex> = OnceLock::new();
    let found = re(&FOUND, r"(?m)^Found (\d+) errors?\b");
    let line = re(
        &LINE,
        r"(?m)^\S.*[(:]\d+[,:]\d+\)?:? - ?error TS\d+:|^\S.*\(\d+,\d+\): error TS\d+:",
    );
    if let Some(n) = found
        .captures_iter(text)
        .filter_map(|c| c[1].parse::<u64>().ok())
        .last()
    {
        return Some(errors(n));
    }
    let n = line.find_iter(text).count() as u64;
    (n > 0).then(|| errors(n))
}

/// `✖ 5 problems (3 errors, 2 warnings)`.
pub fn eslint(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(&RE, r"(?m)^✖ \d+ problems? \((\d+) errors?, \d+ warnings?\)");
    re.captures_iter(text)
        .filter_map(|c| c[1].parse::<u64>().ok())
        .last()
        .map(errors)
}

/// `Found 3 errors.`, `All checks passed!`, `N files would be reformatted`.
pub fn ruff(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(&RE, r"(?m)^(?:Found (\d+) errors?|(\d+) files? would be reformatted)");
    if let Some(c) = re.captures_iter(text).last() {
        let n = c.get(1).or(c.get(2)).and_then(|m| m.as_str().parse().ok()).unwrap_or(1);
        return Some(errors(n));
    }
    text.lines()
        .any(|l| {
            l.trim() == "All checks passed!"
                || l.contains("files already formatted")
                || l.contains("file already formatted")
        })
        .then(|| errors(0))
}

/// `Found 2 errors in 1 file (checked 3 source files)`; `Success: no issues found in 3 source files`.
pub fn mypy(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(&RE, r"(?m)^Found (\d+) errors? in \d+ files? \(checked");
    if let Some(n) = re.captures_iter(text).filter_map(|c| c[1].parse::<u64>().ok()).last() {
        return Some(errors(n));
    }
    text.lines()
        .any(|l| l.starts_with("Success: no issues found"))
        .then(|| errors(0))
}

/// `2 errors, 0 warnings, 0 informations`.
pub fn pyright(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(
        &RE,
        r"(?m)^\s*(\d+) errors?, \d+ warnings?, \d+ (?:informations?|notes?)",
    );
    re.captures_iter(text)
        .filter_map(|c| c[1].parse::<u64>().ok())
        .last()
        .map(errors)
}

/// flake8: `path.py:3:1: F401 'os' imported but unused` lines.
pub fn flake8(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = re(&RE, r"(?m)^\S+\.pyi?:\d+:\d+: [A-Z]+\d+ ");
    let n = re.find_iter(text).count() as u64;
    (n > 0).then(|| errors(n))
}
