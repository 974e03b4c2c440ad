use super::*;

fn store(dir: &Path, max: u64) -> Checkpoints {
    let mut c = Checkpoints::new(dir);
    c.max_bytes = max;
    c
}

#[test]
fn contents_are_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let c = store(dir.path(), 1024);
    c.begin(PointKind::Prompt, "go").unwrap();
    let f = dir.path().join("a.txt");
    c.record(&f, Some(b"v1"), Some(b"v2"), 0o644, "Edit").unwrap();
    c.record(&f, Some(b"v2"), Some(b"v1"), 0o644, "Edit").unwrap();
    c.record(&dir.path().join("b.txt"), Some(b"v1"), Some(b"v2"), 0o644, "Edit")
        .unwrap();
    let objects = std::fs::read_dir(c.dir().join("objects")).unwrap().count();
    assert_eq!(objects, 2, "v1 and v2, each once");
    assert_eq!(c.changes_since(1).len(), 3);
}

#[test]
fn a_file_too_big_to_keep_gets_a_note_and_blocks_its_rewind() {
    let dir = tempfile::tempdir().unwrap();
    let c = store(dir.path(), 8);
    c.begin(PointKind::Prompt, "go").unwrap();
    let f = dir.path().join("big.txt");
    std::fs::write(&f, b"small").unwrap();
    let note = c
        .record(&f, Some(b"0123456789"), Some(b"small"), 0o644, "Write")
        .unwrap()
        .expect("a note");
    assert!(note.contains("cannot be rewound"), "{note}");
    assert!(matches!(c.restore_code(1), Err(RewindError::TooBig(p)) if p == vec![f.clone()]));
    assert_eq!(std::fs::read(&f).unwrap(), b"small", "nothing was changed");
}

#[test]
fn points_number_on_from_the_log_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path(), 8).begin(PointKind::Prompt, "one").unwrap();
    let again = store(dir.path(), 8);
    assert_eq!(again.begin(PointKind::Prompt, "two\nmore lines").unwrap(), 2);
    let texts: Vec<String> = again.points().into_iter().map(|p| p.text).collect();
    assert_eq!(texts, vec!["one", "two"]);
    assert!(matches!(again.plan(3), Err(RewindError::NoSuchPoint(3, 2))));
}

#[test]
fn a_damaged_copy_is_never_restored() {
    let dir = tempfile::tempdir().unwrap();
    let c = store(dir.path(), 1024);
    c.begin(PointKind::Prompt, "go").unwrap();
    let f = dir.path().join("a.txt");
    c.record(&f, Some(b"old"), Some(b"new"), 0o644, "Edit").unwrap();
    std::fs::write(&f, b"new").unwrap();
    std::fs::write(c.dir().join("objects").join(hex_hash(b"old")), b"rot").unwrap();
    let err = c.restore_code(1).unwrap_err().to_string();
    assert!(err.contains("damaged") && err.contains("nothing was changed"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), b"new");
}

/// Three files changed under point 1, and a rewind of them applied but not finished: what a
/// crash after the commit leaves (the journal still there). Returns the log's length before
/// the rewind's commit.
fn applied_rewind(dir: &Path) -> (Checkpoints, Vec<std::path::PathBuf>, u64) {
    let c = store(dir, 1024);
    c.begin(PointKind::Prompt, "go").unwrap();
    let files: Vec<_> = (0..3).map(|i| dir.join(format!("f{i}.txt"))).collect();
    for f in &files {
        c.record(f, Some(b"old"), Some(b"new"), 0o644, "Edit").unwrap();
        std::fs::write(f, b"new").unwrap();
    }
    let before_commit = std::fs::metadata(c.dir().join("log.jsonl")).unwrap().len();
    let plan = c.plan(1).unwrap();
    c.apply(&plan, "rewind", None).unwrap();
    for f in &files {
        assert_eq!(std::fs::read(f).unwrap(), b"old");
    }
    assert!(
        c.pending_rewind().unwrap().is_some(),
        "the journal stays until finished"
    );
    (c, files, before_commit)
}

#[test]
fn a_rewind_stopped_before_its_commit_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let (c, files, before_commit) = applied_rewind(dir.path());
    // The crash came after the files were written, before the log had the rewind.
    let log = c.dir().join("log.jsonl");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(before_commit)
        .unwrap();
    let again = store(dir.path(), 1024);
    match again.recover().unwrap() {
        Some(Recovery::RolledBack { put_back, left, .. }) => {
            assert_eq!(put_back.len(), 3);
            assert!(left.is_empty());
        }
        other => panic!("{other:?}"),
    }
    for f in &files {
        assert_eq!(std::fs::read(f).unwrap(), b"new", "as the log says");
    }
    assert!(again.pending_rewind().unwrap().is_none());
    assert_eq!(again.points().len(), 1, "no record of the rewind");
    assert_eq!(again.recover().unwrap(), None, "nothing left to do");
    assert_eq!(again.restore_code(1).unwrap().len(), 3, "and it can be done again");
}

#[test]
fn a_torn_commit_is_completed_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let (c, files, before_commit) = applied_rewind(dir.path());
    // The commit's append was cut after its point line and half of the next line.
    let log = c.dir().join("log.jsonl");
    let bytes = std::fs::read(&log).unwrap();
    let commit = &bytes[before_commit as usize..];
    let point_end = commit.iter().position(|b| *b == b'\n').unwrap() + 1;
    std::fs::write(&log, &bytes[..before_commit as usize + point_end + 20]).unwrap();
    let again = store(dir.path(), 1024);
    let Some(Recovery::Completed(journal)) = again.recover().unwrap() else {
        panic!("completed");
    };
    assert_eq!(journal.point.point, 2);
    again.finish_rewind(2);
    assert!(again.pending_rewind().unwrap().is_none());
    // The log is whole again: every line reads, and the rewind can be taken back.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.ends_with('\n'));
    assert_eq!(again.changes_since(2).len(), 3, "{text}");
    assert_eq!(again.restore_code(2).unwrap().len(), 3);
    for f in &files {
        assert_eq!(std::fs::read(f).unwrap(), b"new");
    }
}

#[test]
fn a_line_cut_by_a_crash_does_not_swallow_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path(), 8).begin(PointKind::Prompt, "one").unwrap();
    let log = dir.path().join("checkpoints/log.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"point\":2,\"ki");
    std::fs::write(&log, bytes).unwrap();
    let again = store(dir.path(), 8);
    assert_eq!(again.begin(PointKind::Prompt, "two").unwrap(), 2);
    let texts: Vec<String> = store(dir.path(), 8).points().into_iter().map(|p| p.text).collect();
    assert_eq!(texts, vec!["one", "two"]);
}

#[test]
fn a_previous_content_that_cannot_be_stored_is_logged_as_not_kept_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let c = store(dir.path(), 1024);
    c.begin(PointKind::Prompt, "go").unwrap();
    // Nothing can be stored: where the copies go is a file.
    std::fs::write(c.dir().join("objects"), b"").unwrap();
    let f = dir.path().join("a.txt");
    std::fs::write(&f, b"new").unwrap();
    let note = c
        .record(&f, Some(b"old"), Some(b"new"), 0o644, "Edit")
        .unwrap()
        .unwrap();
    assert!(note.contains("could not store the previous content"), "{note}");
    let warnings = c.undo_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains(&format!("the change of {} by Edit (point 1)", f.display())));
    assert_eq!(c.new_gap_notices(), warnings);
    assert!(c.new_gap_notices().is_empty(), "told once");
    let plan = c.plan(1).unwrap();
    assert!(plan.files.is_empty());
    assert_eq!(plan.not_restorable.len(), 1);
    assert_eq!(plan.not_restorable[0].by, "Edit");
    assert_eq!(c.points()[0].not_restorable, 1);
}
