//! The parsers against captured output of real runners (several versions each) and samples
//! written from documented formats: `tests/fixtures/evidence/`.

use super::*;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/evidence/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// (executed, passed, failed, skipped, errors)
type Expect = Option<(u64, u64, u64, u64, u64)>;

fn check(name: &str, runner: Runner, kind: Kind, expect: Expect) {
    let got = parse(runner, kind, &fixture(name)).map(|p| {
        let c = p.counts;
        (c.executed, c.passed, c.failed, c.skipped, c.errors)
    });
    assert_eq!(got, expect, "{name}");
}

fn test(name: &str, runner: Runner, expect: Expect) {
    check(name, runner, Kind::Test, expect);
}

const FAIL: Expect = Some((3, 2, 1, 1, 0));
const PASS: Expect = Some((2, 2, 0, 1, 0));
const ZERO: Expect = Some((0, 0, 0, 0, 0));

#[test]
fn pytest_every_version() {
    for v in ["7.4.4", "8.3.5", "9.2.0"] {
        test(&format!("pytest/{v}-fail.txt"), Runner::Pytest, FAIL);
        test(&format!("pytest/{v}-fail-q.txt"), Runner::Pytest, FAIL);
        test(&format!("pytest/{v}-pass.txt"), Runner::Pytest, PASS);
        test(&format!("pytest/{v}-pass-q.txt"), Runner::Pytest, PASS);
        test(&format!("pytest/{v}-deselected.txt"), Runner::Pytest, ZERO);
        test(&format!("pytest/{v}-none.txt"), Runner::Pytest, ZERO);
    }
    for v in ["7.4.4", "9.2.0"] {
        test(
            &format!("pytest/{v}-collection-error.txt"),
            Runner::Pytest,
            Some((1, 0, 0, 0, 1)),
        );
        test(&format!("pytest/{v}-fail-color.txt"), Runner::Pytest, FAIL);
    }
    // Only the summary counts: `pytest | tail -1` leaves just that line.
    test("pytest/9.2.0-fail.txt", Runner::Pytest, FAIL);
    assert_eq!(
        parse(Runner::Pytest, Kind::Test, "1 failed, 2 passed, 1 skipped in 0.01s\n").map(|p| p.counts.failed),
        Some(1)
    );
    assert_eq!(parse(Runner::Pytest, Kind::Test, "collected 3 items\n"), None);
}

#[test]
fn unittest_every_version() {
    for v in ["3.8", "3.11", "3.13"] {
        // unittest counts skipped tests in "Ran N tests".
        test(&format!("unittest/py{v}-fail.txt"), Runner::Unittest, FAIL);
        test(&format!("unittest/py{v}-pass.txt"), Runner::Unittest, PASS);
        test(&format!("unittest/py{v}-pass-v.txt"), Runner::Unittest, PASS);
        // "Ran 0 tests … OK" (3.8, 3.11) and "NO TESTS RAN" (3.12+): zero executed.
        test(&format!("unittest/py{v}-none.txt"), Runner::Unittest, ZERO);
    }
    let errors = "Ran 5 tests in 0.1s\n\nFAILED (failures=1, errors=2, skipped=1, expected failures=1)\n";
    assert_eq!(
        parse(Runner::Unittest, Kind::Test, errors).map(|p| p.counts),
        Some(Counts::tests(0, 1, 2, 2))
    );
}

#[test]
fn cargo_test_build_and_clippy() {
    let v = "1.95.0";
    // The unit tests fail (1 passed, 1 failed, 1 ignored), so cargo stops before the
    // integration test.
    test(&format!("cargo/{v}-fail.txt"), Runner::CargoTest, Some((2, 1, 1, 1, 0)));
    test(
        &format!("cargo/{v}-fail-verbose.txt"),
        Runner::CargoTest,
        Some((2, 1, 1, 1, 0)),
    );
    test(&format!("cargo/{v}-pass.txt"), Runner::CargoTest, PASS);
    test(&format!("cargo/{v}-filtered.txt"), Runner::CargoTest, ZERO);
    test(
        &format!("cargo/{v}-compile-error.txt"),
        Runner::CargoTest,
        Some((0, 0, 0, 0, 1)),
    );
    check(
        &format!("cargo/{v}-build-error.txt"),
        Runner::Cargo,
        Kind::Build,
        Some((0, 0, 0, 0, 1)),
    );
    check(&format!("cargo/{v}-build-ok.txt"), Runner::Cargo, Kind::Build, ZERO);
    check(
        &format!("cargo/{v}-clippy-deny.txt"),
        Runner::Cargo,
        Kind::Lint,
        Some((0, 0, 0, 0, 1)),
    );
}

#[test]
fn nextest_from_documented_format() {
    test("written/nextest-fail.txt", Runner::Nextest, FAIL);
    test("written/nextest-pass.txt", Runner::Nextest, PASS);
    test("written/nextest-none.txt", Runner::Nextest, Some((0, 0, 0, 3, 0)));
}

#[test]
fn go_test_plain_verbose_and_json() {
    let v = "go1.19.8";
    // Without -v go lists failing tests only; a passing package counts as one unit.
    test(&format!("go/{v}-fail.txt"), Runner::GoTest, Some((1, 0, 1, 0, 0)));
    test(&format!("go/{v}-pass.txt"), Runner::GoTest, Some((1, 1, 0, 0, 0)));
    test(&format!("go/{v}-fail-v.txt"), Runner::GoTest, Some((2, 1, 1, 1, 0)));
    test(&format!("go/{v}-pass-v.txt"), Runner::GoTest, Some((1, 1, 0, 1, 0)));
    test(&format!("go/{v}-json.txt"), Runner::GoTest, Some((1, 1, 0, 1, 0)));
    // `-run` matching nothing: "ok … [no tests to run]".
    test(&format!("go/{v}-no-match.txt"), Runner::GoTest, ZERO);
    test("written/gotestsum-fail.txt", Runner::Gotestsum, Some((2, 1, 1, 1, 0)));
}

#[test]
fn javascript_runners() {
    for v in ["29.7.0", "30.5.2"] {
        test(&format!("jest/{v}-fail.txt"), Runner::Jest, Some((2, 1, 1, 1, 0)));
        test(&format!("jest/{v}-pass.txt"), Runner::Jest, Some((1, 1, 0, 1, 0)));
        test(&format!("jest/{v}-no-tests.txt"), Runner::Jest, ZERO);
    }
    for v in ["1.6.1", "3.2.7"] {
        test(&format!("vitest/{v}-fail.txt"), Runner::Vitest, Some((2, 1, 1, 1, 0)));
        test(&format!("vitest/{v}-pass.txt"), Runner::Vitest, Some((1, 1, 0, 1, 0)));
        test(&format!("vitest/{v}-no-tests.txt"), Runner::Vitest, ZERO);
    }
    for v in ["10.8.2", "11.8.0"] {
        test(&format!("mocha/{v}-fail.txt"), Runner::Mocha, Some((2, 1, 1, 1, 0)));
        test(&format!("mocha/{v}-pass.txt"), Runner::Mocha, Some((1, 1, 0, 1, 0)));
        test(&format!("mocha/{v}-none.txt"), Runner::Mocha, ZERO);
    }
    test("node-test/v20.20.2-fail.txt", Runner::NodeTest, Some((2, 1, 1, 1, 0)));
    test(
        "node-test/v20.20.2-fail-spec.txt",
        Runner::NodeTest,
        Some((2, 1, 1, 1, 0)),
    );
    test("written/bun-fail.txt", Runner::BunTest, Some((2, 1, 1, 1, 0)));
    // `npm test` runs whatever the script says: the output decides.
    test("jest/30.5.2-fail.txt", Runner::Script, Some((2, 1, 1, 1, 0)));
}

#[test]
fn ruby_php_and_ctest() {
    test("rspec/3.12-fail.txt", Runner::Rspec, Some((2, 1, 1, 1, 0)));
    test("rspec/3.12-pass.txt", Runner::Rspec, Some((1, 1, 0, 1, 0)));
    test("rspec/3.12-none.txt", Runner::Rspec, ZERO);
    test("minitest/5.17.0-fail.txt", Runner::Minitest, Some((2, 1, 1, 1, 0)));
    test("minitest/5.17.0-pass.txt", Runner::Minitest, Some((1, 1, 0, 1, 0)));
    test("phpunit/9.6.7-fail.txt", Runner::Phpunit, Some((2, 1, 1, 1, 0)));
    test("phpunit/9.6.7-pass-skipped.txt", Runner::Phpunit, Some((1, 1, 0, 1, 0)));
    test("phpunit/9.6.7-pass.txt", Runner::Phpunit, Some((1, 1, 0, 0, 0)));
    test("phpunit/9.6.7-none.txt", Runner::Phpunit, ZERO);
    test("ctest/3.25.1-fail.txt", Runner::Ctest, Some((2, 1, 1, 1, 0)));
    test("ctest/3.25.1-pass.txt", Runner::Ctest, Some((1, 1, 0, 0, 0)));
    test("ctest/3.25.1-none.txt", Runner::Ctest, ZERO);
}

#[test]
fn jvm_and_dotnet_from_documented_formats() {
    test("written/maven-fail.txt", Runner::Maven, Some((2, 1, 1, 1, 0)));
    test(
        "written/maven-pass-multimodule.txt",
        Runner::Maven,
        Some((4, 4, 0, 1, 0)),
    );
    test("written/maven-compile-error.txt", Runner::Maven, Some((0, 0, 0, 0, 1)));
    test("written/maven-no-tests.txt", Runner::Maven, ZERO);
    check(
        "written/maven-compile-error.txt",
        Runner::Maven,
        Kind::Build,
        Some((0, 0, 0, 0, 1)),
    );
    test("written/gradle-fail.txt", Runner::Gradle, Some((2, 1, 1, 1, 0)));
    // A passing Gradle test task prints no counts: not understood, said so.
    test("written/gradle-pass.txt", Runner::Gradle, None);
    test("written/dotnet-fail.txt", Runner::Dotnet, Some((2, 1, 1, 1, 0)));
    test("written/dotnet-old-pass.txt", Runner::Dotnet, Some((2, 2, 0, 1, 0)));
    check(
        "written/dotnet-build-error.txt",
        Runner::Dotnet,
        Kind::Build,
        Some((0, 0, 0, 0, 1)),
    );
    test("written/plain-script.txt", Runner::Script, Some((13, 12, 1, 2, 0)));
}

#[test]
fn checkers() {
    check("tsc/5.9.3-errors.txt", Runner::Tsc, Kind::Lint, Some((0, 0, 0, 0, 2)));
    check("tsc/5.9.3-clean.txt", Runner::Tsc, Kind::Lint, None);
    for v in ["v8.57.1", "v9.39.5"] {
        check(
            &format!("eslint/{v}-errors.txt"),
            Runner::Eslint,
            Kind::Lint,
            Some((0, 0, 0, 0, 1)),
        );
        check(&format!("eslint/{v}-clean.txt"), Runner::Eslint, Kind::Lint, None);
    }
    check(
        "ruff/0.17.6-errors.txt",
        Runner::Ruff,
        Kind::Lint,
        Some((0, 0, 0, 0, 1)),
    );
    check("ruff/0.17.6-clean.txt", Runner::Ruff, Kind::Lint, ZERO);
    check("mypy/2.4.1-errors.txt", Runner::Mypy, Kind::Lint, Some((0, 0, 0, 0, 1)));
    check("mypy/2.4.1-clean.txt", Runner::Mypy, Kind::Lint, ZERO);
    check(
        "written/pyright-errors.txt",
        Runner::Pyright,
        Kind::Lint,
        Some((0, 0, 0, 0, 1)),
    );
    check(
        "written/flake8-errors.txt",
        Runner::Flake8,
        Kind::Lint,
        Some((0, 0, 0, 0, 2)),
    );
    // `npm run lint` running ESLint.
    check(
        "eslint/v9.39.5-errors.txt",
        Runner::Script,
        Kind::Lint,
        Some((0, 0, 0, 0, 1)),
    );
}

#[test]
fn every_captured_fixture_is_understood_by_its_runner() {
    // A new capture without a parser that reads it fails here.
    let root = format!("{}/tests/fixtures/evidence", env!("CARGO_MANIFEST_DIR"));
    let runners: &[(&str, Runner, Kind)] = &[
        ("pytest", Runner::Pytest, Kind::Test),
        ("unittest", Runner::Unittest, Kind::Test),
        ("cargo", Runner::CargoTest, Kind::Test),
        ("go", Runner::GoTest, Kind::Test),
        ("jest", Runner::Jest, Kind::Test),
        ("vitest", Runner::Vitest, Kind::Test),
        ("mocha", Runner::Mocha, Kind::Test),
        ("node-test", Runner::NodeTest, Kind::Test),
        ("rspec", Runner::Rspec, Kind::Test),
        ("minitest", Runner::Minitest, Kind::Test),
        ("phpunit", Runner::Phpunit, Kind::Test),
        ("ctest", Runner::Ctest, Kind::Test),
    ];
    let mut seen = 0;
    for (dir, runner, kind) in runners {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if *dir == "cargo" && (name.contains("build") || name.contains("clippy")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(parse(*runner, *kind, &text).is_some(), "{dir}/{name} not understood");
            seen += 1;
        }
    }
    assert!(seen >= 60, "only {seen} captures");
}

#[test]
fn colours_are_removed() {
    assert_eq!(
        strip_ansi("\u{1b}[31m1 failed\u{1b}[0m, \u{1b}[32m2 passed\u{1b}[0m"),
        "1 failed, 2 passed"
    );
    assert_eq!(strip_ansi("a\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\b"), "alinkb");
}
