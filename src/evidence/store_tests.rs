//! The ledger on disk, through real files: the snapshot, its journal, and a resumed session
//! reading them back.

use super::super::tests::{PASS, Ws, ws};
use super::super::{Config, Evidence, GateMode, Ledger, Source};
use super::*;

/// The ledger a new session on the same directory reads back (before its comparison with the
/// workspace, which counts an edit after the last command as a change while closed).
fn reloaded(w: &Ws) -> Ledger {
    loaded(&Evidence::new(w.dir.path(), w.session.path(), Config::default(), true))
}

fn loaded(ev: &Evidence) -> Ledger {
    ev.state.lock().unwrap().ledger.clone()
}

fn generation(w: &Ws) -> u64 {
    w.ev.state.lock().unwrap().saved.generation
}

fn snapshot(w: &Ws) -> Vec<u8> {
    std::fs::read(w.session.path().join("evidence.json")).unwrap()
}

fn journal(w: &Ws, generation: u64) -> PathBuf {
    w.session.path().join(format!("evidence-journal-{generation}.jsonl"))
}

/// A change recorded straight into the ledger (its volume is the point, not how it was made).
fn outside_change(w: &Ws, path: String) {
    record_outside(&w.ev, path);
}

fn record_outside(ev: &Evidence, path: String) {
    ev.state
        .lock()
        .unwrap()
        .ledger
        .change(vec![path], Source::Outside, false);
}

/// Edits and runs over several rounds, as a session records them.
async fn a_few_rounds(w: &Ws) {
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    w.ev.flush();
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    w.ev.flush();
    w.edit(
        "tests/test_app.py",
        "from src.app import f\n\ndef test_f():\n    assert f(1) == 3\n",
    )
    .await;
    w.bash("pytest -q", |_| {}, "F\n1 failed in 0.01s\n", 1).await;
    w.ev.flush();
}

#[tokio::test]
async fn a_resumed_session_reads_the_snapshot_and_its_journal_as_saved() {
    let w = ws(GateMode::Off);
    a_few_rounds(&w).await;
    let ledger = w.ev.ledger();
    assert_eq!((ledger.runs.len(), ledger.weakened.len()), (2, 1), "{ledger:?}");
    assert_eq!(generation(&w), 1, "one snapshot, then appends");
    assert!(std::fs::metadata(journal(&w, 1)).unwrap().len() > 0);
    assert_eq!(reloaded(&w), ledger);

    // The journal outgrows the 64 KiB floor: one new snapshot, the old journal gone.
    let before = ledger.changes.len();
    for i in 0..80 {
        outside_change(&w, format!("{i}-{}", "x".repeat(1000)));
        w.ev.flush();
    }
    assert_eq!(generation(&w), 2, "rewrites are geometric: one in 80 saves of 1 KiB");
    assert!(!journal(&w, 1).exists());
    assert!(journal(&w, 2).exists(), "appends go on after the new snapshot");
    let ledger = w.ev.ledger();
    assert_eq!(ledger.changes.len(), before + 80);
    assert_eq!(reloaded(&w), ledger);
}

#[tokio::test]
async fn a_flush_that_adds_a_change_appends_and_leaves_the_snapshot_alone() {
    let w = ws(GateMode::Off);
    a_few_rounds(&w).await;
    let before = snapshot(&w);
    let length = std::fs::metadata(journal(&w, 1)).unwrap().len();
    w.edit("src/app.py", "def f(x):\n    return x + 4\n").await;
    w.ev.flush();
    assert_eq!(snapshot(&w), before, "the snapshot is not rewritten");
    let grown = std::fs::metadata(journal(&w, 1)).unwrap().len();
    assert!(grown > length, "{grown} > {length}");
    let text = std::fs::read_to_string(journal(&w, 1)).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("src/app.py") && !last.contains("\"runs\""),
        "the line holds the new change only: {last}"
    );
    // Nothing changed: nothing written.
    w.ev.flush();
    assert_eq!(std::fs::metadata(journal(&w, 1)).unwrap().len(), grown);
    assert_eq!(reloaded(&w), w.ev.ledger());
}

#[tokio::test]
async fn a_torn_last_line_loads_what_came_before_and_the_next_save_writes_a_snapshot() {
    let w = ws(GateMode::Off);
    a_few_rounds(&w).await;
    let ledger = w.ev.ledger();
    let mut f = std::fs::OpenOptions::new().append(true).open(journal(&w, 1)).unwrap();
    f.write_all(br#"{"changes":[{"version":9,"pa"#).unwrap();
    drop(f);

    let resumed = Evidence::new(w.dir.path(), w.session.path(), Config::default(), true);
    assert_eq!(loaded(&resumed), ledger, "everything before the torn line");
    assert!(resumed.state.lock().unwrap().saved.rewrite);
    record_outside(&resumed, "notes.txt".into());
    resumed.flush();
    assert_eq!(resumed.state.lock().unwrap().saved.generation, 2);
    assert!(!journal(&w, 1).exists(), "the torn journal is gone");
    let now = resumed.ledger();
    assert_eq!(now.changes.len(), ledger.changes.len() + 1);
    assert_eq!(reloaded(&w), now);
}

/// A crash between writing a snapshot and removing the journal before it leaves that journal
/// beside a snapshot that already holds its entries.
#[tokio::test]
async fn a_journal_of_an_older_generation_is_not_replayed() {
    let w = ws(GateMode::Off);
    a_few_rounds(&w).await;
    let old = std::fs::read(journal(&w, 1)).unwrap();
    assert!(!old.is_empty());
    w.ev.state.lock().unwrap().saved.rewrite = true;
    outside_change(&w, "notes.txt".into());
    w.ev.flush();
    assert_eq!(generation(&w), 2);
    std::fs::write(journal(&w, 1), &old).unwrap();

    let ledger = w.ev.ledger();
    assert_eq!(reloaded(&w), ledger, "the old journal's entries are not counted twice");
    assert!(!journal(&w, 1).exists(), "a resumed session removes it");
}

#[tokio::test]
async fn an_evidence_json_written_before_the_journal_loads() {
    let w = ws(GateMode::Off);
    a_few_rounds(&w).await;
    let ledger = w.ev.ledger();
    // As keel wrote it before: the ledger alone, no generation, no journal.
    std::fs::write(
        w.session.path().join("evidence.json"),
        serde_json::to_vec(&ledger).unwrap(),
    )
    .unwrap();
    std::fs::remove_file(journal(&w, 1)).unwrap();
    assert!(!String::from_utf8(snapshot(&w)).unwrap().contains("\"journal\""));

    let resumed = Evidence::new(w.dir.path(), w.session.path(), Config::default(), true);
    assert_eq!(loaded(&resumed), ledger);
    record_outside(&resumed, "notes.txt".into());
    resumed.flush();
    assert!(journal(&w, 0).exists(), "generation 0's journal continues it");
    assert_eq!(reloaded(&w), resumed.ledger());
}

#[tokio::test]
async fn a_saved_run_that_loses_its_log_is_saved_by_a_new_snapshot() {
    let w = ws(GateMode::Off);
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    w.ev.flush();
    let log = w.ev.ledger().runs[0].log.clone().expect("the run's log");
    assert_eq!(generation(&w), 1);
    // The fix-up `after` makes when a log cannot be written, here after a save that already
    // wrote the run (a concurrent flush, such as a sub-agent's, can come between the two).
    Evidence::forget_log(&mut w.ev.state.lock().unwrap(), 0, &log);
    w.ev.flush();
    assert_eq!(generation(&w), 2, "the run on disk changed: a whole snapshot");
    let back = reloaded(&w);
    assert_eq!(back.runs[0].log, None);
    assert_eq!(back, w.ev.ledger());
}

#[tokio::test]
async fn a_run_whose_log_cannot_be_written_is_saved_without_it() {
    let w = ws(GateMode::Off);
    w.edit("src/app.py", "def f(x):\n    return x + 2\n").await;
    w.ev.flush();
    // The log directory cannot be made: a file stands in its place.
    std::fs::write(w.session.path().join("evidence"), "not a directory").unwrap();
    w.bash("pytest -q", |_| {}, PASS, 0).await;
    assert_eq!(w.ev.ledger().runs[0].log, None);
    w.ev.flush();
    assert_eq!(generation(&w), 1, "a run not yet saved is appended as it is now");
    assert_eq!(reloaded(&w).runs[0].log, None);
}

#[test]
fn a_missing_or_unreadable_snapshot_is_the_empty_ledger() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(load_ledger(dir.path()), Ledger::default());
    std::fs::write(dir.path().join("evidence.json"), "{not json").unwrap();
    // A journal without a snapshot that names it is not read.
    std::fs::write(
        dir.path().join("evidence-journal-0.jsonl"),
        "{\"head\":{\"version\":3,\"digest\":null}}\n",
    )
    .unwrap();
    assert_eq!(load_ledger(dir.path()), Ledger::default());
    let (_, saved) = load(&snapshot_path(dir.path()));
    assert!(saved.rewrite, "the next save writes a snapshot");
}

#[test]
fn a_new_snapshot_removes_a_journal_already_named_by_its_generation() {
    let dir = tempfile::tempdir().unwrap();
    let store = snapshot_path(dir.path());
    // Left by an earlier writer whose snapshot could not be read.
    std::fs::write(journal_path(&store, 1), "{\"head\":{\"version\":7,\"digest\":null}}\n").unwrap();
    let mut l = Ledger::default();
    l.change(vec!["a.py".into()], Source::Outside, false);
    let mut saved = Saved::default();
    save_ledger(&store, &l, &mut saved).unwrap();
    assert_eq!(saved.generation, 1);
    assert_eq!(load_ledger(dir.path()), l);
}
