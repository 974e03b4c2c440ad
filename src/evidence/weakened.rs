//! Weakened tests: a change to a test file that removes assertions (or replaces them with ones
//! that cannot fail, [`trivial`]), adds skip / xfail / ignore markers or deletes test functions; a
//! change to a configuration that decides which tests run that deselects some ([`test_config`]);
//! a changed expected value in a snapshot file ([`snapshots`]). Pure functions over the file's
//! text before and after; commented-out lines do not count (commenting an assertion out removes
//! it).

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

#[path = "snapshots.rs"]
mod snapshots;
#[path = "test_config.rs"]
mod test_config;
#[path = "trivial.rs"]
mod trivial;

/// How much weaker a test file got (net counts; an edit that moves an assertion is no change).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Weakening {
    /// Assertions gone, those replaced by assertions that cannot fail included.
    pub removed_assertions: u64,
    /// Of `removed_assertions`, how many were replaced by assertions that cannot fail.
    #[serde(default)]
    pub replaced_with_trivial: u64,
    pub added_skips: u64,
    pub deleted_tests: u64,
    /// Deselections a configuration added (`--deselect`, `-k`, `collect_ignore`, an ignore
    /// pattern) and entries it dropped from what runs (`testpaths`, `testMatch`).
    #[serde(default)]
    pub added_deselections: u64,
    /// Snapshot entries whose expected value changed or that were removed.
    #[serde(default)]
    pub changed_snapshots: u64,
}

impl Weakening {
    pub fn is_empty(&self) -> bool {
        self.removed_assertions == 0
            && self.added_skips == 0
            && self.deleted_tests == 0
            && self.added_deselections == 0
            && self.changed_snapshots == 0
    }

    /// Whether `self` is weaker than `other` in any respect.
    pub fn exceeds(&self, other: &Weakening) -> bool {
        self.removed_assertions > other.removed_assertions
            || self.replaced_with_trivial > other.replaced_with_trivial
            || self.added_skips > other.added_skips
            || self.deleted_tests > other.deleted_tests
            || self.added_deselections > other.added_deselections
            || self.changed_snapshots > other.changed_snapshots
    }

    /// `2 assertions removed, 1 skip marker added`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let plural = |n: u64, one: &str, many: &str| if n == 1 { one.to_string() } else { many.to_string() };
        let removed = self.removed_assertions.saturating_sub(self.replaced_with_trivial);
        if removed > 0 {
            parts.push(format!(
                "{} {} removed",
                removed,
                plural(removed, "assertion", "assertions")
            ));
        }
        if self.replaced_with_trivial > 0 {
            parts.push(format!(
                "{} {} replaced with {} that cannot fail",
                self.replaced_with_trivial,
                plural(self.replaced_with_trivial, "assertion", "assertions"),
                plural(self.replaced_with_trivial, "one", "ones")
            ));
        }
        if self.added_skips > 0 {
            parts.push(format!(
                "{} skip/xfail/ignore {} added",
                self.added_skips,
                plural(self.added_skips, "marker", "markers")
            ));
        }
        if self.deleted_tests > 0 {
            parts.push(format!(
                "{} test {} deleted",
                self.deleted_tests,
                plural(self.deleted_tests, "function", "functions")
            ));
        }
        if self.added_deselections > 0 {
            parts.push(format!(
                "{} test {} added",
                self.added_deselections,
                plural(self.added_deselections, "deselection", "deselections")
            ));
        }
        if self.changed_snapshots > 0 {
            parts.push(format!(
                "{} expected snapshot {} changed",
                self.changed_snapshots,
                plural(self.changed_snapshots, "value", "values")
            ));
        }
        parts.join(", ")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Rust,
    Js,
    Go,
    Ruby,
    Jvm,
    Php,
    CSharp,
    Other,
}

fn lang(path: &Path) -> Lang {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "py" | "pyi" => Lang::Python,
        "rs" => Lang::Rust,
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" => Lang::Js,
        "go" => Lang::Go,
        "rb" => Lang::Ruby,
        "java" | "kt" | "kts" | "scala" | "groovy" => Lang::Jvm,
        "php" => Lang::Php,
        "cs" => Lang::CSharp,
        _ => Lang::Other,
    }
}

const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "rs", "js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts", "go", "rb", "java", "kt", "kts", "scala",
    "groovy", "php", "cs", "swift", "c", "cc", "cpp", "h", "hpp", "ex", "exs",
];

const TEST_DIRS: &[&str] = &["tests", "test", "__tests__", "spec", "specs", "testing", "e2e"];

/// Whether the path names a test file by the usual conventions, or a file that decides which
/// tests run or what they expect ([`is_suite_file`]).
pub fn is_test_file(path: &Path) -> bool {
    if is_suite_file(path) {
        return true;
    }
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !SOURCE_EXTENSIONS.contains(&ext) {
        return false;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = path.file_stem().and_then(|n| n.to_str()).unwrap_or("");
    let by_name = stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem == "tests"
        || stem.ends_with("_spec")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || ((stem.ends_with("Test") || stem.ends_with("Tests") || stem.ends_with("IT") || stem.ends_with("Spec"))
            && stem.chars().next().is_some_and(char::is_uppercase))
        || name == "test.rs";
    by_name
        || path.parent().is_some_and(|p| {
            p.components()
                .any(|c| TEST_DIRS.contains(&c.as_os_str().to_str().unwrap_or("")))
        })
}

/// Whether `path` is a configuration that decides which tests run (`conftest.py`, `pytest.ini`,
/// `jest.config.js`, …) or a snapshot file: such a file that did not exist has an empty baseline
/// (what a new one adds is measured against nothing).
pub fn is_suite_file(path: &Path) -> bool {
    test_config::kind(path).is_some() || snapshots::is_snapshot(path)
}

/// Directories where tools write what they build: a test-named file there is output.
const OUTPUT_DIRS: &[&str] = &["target", "build", "dist", "out", "coverage", ".venv", "venv"];

/// Whether a change to `path` by a line that only ran checks is work, not their by-product: what
/// the tests expect or which of them run (a snapshot `jest -u` rewrote, a test file with inline
/// snapshots), as opposed to logs and caches.
pub fn rewritten_is_work(path: &Path) -> bool {
    is_test_file(path)
        && !path
            .components()
            .any(|c| OUTPUT_DIRS.contains(&c.as_os_str().to_str().unwrap_or("")))
}

/// Whether `path` can hold tests at all (a test file, or a Rust source): for any other file
/// [`holds_tests`] is false whatever its content, so there is no need to read it.
pub fn may_hold_tests(path: &Path) -> bool {
    is_test_file(path) || lang(path) == Lang::Rust
}

/// Whether a change from `before` to `after` at `path` is a change to tests: a test file, or a
/// Rust source with unit tests inside.
pub fn holds_tests(path: &Path, before: &str, after: &str) -> bool {
    if is_test_file(path) {
        return true;
    }
    may_hold_tests(path)
        && [before, after]
            .iter()
            .any(|t| t.contains("#[test]") || t.contains("#[cfg(test)]"))
}

struct Patterns {
    assertion: Regex,
    skip: Regex,
    test: Regex,
}

fn patterns(l: Lang) -> &'static Patterns {
    static CELLS: OnceLock<Vec<Patterns>> = OnceLock::new();
    let all = CELLS.get_or_init(|| {
        // Only called with the literal patterns below, each compiled by the tests: cannot fail.
        #[allow(clippy::expect_used)]
        let p = |a: &'static str, s: &'static str, t: &'static str| Patterns {
            assertion: Regex::new(a).expect("constant regex"),
            skip: Regex::new(s).expect("constant regex"),
            test: Regex::new(t).expect("constant regex"),
        };
        vec![
            // Python
            p(
                r"\bassert\b|\bself\.assert\w*\s*\(|\bself\.fail\w*\s*\(|\bpytest\.(?:raises|fail|warns|approx)\s*\(|\.assert_\w+\s*\(",
                r"@?pytest\.mark\.(?:skip|skipif|xfail)\b|@unittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b|\bpytest\.(?:skip|xfail|importorskip)\s*\(|\.skipTest\s*\(|@skip\b",
                r"(?m)^\s*(?:async\s+)?def\s+test\w*\s*\(",
            ),
            // Rust
            p(
                r"\b(?:debug_)?assert(?:_eq|_ne|_matches)?!\s*[(\[{]|#\[should_panic|\bprop_assert\w*!",
                r"#\[ignore\b",
                r"#\[(?:\w+::)*test\b",
            ),
            // JavaScript / TypeScript
            p(
                r"\bexpect\s*\(|\bassert(?:\.\w+)?\s*\(|\.should\b|\bt\.(?:is|not|deepEqual|true|false|throws|equal|assert|ok)\w*\s*\(",
                r"\bx(?:it|test|describe|context)\s*\(|\.(?:skip|todo)\b",
                r"\b(?:it|test)(?:\.\w+)?\s*\(",
            ),
            // Go
            p(
                r"\bt\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\b(?:assert|require)\.\w+\s*\(",
                r"\bt\.Skip(?:f|Now)?\s*\(",
                r"(?m)^func\s+Test\w*\s*\(",
            ),
            // Ruby
            p(
                r"\bexpect\b|\bassert\w*|\brefute\w*|\.should\b|\bmust_\w+|\bwont_\w+",
                r"\bx(?:it|describe|context|specify)\b|\bskip\b|\bpending\b",
                r"(?m)^\s*(?:it|specify|scenario|example)\b|^\s*def\s+test_\w+|^\s*test\s+['\x22]",
            ),
            // JVM
            p(
                r"\bassert\w*\s*\(|\bAssertions\.\w+|\bverify\s*\(|\bfail\s*\(|\bshould\w*\b",
                r"@Disabled\b|@Ignore\b|\bassumeTrue\s*\(|\bAssume\.\w+",
                r"@(?:Test|ParameterizedTest|RepeatedTest|TestFactory)\b",
            ),
            // PHP
            p(
                r"->assert\w+\s*\(|::assert\w+\s*\(|->expectException\w*\s*\(|\bexpect\s*\(",
                r"markTestSkipped\s*\(|markTestIncomplete\s*\(|@group\s+skip\b|->skip\s*\(",
                r"function\s+test\w*\s*\(|@test\b|#\[Test\]",
            ),
            // C#
            p(
                r"\bAssert\.\w+|\.Should\(\)|\bCollectionAssert\.\w+|\bStringAssert\.\w+",
                r"\bSkip\s*=|\[Ignore\b|\bAssert\.Inconclusive\b",
                r"\[(?:Fact|Theory|Test|TestMethod|TestCase)\b",
            ),
            // Anything else
            p(
                r"\bassert\w*|\bexpect\s*\(",
                r"\bskip\b|@Disabled\b|#\[ignore\b",
                r"(?m)^\s*(?:def\s+test\w*|func\s+Test\w*|#\[test\]|@Test)\b",
            ),
        ]
    });
    let i = match l {
        Lang::Python => 0,
        Lang::Rust => 1,
        Lang::Js => 2,
        Lang::Go => 3,
        Lang::Ruby => 4,
        Lang::Jvm => 5,
        Lang::Php => 6,
        Lang::CSharp => 7,
        Lang::Other => 8,
    };
    &all[i]
}

/// The text without comment lines (a commented-out assertion is a removed one).
fn code_lines(l: Lang, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_block = false;
    for line in text.lines() {
        let t = line.trim_start();
        if in_block {
            if t.contains("*/") {
                in_block = false;
            }
            continue;
        }
        let comment = match l {
            Lang::Python | Lang::Ruby => t.starts_with('#'),
            Lang::Php => t.starts_with("//") || (t.starts_with('#') && !t.starts_with("#[")) || t.starts_with('*'),
            Lang::Other => t.starts_with("//") || (t.starts_with('#') && !t.starts_with("#[")),
            _ => t.starts_with("//") || t.starts_with('*'),
        };
        if l != Lang::Python && l != Lang::Ruby && t.starts_with("/*") {
            in_block = !t.contains("*/");
            continue;
        }
        if comment {
            continue;
        }
        out.push_str(strip_trailing_comment(l, line));
        out.push('\n');
    }
    out
}

/// The line up to a comment that follows code (`x = 1  # assert …`, `f(); // assert!(…)`),
/// outside string literals.
fn strip_trailing_comment(l: Lang, line: &str) -> &str {
    let hash = matches!(l, Lang::Python | Lang::Ruby | Lang::Php);
    let slashes = !matches!(l, Lang::Python | Lang::Ruby);
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            // A Rust `'` is a lifetime as often as a character literal.
            None if b == b'"' || b == b'`' || (b == b'\'' && l != Lang::Rust) => quote = Some(b),
            None if hash && b == b'#' && bytes.get(i + 1) != Some(&b'[') => return &line[..i],
            None if slashes && b == b'/' && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            None => {}
        }
        i += 1;
    }
    line
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    /// Every assertion, those that cannot fail included.
    assertions: u64,
    /// Assertions that cannot fail.
    trivial: u64,
    skips: u64,
    tests: u64,
    /// A `conftest.py`'s deselections.
    deselections: u64,
}

fn tally(l: Lang, text: &str, conftest: bool) -> Tally {
    let code = code_lines(l, text);
    let p = patterns(l);
    let mut t = Tally {
        skips: p.skip.find_iter(&code).count() as u64,
        tests: p.test.find_iter(&code).count() as u64,
        deselections: if conftest {
            test_config::conftest_deselections(&code)
        } else {
            0
        },
        ..Tally::default()
    };
    for m in p.assertion.find_iter(&code) {
        t.assertions += 1;
        if trivial::cannot_fail(l, m.as_str(), &code[m.start()..]) {
            t.trivial += 1;
        }
    }
    t
}

/// How much weaker `after` is than `before` (a deleted file: `after` empty; a new configuration
/// or snapshot file: `before` empty).
pub fn compare(path: &Path, before: &str, after: &str) -> Weakening {
    let config = test_config::kind(path);
    match config {
        Some(test_config::Config::Conftest) | None => {}
        Some(kind) => {
            return Weakening {
                added_deselections: test_config::added_deselections(kind, before, after),
                ..Weakening::default()
            };
        }
    }
    if snapshots::is_snapshot(path) {
        return Weakening {
            changed_snapshots: snapshots::changed(before, after),
            ..Weakening::default()
        };
    }
    let l = lang(path);
    let conftest = config.is_some();
    let (b, a) = (tally(l, before, conftest), tally(l, after, conftest));
    // Assertions that cannot fail are no assertions: replacing a real one with one of them
    // removes it. A trivial assertion deleted is still an assertion removed.
    let removed_any = b.assertions.saturating_sub(a.assertions);
    let removed_real = (b.assertions - b.trivial).saturating_sub(a.assertions - a.trivial);
    Weakening {
        removed_assertions: removed_any.max(removed_real),
        replaced_with_trivial: removed_real.saturating_sub(removed_any),
        added_skips: a.skips.saturating_sub(b.skips),
        deleted_tests: b.tests.saturating_sub(a.tests),
        added_deselections: a.deselections.saturating_sub(b.deselections),
        changed_snapshots: 0,
    }
}

#[cfg(test)]
#[path = "weakened_tests.rs"]
mod tests;
