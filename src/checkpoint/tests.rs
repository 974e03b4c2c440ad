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
