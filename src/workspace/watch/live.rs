//! One watched tree: the inotify descriptor, the map of watched directories, the snapshot kept
//! current, and the update that brings it up to date after a command.
//!
//! An update reads every queued event (the descriptor is non-blocking: it reads until the
//! queue is empty), turns them into a set of dirty paths, and then looks at those paths only:
//! a file the snapshot holds is `lstat`ed again; anything else (a new name, a directory, a name
//! that became a directory) is walked again from the root with the walk limited to it
//! ([`Scope`]), so the ignore rules apply as in a whole walk. Files with several links are
//! `lstat`ed at every update (a write through a name outside the tree reaches no watch here).
//! Anything the events cannot vouch for makes the update walk the whole tree instead, with the
//! watches set up again ([`Live::rebaseline`]); the reasons are [`Fallback`]s.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, InotifyEvent, WatchDescriptor};

use super::Limits;
use super::sources::{Sources, remote};
use super::tree::Tree;
use crate::workspace::fingerprint::{EnterHook, Fingerprinter, Scope, WalkPlan};
use crate::workspace::snapshot::{Detection, Fallback, Snapshot, Stamp};

/// Files with several links re-read at every update at most; beyond, every update walks.
const MAX_LINKED: usize = 10_000;

/// What a watch reports: every change to a name in the directory (contents, attributes and
/// times, creation, removal, renames both ways) and the directory's own removal or move.
fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// The watcher cannot go on: why, and a walk of the whole tree when one was already made.
pub(super) struct Off {
    pub why: Fallback,
    pub walked: Option<Snapshot>,
}

impl From<Fallback> for Off {
    fn from(why: Fallback) -> Off {
        Off { why, walked: None }
    }
}

/// How an update that cannot use its events goes on.
enum Step {
    Rebaseline(Fallback),
    Off(Fallback),
}

pub(super) struct Live {
    fp: Fingerprinter,
    limits: Limits,
    inotify: Arc<Inotify>,
    root_dev: u64,
    cancel: Arc<AtomicBool>,
    tree: Tree,
    snap: Snapshot,
    linked: HashSet<PathBuf>,
    sources: Sources,
    /// Why the next update must walk the whole tree (the tree could not be mapped, is walked
    /// in part, or its root is missing).
    stale: Option<Fallback>,
    /// No update since the first walk.
    fresh: bool,
    /// Watches set up by a walk whose tree could not be mapped (removed at the next one unless
    /// it hands them out again).
    loose: Vec<WatchDescriptor>,
}

impl Live {
    /// Sets up the watches and takes the first snapshot.
    pub(super) fn start(fp: Fingerprinter, limits: Limits, cancel: Arc<AtomicBool>) -> Result<Live, Fallback> {
        let root_meta = std::fs::metadata(fp.root());
        if root_meta.is_ok() && remote(fp.root()) {
            return Err(Fallback::RemoteFileSystem);
        }
        let inotify =
            Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).map_err(|_| Fallback::Unavailable)?;
        let mut live = Live {
            root_dev: root_meta.map(|m| m.dev()).unwrap_or(0),
            sources: Sources::default(),
            fp,
            limits,
            inotify: Arc::new(inotify),
            cancel,
            tree: Tree::default(),
            snap: Snapshot::default(),
            linked: HashSet::new(),
            stale: None,
            fresh: true,
            loose: Vec::new(),
        };
        live.rebaseline(Detection::Baseline).map_err(|off| off.why)?;
        Ok(live)
    }

    /// The tree now: the last snapshot brought up to date with the events since.
    pub(super) fn update(&mut self) -> Result<Snapshot, Off> {
        let fresh = std::mem::replace(&mut self.fresh, false);
        if let Some(why) = self.stale.take() {
            return self.rebaseline(Detection::Fallback(why));
        }
        let mut dirty = HashSet::new();
        if let Some(why) = self.drain(&mut dirty)? {
            return self.rebaseline(Detection::Fallback(why));
        }
        if self.sources.changed() {
            return self.rebaseline(Detection::Fallback(Fallback::IgnoreRules));
        }
        let idle = dirty.is_empty() && self.linked.is_empty();
        let looked_at = match self.apply(dirty) {
            Ok(n) => n,
            Err(Step::Rebaseline(why)) => return self.rebaseline(Detection::Fallback(why)),
            Err(Step::Off(why)) => return Err(why.into()),
        };
        if self.snap.len() > self.fp.limit() {
            return self.rebaseline(Detection::Fallback(Fallback::Incomplete));
        }
        if self.linked.len() > MAX_LINKED {
            self.stale = Some(Fallback::TooManyChanges);
        }
        self.snap.fold_if_large();
        let detection = if fresh && idle {
            Detection::Baseline
        } else {
            Detection::Events { looked_at }
        };
        Ok(self.snap.clone().with_detection(detection))
    }

    /// Reads every queued event into `dirty`. The command has ended when this runs: the kernel
    /// queues an event inside the system call that causes it, so every change the command made
    /// is queued by now, and reading until the descriptor would block sees them all.
    fn drain(&mut self, dirty: &mut HashSet<PathBuf>) -> Result<Option<Fallback>, Off> {
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) => events,
                Err(Errno::EAGAIN) => return Ok(None),
                Err(Errno::EINTR) => continue,
                Err(_) => return Err(Fallback::Unavailable.into()),
            };
            if events.is_empty() {
                return Ok(None);
            }
            for e in events {
                if let Some(why) = self.note(e, dirty) {
                    return Ok(Some(why));
                }
            }
        }
    }

    /// One event: the path it names becomes dirty, or the reason the events cannot be trusted.
    fn note(&mut self, e: InotifyEvent, dirty: &mut HashSet<PathBuf>) -> Option<Fallback> {
        if e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
            return Some(Fallback::Overflow);
        }
        if e.mask.contains(AddWatchFlags::IN_IGNORED) {
            self.tree.forget(e.wd);
            return None;
        }
        // A watch already given up (its directory moved out, was removed, became ignored):
        // what it still reported happened before the walk that replaced it.
        let dir = self.tree.dir_of(e.wd)?;
        if e.mask.contains(AddWatchFlags::IN_UNMOUNT) {
            return Some(Fallback::RootChanged);
        }
        let Some(name) = e.name else {
            // The directory itself: its parent's watch reports it by name, but nothing reports
            // the root's.
            let gone = AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF;
            return (self.tree.is_root(e.wd) && e.mask.intersects(gone)).then_some(Fallback::RootChanged);
        };
        if name == ".gitignore" || name == ".git" {
            return Some(Fallback::IgnoreRules);
        }
        if dirty.len() >= self.limits.max_dirty {
            return Some(Fallback::TooManyChanges);
        }
        dirty.insert(dir.join(name));
        None
    }

    /// Brings the snapshot up to date for `dirty`; how many paths were looked at.
    fn apply(&mut self, dirty: HashSet<PathBuf>) -> Result<usize, Step> {
        let root = self.fp.root().to_path_buf();
        let mut targets: HashSet<PathBuf> = HashSet::new();
        let mut known: Vec<PathBuf> = self.linked.iter().filter(|p| !dirty.contains(*p)).cloned().collect();
        for p in dirty {
            if self.tree.is_dir(&p) || self.snap.get(&p).is_none() {
                targets.insert(p);
            } else {
                known.push(p);
            }
        }
        let looked_at = known.len() + targets.len();
        let mut new_inodes = HashSet::new();
        self.restat(&root, known, &mut targets, &mut new_inodes)?;
        if !targets.is_empty() {
            self.walk_targets(&root, targets, &mut new_inodes)?;
        }
        if !new_inodes.is_empty() {
            // A file that gained a link: its other names here have a new change time too.
            let others: Vec<PathBuf> = self
                .snap
                .iter()
                .filter(|(p, s)| new_inodes.contains(&s.inode) && !self.linked.contains(*p))
                .map(|(p, _)| p.clone())
                .collect();
            let mut more = HashSet::new();
            self.restat(&root, others, &mut HashSet::new(), &mut more)?;
        }
        Ok(looked_at)
    }

    /// One `lstat` for each file the snapshot holds; one that became a directory joins
    /// `targets`; the inodes of files that newly have several links go to `new_inodes`.
    fn restat(
        &mut self,
        root: &Path,
        files: Vec<PathBuf>,
        targets: &mut HashSet<PathBuf>,
        new_inodes: &mut HashSet<u64>,
    ) -> Result<(), Step> {
        for p in files {
            match std::fs::symlink_metadata(root.join(&p)) {
                Ok(m) if m.is_dir() => {
                    targets.insert(p);
                }
                Ok(m) => {
                    let changed = self.snap.set(&p, Some(Stamp::of(&m)));
                    // A linked `.gitignore` written through another name.
                    if changed && p.file_name().is_some_and(|n| n == ".gitignore") {
                        return Err(Step::Rebaseline(Fallback::IgnoreRules));
                    }
                    if m.nlink() > 1 {
                        if self.linked.insert(p) {
                            new_inodes.insert(m.ino());
                        }
                    } else {
                        self.linked.remove(&p);
                    }
                }
                // Gone, or no longer reachable: a walk would not list it either.
                Err(_) => self
                    .tree
                    .remove(&p, &mut self.snap, &mut self.linked, &mut HashSet::new()),
            }
        }
        Ok(())
    }

    /// Takes the targets out of the tree and walks them again, watching the directories found.
    fn walk_targets(
        &mut self,
        root: &Path,
        targets: HashSet<PathBuf>,
        new_inodes: &mut HashSet<u64>,
    ) -> Result<(), Step> {
        let mut orphans = HashSet::new();
        for t in &targets {
            self.tree.remove(t, &mut self.snap, &mut self.linked, &mut orphans);
        }
        let watching = self.watching(self.tree.watch_count());
        let walked = self.fp.walk(WalkPlan {
            scope: Some(Arc::new(Scope::new(targets))),
            enter: Some(Watching::hook(&watching)),
            record: true,
        });
        let placed = self.place(&watching, walked.files, walked.complete);
        if placed.is_err() {
            for wd in orphans.drain() {
                let _ = self.inotify.rm_watch(wd);
            }
        }
        placed?;
        self.tree.reclaimed(&mut orphans);
        for wd in orphans {
            let _ = self.inotify.rm_watch(wd);
        }
        for d in walked.git_dirs {
            self.sources.add_git_dir(&root.join(d));
        }
        for l in walked.ignore_links {
            self.sources.watch(root.join(l));
        }
        for p in walked.linked {
            if let Some(s) = self.snap.get(&p) {
                new_inodes.insert(s.inode);
            }
            self.linked.insert(p);
        }
        Ok(())
    }

    /// Puts what a scoped walk found into the tree and the snapshot.
    fn place(&mut self, watching: &Watching, files: Vec<(PathBuf, Stamp)>, complete: bool) -> Result<(), Step> {
        if let Some(why) = watching.failure() {
            return Err(Step::Off(why));
        }
        // A new directory with an ignore file keel does not read, or past the entry limit.
        if !complete {
            return Err(Step::Rebaseline(Fallback::Incomplete));
        }
        let mut dirs = watching.take_found();
        dirs.sort_by_key(|(p, _)| p.components().count());
        for (rel, wd) in dirs {
            self.tree.add_dir(rel, wd).map_err(Step::Rebaseline)?;
        }
        for (rel, stamp) in files {
            self.tree.add_name(&rel).map_err(Step::Rebaseline)?;
            self.snap.set(&rel, Some(stamp));
        }
        Ok(())
    }

    /// Walks the whole tree, setting every watch up again (a watch kept is handed out again
    /// with its number); the watches of directories no longer in it are removed.
    fn rebaseline(&mut self, why: Detection) -> Result<Snapshot, Off> {
        if let Detection::Fallback(f) = why {
            tracing::debug!(root = %self.fp.root().display(), reason = f.describe(), "workspace watcher walks the whole tree");
        }
        self.discard_events()?;
        let root = self.fp.root().to_path_buf();
        let root_wd = match self.inotify.add_watch(&root, mask()) {
            Ok(wd) => Some(wd),
            Err(Errno::ENOSPC) => return Err(Fallback::WatchLimit.into()),
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::EACCES) => None,
            Err(_) => return Err(Fallback::Unavailable.into()),
        };
        let watching = self.watching(1);
        let walked = self.fp.walk(WalkPlan {
            scope: None,
            enter: Some(Watching::hook(&watching)),
            record: true,
        });
        if let Some(f) = watching.failure() {
            let snap = Snapshot::from_files(walked.files, walked.complete);
            return Err(Off {
                why: f,
                walked: Some(snap.with_detection(Detection::Fallback(f))),
            });
        }
        let found = watching.take_found();
        let mut loose: Vec<WatchDescriptor> = found.iter().map(|(_, wd)| *wd).chain(root_wd).collect();
        let built = match root_wd {
            Some(wd) => Tree::build(wd, found, &walked.files),
            None => Err(Fallback::RootChanged),
        };
        let snap = Snapshot::from_files(walked.files, walked.complete);
        let old = std::mem::take(&mut self.tree);
        let mut stale = None;
        self.tree = match built {
            Ok(tree) => {
                loose.clear();
                tree
            }
            Err(f) => {
                stale = Some(f);
                Tree::default()
            }
        };
        // Watches of directories this walk did not enter (moved out, now ignored).
        let kept: HashSet<WatchDescriptor> = self.tree.watches().chain(loose.iter().copied()).collect();
        let before: Vec<WatchDescriptor> = old.watches().chain(std::mem::take(&mut self.loose)).collect();
        for wd in before.into_iter().filter(|wd| !kept.contains(wd)) {
            let _ = self.inotify.rm_watch(wd);
        }
        self.loose = loose;
        self.sources = Sources::above(&root);
        for d in walked.git_dirs {
            self.sources.add_git_dir(&root.join(d));
        }
        for l in walked.ignore_links {
            self.sources.watch(root.join(l));
        }
        self.linked = walked.linked.into_iter().collect();
        if self.linked.len() > MAX_LINKED {
            stale = stale.or(Some(Fallback::TooManyChanges));
        }
        if !snap.is_complete() {
            stale = stale.or(Some(Fallback::Incomplete));
        }
        self.stale = stale;
        self.snap = snap;
        Ok(self.snap.clone().with_detection(why))
    }

    /// Empties the queue before a whole walk (the walk sees what the events said, and events
    /// arriving during it are read at the next update).
    fn discard_events(&mut self) -> Result<(), Off> {
        // A bound, for a tree changing faster than it can be read: what is left is read at the
        // next update, where it costs a few `lstat`s.
        for _ in 0..100_000 {
            match self.inotify.read_events() {
                Ok(events) if !events.is_empty() => {}
                Ok(_) | Err(Errno::EAGAIN) => return Ok(()),
                Err(Errno::EINTR) => {}
                Err(_) => return Err(Fallback::Unavailable.into()),
            }
        }
        Ok(())
    }

    fn watching(&self, watches: usize) -> Arc<Watching> {
        Arc::new(Watching {
            inotify: self.inotify.clone(),
            root: self.fp.root().to_path_buf(),
            root_dev: self.root_dev,
            max: self.limits.max_watches,
            watches,
            cancel: self.cancel.clone(),
            found: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
        })
    }

    #[cfg(test)]
    pub(super) fn watch_count(&self) -> usize {
        self.tree.watch_count()
    }

    #[cfg(test)]
    pub(super) fn sources_len(&self) -> usize {
        self.sources.len()
    }
}

/// The walk's side of the watches: each directory is watched before the walk reads it, so a
/// change made after the walk listed it is reported, and one made before is listed.
struct Watching {
    inotify: Arc<Inotify>,
    root: PathBuf,
    root_dev: u64,
    max: Option<usize>,
    /// Watches held before this walk.
    watches: usize,
    cancel: Arc<AtomicBool>,
    found: Mutex<Vec<(PathBuf, WatchDescriptor)>>,
    failure: Mutex<Option<Fallback>>,
}

impl Watching {
    fn hook(this: &Arc<Watching>) -> EnterHook {
        let w = this.clone();
        Arc::new(move |dir: &Path| w.enter(dir))
    }

    fn enter(&self, dir: &Path) -> bool {
        if self.cancel.load(Ordering::Relaxed) {
            return false;
        }
        // After a failure the walk goes on: it stands for this command.
        if self.failure().is_some() {
            return true;
        }
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.dev() != self.root_dev) && remote(dir) {
            self.fail(Fallback::RemoteFileSystem);
            return true;
        }
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        if self.max.is_some_and(|max| self.watches + found.len() >= max) {
            drop(found);
            self.fail(Fallback::WatchLimit);
            return true;
        }
        match self.inotify.add_watch(dir, mask()) {
            Ok(wd) => {
                let rel = dir.strip_prefix(&self.root).unwrap_or(dir).to_path_buf();
                found.push((rel, wd));
            }
            Err(Errno::ENOSPC) => {
                drop(found);
                self.fail(Fallback::WatchLimit);
            }
            // Gone already (its parent's watch reports it), or not readable (nor listable).
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::EACCES) => {}
            Err(_) => {
                drop(found);
                self.fail(Fallback::Unavailable);
            }
        }
        true
    }

    fn fail(&self, why: Fallback) {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(why);
    }

    fn failure(&self) -> Option<Fallback> {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take_found(&self) -> Vec<(PathBuf, WatchDescriptor)> {
        std::mem::take(&mut *self.found.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
