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
    };
    assert_eq!(x.describe(), "2 assertions removed, 1 skip/xfail/ignore marker added");
}
