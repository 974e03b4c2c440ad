//! Checkpoints: the previous content of every file keel changes, so each change can be taken
//! back (`keel rewind`, `/rewind`).
//!
//! A session's checkpoints live in `<session dir>/checkpoints/`: `objects/` holds file contents
//! by SHA-256 (each content stored once), `log.jsonl` the history. The log has two kinds of
//! lines: *points* (numbered from 1: each user prompt, and each rewind) and *changes* (a file's
//! content before and after a change, made under the newest point). A change is logged before
//! the file is written, so a crash in between still leaves the old content on record.
//!
//! Rewinding to point N restores every file changed since N to its content before its first
//! change since N (see `rewind.rs`); the conversation is cut back to just before N's prompt
//! from the transcript, where each point leaves a `checkpoint` event.

mod blobs;
pub mod entry;
mod journal;
mod log;
pub mod rewind;
pub mod shell;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use blobs::{Blobs, Hashed, hex, hex_hash};
pub use journal::Recovery;
use log::LogLine;
pub use log::Lost;
pub use rewind::{Conflict, Plan, Restore, RewindError, Unrestorable};

/// Files larger than this are not copied; their changes are logged (by hash) but cannot be
/// rewound, and the tool result says so. `KEEL_CHECKPOINT_MAX_BYTES` overrides it.
pub const DEFAULT_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The transcript event each point leaves, so the conversation can be cut back to it.
pub const TRANSCRIPT_EVENT: &str = "checkpoint";

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot record a checkpoint in {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A change of this process that keel could not record for undo, for the run's warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    pub point: u32,
    pub path: PathBuf,
    pub by: String,
    pub why: String,
    /// Only its line could not be written: it waits beside the log for room to write it.
    pub queued: bool,
}

/// Longest list of gaps in the warnings; the rest are counted.
const MAX_GAPS_SHOWN: usize = 10;

/// What a point stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// A user prompt: rewinding to it restores the state before the prompt was answered.
    Prompt,
    /// A rewind: rewinding to it undoes that rewind.
    Rewind,
}

/// One point of the list `keel rewind --list` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub point: u32,
    pub kind: PointKind,
    /// The prompt's first line (shortened), or what was rewound.
    pub text: String,
    pub at: String,
    /// Files changed from this point on (filled when the list is read).
    #[serde(skip)]
    pub files_changed: usize,
    /// Of those, files a shell command changed before keel held a copy: a rewind to this point
    /// cannot restore them.
    #[serde(skip)]
    pub not_restorable: usize,
}

/// A file's content at one moment, as the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Snap {
    /// The file did not exist.
    Absent,
    /// Stored in `objects/<hash>`; `mode` is the Unix permission bits.
    Stored { hash: String, size: u64, mode: u32 },
    /// Too big to keep: only its hash is known.
    TooBig { hash: String, size: u64 },
    /// A symbolic link; `hash` stands for its target ([`entry::link_hash`]).
    Link { target: String, hash: String },
    /// Changed by a shell command before keel held a copy: the content is unknown.
    NotKept { why: String },
}

impl Snap {
    pub fn hash(&self) -> Option<&str> {
        match self {
            Snap::Absent | Snap::NotKept { .. } => None,
            Snap::Stored { hash, .. } | Snap::TooBig { hash, .. } | Snap::Link { hash, .. } => Some(hash),
        }
    }
}

/// One change of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub point: u32,
    pub path: PathBuf,
    pub before: Snap,
    pub after: Snap,
    /// What changed it: Edit, Write, Bash, rewind.
    pub by: String,
}

/// The checkpoints of one session. Cheap to create: nothing touches the disk before the first
/// point or change.
#[derive(Debug)]
pub struct Checkpoints {
    dir: PathBuf,
    max_bytes: u64,
    state: Mutex<State>,
    /// Copies kept ahead of shell commands (`shell.rs`).
    stash: Mutex<shell::Stash>,
    /// Most bytes and files the stash holds.
    stash_budget: (u64, usize),
    /// Tells this store's stash from another's of the same session in this process.
    instance: u64,
}

#[derive(Debug, Default)]
struct State {
    /// The newest point (0 before the first prompt); `None` until the log was read.
    current: Option<u32>,
    log: Option<log::LogFile>,
    gaps: Vec<Gap>,
    /// Gaps told in a notice already.
    noticed: usize,
}

/// The undo limits set in the environment, checked once at start: a value that is not a whole
/// number is an error, never a silent fall back to the default.
pub fn check_env() -> Result<(), String> {
    for name in [
        "KEEL_CHECKPOINT_MAX_BYTES",
        "KEEL_CHECKPOINT_SHELL_BYTES",
        "KEEL_CHECKPOINT_SHELL_FILES",
    ] {
        if let Some(raw) = std::env::var_os(name) {
            let raw = raw.to_string_lossy();
            if raw.trim().parse::<u64>().is_err() {
                return Err(format!("{name} must be a whole number (0 or more), got `{raw}`"));
            }
        }
    }
    Ok(())
}

impl Checkpoints {
    pub fn new(session_dir: &Path) -> Checkpoints {
        let max_bytes = std::env::var("KEEL_CHECKPOINT_MAX_BYTES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_MAX_BYTES);
        Checkpoints {
            dir: session_dir.join("checkpoints"),
            max_bytes,
            state: Mutex::new(State::default()),
            stash: Mutex::default(),
            stash_budget: (
                shell::env_or("KEEL_CHECKPOINT_SHELL_BYTES", shell::DEFAULT_STASH_BYTES),
                shell::env_or("KEEL_CHECKPOINT_SHELL_FILES", shell::DEFAULT_STASH_FILES),
            ),
            instance: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn blobs(&self) -> Blobs {
        Blobs::new(self.dir.join("objects"))
    }

    fn io(&self, source: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            path: self.dir.clone(),
            source,
        }
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Appends `lines` whole (the unwritten tail first); with `sync`, durably.
    fn append(&self, state: &mut State, lines: &[LogLine], sync: bool) -> Result<(), CheckpointError> {
        if state.log.is_none() {
            state.log = Some(log::LogFile::open(&self.dir).map_err(|e| self.io(e))?);
        }
        let log = state
            .log
            .as_mut()
            .ok_or_else(|| self.io(std::io::ErrorKind::NotFound.into()))?;
        // Not synced but for a rewind's commit: the previous content itself is (in `snap`); a
        // power loss can cost the undo record of the last change, never a user's file.
        log.append(lines, sync).map_err(|e| self.io(e))
    }

    fn current(&self, state: &mut State) -> u32 {
        *state
            .current
            .get_or_insert_with(|| self.points().iter().map(|p| p.point).max().unwrap_or(0))
    }

    /// Starts a new point (a prompt or a rewind) and returns its number.
    pub fn begin(&self, kind: PointKind, text: &str) -> Result<u32, CheckpointError> {
        self.with_state(|state| {
            let n = self.current(state) + 1;
            self.append(state, &[LogLine::Point(new_point(n, kind, text))], false)?;
            state.current = Some(n);
            Ok(n)
        })
    }

    /// Snapshot of `bytes` for the log: stored (with `mode`) when small enough; `durable` for
    /// content that is about to be overwritten.
    pub fn snap(&self, bytes: Option<&[u8]>, mode: u32, durable: bool) -> Result<Snap, CheckpointError> {
        self.snap_hashed(bytes.map(Hashed::new), mode, durable)
    }

    /// [`Checkpoints::snap`] of content whose digest is known already.
    fn snap_hashed(&self, content: Option<Hashed<'_>>, mode: u32, durable: bool) -> Result<Snap, CheckpointError> {
        let Some(Hashed { bytes, digest }) = content else {
            return Ok(Snap::Absent);
        };
        let hash = hex(&digest);
        let size = bytes.len() as u64;
        if size > self.max_bytes {
            return Ok(Snap::TooBig { hash, size });
        }
        self.blobs().put(&hash, bytes, durable).map_err(|e| self.io(e))?;
        Ok(Snap::Stored { hash, size, mode })
    }

    /// Records that `path` is about to change from `before` to `after` (`None`: absent), with
    /// its permission bits. Returns a note for the tool result when the old content was too big
    /// to keep (the change cannot be rewound).
    pub fn record(
        &self,
        path: &Path,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
        mode: u32,
        by: &str,
    ) -> Result<Option<String>, CheckpointError> {
        self.record_hashed(path, before.map(Hashed::new), after.map(Hashed::new), mode, by)
    }

    /// [`Checkpoints::record`] of contents whose digests are known already (Edit and Write
    /// hash each content once, for the read state and this log alike). A previous content that
    /// cannot be stored (a full disk) is logged as not kept, so a rewind names the file instead
    /// of passing over it, and the run's warnings name the change.
    pub fn record_hashed(
        &self,
        path: &Path,
        before: Option<Hashed<'_>>,
        after: Option<Hashed<'_>>,
        mode: u32,
        by: &str,
    ) -> Result<Option<String>, CheckpointError> {
        let mut notes = Vec::new();
        let mut unstored = None;
        let before_snap = match self.snap_hashed(before, mode, true) {
            Ok(snap) => snap,
            Err(CheckpointError::Io { source, .. }) => {
                notes.push(format!(
                    "Note: keel could not store the previous content of {} for undo ({source}), so this change \
                     cannot be rewound.",
                    path.display()
                ));
                let why = format!(
                    "keel could not store its previous content in {} ({source})",
                    self.dir.display()
                );
                unstored = Some(why.clone());
                Snap::NotKept { why }
            }
        };
        // The new content is kept for diffs only; its hash is what a rewind checks.
        let after_snap = self.snap_hashed(after, mode, false).unwrap_or_else(|_| match after {
            Some(h) => Snap::TooBig {
                hash: hex(&h.digest),
                size: h.bytes.len() as u64,
            },
            None => Snap::Absent,
        });
        if let Snap::TooBig { size, .. } = &before_snap {
            notes.push(format!(
                "Note: {} was {} bytes, more than keel keeps for undo ({} bytes, KEEL_CHECKPOINT_MAX_BYTES), so \
                 this change cannot be rewound.",
                path.display(),
                size,
                self.max_bytes
            ));
        }
        let change = Change {
            point: 0,
            path: path.to_path_buf(),
            before: before_snap,
            after: after_snap,
            by: by.to_string(),
        };
        if let Some(why) = unstored {
            self.with_state(|state| {
                let point = self.current(state);
                state.gaps.push(Gap {
                    point,
                    path: path.to_path_buf(),
                    by: by.to_string(),
                    why,
                    queued: false,
                })
            });
        }
        if let Some(why) = self.log_change(change)? {
            notes.push(format!(
                "Note: the undo record of this change could not be written yet ({why}); keel keeps it and writes it \
                 when there is room."
            ));
        }
        Ok((!notes.is_empty()).then(|| notes.join(" ")))
    }

    /// Appends `change` to the log under the newest point (its `point` is set here). When its
    /// line cannot be written it waits beside the log (`Ok(Some(why))`); `Err` when even that
    /// record could not hold it.
    fn log_change(&self, mut change: Change) -> Result<Option<String>, CheckpointError> {
        self.with_state(|state| {
            change.point = self.current(state);
            let line = LogLine::Change { change: change.clone() };
            let Err(e) = self.append(state, &[line], false) else {
                return Ok(None);
            };
            let why = match &e {
                CheckpointError::Io { source, .. } => source.to_string(),
            };
            let queued = state.log.as_mut().is_some_and(|l| l.keep(change.clone()));
            state.gaps.push(Gap {
                point: change.point,
                path: change.path.clone(),
                by: change.by.clone(),
                why: why.clone(),
                queued,
            });
            if queued { Ok(Some(why)) } else { Err(e) }
        })
    }

    /// The changes of this run that keel could not record for undo, one sentence each, for the
    /// run's warnings (a queued one only while it waits).
    pub fn undo_warnings(&self) -> Vec<String> {
        self.with_state(|state| {
            let waiting = state.log.as_ref().is_some_and(|l| !l.tail.is_empty());
            let gaps: Vec<&Gap> = state.gaps.iter().filter(|g| !g.queued || waiting).collect();
            let mut out: Vec<String> = gaps.iter().take(MAX_GAPS_SHOWN).map(|g| self.describe(g)).collect();
            if gaps.len() > MAX_GAPS_SHOWN {
                out.push(format!(
                    "undo: {} more change(s) could not be recorded (see `keel rewind --list`)",
                    gaps.len() - MAX_GAPS_SHOWN
                ));
            }
            out
        })
    }

    /// The gaps not told yet, for a notice at the end of a turn.
    pub fn new_gap_notices(&self) -> Vec<String> {
        self.with_state(|state| {
            let new: Vec<String> = state.gaps[state.noticed.min(state.gaps.len())..]
                .iter()
                .map(|g| self.describe(g))
                .collect();
            state.noticed = state.gaps.len();
            new
        })
    }

    fn describe(&self, g: &Gap) -> String {
        if g.queued {
            format!(
                "undo: the record of the change of {} by {} (point {}) could not be written ({}); keel keeps it in \
                 {} and writes it into the log when there is room",
                g.path.display(),
                g.by,
                g.point,
                g.why,
                self.dir.join("unrecorded.json").display()
            )
        } else {
            format!(
                "undo: the change of {} by {} (point {}) could not be recorded: {}; a rewind cannot restore that \
                 file and will say so",
                g.path.display(),
                g.by,
                g.point,
                g.why
            )
        }
    }

    fn read_log(&self) -> log::Contents {
        log::read(&self.dir)
    }

    /// The logged changes keel holds no previous content of (a shell command's beyond the
    /// budget, or a content that could not be stored), oldest first, and the changes of which
    /// not even a line could be kept.
    pub fn unrecorded(&self) -> (Vec<Change>, Vec<Lost>) {
        let log = self.read_log();
        let changes = log
            .changes
            .into_iter()
            .filter(|c| matches!(c.before, Snap::NotKept { .. }))
            .collect();
        (changes, log.lost)
    }

    /// The points, oldest first, each with the number of files changed from it on.
    pub fn points(&self) -> Vec<Point> {
        let log::Contents {
            mut points, changes, ..
        } = self.read_log();
        for p in &mut points {
            let mut files: Vec<&Path> = changes
                .iter()
                .filter(|c| c.point >= p.point)
                .map(|c| c.path.as_path())
                .collect();
            files.sort();
            files.dedup();
            p.files_changed = files.len();
            p.not_restorable = files
                .iter()
                .filter(|f| {
                    changes
                        .iter()
                        .find(|c| c.point >= p.point && c.path == **f)
                        .is_some_and(|c| matches!(c.before, Snap::NotKept { .. }))
                })
                .count();
        }
        points
    }

    /// The changes logged since point `n` (inclusive), oldest first.
    pub fn changes_since(&self, n: u32) -> Vec<Change> {
        self.read_log().changes.into_iter().filter(|c| c.point >= n).collect()
    }
}

/// Point `n`, named by the first line of `text` (shortened), made now.
fn new_point(n: u32, kind: PointKind, text: &str) -> Point {
    let first_line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut short: String = first_line.chars().take(80).collect();
    if first_line.chars().count() > 80 {
        short.push('…');
    }
    Point {
        point: n,
        kind,
        text: short,
        at: chrono::Utc::now().to_rfc3339(),
        files_changed: 0,
        not_restorable: 0,
    }
}

/// The Unix permission bits of a file (0o644 when unknown).
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644)
}

#[cfg(test)]
mod tests;
