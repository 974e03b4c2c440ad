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
//! (`scripts/evidence_bench.sh`, docs/PERFORMANCE.md). The watcher ([`super::watch`]) runs the
//! same walk once and then only over the paths the kernel reports changed ([`Scope`]), so both
//! see the same files.
//!
//! A workspace larger than the entry limit gives an *incomplete* snapshot: its diff cannot be
//! trusted to be empty, which callers must treat as "may have changed".

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use super::snapshot::{Changes, Snapshot, Stamp};

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

/// Takes snapshots of one workspace root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprinter {
    root: PathBuf,
    limit: usize,
    /// Directories left out (keel's own session directory when it lies inside the workspace).
    excluded: Vec<PathBuf>,
}

/// The part of the tree a walk looks at (the watcher's changed paths): each target with
/// everything below it, reached through the directories on the way, whose other entries are
/// passed over. The walk still starts at the root, so ignore rules apply exactly as in a walk
/// of the whole tree.
#[derive(Debug, Default)]
pub(crate) struct Scope {
    targets: HashSet<PathBuf>,
    through: HashSet<PathBuf>,
}

impl Scope {
    /// A scope over `targets` (paths relative to the root; the root itself is no target).
    pub(crate) fn new(targets: impl IntoIterator<Item = PathBuf>) -> Scope {
        let mut scope = Scope::default();
        for t in targets {
            let mut up = t.parent();
            while let Some(dir) = up.filter(|d| !d.as_os_str().is_empty()) {
                if !scope.through.insert(dir.to_path_buf()) {
                    break;
                }
                up = dir.parent();
            }
            scope.targets.insert(t);
        }
        scope
    }

    /// Whether the walk takes `rel`: `Some(true)` for a directory only on the way to a target
    /// (entered, but already watched and its other entries passed over).
    fn admits(&self, rel: &Path, is_dir: bool) -> Option<bool> {
        if rel.ancestors().any(|a| self.targets.contains(a)) {
            return Some(false);
        }
        (is_dir && self.through.contains(rel)).then_some(true)
    }
}

/// A directory the walk is about to enter (absolute path), told before it is read; `false`
/// keeps the walk out of it (only for a walk whose result is not wanted any more).
pub(crate) type EnterHook = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// What one walk is asked for beyond the files' stamps (the watcher's needs).
#[derive(Default)]
pub(crate) struct WalkPlan {
    pub scope: Option<Arc<Scope>>,
    pub enter: Option<EnterHook>,
    /// Also note files with several links, `.git` entries and linked `.gitignore` files.
    pub record: bool,
}

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub files: Vec<(PathBuf, Stamp)>,
    /// Files with more than one link: a write through another name reaches none of the
    /// watches on this tree.
    pub linked: Vec<PathBuf>,
    /// Directories holding a `.git` entry (their exclude files lie outside the watches).
    pub git_dirs: Vec<PathBuf>,
    /// `.gitignore` files that are symbolic links (their targets may lie outside the tree).
    pub ignore_links: Vec<PathBuf>,
    pub complete: bool,
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

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Walks the workspace now. Unreadable entries are skipped (they cannot be compared either
    /// way); a missing root gives an empty, complete snapshot.
    pub fn snapshot(&self) -> Snapshot {
        let walked = self.walk(WalkPlan::default());
        Snapshot::from_files(walked.files, walked.complete)
    }

    /// The walk behind every snapshot: the whole tree, or only `plan.scope`.
    pub(crate) fn walk(&self, plan: WalkPlan) -> Walked {
        let collected = Mutex::new(Walked::default());
        let shared = Shared {
            root: &self.root,
            limit: self.limit,
            record: plan.record,
            collected: &collected,
            overflow: AtomicBool::new(false),
        };
        // A scoped walk is small: one thread saves starting more.
        let threads = match plan.scope {
            Some(_) => 1,
            None => crate::fsutil::walk::cores().min(4),
        };
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
        let git_dirs = Arc::new(Mutex::new(Vec::new()));
        let seen_git = git_dirs.clone();
        let root = self.root.clone();
        let WalkPlan { scope, enter, record } = plan;
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
            // Called for entries the ignore rules let through, before a directory is read.
            .filter_entry(move |e| {
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
                let mut on_the_way = false;
                if let Some(scope) = &scope {
                    match scope.admits(rel, is_dir) {
                        Some(through) => on_the_way = through,
                        None => return false,
                    }
                }
                let name = e.file_name().to_str().unwrap_or("");
                if record && name == ".git" {
                    let dir = rel.parent().unwrap_or(Path::new("")).to_path_buf();
                    seen_git.lock().unwrap_or_else(|p| p.into_inner()).push(dir);
                }
                if !is_dir {
                    return true;
                }
                if SKIPPED_DIRS.contains(&name) || excluded.iter().any(|x| e.path() == x) {
                    return false;
                }
                if root_ok && e.depth() > 0 && !safe_gitignore(e.path()) {
                    seen_hostile.store(true, Ordering::Relaxed);
                    return false;
                }
                on_the_way || enter.as_ref().is_none_or(|enter| enter(e.path()))
            })
            .build_parallel()
            .visit(&mut Builder(&shared));
        let overflow = shared.overflow.load(Ordering::Relaxed);
        let mut walked = collected.into_inner().unwrap_or_else(|p| p.into_inner());
        walked.complete = !overflow && !hostile.load(Ordering::Relaxed);
        if walked.files.len() > self.limit {
            walked.files.truncate(self.limit);
            walked.complete = false;
        }
        walked.git_dirs = std::mem::take(&mut *git_dirs.lock().unwrap_or_else(|p| p.into_inner()));
        walked
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
    record: bool,
    collected: &'a Mutex<Walked>,
    overflow: AtomicBool,
}

struct Builder<'a, 'b>(&'b Shared<'a>);

impl<'s, 'a: 's, 'b: 's> ignore::ParallelVisitorBuilder<'s> for Builder<'a, 'b> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Collector {
            shared: self.0,
            local: Walked::default(),
        })
    }
}

/// One walker thread's visitor: collects locally and hands its batch over when the thread is
/// done (one lock per thread and per thousand files, not per file).
struct Collector<'a, 'b> {
    shared: &'b Shared<'a>,
    local: Walked,
}

impl Collector<'_, '_> {
    fn flush(&mut self) -> usize {
        let mut all = self.shared.collected.lock().unwrap_or_else(|p| p.into_inner());
        all.files.append(&mut self.local.files);
        all.linked.append(&mut self.local.linked);
        all.ignore_links.append(&mut self.local.ignore_links);
        all.files.len()
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
        if self.shared.record {
            if meta.nlink() > 1 && !meta.is_dir() {
                self.local.linked.push(rel.to_path_buf());
            }
            if meta.file_type().is_symlink() && entry.file_name() == ".gitignore" {
                self.local.ignore_links.push(rel.to_path_buf());
            }
        }
        self.local.files.push((rel.to_path_buf(), Stamp::of(&meta)));
        if self.local.files.len() >= 1024 && self.flush() > self.shared.limit {
            self.shared.overflow.store(true, Ordering::Relaxed);
            return ignore::WalkState::Quit;
        }
        ignore::WalkState::Continue
    }
}

impl Drop for Collector<'_, '_> {
    fn drop(&mut self) {
        if !self.local.files.is_empty() {
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
