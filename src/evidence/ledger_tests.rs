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
        subset: None,
        stale_target: None,
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

fn subset_run(command: &str, subset: &str, outcome: Outcome, version: u64) -> Run {
    Run {
        subset: Some(subset.into()),
        ..run(command, Kind::Test, outcome, version)
    }
}

#[test]
fn a_passing_subset_counts_only_beside_a_passing_whole_run() {
    let mut l = Ledger::default();
    edit(&mut l, "src/calc.py");
    l.push_run(subset_run("pytest -k add", "-k add", Outcome::Passed, 1));
    assert_eq!(
        l.status(),
        Status::Unverified,
        "only part of the suite ran since the change"
    );
    let r = l.unbacked_subset().expect("the subset run is named");
    assert_eq!(r.subset.as_deref(), Some("-k add"));
    assert_eq!(
        r.subset_note().as_deref(),
        Some("only a subset ran (`-k add`) since the last change; run the whole suite")
    );
    // The whole suite then passes on the same version: a targeted rerun after it is fine.
    l.push_run(run("pytest", Kind::Test, Outcome::Passed, 1));
    assert_eq!(l.status(), Status::Passed);
    l.push_run(subset_run("pytest -k add", "-k add", Outcome::Passed, 1));
    assert_eq!(l.status(), Status::Passed, "a targeted rerun beside a whole pass");
    assert!(l.unbacked_subset().is_none());
    // A change makes both stale; a subset run after it is not enough again.
    edit(&mut l, "src/calc.py");
    assert_eq!(l.status(), Status::Stale);
    l.push_run(subset_run("pytest -k add", "-k add", Outcome::Passed, 2));
    assert_eq!(l.status(), Status::Unverified);
}

#[test]
fn a_whole_pass_of_another_runner_does_not_back_a_subset() {
    let mut l = Ledger::default();
    edit(&mut l, "web/sum.js");
    l.push_run(run("pytest", Kind::Test, Outcome::Passed, 1));
    let mut jest = subset_run("jest -t adds", "-t adds", Outcome::Passed, 1);
    jest.runner = Runner::Jest;
    l.push_run(jest);
    assert_eq!(l.status(), Status::Unverified, "the Jest suite only ran in part");
    assert_eq!(l.unbacked_subset().map(|r| r.id), Some(2));
}

#[test]
fn a_failing_whole_run_is_not_undone_by_a_passing_subset() {
    let mut l = Ledger::default();
    edit(&mut l, "src/calc.py");
    l.push_run(run("pytest", Kind::Test, Outcome::Failed, 1));
    l.push_run(subset_run("pytest -k add", "-k add", Outcome::Passed, 1));
    assert_eq!(l.status(), Status::Failed);
    assert!(l.unbacked_subset().is_none(), "the failure is what the ledger says");
    // A failing subset run fails the session whatever passed.
    let mut l = Ledger::default();
    edit(&mut l, "src/calc.py");
    l.push_run(run("pytest", Kind::Test, Outcome::Passed, 1));
    l.push_run(subset_run("pytest -k add", "-k add", Outcome::Failed, 1));
    assert_eq!(l.status(), Status::Failed);
}

#[test]
fn the_subset_is_kept_in_the_ledger_file_and_old_files_read_without_it() {
    let mut l = Ledger::default();
    l.push_run(subset_run("pytest -k add", "-k add", Outcome::Passed, 0));
    l.push_run(run("pytest", Kind::Test, Outcome::Passed, 0));
    let text = serde_json::to_string(&l).unwrap();
    let back: Ledger = serde_json::from_str(&text).unwrap();
    assert_eq!(back.runs[0].subset.as_deref(), Some("-k add"));
    assert_eq!(back.runs[1].subset, None);
    // A ledger written before runs had a subset.
    let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
    old["runs"][0].as_object_mut().unwrap().remove("subset");
    let back: Ledger = serde_json::from_value(old).unwrap();
    assert_eq!(back.runs[0].subset, None);
    // Weakenings saved before the new kinds existed read as none of them.
    let w: Weakened =
        serde_json::from_str(r#"{"file":"t.py","removed_assertions":1,"added_skips":0,"deleted_tests":0,"by":"Edit"}"#)
            .unwrap();
    assert_eq!(w.weakening.removed_assertions, 1);
    assert_eq!(w.weakening.changed_snapshots, 0);
}

#[test]
fn the_gate_and_the_text_line_say_only_a_subset_ran() {
    let mut l = Ledger::default();
    edit(&mut l, "src/calc.py");
    l.push_run(subset_run("pytest -k add", "-k add", Outcome::Passed, 1));
    let note = super::super::gate::note(&l, 0, &[], 1, super::super::GateMode::Nudge).expect("sent back");
    assert!(
        note.contains("Run 1 `pytest -k add`: 1 passed, 0 failed (exit 0) — only a subset ran (`-k add`) since the last change; run the whole suite."),
        "{note}"
    );
    let line = super::super::report::text_line(&l).expect("a line");
    assert!(
        line.starts_with(
            "keel: verification unverified: only a subset ran (`-k add`) since the last change; run the whole suite"
        ),
        "{line}"
    );
    let json = super::super::report::json(&l);
    assert_eq!(json["runs"][0]["subset"], "-k add");
    assert_eq!(json["status"], "unverified");
    l.push_run(run("pytest", Kind::Test, Outcome::Passed, 1));
    assert_eq!(
        super::super::report::json(&l)["runs"][1]["subset"],
        serde_json::Value::Null
    );
    assert_eq!(
        super::super::gate::note(&l, 0, &[], 1, super::super::GateMode::Nudge),
        None
    );
}
