use super::*;
use std::process::{Command, Stdio};
use std::time::Duration;

pub(crate) fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// A repository on branch `trunk` in `dir` (created if need be) with `files` committed.
pub(crate) fn committed_repo(dir: &Path, files: &[(&str, &[u8])]) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "trunk"]);
    for (rel, bytes) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "one"]);
}

#[test]
fn snapshot_of_a_real_repository() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    git(dir, &["init", "-q", "-b", "trunk"]);
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    git(dir, &["add", "a.txt"]);
    git(dir, &["commit", "-q", "-m", "first commit"]);
    std::fs::write(dir.join("a.txt"), "changed\n").unwrap();
    std::fs::write(dir.join("new.txt"), "n\n").unwrap();
    let snap = snapshot(dir).expect("a repository");
    assert_eq!(snap.branch, "trunk");
    assert_eq!(snap.status, vec![" M a.txt", "?? new.txt"]);
    assert_eq!(snap.recent_commits.len(), 1);
    assert!(snap.recent_commits[0].ends_with("first commit"));
    let text = snap.render();
    assert!(text.contains("- Branch: trunk"), "{text}");
    assert!(text.contains("?? new.txt"), "{text}");
    assert_eq!(head_branch(&dir.join("sub/dir")), Some("trunk".into()));
    git(dir, &["checkout", "-q", "--detach"]);
    assert_eq!(head_branch(dir), None);
}

/// A repository whose configuration names programs for every hook git has; each writes a
/// marker. A plain `git status` runs the filter (the fixture works); keel's snapshot runs
/// none of them.
#[test]
fn the_snapshot_runs_no_program_the_repository_names() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let marker = dir.join("ran");
    git(dir, &["init", "-q", "-b", "trunk"]);
    std::fs::write(dir.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
    let plant = |what: &str| format!("sh -c 'echo {what} >> \"{}\"; cat'", marker.display());
    git(dir, &["config", "filter.x.clean", &plant("clean")]);
    git(dir, &["config", "filter.x.smudge", &plant("smudge")]);
    git(dir, &["config", "filter.x.required", "true"]);
    git(dir, &["config", "diff.x.textconv", &plant("textconv")]);
    git(dir, &["config", "core.fsmonitor", &plant("fsmonitor")]);
    git(dir, &["config", "core.pager", &plant("pager")]);
    git(dir, &["config", "log.showSignature", "true"]);
    git(dir, &["config", "gpg.program", &plant("gpg")]);
    git(dir, &["config", "trace2.normalTarget", &marker.display().to_string()]);
    let touch = || {
        // Same content, new mtime: git must read the file again, through its clean filter.
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    };
    touch();
    let plain = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["status", "--short"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap();
    assert!(plain.status.success());
    assert!(
        marker.exists(),
        "the fixture must make a plain git status run the filter"
    );
    std::fs::remove_file(&marker).unwrap();
    touch();
    let snap = snapshot(dir).expect("a snapshot despite the hostile configuration");
    assert_eq!(snap.branch, "trunk");
    assert_eq!(snap.recent_commits.len(), 1);
    assert!(
        !marker.exists(),
        "keel's snapshot ran a repository program: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

#[test]
fn no_snapshot_where_git_cannot_run() {
    let t = tempfile::tempdir().unwrap();
    assert!(snapshot(&t.path().join("does-not-exist")).is_none());
}

/// `git status` printing more than a pipe holds (64 KiB) while keel waits for it to exit: the
/// output must be read as it comes, or git blocks until the timeout and the snapshot is lost.
#[test]
fn a_status_longer_than_the_pipe_buffer_is_read_whole() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    git(dir, &["init", "-q", "-b", "trunk"]);
    std::fs::write(dir.join("README"), "r\n").unwrap();
    git(dir, &["add", "README"]);
    git(dir, &["commit", "-q", "-m", "first"]);
    // 2,000 untracked files with 60-character names: about 126 KB of status.
    for i in 0..2000 {
        std::fs::write(
            dir.join(format!("untracked-file-with-a-rather-long-name-number-{i:06}.txt")),
            "",
        )
        .unwrap();
    }
    let started = std::time::Instant::now();
    let snap = snapshot(dir).expect("a snapshot of a repository with a long status");
    assert_eq!(snap.status.len(), MAX_STATUS_LINES);
    assert_eq!(snap.more_status, 2000 - MAX_STATUS_LINES);
    assert_eq!(snap.recent_commits.len(), 1);
    // Not a timing assertion: a snapshot that waited for the timeout would have been `None`.
    assert!(started.elapsed() < runner::GIT_TIMEOUT, "{:?}", started.elapsed());
}

/// Writes a driver program that notes each run in `marker`, and a repository whose attributes
/// send every file through filter and diff driver `x`.
fn hostile_repository(dir: &Path, marker: &Path) {
    git(dir, &["init", "-q", "-b", "trunk"]);
    std::fs::write(dir.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
    std::fs::write(dir.join("lib.rs"), "#[test]\nfn t() { assert!(true); }\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
    let plant = |what: &str| format!("sh -c 'echo {what} >> \"{}\"; tr a-z A-Z'", marker.display());
    git(dir, &["config", "filter.x.clean", &plant("clean")]);
    git(dir, &["config", "filter.x.smudge", &plant("smudge")]);
    git(dir, &["config", "filter.x.required", "true"]);
    git(
        dir,
        &[
            "config",
            "diff.x.textconv",
            &format!("sh -c 'echo textconv >> \"{}\"; cat \"$0\"'", marker.display()),
        ],
    );
}

/// The committed content comes from `git cat-file blob`, which runs neither the repository's
/// filters nor its textconv: the bytes are the blob's, and no program of the repository ran.
#[test]
fn the_committed_content_is_the_blob_and_runs_no_driver() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("repo");
    std::fs::create_dir(&dir).unwrap();
    let marker = t.path().join("ran");
    hostile_repository(&dir, &marker);
    let blob = committed(&dir, "lib.rs", 1 << 20).expect("the committed file");
    assert_eq!(blob, b"#[test]\nfn t() { assert!(true); }\n");
    assert!(
        !marker.exists(),
        "reading the committed content ran a repository program: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    assert_eq!(committed(&dir, "missing.rs", 1 << 20), None);
    assert_eq!(committed(&dir, "lib.rs", 8), None, "over the cap: no content");
    // The kept `cat-file --batch` reads the same bytes and runs nothing either.
    let blobs = Blobs::new(&dir);
    assert_eq!(blobs.committed("lib.rs", 1 << 20).as_deref(), Some(&blob[..]));
    assert_eq!(blobs.committed("missing.rs", 1 << 20), None);
    assert!(!marker.exists(), "the batch ran a repository program");
    // The fixture is live: asking git for the filtered or the converted content runs them.
    let plain = Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["cat-file", "--textconv", "HEAD:lib.rs"])
        .output()
        .unwrap();
    assert!(plain.status.success());
    assert!(
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .contains("textconv"),
        "the fixture's textconv should run when asked for"
    );
}

/// In a partial clone a blob missing locally would be fetched from the promisor remote (its
/// transport run, the network waited on); keel's read does without it instead.
#[test]
fn a_blob_a_partial_clone_lacks_is_not_fetched() {
    let t = tempfile::tempdir().unwrap();
    let origin = t.path().join("origin");
    std::fs::create_dir(&origin).unwrap();
    git(&origin, &["init", "-q", "-b", "trunk"]);
    std::fs::write(origin.join("lib.rs"), "fn main() {}\n").unwrap();
    git(&origin, &["add", "."]);
    git(&origin, &["commit", "-q", "-m", "first"]);
    git(&origin, &["config", "uploadpack.allowFilter", "true"]);
    let clone = t.path().join("clone");
    let url = format!("file://{}", origin.display());
    git(
        t.path(),
        &[
            "clone",
            "-q",
            "--filter=blob:none",
            "--no-checkout",
            &url,
            clone.to_str().unwrap(),
        ],
    );
    let missing = |dir: &Path| {
        !Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["cat-file", "-e", "HEAD:lib.rs"])
            .env("GIT_NO_LAZY_FETCH", "1")
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    assert!(missing(&clone), "the fixture: the clone holds no blob");
    assert_eq!(committed(&clone, "lib.rs", 1 << 20), None);
    assert!(missing(&clone), "keel's read fetched the blob from the promisor remote");
    assert_eq!(Blobs::new(&clone).committed("lib.rs", 1 << 20), None);
    assert!(
        missing(&clone),
        "the kept batch fetched the blob from the promisor remote"
    );
}

/// Builds an index of `n` entries (all the same empty blob, absent from the working tree)
/// without writing `n` files, and commits it.
pub(crate) fn large_index(dir: &Path, n: u32) {
    git(dir, &["init", "-q", "-b", "trunk"]);
    let hash = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["hash-object", "-w", "--stdin"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let oid = String::from_utf8(hash.stdout).unwrap().trim().to_string();
    let list: String = (0..n).map(|i| format!("100644 {oid}\tfiles/f{i}\n")).collect();
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["update-index", "--index-info"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(list.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    git(dir, &["commit", "-q", "-m", "many files"]);
}

#[test]
fn a_large_repository_is_snapshotted_in_the_background() {
    let t = tempfile::tempdir().unwrap();
    let small = t.path().join("small");
    std::fs::create_dir(&small).unwrap();
    large_index(&small, 3);
    assert_eq!(index_entries(&small), Some(3));
    assert!(
        matches!(start(&small), Start::Now(Some(_))),
        "an ordinary repository is waited for"
    );
    let dir = t.path().join("large");
    std::fs::create_dir(&dir).unwrap();
    large_index(&dir, LARGE_INDEX + 1);
    assert_eq!(index_entries(&dir.join("files")), Some(LARGE_INDEX + 1));
    let Start::Later(pending) = start(&dir) else {
        panic!("a large repository's snapshot must not be waited for");
    };
    let other = pending.clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !pending.is_done() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background snapshot never finished"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let snap = other.peek().expect("a snapshot");
    assert_eq!(snap.branch, "trunk");
    // Every entry is missing from the working tree: a status far over the pipe's size.
    assert_eq!(snap.more_status as u32, LARGE_INDEX + 1 - MAX_STATUS_LINES as u32);
    assert_eq!(pending.take(), Some(snap.clone()), "handed out once");
    assert_eq!(other.take(), None, "and only once, whichever clone asks");
    assert_eq!(other.peek(), Some(snap), "still there to look at");
}

/// A background snapshot's git processes end with the thread that started them (with keel).
#[test]
fn a_tied_process_dies_with_the_thread_that_started_it() {
    let child = std::thread::spawn(|| {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        die_with_parent(&mut cmd);
        cmd.spawn().unwrap()
    })
    .join()
    .unwrap();
    let mut child = child;
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
}

/// Outside a repository no git process is started for the snapshot: only a `.git` at or above
/// the directory, or `GIT_DIR`, can make one.
#[test]
fn outside_a_repository_git_is_not_asked() {
    let t = tempfile::tempdir().unwrap();
    let sub = t.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    assert!(!may_be_repository(&sub, false));
    assert!(may_be_repository(&sub, true));
    std::fs::write(t.path().join("a/.git"), "gitdir: elsewhere\n").unwrap();
    assert!(
        may_be_repository(&sub, false),
        "a .git file (worktree, submodule) counts"
    );
    std::fs::remove_file(t.path().join("a/.git")).unwrap();
    std::fs::create_dir(t.path().join(".git")).unwrap();
    assert!(may_be_repository(&sub, false));
}

/// The stamp of `HEAD` stays while nothing moves it and changes with a commit, a checkout of
/// another branch and a detached head.
#[test]
fn the_head_stamp_follows_commits_and_checkouts() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    assert!(head_stamp(dir).is_none(), "no repository");
    committed_repo(dir, &[("a.txt", b"a\n")]);
    let first = head_stamp(dir).expect("a stamp");
    std::fs::write(dir.join("a.txt"), "b\n").unwrap();
    assert_eq!(
        head_stamp(dir).as_ref(),
        Some(&first),
        "an uncommitted change moves nothing"
    );
    git(dir, &["commit", "-q", "-am", "two"]);
    let second = head_stamp(dir).expect("a stamp");
    assert_ne!(second, first);
    // A branch only in the packed refs is stamped by that file; a commit writes a loose ref.
    git(dir, &["pack-refs", "--all"]);
    let packed = head_stamp(dir).expect("a stamp of a packed branch");
    assert_eq!(head_stamp(dir).as_ref(), Some(&packed));
    git(dir, &["commit", "-q", "--allow-empty", "-m", "three"]);
    let third = head_stamp(dir).expect("a stamp");
    assert!(third != packed && third != second);
    git(dir, &["checkout", "-q", "-b", "side"]);
    let side = head_stamp(dir).expect("a stamp");
    assert_ne!(side, third);
    git(dir, &["checkout", "-q", "--detach", "HEAD~1"]);
    let detached = head_stamp(dir).expect("a stamp");
    assert!(detached != side && detached != first);
}

/// A `HEAD` whose stamp could not follow a move is unknown, never equal: a symbolic ref chain
/// is followed, `ref:` without a space is read as git reads it, and a hostile ref name, a git
/// directory git would not take, or a `HEAD` that is no ref and no id give no stamp.
#[test]
fn the_head_stamp_is_unknown_rather_than_wrong() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    committed_repo(dir, &[("a.txt", b"a\n")]);
    let git_dir = dir.join(".git");
    // `ref:` without the space, through a branch that is itself a symbolic ref.
    git(dir, &["symbolic-ref", "refs/heads/alias", "refs/heads/trunk"]);
    std::fs::write(git_dir.join("HEAD"), "ref:refs/heads/alias\n").unwrap();
    let before = head_stamp(dir).expect("a stamp through the chain");
    git(dir, &["commit", "-q", "--allow-empty", "-m", "two"]);
    assert_ne!(
        head_stamp(dir).expect("a stamp"),
        before,
        "a commit on the chain's end is seen"
    );
    for hostile in [
        "ref: ../../etc/passwd\n",
        "ref: /etc/passwd\n",
        "ref: refs/../../x\n",
        "garbage\n",
    ] {
        std::fs::write(git_dir.join("HEAD"), hostile).unwrap();
        assert!(head_stamp(dir).is_none(), "{hostile:?}");
    }
    // A `.git` of only a HEAD is no repository to git.
    let fake = tempfile::tempdir().unwrap();
    std::fs::create_dir(fake.path().join(".git")).unwrap();
    std::fs::write(fake.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    assert!(head_stamp(fake.path()).is_none());
}

/// A linked worktree's `HEAD` is its own, its refs are the main repository's.
#[test]
fn the_head_stamp_of_a_linked_worktree_follows_its_commits() {
    let t = tempfile::tempdir().unwrap();
    let main = t.path().join("main");
    committed_repo(&main, &[("a.txt", b"a\n")]);
    let linked = t.path().join("linked");
    git(
        &main,
        &["worktree", "add", "-q", "-b", "side", linked.to_str().unwrap()],
    );
    let before = head_stamp(&linked).expect("a stamp in the worktree");
    assert_ne!(
        Some(before.clone()),
        head_stamp(&main),
        "each worktree has its own HEAD"
    );
    git(&linked, &["commit", "-q", "--allow-empty", "-m", "two"]);
    assert_ne!(head_stamp(&linked).expect("a stamp"), before);
}
