//! What a fingerprint holds: each file's [`Stamp`] keyed by its path relative to the root, how
//! it was taken ([`Detection`]), and the diff of two ([`Snapshot::diff`]).
//!
//! A snapshot is cheap to copy and to keep: its files sit in a shared map (the *base*) plus a
//! small map of what changed since (the *overlay*: a new stamp, or `None` for a removed file).
//! The watcher ([`super::watch`]) hands out one snapshot per command with the same base, so
//! copying one copies the overlay only, and the diff of two with the same base compares their
//! overlays only; a walk of the whole tree gives a new base and an empty overlay. The digest
//! is a sum over the files, kept up to date file by file.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// How a snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detection {
    /// A walk of the whole workspace ([`super::Fingerprinter::snapshot`]).
    #[default]
    Walk,
    /// The watcher's first walk, which also set up its watches.
    Baseline,
    /// The watcher's view brought up to date from the kernel's change notifications: only
    /// `looked_at` paths were looked at again.
    Events { looked_at: usize },
    /// The watcher could not vouch for its view, so the whole workspace was walked.
    Fallback(Fallback),
}

/// Why the watcher walked the whole workspace instead of trusting its notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// The kernel's event queue overflowed: events were lost.
    Overflow,
    /// More changed paths than the watcher keeps track of at once.
    TooManyChanges,
    /// The per-user watch limit (`fs.inotify.max_user_watches`) was reached; the watcher is off
    /// for the session.
    WatchLimit,
    /// A `.gitignore`, a `.git` entry or an exclude file changed: which files count may change.
    IgnoreRules,
    /// The tree is beyond the entry limit or holds an ignore file keel does not read, so every
    /// snapshot is a partial walk anyway.
    Incomplete,
    /// The root was removed, moved or unmounted, or a file system under it was.
    RootChanged,
    /// Change notification is unavailable (no inotify instance left) or its events could not
    /// be read; the watcher is off for the session.
    Unavailable,
    /// The tree lies (partly) on a network or FUSE file system, whose changes made elsewhere the
    /// kernel does not report; the watcher is off for the session.
    RemoteFileSystem,
    /// Something the watcher's model could not place (a directory reachable by two paths, a
    /// file in a directory it holds no watch on).
    Uncertain,
}

impl Fallback {
    pub fn describe(self) -> &'static str {
        match self {
            Fallback::Overflow => "the kernel's change queue overflowed",
            Fallback::TooManyChanges => "too many paths changed at once",
            Fallback::WatchLimit => "the inotify watch limit (fs.inotify.max_user_watches) was reached",
            Fallback::IgnoreRules => "an ignore file or a .git entry changed",
            Fallback::Incomplete => "the workspace is fingerprinted in part",
            Fallback::RootChanged => "the workspace root or a mount under it changed",
            Fallback::Unavailable => "change notification is unavailable",
            Fallback::RemoteFileSystem => "the workspace is on a network or FUSE file system",
            Fallback::Uncertain => "a change could not be placed",
        }
    }
}

/// The state of the workspace's files at one moment, keyed by path relative to the root.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    base: Arc<HashMap<PathBuf, Stamp>>,
    /// Changes since `base`: a new stamp, or `None` for a file no longer there.
    overlay: Arc<HashMap<PathBuf, Option<Stamp>>>,
    len: usize,
    /// The sum of the files' hashes (the digest without the count).
    sum: u64,
    complete: bool,
    detection: Detection,
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

/// One file's share of the digest.
fn entry_hash(path: &Path, stamp: &Stamp) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    stamp.hash(&mut h);
    h.finish()
}

/// Above this many overlay entries (and an eighth of the base) the overlay is folded into a new
/// base: copying a snapshot and diffing two stay proportional to what changed lately.
const FOLD_AT: usize = 2048;

impl Snapshot {
    /// A snapshot of walked files.
    pub(super) fn from_files(files: Vec<(PathBuf, Stamp)>, complete: bool) -> Snapshot {
        let mut sum = 0u64;
        for (path, stamp) in &files {
            // Addition commutes, so the order of the files does not matter.
            sum = sum.wrapping_add(entry_hash(path, stamp));
        }
        let base: HashMap<PathBuf, Stamp> = files.into_iter().collect();
        Snapshot {
            len: base.len(),
            base: Arc::new(base),
            overlay: Arc::default(),
            sum,
            complete,
            detection: Detection::Walk,
        }
    }

    pub(super) fn with_detection(mut self, detection: Detection) -> Snapshot {
        self.detection = detection;
        self
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether every file of the workspace was recorded (the limit was not reached).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// How this snapshot was taken (a walk, the watcher's notifications, a fallback and why).
    pub fn detection(&self) -> Detection {
        self.detection
    }

    pub fn get(&self, relative: &Path) -> Option<&Stamp> {
        match self.overlay.get(relative) {
            Some(changed) => changed.as_ref(),
            None => self.base.get(relative),
        }
    }

    /// Every recorded file (relative path) and its stamp, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &Stamp)> {
        let overlay = &self.overlay;
        overlay
            .iter()
            .filter_map(|(p, s)| s.as_ref().map(|s| (p, s)))
            .chain(self.base.iter().filter(move |(p, _)| !overlay.contains_key(*p)))
    }

    /// Records `path`'s stamp now (`None`: gone); whether that changed anything.
    pub(super) fn set(&mut self, path: &Path, stamp: Option<Stamp>) -> bool {
        let old = self.get(path).copied();
        if old == stamp {
            return false;
        }
        if let Some(old) = &old {
            self.sum = self.sum.wrapping_sub(entry_hash(path, old));
            self.len -= 1;
        }
        if let Some(new) = &stamp {
            self.sum = self.sum.wrapping_add(entry_hash(path, new));
            self.len += 1;
        }
        let overlay = Arc::make_mut(&mut self.overlay);
        if self.base.get(path).copied() == stamp {
            overlay.remove(path);
        } else {
            overlay.insert(path.to_path_buf(), stamp);
        }
        true
    }

    /// Folds a large overlay into a new base (one copy of the map, now and then).
    pub(super) fn fold_if_large(&mut self) {
        if self.overlay.len() <= FOLD_AT || self.overlay.len() * 8 <= self.base.len() {
            return;
        }
        let overlay = std::mem::take(&mut self.overlay);
        let base = Arc::make_mut(&mut self.base);
        for (path, stamp) in overlay.iter() {
            match stamp {
                Some(s) => base.insert(path.clone(), *s),
                None => base.remove(path),
            };
        }
    }

    /// What changed from `self` (before) to `after`.
    pub fn diff(&self, after: &Snapshot) -> Changes {
        let mut c = Changes {
            uncertain: !self.complete || !after.complete,
            ..Changes::default()
        };
        let mut note = |path: &PathBuf, old: Option<&Stamp>, new: Option<&Stamp>| match (old, new) {
            (None, Some(_)) => c.added.push(path.clone()),
            (Some(o), Some(n)) if o != n => c.modified.push(path.clone()),
            (Some(_), None) => c.removed.push(path.clone()),
            _ => {}
        };
        if Arc::ptr_eq(&self.base, &after.base) {
            // Both from the same watcher: only paths in an overlay can differ.
            if !Arc::ptr_eq(&self.overlay, &after.overlay) {
                for path in after.overlay.keys() {
                    note(path, self.get(path), after.get(path));
                }
                for path in self.overlay.keys().filter(|p| !after.overlay.contains_key(*p)) {
                    note(path, self.get(path), after.get(path));
                }
            }
        } else {
            for (path, stamp) in after.iter() {
                note(path, self.get(path), Some(stamp));
            }
            for (path, stamp) in self.iter() {
                if after.get(path).is_none() {
                    note(path, Some(stamp), None);
                }
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
        (self.len as u64).wrapping_add(self.sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(n: i64) -> Stamp {
        Stamp {
            size: n as u64,
            mtime_ns: n,
            ctime_ns: n,
            inode: n as u64,
        }
    }

    #[test]
    fn an_overlay_answers_like_a_walk_and_its_digest_matches() {
        let files = |v: &[(&str, i64)]| v.iter().map(|(p, n)| (PathBuf::from(p), stamp(*n))).collect::<Vec<_>>();
        let before = Snapshot::from_files(files(&[("a", 1), ("b", 2), ("c", 3)]), true);
        let mut live = before.clone();
        assert!(live.set(Path::new("a"), Some(stamp(10))));
        assert!(live.set(Path::new("b"), None));
        assert!(live.set(Path::new("d"), Some(stamp(4))));
        assert!(!live.set(Path::new("c"), Some(stamp(3))), "unchanged");
        let walked = Snapshot::from_files(files(&[("a", 10), ("c", 3), ("d", 4)]), true);
        assert_eq!(live.digest(), walked.digest());
        assert_eq!(live.len(), 3);
        for s in [&live, &walked] {
            let c = before.diff(s);
            assert_eq!(c.added, vec![PathBuf::from("d")]);
            assert_eq!(c.modified, vec![PathBuf::from("a")]);
            assert_eq!(c.removed, vec![PathBuf::from("b")]);
        }
        assert!(live.diff(&walked).is_empty());
        let mut listed: Vec<_> = live.iter().map(|(p, s)| (p.clone(), *s)).collect();
        listed.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(listed, files(&[("a", 10), ("c", 3), ("d", 4)]));
        // Restoring a file's old stamp empties its overlay entry; the diff sees no change.
        assert!(live.set(Path::new("b"), Some(stamp(2))));
        let c = before.diff(&live);
        assert!(c.paths().all(|p| p != Path::new("b")), "{c:?}");
        assert_eq!(
            live.digest(),
            Snapshot::from_files(files(&[("a", 10), ("b", 2), ("c", 3), ("d", 4)]), true).digest()
        );
    }

    #[test]
    fn folding_keeps_the_content_and_the_digest() {
        let n = 4 * FOLD_AT;
        let files: Vec<_> = (0..n)
            .map(|i| (PathBuf::from(format!("f{i}")), stamp(i as i64)))
            .collect();
        let before = Snapshot::from_files(files, true);
        let mut live = before.clone();
        for i in 0..(FOLD_AT + 10) {
            live.set(Path::new(&format!("f{i}")), Some(stamp(-(i as i64) - 1)));
        }
        let digest = live.digest();
        live.fold_if_large();
        assert!(live.overlay.is_empty());
        assert_eq!(live.digest(), digest);
        assert_eq!(before.diff(&live).modified.len(), FOLD_AT + 10);
        assert_eq!(live.get(Path::new("f0")), Some(&stamp(-1)));
        assert_eq!(live.get(Path::new(&format!("f{}", n - 1))), Some(&stamp(n as i64 - 1)));
    }
}
