//! Weakened tests: a change to a test file that removes assertions, adds skip / xfail / ignore
//! markers or deletes test functions. Pure functions over the file's text before and after;
//! commented-out lines do not count (commenting an assertion out removes it).

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// How much weaker a test file got (net counts; an edit that moves an assertion is no change).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Weakening {
    pub removed_assertions: u64,
    pub added_skips: u64,
    pub deleted_tests: u64,
}

impl Weakening {
    pub fn is_empty(&self) -> bool {
        self.removed_assertions == 0 && self.added_skips == 0 && self.deleted_tests == 0
    }

    /// Whether `self` is weaker than `other` in any respect.
    pub fn exceeds(&self, other: &Weakening) -> bool {
        self.removed_assertions > other.removed_assertions
            || self.added_skips > other.added_skips
            || self.deleted_tests > other.deleted_tests
    }

    /// `2 assertions removed, 1 skip marker added`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let plural = |n: u64, one: &str, many: &str| if n == 1 { one.to_string() } else { many.to_string() };
        if self.removed_assertions > 0 {
            parts.push(format!(
                "{} {} removed",
                self.removed_assertions,
                plural(self.removed_assertions, "assertion", "assertions")
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

/// Whether the path names a test file by the usual conventions.
pub fn is_test_file(path: &Path) -> bool {
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
                r"@pytest\.mark\.(?:skip|skipif|xfail)\b|@unittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b|\bpytest\.(?:skip|xfail|importorskip)\s*\(|\.skipTest\s*\(|@skip\b",
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
    assertions: u64,
    skips: u64,
    tests: u64,
}

fn tally(l: Lang, text: &str) -> Tally {
    let code = code_lines(l, text);
    let p = patterns(l);
    Tally {
        assertions: p.assertion.find_iter(&code).count() as u64,
        skips: p.skip.find_iter(&code).count() as u64,
        tests: p.test.find_iter(&code).count() as u64,
    }
}

/// How much weaker `after` is than `before` (a deleted file: `after` empty).
pub fn compare(path: &Path, before: &str, after: &str) -> Weakening {
    let l = lang(path);
    let (b, a) = (tally(l, before), tally(l, after));
    Weakening {
        removed_assertions: b.assertions.saturating_sub(a.assertions),
        added_skips: a.skips.saturating_sub(b.skips),
        deleted_tests: b.tests.saturating_sub(a.tests),
    }
}

#[cfg(test)]
#[path = "weakened_tests.rs"]
mod tests;
