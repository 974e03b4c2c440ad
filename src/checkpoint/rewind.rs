//! Restoring files to a point: plan (what would change, and what changed outside keel since),
//! then apply all of it or nothing, as one journaled operation (`journal.rs`). A rewind is
//! itself a point with logged changes, so it can be rewound too.

use std::path::{Path, PathBuf};

use similar::TextDiff;

use super::entry::{self, Content, Entry};
use super::journal::{Journal, JournalFile};
use super::{Change, CheckpointError, Checkpoints, PointKind, Snap};
use crate::fsutil::crash;

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    Code,
    Conversation,
    Both,
}

impl Restore {
    pub fn code(self) -> bool {
        matches!(self, Restore::Code | Restore::Both)
    }

    pub fn conversation(self) -> bool {
        matches!(self, Restore::Conversation | Restore::Both)
    }
}

/// A file that changed outside keel after keel's last change to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub path: PathBuf,
    /// Unified diff from keel's last version to the file as it is now (empty when either side
    /// is not text or was too big to keep).
    pub diff: String,
}

/// One file a rewind would restore.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRestore {
    pub path: PathBuf,
    /// The content keel last left (what must still be on disk).
    pub expected: Snap,
    /// The content to put back.
    pub target: Snap,
}

/// A file changed since the point that a rewind cannot restore, because keel holds no earlier
/// content of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Unrestorable {
    pub path: PathBuf,
    /// What made the change (`Bash`, `Edit`, `Write`).
    pub by: String,
    pub why: String,
}

impl Unrestorable {
    /// How a listing names it: a shell command's change, or one keel could not record.
    pub fn label(&self) -> String {
        if self.by == "Bash" {
            "not restorable (changed by a shell command)".into()
        } else {
            format!("not restorable (changed by {}; keel could not record it)", self.by)
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub to: u32,
    pub files: Vec<FileRestore>,
    pub conflicts: Vec<Conflict>,
    /// Files whose earlier content was too big to keep.
    pub too_big: Vec<PathBuf>,
    /// Files keel holds no earlier content of (a shell command changed them before keel held a
    /// copy, or the copy could not be stored), and why: a rewind leaves them as they are and
    /// says so.
    pub not_restorable: Vec<Unrestorable>,
}

#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("there is no point {0} to rewind to (this session has {1}); see `keel rewind --list`")]
    NoSuchPoint(u32, u32),
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    #[error(
        "cannot restore {}: the earlier content was too big to keep for undo; nothing was changed",
        list(.0)
    )]
    TooBig(Vec<PathBuf>),
    #[error("cannot restore {path}: {source}; nothing was changed")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("restoring {path} failed ({source}); the files restored before it were put back as they were")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Log(#[from] CheckpointError),
    #[error("the conversation cannot be rewound to point {0}: the transcript has no record of it{1}")]
    NoConversation(u32, String),
    #[error("cannot read the journal of an interrupted rewind, {0}: {1}")]
    Journal(PathBuf, String),
    #[error(
        "an earlier rewind (point {0}) is not finished; open the session again (`keel -c`, `keel rewind --list`) \
         to complete or roll it back first"
    )]
    Unfinished(u32),
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn conflict_message(conflicts: &[Conflict]) -> String {
    let mut s = format!(
        "not rewinding: {} changed outside keel since keel last changed {}; restoring would overwrite that \
         work. Nothing was changed. Save or undo those changes first, then rewind again.",
        list(&conflicts.iter().map(|c| c.path.clone()).collect::<Vec<_>>()),
        if conflicts.len() == 1 { "it" } else { "them" }
    );
    for c in conflicts.iter().filter(|c| !c.diff.is_empty()) {
        s.push_str("\n\n");
        s.push_str(&c.diff);
    }
    s
}

pub(super) fn read_err(path: &Path) -> impl Fn(std::io::Error) -> RewindError + '_ {
    move |source| RewindError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// The log's hash of what stands at `path` now (`None`: absent), the file streamed through the
/// hash; no link is followed and only a regular file or a link is looked at.
pub(super) fn current_hash(path: &Path) -> Result<Option<String>, RewindError> {
    Ok(match entry::read(path).map_err(read_err(path))? {
        Entry::Absent => None,
        Entry::Link(t) => Some(entry::link_hash(&t)),
        Entry::File(mut f, _) => Some(super::shell::hash_stream(&mut f).map_err(read_err(path))?.0),
    })
}

/// Longest diff shown per conflicting file.
const MAX_DIFF_LINES: usize = 200;
/// Files larger than this are not diffed.
const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;

impl Checkpoints {
    /// What rewinding to point `to` would do, without doing it.
    pub fn plan(&self, to: u32) -> Result<Plan, RewindError> {
        let newest = self.points().iter().map(|p| p.point).max().unwrap_or(0);
        if to == 0 || to > newest {
            return Err(RewindError::NoSuchPoint(to, newest));
        }
        let changes = self.changes_since(to);
        let mut paths: Vec<&Path> = changes.iter().map(|c| c.path.as_path()).collect();
        paths.sort();
        paths.dedup();
        let mut plan = Plan { to, ..Plan::default() };
        for path in paths {
            let of_path: Vec<&Change> = changes.iter().filter(|c| c.path == path).collect();
            let (Some(first), Some(last)) = (of_path.first(), of_path.last()) else {
                continue;
            };
            if let Snap::NotKept { why } = &first.before {
                plan.not_restorable.push(Unrestorable {
                    path: path.to_path_buf(),
                    by: first.by.clone(),
                    why: why.clone(),
                });
                continue;
            }
            let current_hash = current_hash(path)?;
            if current_hash.as_deref() == first.before.hash() {
                continue; // already as it was
            }
            if current_hash.as_deref() != last.after.hash() {
                plan.conflicts.push(Conflict {
                    path: path.to_path_buf(),
                    diff: self.diff(path, &last.after),
                });
                continue;
            }
            if let Snap::TooBig { .. } = first.before {
                plan.too_big.push(path.to_path_buf());
                continue;
            }
            plan.files.push(FileRestore {
                path: path.to_path_buf(),
                expected: last.after.clone(),
                target: first.before.clone(),
            });
        }
        Ok(plan)
    }

    fn diff(&self, path: &Path, keel: &Snap) -> String {
        let keel_bytes = match keel {
            Snap::Absent => Some(Vec::new()),
            Snap::Stored { hash, .. } => self.blobs().get(hash).ok(),
            Snap::TooBig { .. } | Snap::NotKept { .. } | Snap::Link { .. } => None,
        };
        let now = match entry::read_content(path, MAX_DIFF_BYTES) {
            Ok(Content::File(b, _)) => Some(b),
            Ok(Content::Absent) => Some(Vec::new()),
            _ => None,
        };
        let (Some(old), Some(now)) = (keel_bytes, now) else {
            return String::new();
        };
        let (Ok(old), Ok(new)) = (std::str::from_utf8(&old), std::str::from_utf8(&now)) else {
            return String::new();
        };
        let shown = path.display().to_string();
        let diff = TextDiff::configure()
            .timeout(std::time::Duration::from_millis(500))
            .diff_lines(old, new);
        let text = diff
            .unified_diff()
            .header(&format!("{shown} (as keel left it)"), &format!("{shown} (now)"))
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > MAX_DIFF_LINES {
            format!(
                "{}\n… ({} more diff lines)",
                lines[..MAX_DIFF_LINES].join("\n"),
                lines.len() - MAX_DIFF_LINES
            )
        } else {
            text
        }
    }

    /// Restores the files changed since point `to`: all of them or, on any problem, none.
    /// Returns the restored paths; the rewind becomes a new point.
    pub fn restore_code(&self, to: u32) -> Result<Vec<PathBuf>, RewindError> {
        let plan = self.plan(to)?;
        if !plan.conflicts.is_empty() {
            return Err(RewindError::Conflicts(plan.conflicts));
        }
        if !plan.too_big.is_empty() {
            return Err(RewindError::TooBig(plan.too_big));
        }
        let (point, files) = self.apply(&plan, &format!("rewind to before point {to}"), None)?;
        self.finish_rewind(point);
        Ok(files)
    }

    /// Applies a checked plan as a new point (also when there is nothing to restore, so the
    /// conversation part of a rewind has its point too), journaled: `conversation` is the
    /// number of messages the conversation keeps when it is rewound too. Returns the new point
    /// and the restored paths; the journal stays until [`Checkpoints::finish_rewind`], once the
    /// transcript holds the rewind as well.
    pub fn apply(
        &self,
        plan: &Plan,
        label: &str,
        conversation: Option<usize>,
    ) -> Result<(u32, Vec<PathBuf>), RewindError> {
        if let Some(earlier) = self.pending_rewind()? {
            return Err(RewindError::Unfinished(earlier.point.point));
        }
        // Everything is read before anything is written.
        let mut contents = Vec::with_capacity(plan.files.len());
        for f in &plan.files {
            let target = self.content_of(&f.path, &f.target)?;
            let now = entry::read_content(&f.path, self.max_bytes).map_err(read_err(&f.path))?;
            contents.push((f, target, now));
        }
        let mut files = Vec::with_capacity(contents.len());
        for (f, target, now) in &contents {
            files.push(JournalFile {
                path: f.path.clone(),
                before: self.snap_content(now)?,
                after: self.snap_content(target)?,
            });
        }
        let point = self.with_state(|state| self.current(state) + 1);
        let journal = Journal {
            point: super::new_point(point, PointKind::Rewind, label),
            to: plan.to,
            files,
            conversation,
        };
        self.write_journal(&journal)?;
        crash::point("rewind-journaled");
        let mut done: Vec<(&Path, &Content)> = Vec::new();
        for (f, target, now) in &contents {
            if let Err(source) = entry::write(&f.path, target) {
                done.push((&f.path, now));
                self.undo_writes(done);
                return Err(RewindError::Write {
                    path: f.path.clone(),
                    source,
                });
            }
            done.push((&f.path, now));
            crash::point("rewind-file");
        }
        if let Err(e) = self.commit(&journal) {
            self.undo_writes(done);
            return Err(e);
        }
        crash::point("rewind-logged");
        Ok((point, plan.files.iter().map(|f| f.path.clone()).collect()))
    }

    /// A rewind that failed before its commit: the files written are put back, newest first,
    /// and the journal goes (a crash here leaves it for [`Checkpoints::recover`]).
    fn undo_writes(&self, done: Vec<(&Path, &Content)>) {
        for (path, previous) in done.into_iter().rev() {
            let _ = entry::write(path, previous);
        }
        self.remove_journal();
    }

    /// The log's snapshot of a content (kept durably: it may be about to be overwritten).
    fn snap_content(&self, c: &Content) -> Result<Snap, CheckpointError> {
        Ok(match c {
            Content::Absent => Snap::Absent,
            Content::File(b, mode) => self.snap(Some(b), *mode, true)?,
            Content::Link(t) => Snap::Link {
                target: t.clone(),
                hash: entry::link_hash(t),
            },
        })
    }
}
