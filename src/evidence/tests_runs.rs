//! Where a runner's report went, and checks that could not run, through the evidence state
//! machine.

use super::*;

const PYTEST_PASS: &str =
    "..                                                                       [100%]\n2 passed in 0.01s\n";

#[tokio::test]
async fn a_runners_report_is_read_from_where_the_plan_sent_it() {
    let w = ws(GateMode::Nudge);
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    // Sent to a log, then shown with tail: one report, counted once, and not work.
    let line = "pytest > out.log 2>&1; tail -n 3 out.log";
    w.bash(
        line,
        |d| std::fs::write(d.join("out.log"), PYTEST_PASS).unwrap(),
        "2 passed in 0.01s\n",
        0,
    )
    .await;
    let l = w.ev.ledger();
    assert_eq!(l.runs[0].outcome, ledger::Outcome::Passed, "{:?}", l.runs[0]);
    assert_eq!(l.runs[0].counts.unwrap().executed, 2);
    assert!(!l.files_changed().contains(&"out.log".to_string()));
    // Discarded, with an old report printed instead: nothing of the runner's own.
    std::fs::write(w.path("old.txt"), PYTEST_PASS).unwrap();
    let out = w
        .bash("pytest -q > /dev/null 2>&1; cat old.txt", |_| {}, PYTEST_PASS, 0)
        .await;
    let run = &w.ev.ledger().runs[1];
    assert_eq!(run.outcome, ledger::Outcome::Unknown, "{run:?}");
    assert!(run.note.as_deref().unwrap().contains("/dev/null"), "{run:?}");
    assert!(out.content.as_text().contains("/dev/null"), "the model is told");
    // Its output reaches the result, but `cat` prints a stored report besides.
    w.bash(
        "pytest -q; cat old.txt",
        |_| {},
        &format!("F.\n1 failed, 1 passed in 0.1s\n{PYTEST_PASS}"),
        0,
    )
    .await;
    let run = &w.ev.ledger().runs[2];
    assert_eq!(run.outcome, ledger::Outcome::Unknown, "{run:?}");
    // Another command of the line writes into the runner's log.
    let line = "pytest -q > out.log; echo '9 passed in 0.1s' >> out.log; tail -1 out.log";
    w.bash(
        line,
        |d| std::fs::write(d.join("out.log"), "F\n1 failed in 0.1s\n9 passed in 0.1s\n").unwrap(),
        "9 passed in 0.1s\n",
        0,
    )
    .await;
    let run = &w.ev.ledger().runs[3];
    assert_ne!(run.outcome, ledger::Outcome::Passed, "{run:?}");
    assert_eq!(w.ev.ledger().status(), Status::Unverified);
}

#[tokio::test]
async fn a_report_file_the_command_did_not_write_is_not_the_runners() {
    let w = ws(GateMode::Nudge);
    std::fs::write(w.path("stale.log"), PYTEST_PASS).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(w.path("stale.log"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    // The command (simulated) never wrote the file its report was sent to: what the file holds
    // is an old report, not this run's.
    w.bash("pytest -q >> stale.log", |_| {}, "", 0).await;
    let run = &w.ev.ledger().runs[0];
    assert_eq!(run.outcome, ledger::Outcome::Unknown, "{run:?}");
    assert!(run.note.as_deref().unwrap().contains("did not write"), "{run:?}");
}

#[tokio::test]
async fn a_missing_program_could_not_run_and_does_not_fail_the_session() {
    let w = ws(GateMode::Nudge);
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    w.bash("pytest -q", |_| {}, PYTEST_PASS, 0).await;
    w.bash("mypy src || true", |_| {}, "sh: 1: mypy: not found\n", 0).await;
    let l = w.ev.ledger();
    assert_eq!(l.runs[1].outcome, ledger::Outcome::CouldNotRun, "{:?}", l.runs[1]);
    assert_eq!(l.runs[1].runner_exit, Some(127));
    assert_eq!(l.status(), Status::Passed);
    assert_eq!(l.could_not_run().len(), 1);
    let json = w.ev.report_json();
    assert_eq!(json["could_not_run"][0]["command"], "mypy src");
    assert_eq!(json["runs"][1]["exit_code"], 127);
    assert!(w.ev.text_line().unwrap().contains("`mypy src` could not run"));
    assert!(w.ev.gate(&[]).is_none(), "an honest answer is not sent back");
    // The line's own text cannot say the program is missing.
    w.bash(
        "ruff check .; echo 'ruff: command not found'",
        |_| {},
        "ruff: command not found\nFound 2 errors.\n",
        0,
    )
    .await;
    assert_ne!(w.ev.ledger().runs[2].outcome, ledger::Outcome::CouldNotRun);
    // Tests that could not run at all: the session's status says so; the gate lets it be said.
    let w = ws(GateMode::Nudge);
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    w.bash(
        "python3 -m pytest -q",
        |_| {},
        "/usr/bin/python3: No module named pytest\n",
        1,
    )
    .await;
    assert_eq!(w.ev.ledger().status(), Status::CouldNotRun);
    assert!(w.ev.gate(&[]).is_none());
}

/// Lines whose runner's own report never reaches the result, with an old "2 passed" printed
/// by some other means: none is a pass (each was one before these checks).
#[tokio::test]
async fn reports_from_anything_but_the_runner_are_not_its_own() {
    let lines = [
        "sh -c 'pytest -q > /dev/null 2>&1; cat old.txt'",
        "(pytest -q) > /dev/null 2>&1; cat < old.txt",
        "{ pytest -q; } > /dev/null 2>&1; python3 -c \"print(open('old.txt').read())\"",
        "exec 3>&1 >/dev/null; pytest -q; exec 1>&3; cat < old.txt",
        "pytest -q | tail -0; cat < old.txt",
        "pytest -q | tail -0; printf '%d passed in 0.01s\\n' 2",
        "pytest -q | tail -0; echo \"$((1+1)) passed in 0.01s\"",
        "pytest -q | tail -0; git show HEAD:old.txt",
        "pytest -q -p no:terminal; python3 -c 'print(2)'",
        "pytest -q 2>&1 | sed 's/failed/passed/'",
    ];
    for line in lines {
        let w = ws(GateMode::Nudge);
        std::fs::write(w.path("old.txt"), PYTEST_PASS).unwrap();
        w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
        w.bash(line, |_| {}, PYTEST_PASS, 0).await;
        let l = w.ev.ledger();
        assert_ne!(l.runs[0].outcome, ledger::Outcome::Passed, "`{line}`: {:?}", l.runs[0]);
        assert_ne!(l.status(), Status::Passed, "`{line}`");
        assert!(w.ev.gate(&[]).is_some(), "`{line}` is sent back");
    }
    // Honest set-up and show-the-log lines stay a pass.
    for line in [
        "pip install -e . && pytest -q",
        "cd src && sed -i 's/+ 2/+ 1/' app.py && cd .. && pytest -q",
        "pytest -q 2>&1 | tee out.log; tail -1 out.log",
        "source .venv/bin/activate && pytest -q 2>&1 | tail -n 5",
    ] {
        let w = ws(GateMode::Nudge);
        w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
        w.bash(line, |_| {}, PYTEST_PASS, 0).await;
        let l = w.ev.ledger();
        assert_eq!(l.runs[0].outcome, ledger::Outcome::Passed, "`{line}`: {:?}", l.runs[0]);
    }
}

/// A failing run cannot pass itself off as one that could not run: only the shell's exact words
/// for the runner's own program count, and a service error only beside the runner's failing
/// status.
#[tokio::test]
async fn a_failing_run_is_not_could_not_run() {
    for (line, output, exit) in [
        (
            "pytest -q | tail -0; ls pytest",
            "ls: cannot access 'pytest': No such file or directory\n",
            0,
        ),
        (
            "pytest -q | tail -0; cat pytest",
            "cat: pytest: No such file or directory\n",
            0,
        ),
        (
            "pytest -q 2>&1 | grep -i refused",
            "E   ConnectionRefusedError: connection refused\n",
            0,
        ),
    ] {
        let w = ws(GateMode::Nudge);
        w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
        w.bash(line, |_| {}, output, exit).await;
        let run = &w.ev.ledger().runs[0];
        assert_ne!(run.outcome, ledger::Outcome::CouldNotRun, "`{line}`: {run:?}");
        assert!(w.ev.gate(&[]).is_some(), "`{line}` is sent back");
    }
}

/// A script that runs itself hundreds of times is read within a fixed budget of bodies (without
/// one, reading this line took minutes).
#[tokio::test]
async fn a_self_calling_script_is_read_within_a_budget() {
    let w = ws(GateMode::Nudge);
    let body = format!("#!/bin/sh\nif false; then\n{}fi\npytest -q\n", "sh a.sh\n".repeat(300));
    std::fs::write(w.path("a.sh"), body).unwrap();
    w.bash("sh a.sh", |_| {}, PYTEST_PASS, 0).await;
    assert_eq!(w.ev.ledger().runs.len(), 1);
}
