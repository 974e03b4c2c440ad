use super::*;

fn runners(line: &str) -> Vec<(Runner, Kind, bool)> {
    recognise(line, &Declared::default())
        .runs
        .into_iter()
        .map(|r| (r.runner, r.kind, r.exit_visible))
        .collect()
}

fn first(line: &str) -> Option<Runner> {
    recognise(line, &Declared::default()).runs.first().map(|r| r.runner)
}

#[test]
fn every_listed_runner_is_recognised() {
    let cases: &[(&str, Runner)] = &[
        ("pytest -q tests/", Runner::Pytest),
        ("python -m pytest -x", Runner::Pytest),
        ("python3.12 -m pytest", Runner::Pytest),
        ("uv run pytest -k api", Runner::Pytest),
        ("poetry run python -m pytest", Runner::Pytest),
        ("python3 -m unittest discover -p 'none*'", Runner::Unittest),
        ("python manage.py test", Runner::Unittest),
        ("cargo test --workspace", Runner::CargoTest),
        ("cargo +nightly test", Runner::CargoTest),
        ("cargo nextest run", Runner::Nextest),
        ("go test ./...", Runner::GoTest),
        ("gotestsum --format testname", Runner::Gotestsum),
        ("npx jest --ci", Runner::Jest),
        ("./node_modules/.bin/jest", Runner::Jest),
        ("vitest run", Runner::Vitest),
        ("pnpm exec vitest", Runner::Vitest),
        ("mocha test/", Runner::Mocha),
        ("node --test", Runner::NodeTest),
        ("bun test", Runner::BunTest),
        ("npm test", Runner::Script),
        ("npm run test:unit", Runner::Script),
        ("pnpm test", Runner::Script),
        ("yarn test", Runner::Script),
        ("bundle exec rspec spec/models", Runner::Rspec),
        ("rake test", Runner::Minitest),
        ("ruby -Itest test/sum_test.rb", Runner::Minitest),
        ("vendor/bin/phpunit", Runner::Phpunit),
        ("php artisan test", Runner::Phpunit),
        ("mvn -q test", Runner::Maven),
        ("./mvnw verify", Runner::Maven),
        ("./gradlew :app:test", Runner::Gradle),
        ("gradle check", Runner::Gradle),
        ("dotnet test", Runner::Dotnet),
        ("ctest --output-on-failure", Runner::Ctest),
        ("make test", Runner::Script),
        ("make -C build -j4 check", Runner::Script),
        ("tox -e py311", Runner::Script),
        ("timeout 300 env CI=1 pytest", Runner::Pytest),
        ("FOO=1 cargo test", Runner::CargoTest),
        ("sudo -E npm test", Runner::Script),
        ("bash -c 'cd api && pytest'", Runner::Pytest),
    ];
    for (line, runner) in cases {
        assert_eq!(first(line), Some(*runner), "{line}");
    }
}

#[test]
fn build_lint_and_typecheck_commands() {
    let cases: &[(&str, Runner, Kind)] = &[
        ("cargo build --release", Runner::Cargo, Kind::Build),
        ("cargo check", Runner::Cargo, Kind::Build),
        ("cargo clippy --all-targets -- -D warnings", Runner::Cargo, Kind::Lint),
        ("npx tsc --noEmit", Runner::Tsc, Kind::Lint),
        ("ruff check .", Runner::Ruff, Kind::Lint),
        ("ruff format --check", Runner::Ruff, Kind::Lint),
        ("mypy src", Runner::Mypy, Kind::Lint),
        ("python -m mypy src", Runner::Mypy, Kind::Lint),
        ("eslint .", Runner::Eslint, Kind::Lint),
        ("npm run lint", Runner::Script, Kind::Lint),
        ("npm run build", Runner::Script, Kind::Build),
        ("go vet ./...", Runner::GoBuild, Kind::Build),
        ("dotnet build", Runner::Dotnet, Kind::Build),
    ];
    for (line, runner, kind) in cases {
        let r = recognise(line, &Declared::default());
        assert_eq!(
            r.runs.first().map(|r| (r.runner, r.kind)),
            Some((*runner, *kind)),
            "{line}"
        );
    }
}

#[test]
fn other_commands_are_not_runs() {
    for line in [
        "ls -la",
        "cat tests/test_x.py",
        "grep -r pytest .",
        "echo pytest",
        "ruff format .",
        "cargo run",
        "npm install",
        "go mod tidy",
        "make",
        "python script.py",
        "git commit -m 'run tests'",
    ] {
        assert_eq!(first(line), None, "{line}");
    }
}

#[test]
fn exit_status_is_visible_only_when_only_and_follows() {
    assert_eq!(runners("pytest"), vec![(Runner::Pytest, Kind::Test, true)]);
    assert_eq!(
        runners("cd app && pytest && echo ok"),
        vec![(Runner::Pytest, Kind::Test, true)]
    );
    for hidden in [
        "pytest | tail -1",
        "pytest 2>&1 | tee log.txt",
        "pytest; echo done",
        "pytest || true",
        "cargo test |& grep result",
    ] {
        let r = runners(hidden);
        assert_eq!(r.len(), 1, "{hidden}");
        assert!(!r[0].2, "{hidden}: the exit status is hidden");
    }
    // Two runners in a chain: both recognised.
    let both = runners("cargo clippy -- -D warnings && cargo test | tail -3");
    assert_eq!(
        both,
        vec![
            (Runner::Cargo, Kind::Lint, false),
            (Runner::CargoTest, Kind::Test, false)
        ]
    );
}

#[test]
fn mutation_after_the_run_and_observer_lines() {
    let r = recognise("sed -i 's/a/b/' src/x.py && pytest", &Declared::default());
    assert!(!r.runs[0].mutation_after && !r.only_observes);
    let r = recognise("pytest && sed -i 's/a/b/' src/x.py", &Declared::default());
    assert!(r.runs[0].mutation_after);
    let r = recognise("cd api && pytest -q 2>&1 | tee out.log | tail -5", &Declared::default());
    assert!(!r.runs[0].mutation_after && r.only_observes);
    let r = recognise("git stash && pytest && git stash pop", &Declared::default());
    assert!(r.runs[0].mutation_after && !r.only_observes);
}

#[test]
fn declared_commands_are_runs_and_printers_cannot_be_declared() {
    let (declared, refused) = Declared::new(vec![
        "./scripts/check.sh --all".to_string(),
        "bin/test".to_string(),
        "echo 5 passed".to_string(),
        "cat results.txt".to_string(),
        "a && b".to_string(),
        "ls".to_string(),
        "python".to_string(),
        "python tests/run_all.py".to_string(),
    ]);
    assert_eq!(declared.len(), 3);
    assert_eq!(refused.len(), 5, "{refused:?}");
    // A repository cannot make `ls` a test run (a file named "5 passed, 0 failed" would pass).
    assert!(recognise("ls", &declared).runs.is_empty());
    assert!(recognise("python other.py", &declared).runs.is_empty());
    assert_eq!(recognise("python tests/run_all.py -v", &declared).runs.len(), 1);
    let r = recognise("./scripts/check.sh --all --verbose | tail", &declared);
    assert_eq!(r.runs.first().map(|r| r.runner), Some(Runner::Script));
    assert!(recognise("bin/test unit", &declared).runs.len() == 1);
    assert!(
        recognise("./scripts/check.sh", &declared).runs.is_empty(),
        "a prefix of a declared command is not it"
    );
    assert!(recognise("echo 5 passed", &declared).runs.is_empty());
}
