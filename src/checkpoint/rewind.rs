//! Restoring files to a point: plan (what would change, and what changed outside keel since),
//! then apply all of it or nothing. A rewind is itself a point with logged changes, so it can
//! be rewound too.

use std::path::{Path, PathBuf};

use similar::TextDiff;

use super::{Change, CheckpointError, Checkpoints, PointKind, Snap, hex_hash, mode_of};

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

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub to: u32,
    pub files: Vec<FileRestore>,
    pub conflicts: Vec<Conflict>,
    /// Files whose earlier content was too big to keep.
    pub too_big: Vec<PathBuf>,
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

/// The file's current content (`None`: absent). Recorded paths are resolved ones, so no link
/// is followed on the way: a directory swapped for a link since (a command can make
/// `src -> ~`) makes the rewind refuse instead of reading, and writing, through it.
fn read_current(path: &Path) -> Result<Option<Vec<u8>>, RewindError> {
    use crate::fsutil::open::{self, OpenError};
    let read_err = |source: std::io::Error| RewindError::Read {
        path: path.to_path_buf(),
        source,
    };
    match open::regular(path, &[]) {
        Ok(mut opened) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut opened.file, &mut bytes).map_err(read_err)?;
            Ok(Some(bytes))
        }
        Err(OpenError::NotFound(_)) => Ok(None),
        Err(e) => Err(read_err(std::io::Error::other(not_followed(e)))),
    }
}

/// Why a path was not opened, worded for a rewind.
fn not_followed(e: crate::fsutil::open::OpenError) -> String {
    use crate::fsutil::open::OpenError;
    match e {
        OpenError::Moved(_) | OpenError::DanglingLink { .. } => {
            "a symbolic link now stands where keel changed a file or directory, and a rewind never \
             writes through one"
                .into()
        }
        e => e.to_string(),
    }
}

/// Longest diff shown per conflicting file.
const MAX_DIFF_LINES: usize = 200;

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
            let current = read_current(path)?;
            let current_hash = current.as_deref().map(hex_hash);
            if current_hash.as_deref() == first.before.hash() {
                continue; // already as it was
            }
            if current_hash.as_deref() != last.after.hash() {
                plan.conflicts.push(Conflict {
                    path: path.to_path_buf(),
                    diff: self.diff(path, &last.after, current.as_deref()),
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

    fn diff(&self, path: &Path, keel: &Snap, now: Option<&[u8]>) -> String {
        let keel_bytes = match keel {
            Snap::Absent => Some(Vec::new()),
            Snap::Stored { hash, .. } => self.blobs().get(hash).ok(),
            Snap::TooBig { .. } => None,
        };
        let (Some(old), now) = (keel_bytes, now.unwrap_or_default()) else {
            return String::new();
        };
        let (Ok(old), Ok(new)) = (std::str::from_utf8(&old), std::str::from_utf8(now)) else {
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
        Ok(self.apply(&plan, &format!("rewind to before point {to}"))?.1)
    }

    /// Applies a checked plan as a new point (also when there is nothing to restore, so the
    /// conversation part of a rewind has its point too). Returns the new point and the
    /// restored paths.
    pub fn apply(&self, plan: &Plan, label: &str) -> Result<(u32, Vec<PathBuf>), RewindError> {
        // Everything is read before anything is written.
        let mut contents = Vec::with_capacity(plan.files.len());
        for f in &plan.files {
            let bytes = match &f.target {
                Snap::Absent => None,
                Snap::Stored { hash, mode, .. } => Some((
                    self.blobs().get(hash).map_err(|source| RewindError::Read {
                        path: f.path.clone(),
                        source,
                    })?,
                    *mode,
                )),
                Snap::TooBig { .. } => return Err(RewindError::TooBig(vec![f.path.clone()])),
            };
            let now = read_current(&f.path)?;
            contents.push((f, bytes, now));
        }
        let point = self.begin(PointKind::Rewind, label)?;
        let mut done: Vec<(&Path, Option<Vec<u8>>, u32)> = Vec::new();
        for (f, target, now) in &contents {
            let mode = mode_of(&f.path);
            let target_bytes = target.as_ref().map(|(b, _)| b.as_slice());
            self.record(&f.path, now.as_deref(), target_bytes, mode, "rewind")?;
            if let Err(source) = put(&f.path, target.as_ref().map(|(b, m)| (b.as_slice(), *m))) {
                for (path, previous, mode) in done.into_iter().rev() {
                    let _ = put(path, previous.as_deref().map(|b| (b, mode)));
                }
                let _ = put(&f.path, now.as_deref().map(|b| (b, mode)));
                return Err(RewindError::Write {
                    path: f.path.clone(),
                    source,
                });
            }
            done.push((&f.path, now.clone(), mode));
        }
        Ok((point, plan.files.iter().map(|f| f.path.clone()).collect()))
    }
}

/// Puts `content` (bytes and permission bits) at `path` atomically, or removes the file;
/// the directory is opened without following any link (see [`read_current`]), and a link at
/// the file's own name is replaced, never written through.
fn put(path: &Path, content: Option<(&[u8], u32)>) -> std::io::Result<()> {
    use crate::fsutil::open::{self, OpenError};
    use crate::fsutil::replace::{self, Options, Replace};
    let (Some(dir_path), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"));
    };
    let dir = match open::directory(dir_path, &[], content.is_some()) {
        Ok(d) => d,
        Err(OpenError::NotFound(_)) if content.is_none() => return Ok(()),
        Err(e) => return Err(std::io::Error::other(not_followed(e))),
    };
    match content {
        None => match nix::unistd::unlinkat(
            std::os::fd::AsFd::as_fd(&dir),
            name,
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        ) {
            Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
            Err(e) => Err(e.into()),
        },
        Some((bytes, mode)) => {
            let opts = Options {
                sync: true,
                mode,
                replace: Replace::Any,
            };
            replace::write_in_dir(&dir, dir_path, name, bytes, opts).map_err(std::io::Error::from)?;
            Ok(())
        }
    }
}
