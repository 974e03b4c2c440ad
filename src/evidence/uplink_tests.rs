//! A sub-agent's evidence and its channel up, with real files (commands simulated: the test
//! makes their effect between `before` and `after`).

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::super::ledger::{Source, Status};
use super::super::{Config, Declared, Evidence, GateMode};
use crate::types::message::ToolResultContent;
use crate::types::tool::{Effects, ToolOutput};

const TEST: &str = "from app import f\n\ndef test_f():\n    assert f(1) == 2\n    assert f(2) == 3\n";

fn session(dir: &Path) -> Arc<Evidence> {
    std::fs::write(dir.join("app.py"), "def f(x):\n    return x + 1\n").unwrap();
    std::fs::write(dir.join("test_app.py"), TEST).unwrap();
    let config = Config {
        gate: GateMode::Nudge,
        declared: Declared::default(),
    };
    Arc::new(Evidence::new(dir, &dir.join(".session"), config, false))
}

async fn edit(ev: &Evidence, path: &Path, text: &str) {
    let watch = ev
        .before(
            "Edit",
            Effects::EDITS,
            &json!({"file_path": path}),
            None,
            path.parent().unwrap(),
        )
        .await;
    std::fs::write(path, text).unwrap();
    ev.after(watch, &mut ToolOutput::text("updated"), &|_| None).await;
}

async fn bash(ev: &Evidence, cwd: &Path, command: &str, effect: impl FnOnce(), output: &str, exit: i32) {
    let watch = ev
        .before("Bash", Effects::RUNS, &json!({"command": command}), None, cwd)
        .await;
    effect();
    let mut out = ToolOutput {
        content: ToolResultContent::Text(output.to_string()),
        is_error: exit != 0,
        structured: json!({"stdout": output, "stderr": "", "interrupted": false, "exitCode": exit}),
    };
    ev.after(watch, &mut out, &|_| None).await;
}

#[tokio::test]
async fn a_childs_turn_leaves_the_parents_turn_and_its_failing_run_counts() {
    let d = tempfile::tempdir().unwrap();
    let parent = session(d.path());
    parent.begin_turn();
    edit(&parent, &d.path().join("app.py"), "def f(x):\n    return x - 1\n").await;
    let child = Evidence::for_subagent(&parent, &d.path().join(".session/child"));
    child.begin_turn();
    bash(
        &child,
        d.path(),
        "pytest -q",
        || {},
        "F.\n1 failed, 1 passed in 0.01s\n",
        1,
    )
    .await;
    assert_eq!(parent.with_ledger(|l| l.status()), Status::Failed);
    let note = parent.gate(&[]).expect("the parent's turn is still judged");
    assert!(note.contains("1 failed"), "{note}");
}

#[tokio::test]
async fn a_grandchilds_edit_reaches_the_session() {
    let d = tempfile::tempdir().unwrap();
    let parent = session(d.path());
    parent.begin_turn();
    let child = Arc::new(Evidence::for_subagent(&parent, &d.path().join(".session/c")));
    let grandchild = Evidence::for_subagent(&child, &d.path().join(".session/g"));
    edit(&grandchild, &d.path().join("app.py"), "def f(x):\n    return 0\n").await;
    assert_eq!(parent.with_ledger(|l| l.files_changed()), vec!["app.py".to_string()]);
    assert_eq!(parent.with_ledger(|l| l.status()), Status::Unverified);
    assert!(
        parent.gate(&[]).is_some(),
        "the session's gate sees the grandchild's change"
    );
}

#[tokio::test]
async fn a_siblings_edit_is_no_change_from_outside_for_the_next_sibling() {
    let d = tempfile::tempdir().unwrap();
    let parent = session(d.path());
    // The session's first command takes the fingerprint both siblings start from.
    bash(&parent, d.path(), "ls", || {}, "app.py\n", 0).await;
    let a = Evidence::for_subagent(&parent, &d.path().join(".session/a"));
    let b = Evidence::for_subagent(&parent, &d.path().join(".session/b"));
    edit(&a, &d.path().join("app.py"), "def f(x):\n    return x + 2\n").await;
    // Well before B's command starts, so the change cannot pass for the command's own.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    bash(&b, d.path(), "ls", || {}, "app.py\n", 0).await;
    let outside = parent.with_ledger(|l| l.changes.iter().filter(|c| c.source == Source::Outside).count());
    assert_eq!(outside, 0, "{:?}", parent.with_ledger(|l| l.changes.clone()));
}

#[tokio::test]
async fn a_weakening_the_child_undoes_leaves_the_parents_record() {
    let d = tempfile::tempdir().unwrap();
    let parent = session(d.path());
    let test = d.path().join("test_app.py");
    let child = Evidence::for_subagent(&parent, &d.path().join(".session/c"));
    let weaker = "from app import f\n\ndef test_f():\n    assert f(1) == 2\n";
    edit(&child, &test, weaker).await;
    assert!(parent.with_ledger(|l| l.weakened.contains_key("test_app.py")));
    edit(&child, &test, TEST).await;
    assert!(
        parent.with_ledger(|l| l.weakened.is_empty()),
        "restored in the child, cleared in the parent"
    );
}

#[tokio::test]
async fn children_share_the_parents_watcher_and_commands_are_seen_from_its_events() {
    let d = tempfile::tempdir().unwrap();
    let parent = session(d.path());
    let child = Evidence::for_subagent(&parent, &d.path().join(".session/child"));
    let grandchild = Evidence::for_subagent(&Arc::new(child), &d.path().join(".session/grandchild"));
    assert!(
        Arc::ptr_eq(&parent.watcher, &grandchild.watcher),
        "one watcher for the tree"
    );
    bash(&parent, d.path(), "true", || {}, "", 0).await;
    bash(
        &grandchild,
        d.path(),
        "sed -i s/1/2/ app.py",
        || std::fs::write(d.path().join("app.py"), "def f(x):\n    return x + 2\n").unwrap(),
        "",
        0,
    )
    .await;
    let how = grandchild.with_last(|last, _| last.map(|s| s.detection()));
    assert!(
        matches!(how, Some(crate::workspace::Detection::Events { looked_at: 1 })),
        "{how:?}"
    );
    let changes = grandchild.take_command_changes().unwrap();
    assert_eq!(changes.modified, vec![std::path::PathBuf::from("app.py")]);
}
