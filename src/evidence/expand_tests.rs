use super::*;
use crate::evidence::command;
use crate::evidence::runners::Kind;

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn read(dir: &Path, line: &str) -> (Reading, Vec<Option<Expanded>>) {
    read_line(&command::split(line), &Declared::default(), dir)
}

#[test]
fn an_npm_script_that_only_echoes_runs_nothing() {
    let d = project(&[(
        "package.json",
        r#"{"scripts": {"test": "echo 'Tests: 2 passed, 2 total'"}}"#,
    )]);
    let (reading, bodies) = read(d.path(), "npm test");
    assert_eq!(reading.runs.len(), 1);
    let body = bodies[0].as_ref().unwrap();
    assert!(body.only_prints(), "{body:?}");
    assert!(body.source.ends_with("package.json script `test`"), "{}", body.source);
}

#[test]
fn an_npm_script_with_pre_and_post_scripts_runs_its_runner() {
    let d = project(&[(
        "package.json",
        r#"{"scripts": {"pretest": "tsc", "test": "jest --ci", "posttest": "echo done"}}"#,
    )]);
    let (_, bodies) = read(d.path(), "npm run test");
    let body = bodies[0].as_ref().unwrap();
    assert_eq!(body.body, "tsc && jest --ci && echo done");
    assert_eq!(body.inner_runner().unwrap().runner, Runner::Jest);
    assert!(!body.only_prints());
}

#[test]
fn a_make_target_runs_its_prerequisites_and_recipes() {
    let d = project(&[(
        "Makefile",
        "PY = python3\n.PHONY: test lint\nlint:\n\t@ruff check .\ntest: lint\n\t-@echo start\n\tpython3 -m pytest -q\n",
    )]);
    let (reading, bodies) = read(d.path(), "make test");
    assert_eq!(reading.runs[0].runner, Runner::Script);
    let body = bodies[0].as_ref().unwrap();
    let runners: Vec<Runner> = body.inner.runs.iter().map(|r| r.runner).collect();
    assert_eq!(runners, vec![Runner::Ruff, Runner::Pytest], "{}", body.body);
    assert!(
        body.exit_visible(),
        "make stops at the first failing line: {}",
        body.body
    );
    assert_eq!(body.inner_runner().unwrap().runner, Runner::Pytest);
}

#[test]
fn an_echo_only_make_target_and_a_missing_target() {
    let d = project(&[("Makefile", "test:\n\t@echo \"Tests: 2 passed, 2 total\"\n")]);
    let (_, bodies) = read(d.path(), "make test");
    assert!(bodies[0].as_ref().unwrap().only_prints());
    let (_, bodies) = read(d.path(), "make check");
    assert!(bodies[0].is_none(), "no such target: the run stays as it was");
}

#[test]
fn an_undeclared_shell_script_that_runs_a_runner_is_a_run() {
    let d = project(&[
        ("scripts/check.sh", "#!/bin/sh\nset -e\npython3 -m pytest -q\necho ok\n"),
        ("scripts/notes.sh", "#!/bin/sh\necho hello\n"),
    ]);
    let (reading, bodies) = read(d.path(), "sh scripts/check.sh");
    assert_eq!(reading.runs.len(), 1);
    assert_eq!(reading.runs[0].kind, Kind::Test);
    assert!(reading.runs[0].exit_visible);
    let body = bodies[0].as_ref().unwrap();
    assert!(body.exit_visible(), "`set -e`: the runner's failure stops the script");
    let (reading, _) = read(d.path(), "bash scripts/notes.sh");
    assert!(reading.runs.is_empty(), "a script that runs no runner is no run");
    let (reading, _) = read(d.path(), "sh scripts/missing.sh");
    assert!(reading.runs.is_empty());
}

#[test]
fn a_script_without_errexit_hides_its_runners_status() {
    let d = project(&[("run.sh", "#!/bin/bash\npython3 -m pytest -q\necho finished\n")]);
    let (reading, bodies) = read(d.path(), "bash run.sh");
    assert_eq!(reading.runs.len(), 1);
    assert!(!bodies[0].as_ref().unwrap().exit_visible());
}

#[test]
fn an_executable_script_is_read_by_its_first_line_only_when_it_is_a_shell_script() {
    let d = project(&[
        ("test.sh", "#!/bin/sh\nexec python3 -m unittest\n"),
        ("test.py", "#!/usr/bin/env python3\nimport os\nos.system('pytest')\n"),
    ]);
    let (reading, _) = read(d.path(), "./test.sh");
    assert_eq!(reading.runs.len(), 1);
    let (reading, _) = read(d.path(), "./test.py");
    assert!(reading.runs.is_empty());
}

#[test]
fn tox_commands_are_read_from_testenv() {
    let d = project(&[(
        "tox.ini",
        "[tox]\nenvlist = py3\n\n[testenv]\ndeps = pytest\ncommands =\n    pytest {posargs}\n    echo done\n",
    )]);
    let (_, bodies) = read(d.path(), "tox");
    let body = bodies[0].as_ref().unwrap();
    assert_eq!(body.inner_runner().unwrap().runner, Runner::Pytest, "{}", body.body);
}

#[test]
fn nested_scripts_are_followed_and_bounded() {
    let d = project(&[
        ("package.json", r#"{"scripts": {"test": "make check"}}"#),
        ("Makefile", "check:\n\tsh ci.sh\nloop:\n\tmake loop\n"),
        ("ci.sh", "#!/bin/sh\nset -e\ncargo test\n"),
    ]);
    let (_, bodies) = read(d.path(), "npm test");
    let body = bodies[0].as_ref().unwrap();
    assert_eq!(body.inner_runner().unwrap().runner, Runner::CargoTest, "{body:?}");
    // A target that runs itself ends at the depth limit, without a result.
    let (reading, _) = read(d.path(), "make loop");
    assert_eq!(reading.runs.len(), 0, "`loop` is no test target");
}

#[test]
fn a_planted_fifo_or_huge_file_is_not_read() {
    let d = project(&[]);
    let fifo = d.path().join("package.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let (reading, bodies) = read(d.path(), "npm test");
    assert_eq!(reading.runs.len(), 1);
    assert!(bodies[0].is_none(), "a FIFO is never opened for reading");
    std::fs::remove_file(&fifo).unwrap();
    let big = format!("test:\n\t{}\n", "echo x; ".repeat(60_000));
    std::fs::write(d.path().join("Makefile"), big).unwrap();
    let (_, bodies) = read(d.path(), "make test");
    assert!(bodies[0].is_none(), "larger than the cap");
}
