use super::*;

/// The selection the ledger records for `line` (its first recognised test run).
fn sel(line: &str) -> Option<String> {
    let segments = command::split(line);
    let reading = runners::recognise_split(&segments, &runners::Declared::default());
    let r = reading.runs.first().unwrap_or_else(|| panic!("no run in {line}"));
    of_run(&segments, &reading, r.runner, r.kind)
}

#[test]
fn pytest_selections() {
    assert_eq!(sel("pytest -k add").as_deref(), Some("-k add"));
    assert_eq!(sel("pytest -q -k 'not slow'").as_deref(), Some("-k 'not slow'"));
    assert_eq!(sel("python -m pytest -kadd").as_deref(), Some("-kadd"));
    assert_eq!(
        sel("uv run pytest --deselect tests/test_a.py::test_x").as_deref(),
        Some("--deselect tests/test_a.py::test_x")
    );
    assert_eq!(
        sel("pytest --deselect=tests/a.py::t").as_deref(),
        Some("--deselect=tests/a.py::t")
    );
    assert_eq!(sel("pytest -m 'not slow' tests/").as_deref(), Some("-m 'not slow'"));
    assert_eq!(sel("pytest --lf").as_deref(), Some("--lf"));
    assert_eq!(sel("pytest --last-failed -q").as_deref(), Some("--last-failed"));
    assert_eq!(
        sel("pytest tests/test_a.py::TestA::test_x").as_deref(),
        Some("tests/test_a.py::TestA::test_x")
    );
    assert_eq!(
        sel("pytest --ignore tests/slow").as_deref(),
        Some("--ignore tests/slow")
    );
    // Files, directories and options that select nothing: the whole suite as far as keel knows.
    for line in [
        "pytest",
        "pytest -q",
        "pytest tests/test_a.py",
        "pytest tests/",
        "python3 -m pytest -x -vv --tb short -p no:cacheprovider tests",
        "pytest -n 4 -r a",
        "pytest -o addopts= tests",
    ] {
        assert_eq!(sel(line), None, "{line}");
    }
}

#[test]
fn unittest_and_django_names() {
    assert_eq!(
        sel("python3 -m unittest tests.test_x.TestC.test_a").as_deref(),
        Some("tests.test_x.TestC.test_a")
    );
    assert_eq!(
        sel("python -m unittest test_calc.TestCalc").as_deref(),
        Some("test_calc.TestCalc")
    );
    assert_eq!(sel("python -m unittest -k add").as_deref(), Some("-k add"));
    assert_eq!(
        sel("python manage.py test shop.tests.CartTest").as_deref(),
        Some("shop.tests.CartTest")
    );
    for line in [
        "python3 -m unittest",
        "python3 -m unittest discover -s tests -p 'test_*.py'",
        "python3 -m unittest tests.test_x",
        "python3 -m unittest tests/test_x.py",
        "python manage.py test shop",
    ] {
        assert_eq!(sel(line), None, "{line}");
    }
}

#[test]
fn cargo_and_nextest_filters() {
    assert_eq!(sel("cargo test parser").as_deref(), Some("parser"));
    assert_eq!(
        sel("cargo test -p keel --lib evidence::").as_deref(),
        Some("evidence::")
    );
    assert_eq!(sel("cargo test -- --exact a::b").as_deref(), Some("a::b --exact"));
    assert_eq!(sel("cargo test --test e2e evidence").as_deref(), Some("evidence"));
    assert_eq!(sel("cargo test -- --skip slow").as_deref(), Some("--skip slow"));
    assert_eq!(sel("cargo test -- --ignored").as_deref(), Some("--ignored"));
    assert_eq!(sel("cargo nextest run parser").as_deref(), Some("parser"));
    assert_eq!(
        sel("cargo nextest run -E 'test(add)'").as_deref(),
        Some("-E 'test(add)'")
    );
    for line in [
        "cargo test",
        "cargo test --test e2e",
        "cargo test -p keel --features x",
        "cargo +nightly test --workspace",
        "cargo test -- --nocapture --test-threads 1",
        "cargo test -- --exact",
        "cargo nextest run",
        "cargo nextest run -j 2 --profile ci",
    ] {
        assert_eq!(sel(line), None, "{line}");
    }
}

#[test]
fn go_js_and_other_runners() {
    let cases = [
        ("go test -run TestAdd ./...", "-run TestAdd"),
        ("go test -run=TestAdd ./calc", "-run=TestAdd"),
        ("go test -skip TestSlow ./...", "-skip TestSlow"),
        ("gotestsum -- -run TestAdd ./...", "-run TestAdd"),
        ("jest -t adds", "-t adds"),
        ("npx jest --testNamePattern=adds", "--testNamePattern=adds"),
        ("jest --onlyChanged", "--onlyChanged"),
        ("jest -o", "-o"),
        ("vitest run -t adds", "-t adds"),
        ("vitest --changed", "--changed"),
        ("vitest related src/a.ts", "related"),
        ("mocha --grep adds test/", "--grep adds"),
        ("mocha -g adds -i", "-g adds -i"),
        ("node --test --test-name-pattern=adds", "--test-name-pattern=adds"),
        ("bun test -t adds", "-t adds"),
        ("rspec spec/calc_spec.rb:12", "spec/calc_spec.rb:12"),
        ("bundle exec rspec spec/calc_spec.rb[1:2]", "'spec/calc_spec.rb[1:2]'"),
        ("rspec -e 'adds two'", "-e 'adds two'"),
        ("rails test test/calc_test.rb:7", "test/calc_test.rb:7"),
        ("ruby -Itest test/calc_test.rb -n test_add", "-n test_add"),
        ("phpunit --filter testAdds tests", "--filter testAdds"),
        ("vendor/bin/phpunit --group fast", "--group fast"),
        (
            "dotnet test --filter FullyQualifiedName~Sum",
            "--filter FullyQualifiedName~Sum",
        ),
        ("mvn test -Dtest=SumTest", "-Dtest=SumTest"),
        ("mvn -q -Dtest=SumTest#adds test", "'-Dtest=SumTest#adds'"),
        ("gradle test --tests 'com.x.SumTest'", "--tests com.x.SumTest"),
        ("./gradlew check -x integrationTest", "-x integrationTest"),
        ("ctest -R sum", "-R sum"),
        ("ctest --rerun-failed", "--rerun-failed"),
        ("npm test -- -t adds", "-t adds"),
        ("yarn test -t adds", "-t adds"),
        ("tox -e py311 -- -k add", "-k add"),
    ];
    for (line, want) in cases {
        assert_eq!(sel(line).as_deref(), Some(want), "{line}");
    }
    for line in [
        "go test ./...",
        "go test -v -count=1 -timeout 30s ./calc",
        "jest",
        "jest --ci src/",
        "jest -u",
        "jest -c jest.config.js",
        "vitest run src/a.test.ts",
        "mocha test/ --reporter spec",
        "node --test",
        "rspec spec/calc_spec.rb",
        "phpunit tests",
        "dotnet test -c Release",
        "mvn -q test",
        "mvn -D skipTests=false test",
        "./gradlew build -x javadoc",
        "ctest -j 4 --output-on-failure",
        "npm test",
        "npm test -- --ci",
        "tox -e py311",
        "make test",
    ] {
        assert_eq!(sel(line), None, "{line}");
    }
}

#[test]
fn a_line_with_one_whole_run_ran_the_whole_suite() {
    assert_eq!(sel("pytest -k add && pytest"), None);
    assert_eq!(sel("pytest -k add; pytest -k sub").as_deref(), Some("-k add ; -k sub"));
    assert_eq!(sel("sh -c 'cd . && pytest -k add'").as_deref(), Some("-k add"));
    // Build and lint runs select nothing.
    let segments = command::split("cargo build");
    let reading = runners::recognise_split(&segments, &runners::Declared::default());
    assert_eq!(of_run(&segments, &reading, Runner::Cargo, Kind::Build), None);
}

#[test]
fn positionals_for_a_configuration() {
    let words: Vec<String> = ["pytest", "-k", "add", "tests/test_a.py", "--tb", "short"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(positionals(Runner::Pytest, &words), vec!["tests/test_a.py"]);
    assert_eq!(selectors(Runner::Pytest, &words), vec!["-k add"]);
}
