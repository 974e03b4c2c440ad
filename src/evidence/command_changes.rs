//! What one foreground shell command changed, sorted by kind, for the command's checkpoint
//! (`checkpoint::shell`).

use std::path::PathBuf;

/// What the last foreground shell command changed, paths relative to the workspace root (for
/// its checkpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandChanges {
    pub added: Vec<PathBuf>,
    pub modified: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    /// The fingerprint was incomplete: files beyond its limit may have changed unseen.
    pub uncertain: bool,
}

impl CommandChanges {
    /// Adds another command's changes (two were logged before either was taken).
    pub(super) fn absorb(&mut self, other: CommandChanges) {
        self.added.extend(other.added);
        self.modified.extend(other.modified);
        self.removed.extend(other.removed);
        self.uncertain |= other.uncertain;
    }
}

/// Sorts the command's own changes (`during`) by kind.
pub(super) fn command_changes(changes: &crate::workspace::Changes, during: &[String]) -> CommandChanges {
    let mut out = CommandChanges {
        uncertain: changes.uncertain,
        ..CommandChanges::default()
    };
    for rel in during {
        let p = PathBuf::from(rel);
        if changes.added.binary_search(&p).is_ok() {
            out.added.push(p);
        } else if changes.removed.binary_search(&p).is_ok() {
            out.removed.push(p);
        } else {
            out.modified.push(p);
        }
    }
    out
}
