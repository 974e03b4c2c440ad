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
pub mod rewind;
pub mod shell;

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use blobs::{Blobs, Hashed, hex, hex_hash};
pub use rewind::{Conflict, Plan, Restore, RewindError};

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

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum LogLine {
    Point(Point),
    Change { change: Change },
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
    log: Option<File>,
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

    fn log_path(&self) -> PathBuf {
        self.dir.join("log.jsonl")
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

    fn append(&self, state: &mut State, line: &LogLine) -> Result<(), CheckpointError> {
        if state.log.is_none() {
            std::fs::create_dir_all(&self.dir).map_err(|e| self.io(e))?;
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.log_path())
                .map_err(|e| self.io(e))?;
            state.log = Some(file);
        }
        let mut bytes = serde_json::to_vec(line).unwrap_or_default();
        bytes.push(b'\n');
        let file = state
            .log
            .as_mut()
            .ok_or_else(|| self.io(std::io::ErrorKind::NotFound.into()))?;
        // Not synced: the previous content itself is (in `snap`); a power loss can cost the undo
        // record of the last change, never a user's file.
        file.write_all(&bytes).map_err(|e| self.io(e))
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
            let first_line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            let mut short: String = first_line.chars().take(80).collect();
            if first_line.chars().count() > 80 {
                short.push('…');
            }
            let point = Point {
                point: n,
                kind,
                text: short,
                at: chrono::Utc::now().to_rfc3339(),
                files_changed: 0,
                not_restorable: 0,
            };
            self.append(state, &LogLine::Point(point))?;
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
    /// hash each content once, for the read state and this log alike).
    pub fn record_hashed(
        &self,
        path: &Path,
        before: Option<Hashed<'_>>,
        after: Option<Hashed<'_>>,
        mode: u32,
        by: &str,
    ) -> Result<Option<String>, CheckpointError> {
        let before_snap = self.snap_hashed(before, mode, true)?;
        let after_snap = self.snap_hashed(after, mode, false)?;
        let note = match &before_snap {
            Snap::TooBig { size, .. } => Some(format!(
                "Note: {} was {} bytes, more than keel keeps for undo ({} bytes, KEEL_CHECKPOINT_MAX_BYTES), so \
                 this change cannot be rewound.",
                path.display(),
                size,
                self.max_bytes
            )),
            _ => None,
        };
        self.log_change(Change {
            point: 0,
            path: path.to_path_buf(),
            before: before_snap,
            after: after_snap,
            by: by.to_string(),
        })?;
        Ok(note)
    }

    /// Appends `change` to the log under the newest point (its `point` is set here).
    fn log_change(&self, mut change: Change) -> Result<(), CheckpointError> {
        self.with_state(|state| {
            change.point = self.current(state);
            self.append(state, &LogLine::Change { change })
        })
    }

    /// Every line of the log; a torn last line (a crash) is ignored.
    fn read_log(&self) -> (Vec<Point>, Vec<Change>) {
        let (mut points, mut changes) = (Vec::new(), Vec::new());
        let Ok(file) = File::open(self.log_path()) else {
            return (points, changes);
        };
        for line in BufReader::new(file).split(b'\n').map_while(Result::ok) {
            match serde_json::from_slice::<LogLine>(&line) {
                Ok(LogLine::Point(p)) => points.push(p),
                Ok(LogLine::Change { change }) => changes.push(change),
                Err(_) => {}
            }
        }
        (points, changes)
    }

    /// The points, oldest first, each with the number of files changed from it on.
    pub fn points(&self) -> Vec<Point> {
        let (mut points, changes) = self.read_log();
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
        self.read_log().1.into_iter().filter(|c| c.point >= n).collect()
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
