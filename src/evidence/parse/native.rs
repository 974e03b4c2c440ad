//! go test (plain, `-v` and `-json`), gotestsum, go build / vet, and CTest.

use std::sync::OnceLock;

use regex::Regex;

use super::{Counts, Parsed, count_of, numbered};

/// go test. With `-v` (or `-json`) every test is counted; without it go prints only failing
/// tests, so a passing package counts as one passed unit. A package without tests, or whose
/// `-run` pattern matched none (`[no tests to run]`), counts nothing.
pub fn go_test(text: &str) -> Option<Parsed> {
    if let Some(p) = go_json(text) {
        return Some(p);
    }
    let mut packages = 0usize;
    let mut ok_with_tests = 0u64;
    let mut failed_packages = 0u64;
    let mut build_failed = 0u64;
    let (mut pass, mut fail, mut skip) = (0u64, 0u64, 0u64);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("--- ") {
            match rest.split(':').next() {
                Some("PASS") => pass += 1,
                Some("FAIL") => fail += 1,
                Some("SKIP") => skip += 1,
                _ => {}
            }
            continue;
        }
        // go separates a package line's fields with tabs (`ok  \tpkg\t0.01s`).
        if !line.contains('\t') {
            continue;
        }
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some("ok") if fields.next().is_some() => {
                packages += 1;
                if !line.contains("[no tests to run]") {
                    ok_with_tests += 1;
                }
            }
            Some("FAIL") if fields.next().is_some() => {
                packages += 1;
                if line.contains("[build failed]") || line.contains("[setup failed]") {
                    build_failed += 1;
                } else {
                    failed_packages += 1;
                }
            }
            Some("?") if line.contains("[no test files]") => packages += 1,
            _ => {}
        }
    }
    if packages == 0 && pass + fail + skip == 0 {
        return None;
    }
    let verbose = pass > 0 || skip > 0;
    let passed = if verbose { pass } else { ok_with_tests };
    let failed = fail.max(failed_packages);
    Some(Parsed {
        counts: Counts::tests(passed, failed, skip, build_failed),
        summaries: packages.max(1),
    })
}

/// `go test -json`: one event per line; top-level tests' pass/fail/skip actions.
fn go_json(text: &str) -> Option<Parsed> {
    let mut seen = false;
    let (mut pass, mut fail, mut skip) = (0u64, 0u64, 0u64);
    let mut packages = 0usize;
    for line in text
        .lines()
        .filter(|l| l.starts_with("{\"Time\"") || l.starts_with("{\"Action\""))
    {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        seen = true;
        let action = v["Action"].as_str().unwrap_or("");
        match v["Test"].as_str() {
            Some(t) if !t.contains('/') => match action {
                "pass" => pass += 1,
                "fail" => fail += 1,
                "skip" => skip += 1,
                _ => {}
            },
            None if matches!(action, "pass" | "fail" | "skip") => packages += 1,
            _ => {}
        }
    }
    seen.then(|| Parsed {
        counts: Counts::tests(pass, fail, skip, 0),
        summaries: packages.max(1),
    })
}

/// `DONE 12 tests, 1 skipped, 2 failures in 0.456s`.
pub fn gotestsum(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re =
        RE.get_or_init(|| Regex::new(r"(?m)^DONE (\d+ tests?(?:, \d+ \w+)*)(?: in [\d.]+s)?").expect("constant regex"));
    Parsed::sum(re.captures_iter(text).map(|c| {
        let pairs = numbered(&c[1]);
        let total = count_of(&pairs, &["test", "tests"]);
        let skipped = count_of(&pairs, &["skipped"]);
        let failed = count_of(&pairs, &["failure", "failures"]);
        let errors = count_of(&pairs, &["error", "errors"]);
        let passed = total.saturating_sub(skipped + failed);
        Counts::tests(passed, failed, skipped, errors)
    }))
}

/// go build / go vet / golangci-lint: `file.go:line:col: message` lines; silent when clean.
pub fn go_build(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| Regex::new(r"(?m)^\S+\.go:\d+(?::\d+)?: ").expect("constant regex"));
    let errors = re.find_iter(text).count() as u64;
    (errors > 0).then(|| {
        Parsed::one(Counts {
            errors,
            ..Counts::default()
        })
    })
}

/// `67% tests passed, 1 tests failed out of 3`; skipped tests are inside "out of" and listed as
/// `***Skipped` / `(Skipped)`; `No tests were found!!!`.
pub fn ctest(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(r"(?m)^\d+% tests passed, (\d+) tests? failed out of (\d+)").expect("constant regex")
    });
    let progress_skips = text.lines().filter(|l| l.contains("***Skipped")).count() as u64;
    let listed_skips = text
        .lines()
        .filter(|l| l.trim_end().ends_with("(Skipped)") || l.trim_end().ends_with("(Disabled)"))
        .count() as u64;
    let skipped = progress_skips.max(listed_skips);
    let found = Parsed::sum(re.captures_iter(text).map(|c| {
        let failed: u64 = c[1].parse().unwrap_or(0);
        let total: u64 = c[2].parse().unwrap_or(0);
        Counts::tests(total.saturating_sub(failed + skipped), failed, skipped, 0)
    }));
    if found.is_none() && text.lines().any(|l| l.starts_with("No tests were found")) {
        return Some(Parsed::one(Counts::default()));
    }
    found
}
