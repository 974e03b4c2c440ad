//! pytest and unittest (also Django's `manage.py test`, which prints unittest's summary).

use std::sync::OnceLock;

use regex::Regex;

use super::{Counts, Parsed, count_of, numbered};

/// `==== 1 failed, 2 passed, 1 skipped in 0.12s ====`, `2 passed in 0.01s` (`-q`),
/// `no tests ran in 0.00s`, `3 deselected in 0.01s`, `5 tests collected in 0.01s`.
pub fn pytest(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?m)^=*\s*((?:\d+ (?:passed|failed|skipped|deselected|xfailed|xpassed|warnings?|errors?|rerun|tests? collected)(?:, )?)+|no tests ran)(?: in [\d.]+s(?: \([^)]*\))?)?\s*=*\s*$",
        )
        .expect("constant regex")
    });
    Parsed::sum(re.captures_iter(text).map(|c| {
        let pairs = numbered(&c[1]);
        let passed = count_of(&pairs, &["passed", "xpassed"]);
        let failed = count_of(&pairs, &["failed"]);
        let errors = count_of(&pairs, &["error", "errors"]);
        let skipped = count_of(&pairs, &["skipped", "xfailed"]);
        Counts::tests(passed, failed, skipped, errors)
    }))
}

/// `Ran 4 tests in 0.001s` followed by `OK`, `OK (skipped=1)`, `FAILED (failures=1, errors=1)`
/// or `NO TESTS RAN`.
pub fn unittest(text: &str) -> Option<Parsed> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(r"(?m)^Ran (\d+) tests? in [\d.]+s\s*\n\s*\n?(OK|FAILED|NO TESTS RAN)(?: \(([^)]*)\))?")
            .expect("constant regex")
    });
    Parsed::sum(re.captures_iter(text).map(|c| {
        let ran: u64 = c[1].parse().unwrap_or(0);
        let mut detail = std::collections::HashMap::new();
        if let Some(d) = c.get(3) {
            for part in d.as_str().split(',') {
                if let Some((k, v)) = part.split_once('=') {
                    detail.insert(k.trim().to_string(), v.trim().parse::<u64>().unwrap_or(0));
                }
            }
        }
        let get = |k: &str| detail.get(k).copied().unwrap_or(0);
        let skipped = get("skipped") + get("expected failures");
        let failed = get("failures") + get("unexpected successes");
        let errors = get("errors");
        let passed = ran.saturating_sub(skipped + failed + errors);
        Counts::tests(passed, failed, skipped, errors)
    }))
}
