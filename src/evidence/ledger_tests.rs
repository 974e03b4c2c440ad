use super::*;

fn run(command: &str, kind: Kind, outcome: Outcome, version: u64) -> Run {
    Run {
        id: 0,
        command: command.into(),
        runner_command: command.into(),
        runner: Runner::Pytest,
        kind,
        exit_code: Some(0),
        runner_exit: Some(0),
        exit_hidden: false,
        counts: Some(Counts::tests(1, 0, 0, 0)),
        outcome,
        note: None,
        duration_ms: 5,
        log: None,
        version,
        at: String::new(),
    }
}

fn edit(l: &mut Ledger, path: &str) {
    l.change(vec![path.into()], Source::Tool { tool: "Edit".into() }, false);
}

#[test]
fn statuses_follow_the_newest_evidence() {
    let mut l = Ledger::default();
    assert_eq!(l.status(), Status::None);
    edit(&mut l, "src/a.py");
    assert_eq!(l.status(), Status::Unverified);
    l.push_run(run("pytest", Kind::Test, Outcome::Passed, 1));
    assert_eq!(l.status(), Status::Passed);
    edit(&mut l, "src/a.py");
    assert_eq!(l.status(), Status::Stale, "a pass before the last edit is stale");
    assert_eq!(l.runs[0].status(l.version), RunStatus::Stale);
    l.push_run(run("pytest", Kind::Test, Outcome::Failed, 2));
    assert_eq!(l.status(), Status::Failed);
    edit(&mut l, "src/a.py");
    assert_eq!(l.status(), Status::Failed, "a failure is not undone by an edit alone");
    l.push_run(run(
        "python -m unittest discover -p 'none*'",
        Kind::Test,
        Outcome::NotRun,
        3,
    ));
    assert_eq!(l.status(), Status::NotRun, "zero tests is never a pass");
    l.push_run(run("pytest", Kind::Test, Outcome::Passed, 3));
    assert_eq!(l.status(), Status::Passed);
    // A failing check against the current tree outweighs passing tests.
    l.push_run(run("mypy", Kind::Lint, Outcome::Failed, 3));
    assert_eq!(l.status(), Status::Failed);
    l.push_run(run("mypy", Kind::Lint, Outcome::Passed, 3));
    assert_eq!(l.status(), Status::Passed, "the newest run of a check counts");
}

#[test]
fn unknown_runs_and_byproducts() {
    let mut l = Ledger::default();
    l.push_run(run("npm test", Kind::Test, Outcome::Unknown, 0));
    assert_eq!(l.status(), Status::Unverified);
    let mut l = Ledger::default();
    l.change(
        vec!["out.log".into()],
        Source::Shell {
            command: "pytest > out.log".into(),
            verification: true,
        },
        false,
    );
    assert_eq!(l.status(), Status::None, "a log written by a test run is not work");
    assert!(l.files_changed().is_empty());
    l.change(vec!["src/x.py".into()], Source::Outside, false);
    assert!(l.work_since(0).next().is_none());
}

#[test]
fn changed_since_names_each_file_once_with_its_last_author() {
    let mut l = Ledger::default();
    edit(&mut l, "a.py");
    l.change(
        vec!["a.py".into(), "b.py".into()],
        Source::Shell {
            command: "sed -i s/x/y/ a.py b.py".into(),
            verification: false,
        },
        false,
    );
    let since = l.changed_since(0);
    assert_eq!(since.len(), 2);
    assert!(since.iter().all(|(_, by)| by.starts_with("shell `sed -i")));
    assert_eq!(l.files_changed(), vec!["a.py", "b.py"]);
}
