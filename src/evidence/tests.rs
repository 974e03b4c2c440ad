//! The evidence state machine around real files (the commands themselves are simulated here:
//! their effects are made by the test between `before` and `after`; the end-to-end trap
//! sessions in `tests/e2e/evidence.rs` run real commands).

use serde_json::json;

use super::*;
use crate::config::settings::Settings;

pub(super) struct Ws {
    pub(super) dir: tempfile::TempDir,
    pub(super) session: tempfile::TempDir,
    pub(super) ev: Evidence,
}

pub(super) fn ws(gate: GateMode) -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let session = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    std::fs::write(dir.path().join("src/app.py"), "def f(x):\n    return x + 1\n").unwrap();
    std::fs::write(
        dir.path().join("tests/test_app.py"),
        "from src.app import f\n\ndef test_f():\n    assert f(1) == 2\n    assert f(2) == 3\n",
    )
    .unwrap();
    let ev = Evidence::new(
        dir.path(),
        session.path(),
        Config {
            gate,
            declared: Declared::default(),
        },
        true,
    );
    Ws { dir, session, ev }
}

fn shell(text: &str, exit: i32) -> ToolOutput {
    ToolOutput {
        content: ToolResultContent::Text(text.to_string()),
        is_error: exit != 0,
        structured: json!({"stdout": text, "stderr": "", "interrupted": false, "isImage": false, "exitCode": exit}),
    }
}

impl Ws {
    pub(super) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs a simulated command: `effect` changes the workspace as the command would.
    pub(super) async fn bash(&self, command: &str, effect: impl FnOnce(&Path), output: &str, exit: i32) -> ToolOutput {
        let watch = self
            .ev
            .before(
                "Bash",
                crate::types::tool::Effects::RUNS,
                &json!({"command": command}),
                None,
                self.dir.path(),
            )
            .await;
        effect(self.dir.path());
        let mut out = shell(output, exit);
        self.ev.after(watch, &mut out, &|_| None).await;
        out
    }

    pub(super) async fn edit(&self, rel: &str, new: &str) -> ToolOutput {
        let path = self.path(rel);
        let watch = self
            .ev
            .before(
                "Edit",
                crate::types::tool::Effects::EDITS,
                &json!({"file_path": path}),
                None,
                self.dir.path(),
            )
            .await;
        std::fs::write(&path, new).unwrap();
        let mut out = ToolOutput::text(format!("The file {} has been updated.", path.display()));
        self.ev.after(watch, &mut out, &|_| None).await;
        out
    }

    fn status(&self) -> Status {
        self.ev.with_ledger(|l| l.status())
    }
}

pub(super) const PASS: &str = "..\n2 passed in 0.01s\n";

#[tokio::test]
async fn a_pass_then_an_edit_is_stale_and_the_gate_says_which_file() {
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    assert_eq!(w.status(), Status::Passed);
    assert_eq!(w.ev.gate(&[]), None, "a fresh pass lets the turn end");
    w.edit("src/app.py", "def f(x):\n    return x + 3\n").await;
    assert_eq!(w.status(), Status::Stale);
    let note = w.ev.gate(&[]).expect("stale work is sent back");
    assert!(note.contains("src/app.py (Edit)"), "{note}");
    assert!(note.contains("`pytest -q`: 2 passed, 0 failed"), "{note}");
    assert_eq!(w.ev.gate(&[]), None, "nudge mode sends once per turn");
    w.ev.begin_turn();
    assert_eq!(w.ev.gate(&[]), None, "a turn without changes is not judged");
}

#[tokio::test]
async fn zero_tests_is_not_a_pass_and_the_model_is_told_at_once() {
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    w.edit("src/app.py", "def f(x):\n    return x\n").await;
    let out = w
        .bash(
            "python3 -m unittest discover -p 'none*'",
            |_| {},
            "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n",
            0,
        )
        .await;
    assert!(
        out.content
            .as_text()
            .contains("executed zero tests, which is not a pass")
    );
    assert_eq!(w.status(), Status::NotRun);
    let note = w.ev.gate(&[]).unwrap();
    assert!(note.contains("executed zero tests"), "{note}");
}

#[tokio::test]
async fn a_pipeline_hiding_a_failure_keeps_the_runners_status() {
    let w = ws(GateMode::Nudge);
    let out = w
        .bash("pytest | tail -1", |_| {}, "1 failed, 2 passed in 0.03s\n", 0)
        .await;
    assert!(
        out.content
            .as_text()
            .contains("failed although the command line exited 0")
    );
    let l = w.ev.ledger();
    let r = &l.runs[0];
    assert_eq!((r.exit_code, r.runner_exit, r.exit_hidden), (Some(0), Some(1), true));
    assert_eq!(r.outcome, ledger::Outcome::Failed);
    assert_eq!(l.status(), Status::Failed);
    let report = w.ev.report_json();
    assert_eq!(report["runs"][0]["exit_code"], 1);
    assert_eq!(report["runs"][0]["failed"], 1);
    assert!(
        r.log
            .as_ref()
            .is_some_and(|p| std::fs::read_to_string(p).unwrap().contains("1 failed"))
    );
}

#[tokio::test]
async fn a_forged_summary_is_not_attributed_to_the_runner() {
    let w = ws(GateMode::Nudge);
    w.bash(
        "pytest -q; echo '=== 5 passed in 0.10s ==='",
        |_| {},
        "no tests ran in 0.01s\n=== 5 passed in 0.10s ===\n",
        0,
    )
    .await;
    let l = w.ev.ledger();
    assert_eq!(l.runs[0].outcome, ledger::Outcome::Unknown);
    assert!(l.runs[0].note.as_deref().unwrap().contains("cannot tell"));
    // Two summaries for one pytest run, however they got there.
    w.bash(
        "pytest -q; cat old.log",
        |_| {},
        "no tests ran in 0.01s\n5 passed in 0.10s\n",
        0,
    )
    .await;
    assert_eq!(w.ev.ledger().runs[1].outcome, ledger::Outcome::Unknown);
}

#[tokio::test]
async fn shell_changes_are_detected_and_attributed() {
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    let v = w.ev.with_ledger(|l| l.version);
    w.bash(
        "sed -i 's/+ 1/+ 2/' src/app.py",
        |d| std::fs::write(d.join("src/app.py"), "def f(x):\n    return x + 2\n").unwrap(),
        "(the command succeeded and printed nothing)",
        0,
    )
    .await;
    let l = w.ev.ledger();
    assert_eq!(l.version, v + 1);
    assert_eq!(l.changes.last().unwrap().paths, vec!["src/app.py"]);
    assert_eq!(l.status(), Status::Stale);
    let note = w.ev.gate(&[]).unwrap();
    assert!(note.contains("src/app.py (shell `sed -i"), "{note}");
    // A fix before the test run in one line: the run tested the fixed tree.
    w.bash(
        "sed -i 's/+ 2/+ 1/' src/app.py && pytest -q",
        |d| std::fs::write(d.join("src/app.py"), "def f(x):\n    return x + 1\n").unwrap(),
        PASS,
        0,
    )
    .await;
    assert_eq!(w.status(), Status::Passed);
    // A change after the run in one line: stale at once.
    w.bash(
        "pytest -q && sed -i 's/+ 1/+ 5/' src/app.py",
        |d| std::fs::write(d.join("src/app.py"), "def f(x):\n    return x + 5\n").unwrap(),
        PASS,
        0,
    )
    .await;
    assert_eq!(w.status(), Status::Stale);
}

#[tokio::test]
async fn a_file_edited_by_keel_and_then_by_a_command_is_the_commands_change_too() {
    let w = ws(GateMode::Nudge);
    w.bash("ls", |_| {}, "", 0).await;
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    std::thread::sleep(std::time::Duration::from_millis(40));
    w.bash(
        "sed -i 's/2/3/' src/app.py",
        |d| std::fs::write(d.join("src/app.py"), "def f(x):\n    return x + 3\n").unwrap(),
        "",
        0,
    )
    .await;
    let l = w.ev.ledger();
    let sources: Vec<String> = l.changes.iter().map(|c| c.describe_source()).collect();
    assert_eq!(
        sources,
        vec!["Edit", "shell `sed -i 's/2/3/' src/app.py`"],
        "no outside change"
    );
}

#[tokio::test]
async fn a_command_right_after_keels_edit_is_not_taken_for_its_writer() {
    // Within the clock slack of the command's start (no sleep): the change time alone cannot
    // tell, the stamp keel saw right after its own write can.
    let w = ws(GateMode::Nudge);
    w.bash("ls", |_| {}, "", 0).await;
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    w.bash("grep -c return src/app.py", |_| {}, "1\n", 0).await;
    let sources: Vec<String> = w.ev.ledger().changes.iter().map(|c| c.describe_source()).collect();
    assert_eq!(sources, vec!["Edit"], "the read-only command changed nothing");

    // The same, when the command does write the file right after keel's edit: its change.
    w.edit("src/app.py", "def f(x):\n    return x + 4\n").await;
    w.bash(
        "sed -i 's/4/5/' src/app.py",
        |d| std::fs::write(d.join("src/app.py"), "def f(x):\n    return x + 5\n").unwrap(),
        "",
        0,
    )
    .await;
    let sources: Vec<String> = w.ev.ledger().changes.iter().map(|c| c.describe_source()).collect();
    assert_eq!(sources, vec!["Edit", "Edit", "shell `sed -i 's/4/5/' src/app.py`"]);
}

#[tokio::test]
async fn changes_between_commands_are_from_outside_and_logs_are_byproducts() {
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    w.bash(
        "pytest -q > out.log",
        |d| std::fs::write(d.join("out.log"), PASS).unwrap(),
        "",
        0,
    )
    .await;
    // The report went to the file; the file is the run's by-product, not work.
    assert_eq!(w.ev.ledger().runs[0].outcome, ledger::Outcome::Passed);
    assert!(w.ev.ledger().files_changed().is_empty());
    assert_eq!(w.ev.gate(&[]), None, "a read-only session is never nudged");
    std::fs::write(w.path("src/app.py"), "def f(x):\n    return 0\n").unwrap();
    // Well before the next command starts (the kernel's change times are coarse).
    std::thread::sleep(std::time::Duration::from_millis(40));
    w.bash("ls", |_| {}, "src tests", 0).await;
    let l = w.ev.ledger();
    let last = l.changes.last().unwrap();
    assert_eq!(last.source, Source::Outside);
    assert_eq!(last.paths, vec!["src/app.py"]);
    assert_eq!(w.ev.gate(&[]), None, "changes by others are not the model's work");
}

#[tokio::test]
async fn weakened_tests_by_edit_and_by_shell() {
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    let out = w
        .edit(
            "tests/test_app.py",
            "from src.app import f\n\ndef test_f():\n    assert f(1) == 2\n",
        )
        .await;
    let text = out.content.as_text();
    assert!(text.contains("[keel: weakened tests] tests/test_app.py"), "{text}");
    assert!(text.contains("1 assertion removed"), "{text}");
    w.bash("pytest -q", |_| {}, "1 passed in 0.01s\n", 0).await;
    assert_eq!(w.status(), Status::Passed);
    let note = w.ev.gate(&[]).expect("a pass with weakened tests is sent back");
    assert!(note.contains("Weakened tests in tests/test_app.py"), "{note}");
    let report = w.ev.report_json();
    assert_eq!(report["weakened_tests"][0]["file"], "tests/test_app.py");
    assert_eq!(report["weakened_tests"][0]["removed_assertions"], 1);
    // Restoring the assertion clears it.
    w.edit(
        "tests/test_app.py",
        "from src.app import f\n\ndef test_f():\n    assert f(1) == 2\n    assert f(2) == 3\n",
    )
    .await;
    assert!(w.ev.ledger().weakened.is_empty());
    // A skip marker added by the shell, on a file the command names.
    let out = w
        .bash(
            "sed -i 's/^def test_f/@pytest.mark.skip\\ndef test_f/' tests/test_app.py",
            |d| {
                std::fs::write(
                    d.join("tests/test_app.py"),
                    "from src.app import f\n\n@pytest.mark.skip\ndef test_f():\n    assert f(1) == 2\n    assert f(2) == 3\n",
                )
                .unwrap()
            },
            "",
            0,
        )
        .await;
    assert!(out.content.as_text().contains("1 skip/xfail/ignore marker added"));
    assert!(
        w.ev.ledger().weakened["tests/test_app.py"]
            .by
            .starts_with("shell `sed -i")
    );
}

#[tokio::test]
async fn the_ledger_survives_resume_and_changes_while_closed_make_passes_stale() {
    let w = ws(GateMode::Nudge);
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    assert_eq!(w.status(), Status::Passed);
    w.ev.flush();
    let session = w.session.path().to_path_buf();
    let again = Evidence::new(w.dir.path(), &session, Config::default(), true);
    assert_eq!(again.with_ledger(|l| (l.runs.len(), l.status())), (1, Status::Passed));
    drop(again);
    std::fs::write(w.path("src/app.py"), "def f(x):\n    return -1\n").unwrap();
    let resumed = Evidence::new(w.dir.path(), &session, Config::default(), true);
    assert_eq!(resumed.with_ledger(|l| l.status()), Status::Stale);
}

/// A resumed session's turn begins without the comparison with the workspace (which waits for
/// the watcher's first walk); made later, the change it finds still counts before the turn.
/// A ledger without runs has nothing such a change could alter and is not compared at all.
#[tokio::test]
async fn a_resumed_turn_does_not_wait_for_the_comparison_and_it_still_comes_first() {
    let w = ws(GateMode::Nudge);
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    w.ev.flush();
    let session = w.session.path().to_path_buf();
    std::fs::write(w.path("src/app.py"), "def f(x):\n    return -1\n").unwrap();
    let resumed = Evidence::new(w.dir.path(), &session, Config::default(), true);
    let saved = resumed.state.lock().unwrap().ledger.version;
    resumed.begin_turn();
    assert!(
        resumed.state.lock().unwrap().digest_unchecked,
        "begin_turn made the comparison"
    );
    // Nothing recorded yet, no task list: the gate has nothing to judge and does not compare.
    assert_eq!(resumed.take_write_error(), None);
    assert_eq!(resumed.gate(&[]), None);
    assert!(
        resumed.state.lock().unwrap().digest_unchecked,
        "the gate made the comparison"
    );
    assert_eq!(resumed.with_ledger(|l| l.status()), Status::Stale);
    let (version, turn_start) = {
        let s = resumed.state.lock().unwrap();
        (s.ledger.version, s.turn_start)
    };
    assert_eq!(version, saved + 1);
    assert_eq!(turn_start, saved + 1, "the change while closed is not this turn's");

    let fresh = ws(GateMode::Nudge);
    fresh
        .bash("true", |d| std::fs::write(d.join("notes.txt"), "n").unwrap(), "", 0)
        .await;
    fresh.ev.flush();
    assert!(fresh.ev.ledger().digest.is_some() && fresh.ev.ledger().runs.is_empty());
    let session = fresh.session.path().to_path_buf();
    let resumed = Evidence::new(fresh.dir.path(), &session, Config::default(), true);
    assert!(
        !resumed.state.lock().unwrap().digest_unchecked,
        "no runs: nothing to compare for"
    );
}

#[test]
fn settings_choose_the_gate_and_declare_commands() {
    let d = tempfile::tempdir().unwrap();
    let s = Settings::load(
        None,
        &d.path().join("k"),
        d.path(),
        Some(r#"{"verification": {"stopGate": "require", "commands": ["./ci/check", "echo ok"]}}"#),
    )
    .unwrap();
    let (c, warnings) = Config::from_settings(&s, ["## Build and Test Commands\n- `bin/unit`\n"].into_iter()).unwrap();
    assert_eq!(c.gate, GateMode::Require);
    assert_eq!(c.declared.len(), 2);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let bad = Settings::load(
        None,
        &d.path().join("k"),
        d.path(),
        Some(r#"{"verification": {"stopGate": "always"}}"#),
    )
    .unwrap();
    let err = Config::from_settings(&bad, std::iter::empty()).unwrap_err().to_string();
    assert!(
        err.contains("verification.stopGate") && err.contains("\"nudge\""),
        "{err}"
    );
}

#[tokio::test]
async fn the_todo_rule_adds_its_line_when_no_completed_todo_was_a_verification_step() {
    use crate::types::tool::{Todo, TodoStatus};
    let todo = |content: &str, status| Todo {
        content: content.into(),
        status,
        active_form: content.into(),
        ..Default::default()
    };
    let done = [
        todo("Read the parser", TodoStatus::Completed),
        todo("Fix the off-by-one", TodoStatus::Completed),
        todo("Update the docs", TodoStatus::Completed),
        todo("Run the test suite", TodoStatus::Pending),
    ];
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    w.edit("src/app.py", "def f(x):\n    return x\n").await;
    let note = w.ev.gate(&done).unwrap();
    assert!(
        note.contains("3 todos are completed and none of them was a verification step"),
        "{note}"
    );
    let mut verified = done.clone();
    verified[3].status = TodoStatus::Completed;
    assert_eq!(gate::todos_unverified(&verified), None);
    assert_eq!(gate::todos_unverified(&done[..2]), None, "fewer than three completed");
    assert!(gate::is_verification_step(&todo(
        "Check that cargo clippy is clean",
        TodoStatus::Pending
    )));
    assert!(!gate::is_verification_step(&todo(
        "Refactor the parser",
        TodoStatus::Pending
    )));
}

#[test]
fn the_todo_rule_never_asks_for_a_blocked_entry() {
    use crate::types::tool::{Todo, TodoStatus};
    let todo = |id: &str, content: &str, status, blocked_by: &[&str]| Todo {
        id: Some(id.into()),
        content: content.into(),
        status,
        active_form: content.into(),
        blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let mut list = vec![
        todo("a", "Read the parser", TodoStatus::Completed, &[]),
        todo("b", "Fix the off-by-one", TodoStatus::Completed, &[]),
        todo("c", "Update the docs", TodoStatus::Completed, &[]),
        todo("d", "Migrate the schema", TodoStatus::Pending, &[]),
        todo("e", "Run the test suite", TodoStatus::Pending, &["d"]),
    ];
    let hint = gate::verification_hint(&list).unwrap();
    assert!(
        hint.contains("\"Run the test suite\" is blocked") && hint.contains("\"Migrate the schema\""),
        "{hint}"
    );
    assert!(!hint.contains("do it now"), "{hint}");
    list[3].status = TodoStatus::Completed;
    let hint = gate::verification_hint(&list).unwrap();
    assert!(hint.contains("\"Run the test suite\" open: do it now"), "{hint}");
}

#[tokio::test]
async fn the_todo_rule_reminds_once_per_turn_even_when_no_file_changed() {
    use crate::types::tool::{Todo, TodoStatus};
    let todo = |content: &str| Todo {
        content: content.into(),
        status: TodoStatus::Completed,
        active_form: content.into(),
        ..Default::default()
    };
    let done = [
        todo("Read the parser"),
        todo("Fix the off-by-one"),
        todo("Update the docs"),
    ];
    let w = ws(GateMode::Require);
    w.ev.begin_turn();
    let note = w.ev.gate(&done).expect("a reminder with no file changed");
    assert!(note.contains("3 todos are completed"), "{note}");
    assert!(
        w.ev.gate(&done).is_none(),
        "one reminder per turn, even in require mode"
    );
    w.ev.begin_turn();
    assert!(w.ev.gate(&done).is_some(), "a new turn may remind again");
    w.ev.begin_turn();
    assert!(
        w.ev.gate(&done[..2]).is_none(),
        "fewer than three completed: nothing to say"
    );
}

#[tokio::test]
async fn a_planted_fifo_or_device_is_never_read() {
    let w = ws(GateMode::Nudge);
    nix::unistd::mkfifo(
        &w.path("tests/test_pipe.py"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", w.path("tests/test_zero.py")).unwrap();
    let run = async {
        for name in ["tests/test_pipe.py", "tests/test_zero.py"] {
            let path = w.path(name);
            let watch =
                w.ev.before(
                    "Edit",
                    crate::types::tool::Effects::EDITS,
                    &json!({"file_path": path}),
                    None,
                    w.dir.path(),
                )
                .await;
            w.ev.after(watch, &mut ToolOutput::text("ok"), &|_| None).await;
        }
        w.bash("cat tests/test_pipe.py > out.log", |_| {}, "", 0).await;
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), run)
        .await
        .expect("keel must not block on a FIFO or read a device to its end");
}

const JEST_PASS: &str = "Tests:       1 passed, 1 total\nSnapshots:   1 updated, 1 total\n";

#[tokio::test]
async fn a_snapshot_a_runner_rewrote_is_work_and_a_changed_expectation() {
    let w = ws(GateMode::Nudge);
    let snap = "__tests__/__snapshots__/x.test.js.snap";
    std::fs::create_dir_all(w.path("__tests__/__snapshots__")).unwrap();
    std::fs::write(w.path(snap), "exports[`adds 1`] = `3`;\n").unwrap();
    // The session sees the snapshot (a command naming it keeps its baseline).
    w.bash(&format!("cat {snap}"), |_| {}, "exports[`adds 1`] = `3`;", 0)
        .await;
    w.ev.begin_turn();
    let out = w
        .bash(
            "jest -u 2>&1 | tee jest.log",
            |d| {
                std::fs::write(d.join(snap), "exports[`adds 1`] = `4`;\n").unwrap();
                std::fs::write(d.join("jest.log"), JEST_PASS).unwrap();
            },
            JEST_PASS,
            0,
        )
        .await;
    let text = out.content.as_text();
    assert!(
        text.contains(&format!("[keel: weakened tests] {snap}")) && text.contains("1 expected snapshot value changed"),
        "{text}"
    );
    let l = w.ev.ledger();
    assert_eq!(l.files_changed(), vec![snap], "the snapshot is work; the log is not");
    assert_eq!(l.runs[0].outcome, ledger::Outcome::Passed);
    assert_eq!(l.weakened[snap].weakening.changed_snapshots, 1);
    let note =
        w.ev.gate(&[])
            .expect("a pass against a rewritten expectation is sent back");
    assert!(
        note.contains(&format!("Weakened tests in {snap}: 1 expected snapshot value changed")),
        "{note}"
    );
}

#[tokio::test]
async fn a_new_configuration_is_measured_against_its_absence() {
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    // Created by the shell: absent from the fingerprint before the command, from the read state
    // and from git.
    let out = w
        .bash(
            "printf '[pytest]\\naddopts = --deselect tests/test_app.py::test_f\\n' > pytest.ini",
            |d| {
                std::fs::write(
                    d.join("pytest.ini"),
                    "[pytest]\naddopts = --deselect tests/test_app.py::test_f\n",
                )
                .unwrap()
            },
            "",
            0,
        )
        .await;
    assert!(
        out.content.as_text().contains("pytest.ini is now weaker")
            && out.content.as_text().contains("1 test deselection added"),
        "{}",
        out.content.as_text()
    );
    // Created by Write: the baseline kept before the call is its absence.
    let out = w
        .edit(
            "conftest.py",
            "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        if item.name == 'test_f':\n            item.add_marker(pytest.mark.skip(reason='later'))\n",
        )
        .await;
    assert!(
        out.content.as_text().contains("[keel: weakened tests] conftest.py")
            && out.content.as_text().contains("1 skip/xfail/ignore marker added"),
        "{}",
        out.content.as_text()
    );
    let l = w.ev.ledger();
    assert_eq!(l.weakened["pytest.ini"].weakening.added_deselections, 1);
    assert_eq!(l.weakened["conftest.py"].weakening.added_skips, 1);
    assert_eq!(l.baselines["conftest.py"], "");
    // A new test file is not measured against nothing: what it skips is its own business.
    let out = w
        .edit(
            "tests/test_new.py",
            "import pytest\n\n@pytest.mark.skip\ndef test_x():\n    assert g()\n",
        )
        .await;
    assert!(!out.content.as_text().contains("weakened"), "{}", out.content.as_text());
}

#[tokio::test]
async fn a_subset_run_is_recorded_with_what_selected_it() {
    let w = ws(GateMode::Nudge);
    w.ev.begin_turn();
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    w.bash("pytest -q -k 'not slow'", |_| {}, PASS, 0).await;
    let l = w.ev.ledger();
    assert_eq!(l.runs[0].subset.as_deref(), Some("-k 'not slow'"));
    assert_eq!(l.status(), Status::Unverified);
    let note = w.ev.gate(&[]).expect("a subset after a change is sent back");
    assert!(
        note.contains("only a subset ran (`-k 'not slow'`) since the last change"),
        "{note}"
    );
    w.ev.begin_turn();
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    w.bash("pytest -q tests/test_app.py::test_f", |_| {}, PASS, 0).await;
    let l = w.ev.ledger();
    assert_eq!(l.runs[1].subset, None);
    assert_eq!(l.runs[2].subset.as_deref(), Some("tests/test_app.py::test_f"));
    assert_eq!(l.status(), Status::Passed, "a targeted rerun beside a whole pass");
}

#[path = "tests_runs.rs"]
mod runs;
