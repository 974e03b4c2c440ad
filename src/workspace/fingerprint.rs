//! A cheap fingerprint of the workspace: one `lstat` per file, no content read.
//!
//! [`Fingerprinter::snapshot`] walks the workspace the way `git status` sees it (`.gitignore`
//! files and `.git/info/exclude` honoured, `.git` itself and well-known cache directories
//! skipped) and records each file's size, modification and change times and inode. Two
//! snapshots tell which files were created, changed or removed in between ([`Snapshot::diff`]);
//! the change time (`ctime`, which no program can set) catches writes that restore the
//! modification time (`cp -p`, `touch -d`) and tells when a file changed
//! ([`Stamp::ctime_ns`]), so the snapshot after one command can stand for the tree before the
//! next. The cost is the file system's: about that of `find` printing the same attributes
//! (`scripts/evidence_bench.sh`, docs/PERFORMANCE.md).
//!
//! A workspace larger than the entry limit gives an *incomplete* snapshot: its diff cannot be
//! trusted to be empty, which callers must treat as "may have changed".

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Files recorded at most; a larger workspace gives an incomplete snapshot.
pub const DEFAULT_LIMIT: usize = 200_000;

/// Directories never walked: version control and the caches that test and build tools write
/// on every run (a test run must not look like a change to the sources).
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".jj",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".hypothesis",
    "node_modules",
    ".gradle",
    ".next",
    ".nyc_output",
    ".turbo",
];

/// What the fingerprint records of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub inode: u64,
}

impl Stamp {
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: meta.len(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            ctime_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
            inode: meta.ino(),
        }
    }
}

/// The state of the workspace's files at one moment, keyed by path relative to the root.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    files: HashMap<PathBuf, Stamp>,
    complete: bool,
}

/// Files that differ between two snapshots (paths relative to the root, sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<PathBuf>,
    pub modified: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    /// One of the snapshots was incomplete: files beyond the limit may have changed unseen.
    pub uncertain: bool,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Every changed path, in order: added, modified, removed.
    pub fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.added.iter().chain(&self.modified).chain(&self.removed)
    }
}

impl Snapshot {
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether every file of the workspace was recorded (the limit was not reached).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    pub fn get(&self, relative: &Path) -> Option<&Stamp> {
        self.files.get(relative)
    }

    /// Every recorded file (relative path) and its stamp, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &Stamp)> {
        self.files.iter()
    }

    /// What changed from `self` (before) to `after`.
    pub fn diff(&self, after: &Snapshot) -> Changes {
        let mut c = Changes {
            uncertain: !self.complete || !after.complete,
            ..Changes::default()
        };
        for (path, stamp) in &after.files {
            match self.files.get(path) {
                None => c.added.push(path.clone()),
                Some(old) if old != stamp => c.modified.push(path.clone()),
                Some(_) => {}
            }
        }
        for path in self.files.keys() {
            if !after.files.contains_key(path) {
                c.removed.push(path.clone());
            }
        }
        c.added.sort();
        c.modified.sort();
        c.removed.sort();
        c
    }

    /// An order-independent digest of the whole snapshot: equal digests mean no file changed
    /// (kept across a resumed session instead of the snapshot itself).
    pub fn digest(&self) -> u64 {
        let mut sum: u64 = self.files.len() as u64;
        for (path, stamp) in &self.files {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            path.hash(&mut h);
            stamp.hash(&mut h);
            // Addition commutes, so the map's iteration order does not matter.
            sum = sum.wrapping_add(h.finish());
        }
        sum
    }
}

/// Takes snapshots of one workspace root.
#[derive(Debug, Clone)]
pub struct Fingerprinter {
    root: PathBuf,
    limit: usize,
    /// Directories left out (keel's own session directory when it lies inside the workspace).
    excluded: Vec<PathBuf>,
}

impl Fingerprinter {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Fingerprinter {
            root: root.into(),
            limit: DEFAULT_LIMIT,
            excluded: Vec::new(),
        }
    }

    /// Leaves `dir` out of every snapshot.
    pub fn excluding(mut self, dir: &Path) -> Self {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        if dir.starts_with(&self.root) {
            self.excluded.push(dir);
        }
        self
    }

    /// Lowers the entry limit (tests, callers with a tighter budget).
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walks the workspace now. Unreadable entries are skipped (they cannot be compared either
    /// way); a missing root gives an empty, complete snapshot.
    pub fn snapshot(&self) -> Snapshot {
        let shared = Shared {
            root: &self.root,
            limit: self.limit,
            collected: Mutex::new(Vec::new()),
            overflow: AtomicBool::new(false),
        };
        let threads = std::thread::available_parallelism()
            .map(|n| n.get().min(4))
            .unwrap_or(1);
        let excluded = self.excluded.clone();
        // A repository can commit `.gitignore` as a link to /dev/zero or a FIFO, which the
        // walker would read forever: such a root is walked without ignore files, such a
        // directory is not entered (and the snapshot says it is incomplete).
        let root_ok = crate::fsutil::walk::bad_ignore_file(&self.root).is_none();
        let parents_ok = self
            .root
            .ancestors()
            .skip(1)
            .all(|d| crate::fsutil::walk::bad_ignore_file(d).is_none());
        let hostile = Arc::new(AtomicBool::new(false));
        let seen_hostile = hostile.clone();
        ignore::WalkBuilder::new(&self.root)
            .hidden(false)
            // git's own rules only: no `.ignore`/`.rgignore` lookups in every directory.
            .ignore(false)
            .git_ignore(root_ok)
            .git_exclude(root_ok)
            .parents(root_ok && parents_ok)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .threads(threads)
            .filter_entry(move |e| {
                if !e.file_type().is_some_and(|t| t.is_dir()) {
                    return true;
                }
                let name = e.file_name().to_str().unwrap_or("");
                if SKIPPED_DIRS.contains(&name) || excluded.iter().any(|x| e.path() == x) {
                    return false;
                }
                if root_ok && e.depth() > 0 && !safe_gitignore(e.path()) {
                    seen_hostile.store(true, Ordering::Relaxed);
                    return false;
                }
                true
            })
            .build_parallel()
            .visit(&mut Builder(&shared));
        let mut complete = !shared.overflow.load(Ordering::Relaxed) && !hostile.load(Ordering::Relaxed);
        let mut files = shared.collected.into_inner().unwrap_or_else(|p| p.into_inner());
        if files.len() > self.limit {
            files.truncate(self.limit);
            complete = false;
        }
        Snapshot {
            files: files.into_iter().collect(),
            complete,
        }
    }
}

/// Whether `dir`'s `.gitignore` is absent or a regular file of sane size (one `stat`).
fn safe_gitignore(dir: &Path) -> bool {
    match std::fs::metadata(dir.join(".gitignore")) {
        Ok(m) => m.is_file() && m.len() <= 1 << 20,
        Err(_) => true,
    }
}

/// What the walker threads share.
struct Shared<'a> {
    root: &'a Path,
    limit: usize,
    collected: Mutex<Vec<(PathBuf, Stamp)>>,
    overflow: AtomicBool,
}

struct Builder<'a, 'b>(&'b Shared<'a>);

impl<'s, 'a: 's, 'b: 's> ignore::ParallelVisitorBuilder<'s> for Builder<'a, 'b> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Collector {
            shared: self.0,
            local: Vec::new(),
        })
    }
}

/// One walker thread's visitor: collects locally and hands its batch over when the thread is
/// done (one lock per thread and per thousand files, not per file).
struct Collector<'a, 'b> {
    shared: &'b Shared<'a>,
    local: Vec<(PathBuf, Stamp)>,
}

impl Collector<'_, '_> {
    fn flush(&mut self) -> usize {
        let mut all = self.shared.collected.lock().unwrap_or_else(|p| p.into_inner());
        all.append(&mut self.local);
        all.len()
    }
}

impl ignore::ParallelVisitor for Collector<'_, '_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        let Ok(entry) = entry else {
            return ignore::WalkState::Continue;
        };
        if entry.file_type().is_none_or(|t| t.is_dir()) {
            return ignore::WalkState::Continue;
        }
        let (Ok(meta), Ok(rel)) = (
            std::fs::symlink_metadata(entry.path()),
            entry.path().strip_prefix(self.shared.root),
        ) else {
            return ignore::WalkState::Continue;
        };
        self.local.push((rel.to_path_buf(), Stamp::of(&meta)));
        if self.local.len() >= 1024 && self.flush() > self.shared.limit {
            self.shared.overflow.store(true, Ordering::Relaxed);
            return ignore::WalkState::Quit;
        }
        ignore::WalkState::Continue
    }
}

impl Drop for Collector<'_, '_> {
    fn drop(&mut self) {
        if !self.local.is_empty() {
            self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_seen_ignored_trees_are_not_and_hostile_ignore_files_are_not_read() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        std::fs::write(root.join("src/b.rs"), "b").unwrap();
        std::fs::write(root.join("build/out.o"), "o").unwrap();
        std::fs::write(root.join("node_modules/x/i.js"), "i").unwrap();
        let fp = Fingerprinter::new(&root);
        let before = fp.snapshot();
        assert!(before.is_complete());
        assert_eq!(before.len(), 3, "src/a.rs, src/b.rs, .gitignore");
        std::fs::write(root.join("src/a.rs"), "A").unwrap();
        std::fs::remove_file(root.join("src/b.rs")).unwrap();
        std::fs::write(root.join("src/c.rs"), "c").unwrap();
        std::fs::write(root.join("build/out.o"), "changed").unwrap();
        let after = fp.snapshot();
        let c = before.diff(&after);
        assert_eq!(c.added, vec![PathBuf::from("src/c.rs")]);
        assert_eq!(c.modified, vec![PathBuf::from("src/a.rs")]);
        assert_eq!(c.removed, vec![PathBuf::from("src/b.rs")]);
        assert_ne!(before.digest(), after.digest());
        assert_eq!(after.digest(), fp.snapshot().digest());
        // Same size, modification time restored: the change time still tells.
        let mtime = std::fs::metadata(root.join("src/a.rs")).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("src/a.rs"), "Z").unwrap();
        std::fs::File::options()
            .write(true)
            .open(root.join("src/a.rs"))
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(after.diff(&fp.snapshot()).modified, vec![PathBuf::from("src/a.rs")]);
        // A `.gitignore` that is a link to /dev/zero would never end: not read, said so.
        std::fs::create_dir_all(root.join("evil")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("evil/.gitignore")).unwrap();
        let s = fp.snapshot();
        assert!(!s.is_complete());
        assert!(s.get(Path::new("src/c.rs")).is_some());
        let evil_root = Fingerprinter::new(root.join("evil")).snapshot();
        assert!(evil_root.is_complete(), "a hostile root is walked without ignore files");
    }
}
