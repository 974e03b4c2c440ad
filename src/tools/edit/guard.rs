//! The host's guards before Edit or Write touch an existing file.
//!
//! 1. Read-before-write: the file must have been read in this session; overwriting it whole
//!    (Write) needs a complete view, a local edit (Edit) accepts a partial one because its
//!    anchor proves the model saw that spot.
//! 2. Optimistic concurrency: the file on disk must still be what the model read. The content
//!    hash decides (a changed size short-cuts it); a new mtime with identical content, e.g. from
//!    `touch` or a formatter that changed nothing, is not a conflict. A conflict is refused with a
//!    diff of what changed on disk since the read, so the model can re-plan on top of it.

use similar::TextDiff;
use std::path::Path;

use crate::tools::ToolError;
use crate::tools::file_state::{FileStateMap, FileView, content_hash};

/// What the caller is about to do with the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// A content-anchored local change (Edit).
    Edit,
    /// Replacing the whole content (Write).
    Overwrite,
}

/// Most diff lines shown in a conflict message.
const MAX_DIFF_LINES: usize = 60;
const MAX_DIFF_CHARS: usize = 6_000;
/// Diffing huge files is cut short (the result is then coarser, never wrong).
pub const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// Refuses files too large to have been read (Read does not load them), before loading them.
pub fn check_size(path: &Path, len: u64) -> Result<(), ToolError> {
    if len > crate::tools::read::MAX_FILE_BYTES {
        return Err(too_large(path, len));
    }
    Ok(())
}

/// The refusal of a file above the size cap (`len`: its size, or the bytes seen before reading stopped).
pub fn too_large(path: &Path, len: u64) -> ToolError {
    ToolError::invalid(format!(
        "{} is {} MB, more than Edit and Write handle ({} MB); change it with a suitable command via Bash.",
        path.display(),
        len / (1024 * 1024),
        crate::tools::read::MAX_FILE_BYTES / (1024 * 1024)
    ))
}

/// Checks the read state of `path` against its current bytes; returns the model's view.
pub fn check(files: &FileStateMap, path: &Path, current: &[u8], intent: Intent) -> Result<FileView, ToolError> {
    let Some(view) = files.get(path) else {
        return Err(unread(path, intent));
    };
    if intent == Intent::Overwrite && !view.is_complete() {
        return Err(ToolError::invalid(format!(
            "You have seen only part of {} (a ranged or truncated read, or a summary), so it cannot be \
             overwritten whole: the parts you have not seen would be lost. Read the whole file first, or \
             change the part you know with Edit.",
            path.display()
        )));
    }
    let changed = current.len() as u64 != view.size || content_hash(current) != view.hash;
    if changed {
        return Err(ToolError::invalid(conflict_message(path, view, current)));
    }
    Ok(view.clone())
}

/// The refusal of a file the session has not read.
pub fn unread(path: &Path, intent: Intent) -> ToolError {
    ToolError::invalid(match intent {
        Intent::Edit => format!(
            "{} has not been read in this session, so it cannot be edited yet. Read it first (the part you \
             want to change is enough), then repeat the edit.",
            path.display()
        ),
        Intent::Overwrite => format!(
            "{} already exists and has not been read in this session. Read the whole file before replacing \
             it, so nothing in it is lost by accident; for a local change use Edit.",
            path.display()
        ),
    })
}

fn conflict_message(path: &Path, view: &FileView, current: &[u8]) -> String {
    let when = view
        .seen_at
        .elapsed()
        .map(|d| format!(" {} s ago", d.as_secs()))
        .unwrap_or_default();
    let mut msg = format!(
        "{} has changed on disk since you read it{when} (edited by the user, a formatter or a command), so \
         nothing was written.",
        path.display()
    );
    match (&view.snapshot, std::str::from_utf8(current)) {
        (Some(before), Ok(now)) => {
            msg.push_str(" What changed on disk since your read:\n");
            msg.push_str(&compact_diff(before, now));
        }
        _ => msg.push_str(&format!(
            " It was {} bytes when you read it and is {} bytes now (no diff: the file is too large or not UTF-8 text).",
            view.size,
            current.len()
        )),
    }
    msg.push_str("\nRead the file again and make your change on top of its current content; keep the other changes.");
    msg
}

/// A unified diff with two lines of context, cut to a readable size.
pub fn compact_diff(before: &str, after: &str) -> String {
    let diff = TextDiff::configure().timeout(DIFF_TIMEOUT).diff_lines(before, after);
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header("as you read it", "on disk now")
        .to_string();
    let mut out = String::new();
    let total = text.lines().count();
    for (i, line) in text.lines().enumerate() {
        if i >= MAX_DIFF_LINES || out.len() + line.len() > MAX_DIFF_CHARS {
            out.push_str(&format!("... ({} more diff lines not shown)\n", total - i));
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::file_state::ViewKind;
    use std::path::PathBuf;

    fn state(content: &[u8], kind: ViewKind) -> (FileStateMap, PathBuf) {
        let mut m = FileStateMap::default();
        let p = PathBuf::from("/w/f.txt");
        m.record(p.clone(), FileView::new(content, None, kind));
        (m, p)
    }

    #[test]
    fn unread_partial_and_changed_are_refused() {
        let empty = FileStateMap::default();
        let err = check(&empty, Path::new("/w/f.txt"), b"x", Intent::Edit).unwrap_err();
        assert!(err.to_string().contains("has not been read"), "{err}");

        let (m, p) = state(b"a\nb\n", ViewKind::Partial);
        assert!(check(&m, &p, b"a\nb\n", Intent::Edit).is_ok());
        let err = check(&m, &p, b"a\nb\n", Intent::Overwrite).unwrap_err();
        assert!(err.to_string().contains("only part"), "{err}");

        let (m, p) = state(b"a\nb\nc\n", ViewKind::Complete);
        let err = check(&m, &p, b"a\nB\nc\n", Intent::Edit).unwrap_err().to_string();
        assert!(err.contains("-b\n+B\n"), "{err}");
    }

    #[test]
    fn diff_is_capped() {
        let before: String = (0..500).map(|i| format!("{i}\n")).collect();
        let after: String = (0..500).map(|i| format!("x{i}\n")).collect();
        let d = compact_diff(&before, &after);
        assert!(d.lines().count() <= MAX_DIFF_LINES + 1);
        assert!(d.contains("more diff lines not shown"));
    }
}
