use super::*;

fn w(path: &str, before: &str, after: &str) -> Weakening {
    compare(Path::new(path), before, after)
}

#[test]
fn test_files_by_convention() {
    for p in [
        "tests/test_api.py",
        "app/test_models.py",
        "pkg/calc_test.go",
        "src/sum.test.ts",
        "web/button.spec.jsx",
        "spec/models/user_spec.rb",
        "src/test/java/com/x/SumTest.java",
        "tests/it.rs",
        "tests/SumTest.php",
        "Sample.Tests/SumTests.cs",
        "__tests__/thing.js",
    ] {
        assert!(is_test_file(Path::new(p)), "{p}");
    }
    for p in [
        "src/app.py",
        "src/lib.rs",
        "README.md",
        "tests/data.json",
        "testing.md",
        "src/contest.py",
    ] {
        assert!(!is_test_file(Path::new(p)), "{p}");
    }
    assert!(holds_tests(Path::new("src/lib.rs"), "#[cfg(test)]\nmod tests {}", ""));
    assert!(!holds_tests(Path::new("src/lib.rs"), "fn main() {}", "fn main() {}"));
}

#[test]
fn python_assertions_skips_and_deleted_tests() {
    let before = "import pytest\n\ndef test_a():\n    assert f(1) == 2\n    assert f(2) == 4\n\ndef test_b():\n    self.assertEqual(g(), 3)\n";
    let removed =
        "import pytest\n\ndef test_a():\n    assert f(1) == 2\n\ndef test_b():\n    self.assertEqual(g(), 3)\n";
    assert_eq!(w("tests/test_f.py", before, removed).removed_assertions, 1);
    let commented = before.replace("    assert f(2) == 4", "    # assert f(2) == 4");
    assert_eq!(w("tests/test_f.py", before, &commented).removed_assertions, 1);
    let skipped = before.replace("def test_b", "@pytest.mark.skip(reason=\"flaky\")\ndef test_b");
    let sk = w("tests/test_f.py", before, &skipped);
    assert_eq!((sk.added_skips, sk.removed_assertions), (1, 0));
    let xfail = before.replace("def test_a", "@pytest.mark.xfail\ndef test_a");
    assert_eq!(w("tests/test_f.py", before, &xfail).added_skips, 1);
    let unit = before.replace("def test_b", "@unittest.skip(\"later\")\ndef test_b");
    assert_eq!(w("tests/test_f.py", before, &unit).added_skips, 1);
    let deleted = "import pytest\n\ndef test_a():\n    assert f(1) == 2\n    assert f(2) == 4\n";
    let d = w("tests/test_f.py", before, deleted);
    assert_eq!((d.deleted_tests, d.removed_assertions), (1, 1));
    // Moving or rewording an assertion is no weakening.
    let reworded = before.replace("assert f(2) == 4", "assert f(2) == 2 * 2");
    assert!(w("tests/test_f.py", before, &reworded).is_empty());
    // A deleted file: everything removed.
    assert_eq!(w("tests/test_f.py", before, "").deleted_tests, 2);
}

#[test]
fn markers_of_other_languages() {
    let rs = "#[test]\nfn a() { assert_eq!(1, 1); }\n";
    let rs_ignored = "#[test]\n#[ignore]\nfn a() { assert_eq!(1, 1); }\n";
    assert_eq!(w("tests/a.rs", rs, rs_ignored).added_skips, 1);
    assert_eq!(
        w("tests/a.rs", rs, "#[test]\nfn a() { // assert_eq!(1, 1);\n}\n").removed_assertions,
        1
    );
    let js = "it('adds', () => { expect(sum(1, 2)).toBe(3); });\n";
    assert_eq!(w("a.test.js", js, &js.replace("it(", "it.skip(")).added_skips, 1);
    assert_eq!(w("a.test.js", js, &js.replace("it(", "xit(")).added_skips, 1);
    assert_eq!(
        w("a.test.js", js, "it('adds', () => { sum(1, 2); });\n").removed_assertions,
        1
    );
    let go = "func TestA(t *testing.T) {\n\tif x != 1 {\n\t\tt.Errorf(\"x\")\n\t}\n}\n";
    assert_eq!(
        w("a_test.go", go, &go.replace("{\n\tif", "{\n\tt.Skip(\"later\")\n\tif")).added_skips,
        1
    );
    assert_eq!(w("a_test.go", go, "").deleted_tests, 1);
    let java = "@Test\nvoid adds() { assertEquals(3, sum(1, 2)); }\n";
    assert_eq!(w("SumTest.java", java, &format!("@Disabled\n{java}")).added_skips, 1);
    let php = "public function testAdds() { $this->assertSame(3, 1 + 2); }\n";
    assert_eq!(
        w(
            "SumTest.php",
            php,
            "public function testAdds() { $this->markTestSkipped('x'); }\n"
        )
        .added_skips,
        1
    );
}

#[test]
fn descriptions_read_naturally() {
    let x = Weakening {
        removed_assertions: 2,
        added_skips: 1,
        deleted_tests: 0,
        ..Weakening::default()
    };
    assert_eq!(x.describe(), "2 assertions removed, 1 skip/xfail/ignore marker added");
}

#[test]
fn an_assertion_replaced_with_one_that_cannot_fail_is_removed() {
    let before = "class T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n";
    let after = before.replace("self.assertEqual(add(1, 2), 3)", "self.assertTrue(True)");
    let x = w("tests/test_calc.py", before, &after);
    assert_eq!((x.removed_assertions, x.replaced_with_trivial), (1, 1), "{x:?}");
    assert_eq!(x.describe(), "1 assertion replaced with one that cannot fail");
    for (path, before, after) in [
        (
            "tests/test_a.py",
            "def test_a():\n    assert add(1, 2) == 3\n",
            "def test_a():\n    assert 1 == 1\n",
        ),
        (
            "tests/test_a.py",
            "def test_a():\n    assert add(1, 2) == 3\n",
            "def test_a():\n    assert True\n",
        ),
        (
            "tests/test_a.py",
            "    def test_a(self):\n        self.assertEqual(add(1, 2), 3)\n",
            "    def test_a(self):\n        self.assertEqual(1, 1)\n",
        ),
        (
            "src/sum.test.js",
            "it('adds', () => { expect(sum(1, 2)).toBe(3); });\n",
            "it('adds', () => { expect(true).toBe(true); });\n",
        ),
        (
            "tests/it.rs",
            "#[test]\nfn a() { assert_eq!(add(1, 2), 3); }\n",
            "#[test]\nfn a() { assert!(true); }\n",
        ),
        (
            "tests/it.rs",
            "#[test]\nfn a() { assert_eq!(add(1, 2), 3); }\n",
            "#[test]\nfn a() { assert_eq!(1, 1); }\n",
        ),
    ] {
        let x = w(path, before, after);
        assert_eq!(
            (x.removed_assertions, x.replaced_with_trivial),
            (1, 1),
            "{path}: {after}"
        );
    }
    // One removed, one replaced.
    let two = "def test_a():\n    assert f(1) == 2\n    assert f(2) == 4\n";
    let x = w("tests/test_a.py", two, "def test_a():\n    assert True\n");
    assert_eq!((x.removed_assertions, x.replaced_with_trivial), (2, 1));
    assert_eq!(
        x.describe(),
        "1 assertion removed, 1 assertion replaced with one that cannot fail"
    );
    // Adding a trivial assertion next to the real ones weakens nothing.
    let more = two.replace("    assert f(2) == 4\n", "    assert f(2) == 4\n    assert True\n");
    assert!(w("tests/test_a.py", two, &more).is_empty());
}

#[test]
fn configurations_and_snapshots_are_test_files() {
    for p in [
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "jest.config.js",
        "vitest.config.ts",
        ".mocharc.yml",
        "package.json",
        "Cargo.toml",
        "__tests__/__snapshots__/x.test.js.snap",
        "tests/snapshots/it__adds.snap",
    ] {
        assert!(is_test_file(Path::new(p)), "{p}");
        assert!(is_suite_file(Path::new(p)), "{p}");
        assert!(holds_tests(Path::new(p), "", ""), "{p}");
        assert!(may_hold_tests(Path::new(p)), "{p}");
    }
    assert!(!is_suite_file(Path::new("tests/test_a.py")));
    assert!(rewritten_is_work(Path::new("__tests__/__snapshots__/x.test.js.snap")));
    assert!(
        rewritten_is_work(Path::new("src/sum.test.js")),
        "inline snapshots live in test files"
    );
    assert!(!rewritten_is_work(Path::new("out.log")));
    assert!(!rewritten_is_work(Path::new("target/debug/build/x-1/out/tests.rs")));
    assert!(!rewritten_is_work(Path::new("coverage/lcov.info")));
}

#[test]
fn a_conftest_that_skips_or_deselects_is_weaker() {
    let skip = "import pytest\n\ndef pytest_collection_modifyitems(config, items):\n    for item in items:\n        if item.name == 'test_add':\n            item.add_marker(pytest.mark.skip(reason='flaky'))\n";
    let x = w("conftest.py", "", skip);
    assert_eq!((x.added_skips, x.added_deselections), (1, 0), "{x:?}");
    let ignore = "collect_ignore = ['tests/test_calc.py']\n";
    assert_eq!(w("conftest.py", "", ignore).added_deselections, 1);
    assert!(w("conftest.py", ignore, "").is_empty(), "removing a deselection widens");
    let module = "import pytest\n\npytestmark = pytest.mark.skip\n\ndef test_a():\n    assert f()\n";
    assert_eq!(
        w(
            "tests/test_a.py",
            "import pytest\n\ndef test_a():\n    assert f()\n",
            module
        )
        .added_skips,
        1
    );
    let x = w(
        "pytest.ini",
        "",
        "[pytest]\naddopts = --deselect tests/test_calc.py::TestCalc::test_add\n",
    );
    assert_eq!(x.added_deselections, 1);
    assert_eq!(x.describe(), "1 test deselection added");
    let snap = "exports[`adds 1`] = `3`;\n";
    let x = w(
        "__tests__/__snapshots__/x.test.js.snap",
        snap,
        "exports[`adds 1`] = `4`;\n",
    );
    assert_eq!(x.changed_snapshots, 1);
    assert_eq!(x.describe(), "1 expected snapshot value changed");
    assert!(w("__tests__/__snapshots__/x.test.js.snap", "", snap).is_empty());
}

#[test]
fn planted_files_cannot_make_the_check_slow_or_overflow() {
    let started = std::time::Instant::now();
    // Unclosed brackets after every assertion: each match reads a bounded stretch.
    let unclosed = "assert!((\n".repeat(50_000);
    assert!(w("tests/it.rs", &unclosed, "").removed_assertions > 0);
    let py = "assert (\n".repeat(50_000);
    let _ = w("tests/test_a.py", &py, "");
    let conftest = "collect_ignore = (\n".repeat(50_000);
    let _ = w("conftest.py", "", &conftest);
    // Arrays nested past any real file's depth.
    let deep = format!("[tool.pytest.ini_options]\naddopts = {}\n", "[".repeat(100_000));
    let _ = w("pyproject.toml", "", &deep);
    let js = format!("module.exports = {}", "{a: [".repeat(50_000));
    let _ = w("jest.config.js", "", &js);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}
