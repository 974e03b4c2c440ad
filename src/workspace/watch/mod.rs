//! Incremental change detection: the workspace's fingerprint kept current from the kernel's
//! change notifications (inotify) instead of a walk of every file after every command.
//!
//! A [`Watcher`] walks the tree once in the background — the same walk as
//! [`Fingerprinter::snapshot`], same ignore rules, same limits — watching each directory it
//! enters before reading it. From then on [`Watcher::snapshot`] reads the queued events, looks
//! again at the paths they name (an `lstat` for a known file, a walk limited to a new or
//! changed directory) and hands out the snapshot brought up to date, in time proportional to
//! what changed. The guarantees are the walk's: an event is queued for every write, truncation,
//! attribute or time change (`touch -d` restoring a modification time included), creation,
//! removal and rename of a name in a watched directory, and the `lstat` after it records the
//! change time no program can set.
//!
//! When the events cannot vouch for the tree, the snapshot is a walk of the whole tree and
//! says why ([`Detection::Fallback`]): the kernel's queue overflowed, too many paths changed,
//! an ignore file or `.git` entry changed (or one outside the watches: the exclude files, the
//! parents' ignore files, a `.gitignore` link's target), the tree is beyond the entry limit,
//! the root went away, something could not be placed. Those walks set the watches up again; the
//! watch limit (`fs.inotify.max_user_watches`), a network or FUSE file system, or no inotify
//! at all switch the watcher off for the session: every snapshot is then a walk.
//!
//! What no watch on this tree hears of, so neither does the watcher (a walk would): a write
//! through a hard link whose other name lies outside the tree and that was made after keel
//! last `lstat`ed the file (files known to have several links are `lstat`ed at every update),
//! and a write through a shared memory mapping after its file descriptor was closed, by a
//! process still running after the command.
//!
//! One watcher per tree and process ([`Watcher::shared`]): a session's sub-agents share their
//! parent's through the evidence ledger; the inotify descriptor is closed, and every watch with
//! it, when the last user drops it.

mod live;
mod sources;
mod tree;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use live::Live;

use super::fingerprint::Fingerprinter;
use super::snapshot::{Detection, Fallback, Snapshot};

/// Bounds of one watcher (lowered in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Watches at most, below the kernel's own limit (`None`: the kernel's only).
    pub max_watches: Option<usize>,
    /// Changed paths kept between two snapshots at most; more make the next one a walk.
    pub max_dirty: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_watches: None,
            max_dirty: 50_000,
        }
    }
}

enum Phase {
    /// The first walk is running in the background.
    Starting,
    Live(Box<Live>),
    /// Every snapshot is a walk, for this reason.
    Off(Fallback),
}

struct Shared {
    fp: Fingerprinter,
    limits: Limits,
    phase: Mutex<Phase>,
    started: Condvar,
    ready: AtomicBool,
    /// The watcher was dropped: a first walk still running stops.
    cancel: Arc<AtomicBool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn begin(&self) {
        // The first walk yields the processor to start-up and to the session's own work (the
        // walker's threads, started from this one, inherit the priority).
        // SAFETY: setpriority takes three integers; `0` is the calling thread on Linux.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
        }
        let phase = match Live::start(self.fp.clone(), self.limits, self.cancel.clone()) {
            Ok(live) => Phase::Live(Box::new(live)),
            Err(why) => {
                tracing::debug!(root = %self.fp.root().display(), reason = why.describe(), "workspace watcher off");
                Phase::Off(why)
            }
        };
        *self.lock() = phase;
        self.ready.store(true, Ordering::Release);
        self.started.notify_all();
    }
}

/// Keeps one tree's fingerprint current; see the module documentation.
pub struct Watcher {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("root", &self.shared.fp.root())
            .finish_non_exhaustive()
    }
}

/// The watchers alive in this process, by what they watch.
static WATCHERS: Mutex<Vec<(Fingerprinter, Weak<Watcher>)>> = Mutex::new(Vec::new());

impl Watcher {
    /// Starts watching `fp`'s tree: the first walk runs on a thread of its own, so nothing
    /// waits for it but the first snapshot taken before it is done.
    pub fn start(fp: Fingerprinter, limits: Limits) -> Watcher {
        let shared = Arc::new(Shared {
            fp,
            limits,
            phase: Mutex::new(Phase::Starting),
            started: Condvar::new(),
            ready: AtomicBool::new(false),
            cancel: Arc::new(AtomicBool::new(false)),
        });
        let background = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("keel-watch".into())
            .spawn(move || background.begin());
        if spawned.is_err() {
            *shared.lock() = Phase::Off(Fallback::Unavailable);
            shared.ready.store(true, Ordering::Release);
        }
        Watcher { shared }
    }

    /// The watcher of `fp`'s tree in this process, started if there is none: everything that
    /// fingerprints the same tree the same way shares one inotify descriptor and one first walk.
    pub fn shared(fp: Fingerprinter) -> Arc<Watcher> {
        let mut all = WATCHERS.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|(_, w)| w.strong_count() > 0);
        if let Some(w) = all.iter().find(|(k, _)| *k == fp).and_then(|(_, w)| w.upgrade()) {
            return w;
        }
        let w = Arc::new(Watcher::start(fp.clone(), Limits::default()));
        all.push((fp, Arc::downgrade(&w)));
        w
    }

    pub fn root(&self) -> &std::path::Path {
        self.shared.fp.root()
    }

    /// Whether the first walk is done (a snapshot now does not wait for it).
    pub fn is_ready(&self) -> bool {
        self.shared.ready.load(Ordering::Acquire)
    }

    /// Blocks until the first walk is done.
    pub fn wait_ready(&self) {
        drop(self.settled());
    }

    fn settled(&self) -> MutexGuard<'_, Phase> {
        let mut phase = self.shared.lock();
        while matches!(*phase, Phase::Starting) {
            phase = self.shared.started.wait(phase).unwrap_or_else(|p| p.into_inner());
        }
        phase
    }

    /// The tree now. Blocking: waits for the first walk if it is still running, then reads the
    /// events since the last snapshot (or walks the whole tree, saying why).
    pub fn snapshot(&self) -> Snapshot {
        let mut phase = self.settled();
        let why = match &mut *phase {
            Phase::Live(live) => match live.update() {
                Ok(snapshot) => return snapshot,
                Err(off) => {
                    tracing::debug!(root = %self.root().display(), reason = off.why.describe(), "workspace watcher off");
                    *phase = Phase::Off(off.why);
                    if let Some(walked) = off.walked {
                        return walked;
                    }
                    off.why
                }
            },
            Phase::Off(why) => *why,
            Phase::Starting => Fallback::Unavailable,
        };
        drop(phase);
        self.shared.fp.snapshot().with_detection(Detection::Fallback(why))
    }

    /// Why every snapshot is a walk, when the watcher is off (`None` while it works or starts).
    pub fn off(&self) -> Option<Fallback> {
        match &*self.shared.lock() {
            Phase::Off(why) => Some(*why),
            _ => None,
        }
    }

    /// Directories watched now (tests).
    #[cfg(test)]
    fn watch_count(&self) -> usize {
        match &*self.settled() {
            Phase::Live(live) => live.watch_count(),
            _ => 0,
        }
    }

    /// Files outside the watches `stat`ed at every update (tests).
    #[cfg(test)]
    fn sources_len(&self) -> usize {
        match &*self.settled() {
            Phase::Live(live) => live.sources_len(),
            _ => 0,
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shared.cancel.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
