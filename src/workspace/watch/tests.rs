//! The watcher against real files in temporary directories: every snapshot it hands out must
//! equal a walk of the whole tree taken at the same moment, and say how it was taken.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::workspace::snapshot::Stamp;

fn rel(p: &str) -> PathBuf {
    PathBuf::from(p)
}

fn write(root: &Path, p: &str, text: &str) {
    let path = root.join(p);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    fp: Fingerprinter,
    w: Watcher,
}

fn ws(limits: Limits, setup: impl FnOnce(&Path)) -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    setup(&root);
    let fp = Fingerprinter::new(&root);
    Ws::at(dir, root, fp, limits)
}

impl Ws {
    fn at(dir: tempfile::TempDir, root: PathBuf, fp: Fingerprinter, limits: Limits) -> Ws {
        Ws {
            _dir: dir,
            root,
            w: Watcher::start(fp.clone(), limits),
            fp,
        }
    }

    /// The watcher's snapshot, checked against a walk of the whole tree right after it.
    fn snap(&self) -> Snapshot {
        let s = self.w.snapshot();
        let walked = self.fp.snapshot();
        let d = s.diff(&walked);
        assert!(
            d.is_empty(),
            "the watcher's view differs from a walk: {d:?} ({:?})",
            s.detection()
        );
        assert_eq!(s.digest(), walked.digest());
        assert_eq!(s.len(), walked.len());
        assert_eq!(s.is_complete(), walked.is_complete());
        s
    }

    /// A snapshot that must have come from the events alone.
    fn by_events(&self) -> Snapshot {
        let s = self.snap();
        assert!(matches!(s.detection(), Detection::Events { .. }), "{:?}", s.detection());
        s
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p)
    }
}

fn project(root: &Path) {
    write(root, ".gitignore", "build/\n*.log\n!keep.log\n");
    write(root, "src/a.rs", "a");
    write(root, "src/b.rs", "b");
    write(root, "src/deep/c.rs", "c");
    write(root, "docs/guide.md", "guide");
    write(root, "sub/.gitignore", "tmp/\n");
    write(root, "sub/x.py", "x");
}

/// Sets `path`'s modification time to `stamp`'s with `touch -d` (as a command would).
fn touch_back(path: &Path, stamp: &Stamp) {
    let secs = stamp.mtime_ns.div_euclid(1_000_000_000);
    let nanos = stamp.mtime_ns.rem_euclid(1_000_000_000);
    let st = std::process::Command::new("touch")
        .arg("-d")
        .arg(format!("@{secs}.{nanos:09}"))
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn creates_in_place_writes_renames_and_removals_are_seen_from_events() {
    let t = ws(Limits::default(), project);
    let first = t.snap();
    assert_eq!(first.detection(), Detection::Baseline);
    assert_eq!(first.len(), 7);
    assert!(t.w.watch_count() >= 5, "root, src, src/deep, docs, sub");

    // Nothing happened: nothing looked at, the same content.
    let idle = t.by_events();
    assert_eq!(idle.detection(), Detection::Events { looked_at: 0 });
    assert!(first.diff(&idle).is_empty());

    write(&t.root, "src/new.rs", "new");
    std::fs::write(t.path("src/a.rs"), "A").unwrap();
    std::fs::remove_file(t.path("src/b.rs")).unwrap();
    let s = t.by_events();
    let c = idle.diff(&s);
    assert_eq!(c.added, vec![rel("src/new.rs")]);
    assert_eq!(c.modified, vec![rel("src/a.rs")]);
    assert_eq!(c.removed, vec![rel("src/b.rs")]);

    // Same size, modification time set back with `touch -d`: the change time tells.
    let old = *s.get(Path::new("src/a.rs")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(t.path("src/a.rs"), "Z").unwrap();
    touch_back(&t.path("src/a.rs"), &old);
    let now = std::fs::symlink_metadata(t.path("src/a.rs")).unwrap();
    assert_eq!(
        (Stamp::of(&now).size, Stamp::of(&now).mtime_ns),
        (old.size, old.mtime_ns)
    );
    let in_place = t.by_events();
    assert_eq!(s.diff(&in_place).modified, vec![rel("src/a.rs")]);
    // Only an attribute: the change time moves.
    std::thread::sleep(Duration::from_millis(20));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(t.path("src/a.rs"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let chmodded = t.by_events();
    assert_eq!(in_place.diff(&chmodded).modified, vec![rel("src/a.rs")]);
    let in_place = chmodded;

    // Renames within a directory and across directories.
    std::fs::rename(t.path("src/a.rs"), t.path("src/renamed.rs")).unwrap();
    std::fs::rename(t.path("docs/guide.md"), t.path("src/deep/guide.md")).unwrap();
    let moved = t.by_events();
    let c = in_place.diff(&moved);
    assert_eq!(c.added, vec![rel("src/deep/guide.md"), rel("src/renamed.rs")]);
    assert_eq!(c.removed, vec![rel("docs/guide.md"), rel("src/a.rs")]);

    // A new directory tree with files, an ignored file, a kept exception, an ignored new
    // directory under an existing rule, a skipped cache directory.
    write(&t.root, "lib/one/two/three.rs", "3");
    write(&t.root, "lib/one/four.rs", "4");
    write(&t.root, "lib/run.log", "ignored");
    write(&t.root, "lib/keep.log", "kept");
    write(&t.root, "build/out/x.o", "ignored");
    write(&t.root, "sub/tmp/cache.bin", "ignored");
    write(&t.root, "sub/node_modules/m/index.js", "skipped");
    let grown = t.by_events();
    let c = moved.diff(&grown);
    assert_eq!(
        c.added,
        vec![rel("lib/keep.log"), rel("lib/one/four.rs"), rel("lib/one/two/three.rs")]
    );
    // The new directories are watched: a change deep in them is seen.
    std::fs::write(t.path("lib/one/two/three.rs"), "33").unwrap();
    write(&t.root, "lib/one/two/five.rs", "5");
    let deeper = t.by_events();
    let c = grown.diff(&deeper);
    assert_eq!(c.added, vec![rel("lib/one/two/five.rs")]);
    assert_eq!(c.modified, vec![rel("lib/one/two/three.rs")]);
    // Nothing under the ignored directories was watched: writing there is no event at all.
    write(&t.root, "build/out/y.o", "ignored");
    write(&t.root, "sub/tmp/more.bin", "ignored");
    assert_eq!(t.by_events().detection(), Detection::Events { looked_at: 0 });

    // Removing a whole directory tree.
    std::fs::remove_dir_all(t.path("lib")).unwrap();
    let pruned = t.by_events();
    assert_eq!(deeper.diff(&pruned).removed.len(), 4);
}

#[test]
fn a_new_ignore_file_walks_again_and_hides_what_it_ignores() {
    let t = ws(Limits::default(), project);
    let before = t.snap();
    // In a new directory: the walk of that directory reads it like any walk.
    write(&t.root, "gen/out.txt", "generated");
    write(&t.root, "gen/.gitignore", "*\n");
    let s = t.by_events();
    assert!(s.get(Path::new("gen/out.txt")).is_none());
    assert!(before.diff(&s).is_empty(), "everything new is ignored");
    // In a watched directory: what it ignores may have been counted, so the whole tree.
    write(&t.root, "src/x.tmp", "temporary");
    write(&t.root, "src/.gitignore", "*.tmp\n");
    let s = t.snap();
    assert_eq!(s.detection(), Detection::Fallback(Fallback::IgnoreRules));
    assert!(s.get(Path::new("src/x.tmp")).is_none());
    assert!(s.get(Path::new("src/.gitignore")).is_some());
    // A rule changed in place: the walk again.
    std::fs::write(t.path(".gitignore"), "build/\n").unwrap();
    write(&t.root, "x.log", "now kept");
    let s = t.snap();
    assert_eq!(s.detection(), Detection::Fallback(Fallback::IgnoreRules));
    assert!(s.get(Path::new("x.log")).is_some());
    // And then events again, with the watches set up anew.
    write(&t.root, "y.log", "kept too");
    assert!(t.by_events().get(Path::new("y.log")).is_some());
}

#[test]
fn exclude_files_and_parent_ignore_files_outside_the_watches_are_noticed() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    write(&top, ".gitignore", "secret/\n");
    let root = top.join("ws");
    write(&root, ".git/info/exclude", "private/\n");
    write(&root, "secret/a", "a");
    write(&root, "private/b", "b");
    write(&root, "open/c", "c");
    let t = Ws::at(dir, root, Fingerprinter::new(top.join("ws")), Limits::default());
    let s = t.snap();
    assert_eq!(s.len(), 1, "only open/c: {:?}", s.iter().collect::<Vec<_>>());
    assert!(t.w.sources_len() > 0);
    std::fs::write(t.path(".git/info/exclude"), "").unwrap();
    let s = t.snap();
    assert_eq!(s.detection(), Detection::Fallback(Fallback::IgnoreRules));
    assert!(s.get(Path::new("private/b")).is_some());
    std::fs::write(top.join(".gitignore"), "").unwrap();
    let s = t.snap();
    assert_eq!(s.detection(), Detection::Fallback(Fallback::IgnoreRules));
    assert!(s.get(Path::new("secret/a")).is_some());
    assert_eq!(t.by_events().len(), 3);
}

#[test]
fn directories_moved_within_into_and_out_of_the_tree_are_followed() {
    let t = ws(Limits::default(), project);
    let outside = t.root.parent().unwrap().join("outside");
    write(&outside, "pkg/inner/m.rs", "m");
    let s0 = t.snap();

    std::fs::rename(t.path("src"), t.path("moved")).unwrap();
    let s1 = t.by_events();
    assert_eq!(s0.diff(&s1).added.len(), 3);
    // The moved directories kept their watches under the new names.
    std::fs::write(t.path("moved/deep/c.rs"), "cc").unwrap();
    let s2 = t.by_events();
    assert_eq!(s1.diff(&s2).modified, vec![rel("moved/deep/c.rs")]);

    // Out of the tree: its files leave, and what happens to them there is no change here.
    std::fs::rename(t.path("moved"), outside.join("moved")).unwrap();
    let s3 = t.by_events();
    assert_eq!(s2.diff(&s3).removed.len(), 3);
    std::fs::write(outside.join("moved/deep/c.rs"), "ccc").unwrap();
    write(&outside, "moved/deep/new.rs", "n");
    assert_eq!(t.by_events().detection(), Detection::Events { looked_at: 0 });

    // Into the tree: its files arrive and are watched from now on.
    std::fs::rename(outside.join("pkg"), t.path("pkg")).unwrap();
    let s4 = t.by_events();
    assert_eq!(s3.diff(&s4).added, vec![rel("pkg/inner/m.rs")]);
    write(&t.root, "pkg/inner/n.rs", "n");
    assert_eq!(s4.diff(&t.by_events()).added, vec![rel("pkg/inner/n.rs")]);

    // A file replaced by a directory and back.
    std::fs::remove_file(t.path("sub/x.py")).unwrap();
    write(&t.root, "sub/x.py/inside.py", "i");
    let s5 = t.by_events();
    assert!(s5.get(Path::new("sub/x.py/inside.py")).is_some());
    std::fs::remove_dir_all(t.path("sub/x.py")).unwrap();
    write(&t.root, "sub/x.py", "file again");
    assert!(t.by_events().get(Path::new("sub/x.py")).is_some());
}

#[test]
fn hard_links_are_read_again_at_every_update() {
    let t = ws(Limits::default(), |root| {
        project(root);
        let outside = root.parent().unwrap().join("elsewhere");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::hard_link(root.join("src/a.rs"), outside.join("a-link")).unwrap();
    });
    let outside = t.root.parent().unwrap().join("elsewhere");
    let s0 = t.snap();
    // A write through the name outside the tree reaches no watch here.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(outside.join("a-link"), "written elsewhere").unwrap();
    let s1 = t.by_events();
    assert_eq!(s0.diff(&s1).modified, vec![rel("src/a.rs")]);
    // A link made inside the tree: the new name is created, the old one's change time moves.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::hard_link(t.path("src/deep/c.rs"), t.path("docs/c-link.rs")).unwrap();
    let s2 = t.by_events();
    let c = s1.diff(&s2);
    assert_eq!(c.added, vec![rel("docs/c-link.rs")]);
    assert_eq!(c.modified, vec![rel("src/deep/c.rs")]);
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(t.path("docs/c-link.rs"), "through the second name").unwrap();
    let s3 = t.by_events();
    assert_eq!(s2.diff(&s3).modified, vec![rel("docs/c-link.rs"), rel("src/deep/c.rs")]);
}

#[test]
fn over_the_watch_limit_every_snapshot_is_a_walk_that_sees_every_change() {
    // Five directories to watch, room for three.
    let t = ws(
        Limits {
            max_watches: Some(3),
            ..Limits::default()
        },
        project,
    );
    let s0 = t.snap();
    assert_eq!(s0.detection(), Detection::Fallback(Fallback::WatchLimit));
    assert_eq!(t.w.off(), Some(Fallback::WatchLimit));
    assert_eq!(t.w.watch_count(), 0, "no watches kept once off");
    let old = *s0.get(Path::new("src/a.rs")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(t.path("src/a.rs"), "Z").unwrap();
    touch_back(&t.path("src/a.rs"), &old);
    write(&t.root, "src/deep/new.rs", "n");
    std::fs::remove_file(t.path("sub/x.py")).unwrap();
    write(&t.root, "build/ignored.o", "o");
    let s1 = t.snap();
    assert_eq!(s1.detection(), Detection::Fallback(Fallback::WatchLimit));
    let c = s0.diff(&s1);
    assert_eq!(c.added, vec![rel("src/deep/new.rs")]);
    assert_eq!(c.modified, vec![rel("src/a.rs")]);
    assert_eq!(c.removed, vec![rel("sub/x.py")]);
}

#[test]
fn reaching_the_watch_limit_with_new_directories_switches_to_walks() {
    let t = ws(
        Limits {
            max_watches: Some(6),
            ..Limits::default()
        },
        project,
    );
    let s0 = t.snap();
    assert_eq!(s0.detection(), Detection::Baseline);
    write(&t.root, "n1/a", "a");
    write(&t.root, "n2/b", "b");
    write(&t.root, "n3/c", "c");
    let s1 = t.snap();
    assert_eq!(s1.detection(), Detection::Fallback(Fallback::WatchLimit));
    assert_eq!(s0.diff(&s1).added, vec![rel("n1/a"), rel("n2/b"), rel("n3/c")]);
    write(&t.root, "n3/d", "d");
    let s2 = t.snap();
    assert_eq!(s2.detection(), Detection::Fallback(Fallback::WatchLimit));
    assert_eq!(s1.diff(&s2).added, vec![rel("n3/d")]);
}

#[test]
fn an_overflowing_kernel_queue_falls_back_to_a_walk_and_then_recovers() {
    let t = ws(Limits::default(), project);
    let s0 = t.snap();
    // Writes alternating between two files are never merged into one event: one event each,
    // past the kernel's queue length.
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    use std::os::unix::fs::FileExt;
    let a = std::fs::File::create(t.path("src/flood-a")).unwrap();
    let b = std::fs::File::create(t.path("src/flood-b")).unwrap();
    for i in 0..queue + 100 {
        let f = if i % 2 == 0 { &a } else { &b };
        f.write_at(b"x", 0).unwrap();
    }
    drop((a, b));
    write(&t.root, "docs/after.md", "after");
    let s1 = t.snap();
    assert_eq!(s1.detection(), Detection::Fallback(Fallback::Overflow));
    assert_eq!(
        s0.diff(&s1).added,
        vec![rel("docs/after.md"), rel("src/flood-a"), rel("src/flood-b")]
    );
    // The watches were set up again: events are trusted again.
    write(&t.root, "docs/later.md", "later");
    assert_eq!(s1.diff(&t.by_events()).added, vec![rel("docs/later.md")]);
}

#[test]
fn too_many_changed_paths_fall_back_to_a_walk() {
    let t = ws(
        Limits {
            max_dirty: 10,
            ..Limits::default()
        },
        project,
    );
    let s0 = t.snap();
    for i in 0..25 {
        write(&t.root, &format!("src/f{i}.rs"), "f");
    }
    let s1 = t.snap();
    assert_eq!(s1.detection(), Detection::Fallback(Fallback::TooManyChanges));
    assert_eq!(s0.diff(&s1).added.len(), 25);
    write(&t.root, "src/one-more.rs", "f");
    assert_eq!(s1.diff(&t.by_events()).added, vec![rel("src/one-more.rs")]);
}

#[test]
fn a_hostile_ignore_file_in_a_new_directory_makes_snapshots_partial_walks() {
    let t = ws(Limits::default(), project);
    t.snap();
    std::fs::create_dir_all(t.path("evil")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", t.path("evil/.gitignore")).unwrap();
    let s = t.snap();
    assert!(!s.is_complete());
    assert_eq!(s.detection(), Detection::Fallback(Fallback::Incomplete));
    let s = t.snap();
    assert_eq!(s.detection(), Detection::Fallback(Fallback::Incomplete));
    std::fs::remove_file(t.path("evil/.gitignore")).unwrap();
    let s = t.snap();
    assert!(s.is_complete());
}

#[test]
fn the_excluded_directory_and_a_removed_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    project(&root);
    std::fs::create_dir_all(root.join(".keel/session")).unwrap();
    let fp = Fingerprinter::new(&root).excluding(&root.join(".keel/session"));
    let t = Ws::at(dir, root, fp, Limits::default());
    let s0 = t.snap();
    write(&t.root, ".keel/session/log.jsonl", "keel's own");
    write(&t.root, ".keel/other", "the project's");
    assert_eq!(s0.diff(&t.by_events()).added, vec![rel(".keel/other")]);

    let away = t.root.with_file_name("away");
    std::fs::rename(&t.root, &away).unwrap();
    let gone = t.snap();
    assert!(gone.is_empty());
    assert_eq!(gone.detection(), Detection::Fallback(Fallback::RootChanged));
    // What happens to the tree where it went is not this workspace's.
    write(&away, "src/elsewhere.rs", "e");
    assert!(t.snap().is_empty());
    std::fs::remove_dir_all(&away).unwrap();
    project(&t.root);
    let back = t.snap();
    assert_eq!(back.detection(), Detection::Fallback(Fallback::RootChanged));
    assert_eq!(back.len(), 7);
    write(&t.root, "src/z.rs", "z");
    assert!(t.by_events().get(Path::new("src/z.rs")).is_some());
}

#[test]
fn one_watcher_per_tree_is_shared_and_the_first_walk_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    project(&root);
    let a = Watcher::shared(Fingerprinter::new(&root));
    let b = Watcher::shared(Fingerprinter::new(&root));
    assert!(Arc::ptr_eq(&a, &b));
    let other = Watcher::shared(Fingerprinter::new(&root).excluding(&root.join("src")));
    assert!(!Arc::ptr_eq(&a, &other));
    a.wait_ready();
    assert!(a.is_ready());
    let s = b.snapshot();
    assert_eq!(s.len(), 7);
    drop((a, b));
    let c = Watcher::shared(Fingerprinter::new(&root));
    assert!(!Arc::ptr_eq(&c, &other));
}
