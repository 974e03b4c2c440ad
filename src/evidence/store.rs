//! Keeping the ledger on disk: a snapshot in `evidence.json`, what changed since in the
//! append-only `evidence-journal-<generation>.jsonl` beside it, the test files' baselines in
//! `evidence-baselines.json`, and each run's log under `evidence/`.
//!
//! `changes` and `runs` only grow, so rewriting the whole ledger at every save cost more the
//! longer a session ran. A save appends one line holding what changed since the last save; a
//! fresh snapshot (the next generation) is written only when the journal has grown past the
//! snapshot's size (so rewrites are geometric and a save costs amortised constant time), when
//! an entry already on disk changed in memory, or when the journal could not be read whole.
//! The snapshot names its journal's generation: a journal of another generation (left by a
//! crash between a snapshot and the removal of the old journal) is never replayed.
//!
//! Nothing here is fsynced: the ledger is host state kept for `--resume` and export, and the
//! transcript is the durable record of the session.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ledger::{Change, Ledger, Run, Weakened};
use super::{Evidence, State};

/// The journal is rewritten into a snapshot once it holds more than this or the snapshot's
/// size, whichever is larger.
const JOURNAL_MIN_LIMIT: u64 = 64 * 1024;

/// What the files on disk hold, as far as this process wrote or read them.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Saved {
    /// Changes and runs on disk (the first ones of the ledger's lists).
    pub changes: usize,
    pub runs: usize,
    pub version: u64,
    pub digest: Option<u64>,
    pub weakened: BTreeMap<String, Weakened>,
    /// The snapshot's generation, which names the journal that continues it.
    pub generation: u64,
    /// The journal's length as written (another length means another writer or a lost file).
    pub journal_bytes: u64,
    pub snapshot_bytes: u64,
    /// The next save writes a whole snapshot: none was written or read yet, an entry on disk
    /// changed in memory, or the journal ended in a torn or unreadable line.
    pub rewrite: bool,
    /// Baselines in `evidence-baselines.json`.
    pub baselines: usize,
}

impl Default for Saved {
    fn default() -> Saved {
        Saved {
            changes: 0,
            runs: 0,
            version: 0,
            digest: None,
            weakened: BTreeMap::new(),
            generation: 0,
            journal_bytes: 0,
            snapshot_bytes: 0,
            rewrite: true,
            baselines: 0,
        }
    }
}

impl Saved {
    /// What the disk holds right after `ledger` was written or read whole.
    fn of(ledger: &Ledger, generation: u64, snapshot_bytes: u64, baselines: usize) -> Saved {
        Saved {
            changes: ledger.changes.len(),
            runs: ledger.runs.len(),
            version: ledger.version,
            digest: ledger.digest,
            weakened: ledger.weakened.clone(),
            generation,
            journal_bytes: 0,
            snapshot_bytes,
            rewrite: false,
            baselines,
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum SaveError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("cannot encode it: {0}")]
    Encode(#[from] serde_json::Error),
}

/// `evidence.json`: the ledger and the generation of its journal (absent in files written
/// before the journal existed: generation 0).
#[derive(Serialize)]
struct SnapshotOut<'a> {
    #[serde(flatten)]
    ledger: &'a Ledger,
    journal: u64,
}

#[derive(Deserialize)]
struct SnapshotIn {
    #[serde(flatten)]
    ledger: Ledger,
    #[serde(default)]
    journal: u64,
}

/// One journal line: what one save added. A save is one line, so a torn write loses that save
/// whole and never leaves changes without the version they produced.
#[derive(Serialize)]
struct RecordOut<'a> {
    #[serde(skip_serializing_if = "<[Change]>::is_empty")]
    changes: &'a [Change],
    #[serde(skip_serializing_if = "<[Run]>::is_empty")]
    runs: &'a [Run],
    #[serde(skip_serializing_if = "Option::is_none")]
    head: Option<Head>,
    /// The whole map when it changed (it is small).
    #[serde(skip_serializing_if = "Option::is_none")]
    weakened: Option<&'a BTreeMap<String, Weakened>>,
}

#[derive(Deserialize)]
struct RecordIn {
    #[serde(default)]
    changes: Vec<Change>,
    #[serde(default)]
    runs: Vec<Run>,
    #[serde(default)]
    head: Option<Head>,
    #[serde(default)]
    weakened: Option<BTreeMap<String, Weakened>>,
}

/// The working-tree version and the workspace digest, written together when either changed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Head {
    version: u64,
    digest: Option<u64>,
}

impl RecordIn {
    fn apply(self, l: &mut Ledger) {
        l.changes.extend(self.changes);
        l.runs.extend(self.runs);
        if let Some(h) = self.head {
            l.version = h.version;
            l.digest = h.digest;
        }
        if let Some(w) = self.weakened {
            l.weakened = w;
        }
    }
}

pub(super) fn snapshot_path(session_dir: &Path) -> PathBuf {
    session_dir.join("evidence.json")
}

fn journal_path(store: &Path, generation: u64) -> PathBuf {
    store.with_file_name(format!("evidence-journal-{generation}.jsonl"))
}

pub(super) fn baselines_path(store: &Path) -> PathBuf {
    store.with_file_name("evidence-baselines.json")
}

/// The session's ledger as saved (without baselines): the snapshot and its journal. A missing
/// or unreadable snapshot reads as the empty ledger.
pub fn load_ledger(session_dir: &Path) -> Ledger {
    load(&snapshot_path(session_dir)).0
}

/// The ledger in `store` (the snapshot) continued by its generation's journal, up to the first
/// line that does not read (a torn last write), and what the disk holds.
pub(super) fn load(store: &Path) -> (Ledger, Saved) {
    let Some((snapshot, bytes)) = std::fs::read(store)
        .ok()
        .and_then(|b| Some((serde_json::from_slice::<SnapshotIn>(&b).ok()?, b.len())))
    else {
        return (Ledger::default(), Saved::default());
    };
    let mut ledger = snapshot.ledger;
    let generation = snapshot.journal;
    let (journal_bytes, whole) = match std::fs::read(journal_path(store, generation)) {
        Ok(journal) => replay(&journal, &mut ledger),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (0, true),
        Err(_) => (0, false),
    };
    let mut saved = Saved::of(&ledger, generation, bytes as u64, 0);
    saved.journal_bytes = journal_bytes;
    saved.rewrite = !whole;
    (ledger, saved)
}

/// Applies the journal's lines in order; returns the bytes of the lines applied and whether
/// that was all of it (every line complete, with its newline, and readable).
fn replay(journal: &[u8], ledger: &mut Ledger) -> (u64, bool) {
    let mut done = 0;
    for line in journal.split_inclusive(|&b| b == b'\n') {
        let Some(text) = line.strip_suffix(b"\n") else {
            return (done as u64, false);
        };
        match serde_json::from_slice::<RecordIn>(text) {
            Ok(r) => r.apply(ledger),
            Err(_) => return (done as u64, false),
        }
        done += line.len();
    }
    (done as u64, true)
}

/// Removes the journal of the generation before `saved`'s, which a crash between writing a
/// snapshot and removing the old journal leaves behind (it is never read again).
pub(super) fn remove_stale(store: &Path, saved: &Saved) {
    if let Some(previous) = saved.generation.checked_sub(1) {
        let _ = std::fs::remove_file(journal_path(store, previous));
    }
}

impl Evidence {
    /// Where run `id`'s complete output goes (none without session persistence).
    pub(super) fn log_path(&self, id: u32) -> Option<PathBuf> {
        self.store.as_ref()?;
        Some(self.log_dir.join(format!("run-{id}.log")))
    }

    /// Writes a run's complete output (after the ledger's lock is released); the run keeps no
    /// log path when it cannot be written.
    pub(super) fn write_log(&self, path: &Path, text: &str) -> bool {
        std::fs::create_dir_all(&self.log_dir).is_ok() && std::fs::write(path, text).is_ok()
    }

    /// Runs from `first` on that point at the log `path`, which could not be written, keep no
    /// path to it. One already saved is an entry on disk changed in memory: the next save
    /// writes a whole snapshot.
    pub(super) fn forget_log(s: &mut State, first: usize, path: &Path) {
        for (i, r) in s.ledger.runs.iter_mut().enumerate().skip(first) {
            if r.log.as_deref() == Some(path) {
                r.log = None;
                if i < s.saved.runs {
                    s.saved.rewrite = true;
                }
            }
        }
    }

    /// Saves what changed since the last save (a command that changed nothing and ran no check
    /// costs no write): appended to the journal, or a new snapshot when one is due. The test
    /// files' baselines, which can be large, go to their own file, written only when one is
    /// added.
    pub(super) fn save(&self, s: &mut State) {
        let Some(path) = &self.store else { return };
        let mut result = save_ledger(path, &s.ledger, &mut s.saved);
        if result.is_ok() && s.saved.baselines != s.ledger.baselines.len() {
            let file = baselines_path(path);
            result = serde_json::to_vec(&s.ledger.baselines)
                .map_err(SaveError::from)
                .and_then(|b| crate::fsutil::write_atomic_copy(&file, &b).map_err(SaveError::from));
            if result.is_ok() {
                s.saved.baselines = s.ledger.baselines.len();
            }
        }
        if let Err(e) = result
            && s.write_error.is_none()
        {
            s.write_error = Some(format!("cannot save the evidence ledger {}: {e}", path.display()));
        }
    }
}

/// Appends what `l` holds beyond `saved` to the journal, or writes a snapshot when one is due.
fn save_ledger(store: &Path, l: &Ledger, saved: &mut Saved) -> Result<(), SaveError> {
    let limit = JOURNAL_MIN_LIMIT.max(saved.snapshot_bytes);
    if saved.rewrite || saved.journal_bytes > limit {
        return write_snapshot(store, l, saved);
    }
    // The lists only grow; shorter ones than on disk would be a ledger replaced in memory.
    let (Some(changes), Some(runs)) = (l.changes.get(saved.changes..), l.runs.get(saved.runs..)) else {
        return write_snapshot(store, l, saved);
    };
    let head = (l.version != saved.version || l.digest != saved.digest).then_some(Head {
        version: l.version,
        digest: l.digest,
    });
    let weakened = (l.weakened != saved.weakened).then_some(&l.weakened);
    if changes.is_empty() && runs.is_empty() && head.is_none() && weakened.is_none() {
        return Ok(());
    }
    let mut line = serde_json::to_vec(&RecordOut {
        changes,
        runs,
        head,
        weakened,
    })?;
    line.push(b'\n');
    let file = journal_path(store, saved.generation);
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&file)?;
    // Not the length this process left: the file was removed or written by someone else, so
    // what it holds is unknown and a snapshot replaces it.
    if f.metadata()?.len() != saved.journal_bytes {
        drop(f);
        return write_snapshot(store, l, saved);
    }
    // One write for the whole save: appended at once, never interleaved line by line.
    if let Err(e) = f.write_all(&line) {
        // Part of the line may be on disk: only a snapshot is sure to hold what it should.
        saved.rewrite = true;
        return Err(e.into());
    }
    saved.changes = l.changes.len();
    saved.runs = l.runs.len();
    saved.version = l.version;
    saved.digest = l.digest;
    if weakened.is_some() {
        saved.weakened = l.weakened.clone();
    }
    saved.journal_bytes += line.len() as u64;
    Ok(())
}

/// Writes `l` whole as the next generation's snapshot, then removes the previous journal.
fn write_snapshot(store: &Path, l: &Ledger, saved: &mut Saved) -> Result<(), SaveError> {
    // Wrapping: the number comes from a file, and only differing from the last one matters.
    let generation = saved.generation.wrapping_add(1);
    let bytes = serde_json::to_vec(&SnapshotOut {
        ledger: l,
        journal: generation,
    })?;
    // A journal of the new generation left from elsewhere (a snapshot that could not be read,
    // a copied session) would be replayed onto this snapshot: it goes first.
    match std::fs::remove_file(journal_path(store, generation)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => {}
    }
    crate::fsutil::write_atomic_copy(store, &bytes)?;
    // The old journal is of another generation now: never read again, removed when possible.
    let _ = std::fs::remove_file(journal_path(store, saved.generation));
    *saved = Saved::of(l, generation, bytes.len() as u64, saved.baselines);
    Ok(())
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
