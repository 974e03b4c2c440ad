use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::checkpoint::{Checkpoints, PointKind, RewindError};
use crate::workspace::Fingerprinter;

struct Ws {
    _t: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    store: Checkpoints,
    fp: Fingerprinter,
}

fn ws() -> Ws {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let store = Checkpoints::new(&base.join("session"));
    let fp = Fingerprinter::new(&root);
    Ws {
        _t: t,
        root,
        outside,
        store,
        fp,
    }
}

impl Ws {
    /// Runs `command` in the workspace the way the engine does: stash before, log after.
    fn run(&self, command: &str) -> Vec<(PathBuf, String)> {
        let before = self.fp.snapshot();
        let mut due = self.store.due_before_shell(Some(&before), &HashMap::new(), &[]);
        due.extend(self.store.revalidate(&self.root));
        self.store.stash_before_shell(&self.root, due);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c = before.diff(&self.fp.snapshot());
        self.store.record_shell(&self.root, &c.added, &c.modified, &c.removed)
    }

    /// Every entry below the root: path, and content or link target.
    fn tree(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        for e in walk(&self.root) {
            let rel = e.strip_prefix(&self.root).unwrap().to_path_buf();
            let meta = std::fs::symlink_metadata(&e).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&e).unwrap().display())
            } else {
                use std::os::unix::fs::PermissionsExt;
                format!(
                    "{:o} {:?}",
                    meta.permissions().mode() & 0o777,
                    std::fs::read(&e).unwrap()
                )
            };
            out.push((rel, what));
        }
        out.sort();
        out
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn changes_made_by_real_commands_are_rewound_byte_exact_and_the_rewind_undone() {
    use std::os::unix::fs::PermissionsExt;
    let w = ws();
    std::fs::write(w.root.join("a.txt"), b"one\r\ntwo\xff\n").unwrap();
    std::fs::set_permissions(w.root.join("a.txt"), std::fs::Permissions::from_mode(0o751)).unwrap();
    std::fs::write(w.root.join("b.txt"), "bee\n").unwrap();
    std::fs::write(w.root.join("c.txt"), "sea\n").unwrap();
    std::fs::write(w.root.join("sub/d.txt"), "dee\n").unwrap();
    std::os::unix::fs::symlink("b.txt", w.root.join("link")).unwrap();
    let original = w.tree();

    w.store.begin(PointKind::Prompt, "first").unwrap();
    let lost = w.run(
        "sed -i 's/one/ONE/' a.txt && rm b.txt && mv c.txt moved.txt && echo new > created.txt \
         && rm -r sub && rm link && ln -s a.txt link",
    );
    assert!(lost.is_empty(), "{lost:?}");
    let changed = w.tree();
    assert_ne!(changed, original);

    let plan = w.store.plan(1).unwrap();
    let mut planned: Vec<String> = plan
        .files
        .iter()
        .map(|f| f.path.strip_prefix(&w.root).unwrap().display().to_string())
        .collect();
    planned.sort();
    assert_eq!(
        planned,
        [
            "a.txt",
            "b.txt",
            "c.txt",
            "created.txt",
            "link",
            "moved.txt",
            "sub/d.txt"
        ]
    );
    assert!(plan.not_restorable.is_empty() && plan.conflicts.is_empty());

    w.store.restore_code(1).unwrap();
    assert_eq!(w.tree(), original, "byte for byte, modes and link targets too");
    // The rewind is point 2: rewinding to it puts the command's work back.
    w.store.restore_code(2).unwrap();
    assert_eq!(w.tree(), changed);
}

#[test]
fn a_second_command_copies_only_what_changed_and_keel_edits_in_between_are_seen() {
    let w = ws();
    std::fs::write(w.root.join("a.txt"), "v1\n").unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    w.run("sed -i 's/v1/v2/' a.txt");
    // keel's own Edit between two commands: its stamp in the old fingerprint is stale.
    let a = w.root.join("a.txt");
    w.store.record(&a, Some(b"v2\n"), Some(b"v3\n"), 0o644, "Edit").unwrap();
    std::fs::write(&a, "v3\n").unwrap();
    let before = w.fp.snapshot();
    let touched: HashMap<String, Option<_>> = [("a.txt".to_string(), None)].into();
    let due = w.store.due_before_shell(Some(&before), &touched, &[]);
    assert_eq!(due.len(), 1, "only the edited file is copied again");
    w.store.stash_before_shell(&w.root, due);
    std::process::Command::new("sh")
        .args(["-c", "sed -i 's/v3/v4/' a.txt"])
        .current_dir(&w.root)
        .status()
        .unwrap();
    let c = before.diff(&w.fp.snapshot());
    assert!(
        w.store
            .record_shell(&w.root, &c.added, &c.modified, &c.removed)
            .is_empty()
    );
    let changes = w.store.changes_since(1);
    let last = changes.last().unwrap();
    assert_eq!(last.before.hash(), Some(crate::checkpoint::hex_hash(b"v3\n").as_str()));
    w.store.restore_code(1).unwrap();
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "v1\n");
}

#[test]
fn files_beyond_the_budget_are_listed_as_not_restorable_and_the_rest_is_rewound() {
    let mut w = ws();
    w.store.stash_budget = (6, 100);
    std::fs::write(w.root.join("big.txt"), "0123456789\n").unwrap();
    std::fs::write(w.root.join("small"), "tiny\n").unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    let lost = w.run("sed -i 's/0/X/' big.txt && sed -i s/tiny/TINY/ small && echo x > new.txt");
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].0, w.root.join("big.txt"));
    let points = w.store.points();
    assert_eq!((points[0].files_changed, points[0].not_restorable), (3, 1));
    let plan = w.store.plan(1).unwrap();
    assert_eq!(plan.not_restorable.len(), 1);
    assert_eq!(plan.files.len(), 2);
    w.store.restore_code(1).unwrap();
    assert_eq!(std::fs::read_to_string(w.root.join("small")).unwrap(), "tiny\n");
    assert!(!w.root.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(w.root.join("big.txt")).unwrap(),
        "X123456789\n",
        "left as it is, and said so"
    );
}

#[test]
fn a_directory_swapped_for_a_link_out_of_the_workspace_is_never_written_through() {
    let w = ws();
    std::fs::write(w.root.join("sub/d.txt"), "inside\n").unwrap();
    // The outside file holds just what keel left inside, so a restore that followed the link
    // would find "its" content there and overwrite it.
    std::fs::write(w.outside.join("d.txt"), "changed\n").unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    w.run("sed -i 's/inside/changed/' sub/d.txt");
    // A later command replaces the directory by a link to the outside.
    let swap = format!("mv sub sub.real && ln -s {} sub", w.outside.display());
    std::process::Command::new("sh")
        .args(["-c", &swap])
        .current_dir(&w.root)
        .status()
        .unwrap();
    let err = w.store.restore_code(1).unwrap_err();
    assert!(matches!(err, RewindError::Read { .. }), "{err}");
    assert!(err.to_string().contains("nothing was changed"), "{err}");
    assert_eq!(std::fs::read_to_string(w.outside.join("d.txt")).unwrap(), "changed\n");
    assert_eq!(
        std::fs::read_dir(&w.outside).unwrap().count(),
        1,
        "nothing written outside"
    );
    assert_eq!(
        std::fs::read_to_string(w.root.join("sub.real/d.txt")).unwrap(),
        "changed\n"
    );
}

#[test]
fn read_only_commands_are_recognised() {
    assert!(super::only_reads("ls -la && cat a.txt | grep x"));
    assert!(super::only_reads("git status && git diff"));
    assert!(!super::only_reads("sed -i s/a/b/ f"));
    assert!(!super::only_reads("echo hi > f"));
    assert!(!super::only_reads("rm f"));
}

#[test]
fn a_full_stash_keeps_the_files_that_change_and_never_opens_a_fifo() {
    let mut w = ws();
    w.store.stash_budget = (1024, 1);
    std::fs::write(w.root.join("a.txt"), "a\n").unwrap();
    std::fs::write(w.root.join("bb.txt"), "bb\n").unwrap();
    nix::unistd::mkfifo(&w.root.join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    // Room for one file: the smallest, a.txt; the command changes bb.txt, which was not kept.
    let lost = w.run("echo BB > bb.txt");
    assert_eq!(lost.len(), 1, "{lost:?}");
    // The next command changes a.txt (kept) and bb.txt: a.txt's change can be taken back.
    let lost = w.run("echo A > a.txt && echo B3 > bb.txt");
    assert_eq!(
        lost.iter().map(|l| l.0.clone()).collect::<Vec<_>>(),
        vec![w.root.join("bb.txt")]
    );
    // a.txt changed before: it is copied again in preference to other files.
    let lost = w.run("echo A2 > a.txt");
    assert!(lost.is_empty(), "{lost:?}");
    let plan = w.store.plan(1).unwrap();
    let restorable: Vec<&Path> = plan.files.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(restorable, vec![w.root.join("a.txt").as_path()]);
    assert_eq!(plan.not_restorable.len(), 1);
    w.store.restore_code(1).unwrap();
    assert_eq!(std::fs::read_to_string(w.root.join("a.txt")).unwrap(), "a\n");
}

#[test]
fn stashes_of_dead_processes_are_swept_and_live_ones_kept() {
    let w = ws();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let gone = w.store.dir().join(format!("stash-{dead}-0"));
    let live = w.store.dir().join(format!("stash-{}-999", std::process::id()));
    for d in [&gone, &live] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("1"), "copy").unwrap();
    }
    std::fs::write(w.root.join("a.txt"), "a\n").unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    w.run("echo b > a.txt");
    assert!(!gone.exists(), "a dead process's stash is removed");
    assert!(live.exists(), "another store of this process keeps its own");
    let own = w.store.stash_dir();
    assert!(own.exists());
    drop(w.store);
    assert!(!own.exists(), "the stash goes with its store");
}

#[test]
fn a_git_checkout_is_rewound_in_the_working_tree() {
    let w = ws();
    let git = |args: &str| {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main {args}"
            ))
            .current_dir(&w.root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args}: {}", String::from_utf8_lossy(&out.stderr));
    };
    std::fs::write(w.root.join("a.txt"), "v1\n").unwrap();
    git("init -q && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm one");
    git(
        "checkout -qb other && echo v2 > a.txt && echo b > b.txt && git add . && git -c user.name=t -c user.email=t@t commit -qm two && git checkout -q main",
    );
    std::fs::write(w.root.join("a.txt"), "v1 with my uncommitted work\n").unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    let lost = w.run("git checkout -q -f other");
    assert!(lost.is_empty(), "{lost:?}");
    assert_eq!(std::fs::read_to_string(w.root.join("a.txt")).unwrap(), "v2\n");
    w.store.restore_code(1).unwrap();
    assert_eq!(
        std::fs::read_to_string(w.root.join("a.txt")).unwrap(),
        "v1 with my uncommitted work\n",
        "the uncommitted work a forced checkout threw away is back"
    );
    assert!(!w.root.join("b.txt").exists());
}

#[test]
fn a_file_a_command_turned_into_a_link_out_is_restored_as_a_file_not_written_through() {
    let w = ws();
    std::fs::write(w.root.join("a.txt"), "mine\n").unwrap();
    std::fs::write(w.outside.join("target"), "outside\n").unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    let cmd = format!("ln -sf {} a.txt", w.outside.join("target").display());
    assert!(w.run(&cmd).is_empty());
    assert!(
        std::fs::symlink_metadata(w.root.join("a.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    w.store.restore_code(1).unwrap();
    let meta = std::fs::symlink_metadata(w.root.join("a.txt")).unwrap();
    assert!(meta.is_file(), "the link itself is replaced");
    assert_eq!(std::fs::read_to_string(w.root.join("a.txt")).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(w.outside.join("target")).unwrap(), "outside\n");
}

#[test]
fn a_file_changed_outside_keel_between_commands_is_copied_again_before_the_next() {
    let w = ws();
    let a = w.root.join("a.txt");
    std::fs::write(&a, "original\n").unwrap();
    w.store.begin(PointKind::Prompt, "go").unwrap();
    w.run("echo other > b.txt");
    // The fingerprint after that command stands for the tree before the next one; the user then
    // edits a.txt in an editor, and the next command changes it again.
    let last = w.fp.snapshot();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&a, "the user's edit\n").unwrap();
    let mut due = w.store.due_before_shell(Some(&last), &HashMap::new(), &[]);
    let a_rel = Path::new("a.txt");
    assert!(
        !due.iter().any(|d| d.rel == a_rel),
        "the fingerprint alone does not show the edit"
    );
    due.extend(w.store.revalidate(&w.root));
    assert!(due.iter().any(|d| d.rel == a_rel));
    w.store.stash_before_shell(&w.root, due);
    std::process::Command::new("sh")
        .args(["-c", "sed -i s/edit/EDIT/ a.txt"])
        .current_dir(&w.root)
        .status()
        .unwrap();
    let c = last.diff(&w.fp.snapshot());
    assert!(
        w.store
            .record_shell(&w.root, &c.added, &c.modified, &c.removed)
            .is_empty()
    );
    let change = w
        .store
        .changes_since(1)
        .into_iter()
        .rev()
        .find(|c| c.path == a)
        .unwrap();
    assert_eq!(
        change.before.hash(),
        Some(crate::checkpoint::hex_hash(b"the user's edit\n").as_str()),
        "the command's change is logged against what the file held, the user's edit kept"
    );
}
