//! A rewind as one journaled operation, so a crash at any moment leaves the files and the log
//! in agreement.
//!
//! Before a rewind writes any file it writes, synced, a journal (`checkpoints/rewind.json`):
//! the point the rewind becomes and each file's content before and after. Then the files are
//! written; then the rewind is *committed*: its point and changes go into the log in one synced
//! append. The front end then records it in the transcript and removes the journal
//! ([`Checkpoints::finish_rewind`]). [`Checkpoints::recover`], called when a session is opened
//! again (a start, `keel rewind`), finds a journal a crash left and
//! - when the log holds the point (committed): completes the log with the changes a torn
//!   append lost, and hands the journal to the caller, which completes the transcript;
//! - otherwise: puts every file it finds at its new content back to its old one, and removes
//!   the journal, as if the rewind had not started.
//!
//! Either way a second crash during recovery is recovered the same way at the next start.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::entry::{self, Content};
use super::log::LogLine;
use super::rewind::RewindError;
use super::{Change, Checkpoints, Point, Snap};

const JOURNAL: &str = "rewind.json";

/// A rewind under way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// The point the rewind becomes, as the commit writes it.
    pub point: Point,
    /// The point rewound to.
    pub to: u32,
    pub files: Vec<JournalFile>,
    /// The number of messages the conversation keeps (`None`: it is not rewound).
    pub conversation: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalFile {
    pub path: PathBuf,
    /// What stood there before the rewind.
    pub before: Snap,
    /// What the rewind puts there.
    pub after: Snap,
}

impl Journal {
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    fn change(&self, f: &JournalFile) -> Change {
        Change {
            point: self.point.point,
            path: f.path.clone(),
            before: f.before.clone(),
            after: f.after.clone(),
            by: "rewind".into(),
        }
    }
}

/// What [`Checkpoints::recover`] found and did.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovery {
    /// The rewind had been committed and the log now holds all of it. The caller records it in
    /// the transcript where that is missing, then calls [`Checkpoints::finish_rewind`].
    Completed(Journal),
    /// The rewind had not been committed: the files it had written are back as they were.
    RolledBack {
        journal: Journal,
        put_back: Vec<PathBuf>,
        /// Files that changed since the crash (neither content of the journal), left alone.
        left: Vec<PathBuf>,
    },
}

impl Checkpoints {
    fn journal_path(&self) -> PathBuf {
        self.dir.join(JOURNAL)
    }

    /// The journal of a rewind a crash interrupted (or one under way in this process).
    pub fn pending_rewind(&self) -> Result<Option<Journal>, RewindError> {
        let path = self.journal_path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| RewindError::Journal(path, e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(RewindError::Journal(path, e.to_string())),
        }
    }

    /// Writes the journal, synced, before the rewind touches any file.
    pub(super) fn write_journal(&self, journal: &Journal) -> Result<(), RewindError> {
        let bytes = serde_json::to_vec(journal).unwrap_or_default();
        crate::fsutil::write_atomic(&self.journal_path(), &bytes).map_err(|e| self.io(e))?;
        Ok(())
    }

    /// The rewind at point `point` is fully recorded: its journal goes.
    pub fn finish_rewind(&self, point: u32) {
        if let Ok(Some(j)) = self.pending_rewind()
            && j.point.point == point
        {
            self.remove_journal();
        }
    }

    pub(super) fn remove_journal(&self) {
        if std::fs::remove_file(self.journal_path()).is_ok()
            && let Ok(dir) = std::fs::File::open(&self.dir)
        {
            let _ = dir.sync_all();
        }
    }

    /// Commits a journaled rewind: its point and changes in one synced append.
    pub(super) fn commit(&self, journal: &Journal) -> Result<(), RewindError> {
        let mut lines = vec![LogLine::Point(journal.point.clone())];
        lines.extend(journal.files.iter().map(|f| LogLine::Change {
            change: journal.change(f),
        }));
        self.with_state(|state| {
            self.append(state, &lines, true)?;
            state.current = Some(journal.point.point);
            Ok(())
        })
    }

    /// Completes or rolls back a rewind a crash interrupted; see the module's comment.
    pub fn recover(&self) -> Result<Option<Recovery>, RewindError> {
        let Some(journal) = self.pending_rewind()? else {
            return Ok(None);
        };
        let log = self.read_log();
        let committed = log
            .points
            .iter()
            .any(|p| p.point == journal.point.point && p.kind == journal.point.kind && p.at == journal.point.at);
        if committed {
            let missing: Vec<LogLine> = journal
                .files
                .iter()
                .filter(|f| {
                    !log.changes
                        .iter()
                        .any(|c| c.point == journal.point.point && c.path == f.path)
                })
                .map(|f| LogLine::Change {
                    change: journal.change(f),
                })
                .collect();
            if !missing.is_empty() {
                self.with_state(|state| self.append(state, &missing, true))?;
            }
            return Ok(Some(Recovery::Completed(journal)));
        }
        let (mut put_back, mut left) = (Vec::new(), Vec::new());
        for f in journal.files.iter().rev() {
            let now = super::rewind::current_hash(&f.path)?;
            if now.as_deref() == f.before.hash() {
                continue;
            }
            if now.as_deref() != f.after.hash() {
                left.push(f.path.clone());
                continue;
            }
            let content = self.content_of(&f.path, &f.before)?;
            entry::write(&f.path, &content).map_err(|source| RewindError::Write {
                path: f.path.clone(),
                source,
            })?;
            put_back.push(f.path.clone());
        }
        self.remove_journal();
        self.with_state(|state| state.current = None);
        Ok(Some(Recovery::RolledBack {
            journal,
            put_back,
            left,
        }))
    }

    /// The content a snapshot stands for, read from the store (checked against its hash).
    pub(super) fn content_of(&self, path: &Path, snap: &Snap) -> Result<Content, RewindError> {
        Ok(match snap {
            Snap::Absent => Content::Absent,
            Snap::Stored { hash, mode, .. } => {
                Content::File(self.blobs().get(hash).map_err(super::rewind::read_err(path))?, *mode)
            }
            Snap::Link { target, .. } => Content::Link(target.clone()),
            Snap::TooBig { .. } | Snap::NotKept { .. } => return Err(RewindError::TooBig(vec![path.to_path_buf()])),
        })
    }
}
