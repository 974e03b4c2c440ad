//! `@path` mentions: the files (or directory listings) a prompt names are attached to it, so
//! the model gets them without a tool call. An attached file counts as fully read.
//!
//! A mention is opened like a Read: exactly where the check resolved it, regular files only
//! (a FIFO or `/dev/zero` behind a link is refused before anything blocks), at most
//! [`MAX_ATTACH`] bytes. The worker runs this off its own task so Esc can abandon it.

use std::path::{Path, PathBuf};

use crate::engine::SessionServices;
use crate::fsutil::open::{self, OpenError};
use crate::tools::file_state::{FileView, ViewKind, file_mtime};
use crate::types::message::ContentBlock;

/// Largest file attached whole.
pub const MAX_ATTACH: u64 = 256 * 1024;
/// Entries listed for a mentioned directory.
const MAX_LISTING: usize = 200;
/// How an attachment block begins (a resumed session shows these as one line, not in full).
pub const ATTACHMENT_LEAD: &str = "The user attached the ";

#[derive(Debug, Default)]
pub struct Resolved {
    /// The prompt followed by one block per attachment.
    pub blocks: Vec<ContentBlock>,
    /// What the user should know (a mention that could not be attached, and why).
    pub notes: Vec<String>,
}

/// The `@tokens` of a prompt, in order, without duplicates.
pub fn mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(m) = word.strip_prefix('@') else {
            continue;
        };
        if !m.is_empty() && !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out
}

fn resolve_path(cwd: &Path, m: &str) -> PathBuf {
    if let Some(rest) = m.strip_prefix("~/")
        && let Some(home) = dirs::home_dir()
    {
        return home.join(rest);
    }
    cwd.join(m)
}

/// Builds the content of a prompt. `check` resolves a path once, or says why reading it is not
/// allowed.
pub fn resolve(text: &str, shared: &SessionServices, check: &dyn Fn(&Path) -> Result<PathBuf, String>) -> Resolved {
    let mut out = Resolved {
        blocks: vec![ContentBlock::text(text)],
        notes: Vec::new(),
    };
    for m in mentions(text) {
        // A mention at the end of a sentence: `see @src/a.rs.`
        let candidates = [
            m.as_str(),
            m.trim_end_matches(['.', ',', ';', ':', ')', '!', '?', '\'', '"']),
        ];
        let Some((shown, path)) = candidates
            .iter()
            .map(|c| (c.to_string(), resolve_path(&shared.cwd, c)))
            .find(|(_, p)| p.exists())
        else {
            if m.contains('/') || m.contains('.') {
                out.notes
                    .push(format!("@{m}: no such file or directory; sent as plain text"));
            }
            continue;
        };
        let real = match check(&path) {
            Ok(real) => real,
            Err(reason) => {
                out.notes.push(format!("@{shown}: not attached: {reason}"));
                continue;
            }
        };
        match attach(&shown, &path, &real, shared) {
            Ok(block) => out.blocks.push(block),
            Err(note) => out.notes.push(note),
        }
    }
    out
}

fn attach(shown: &str, path: &Path, real: &Path, shared: &SessionServices) -> Result<ContentBlock, String> {
    let mut opened = match open::regular(real, &shared.roots()) {
        Ok(o) => o,
        Err(OpenError::Directory(_)) => return list_directory(shown, path, real),
        Err(OpenError::NotRegular { kind, .. }) => {
            return Err(format!("@{shown}: {kind}, not a regular file; not attached"));
        }
        Err(e) => return Err(format!("@{shown}: {e}; not attached")),
    };
    let too_large = |len: u64| {
        format!(
            "@{shown}: {} KB is too large to attach (limit {} KB); the model can read it with its tools",
            len / 1024,
            MAX_ATTACH / 1024
        )
    };
    if opened.meta.len() > MAX_ATTACH {
        return Err(too_large(opened.meta.len()));
    }
    let bytes = match open::read_capped(&mut opened.file, MAX_ATTACH) {
        Ok(Ok(b)) => b,
        Ok(Err(seen)) => return Err(too_large(seen)),
        Err(e) => return Err(format!("@{shown}: {e}")),
    };
    let meta = opened.meta;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(format!("@{shown}: not a text file; not attached"));
    };
    if text.contains('\0') {
        return Err(format!("@{shown}: not a text file; not attached"));
    }
    shared.files().record(
        path.to_path_buf(),
        FileView::new(&bytes, file_mtime(&meta), ViewKind::Complete),
    );
    let numbered: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect();
    Ok(ContentBlock::text(format!(
        "{ATTACHMENT_LEAD}file {} ({} lines):\n{numbered}",
        path.display(),
        text.lines().count()
    )))
}

fn list_directory(shown: &str, path: &Path, real: &Path) -> Result<ContentBlock, String> {
    let mut entries: Vec<String> = std::fs::read_dir(real)
        .map_err(|e| format!("@{shown}: {e}"))?
        .flatten()
        .map(|e| {
            let mut name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            name
        })
        .collect();
    entries.sort();
    let total = entries.len();
    entries.truncate(MAX_LISTING);
    let mut listing = entries.join("\n");
    if total > MAX_LISTING {
        listing.push_str(&format!("\n… and {} more entries", total - MAX_LISTING));
    }
    Ok(ContentBlock::text(format!(
        "{ATTACHMENT_LEAD}directory {} ({total} entries):\n{listing}",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(b: &ContentBlock) -> &str {
        match b {
            ContentBlock::Text { text, .. } => text,
            _ => panic!("not text"),
        }
    }

    #[test]
    fn attaches_files_and_directories_and_records_the_read() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("src/a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(cwd.join("bin.dat"), [0u8, 159, 146, 150]).unwrap();
        let shared = SessionServices::builder(cwd.clone(), cwd.join(".s")).build();
        let r = resolve(
            "explain @src/a.rs, list @src and @bin.dat and @missing/x.rs, cc @alice",
            &shared,
            &|p| Ok(p.to_path_buf()),
        );
        assert_eq!(r.blocks.len(), 3, "{:?}", r.blocks);
        assert!(text_of(&r.blocks[1]).contains("     1\tfn a() {}"));
        assert!(text_of(&r.blocks[2]).contains("a.rs"));
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(r.notes[0].contains("not a text file"));
        assert!(r.notes[1].contains("no such file"));
        let view = shared.files().get(&cwd.join("src/a.rs")).cloned().unwrap();
        assert!(view.is_complete());
    }

    #[test]
    fn denied_paths_are_not_attached() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::write(cwd.join(".env"), "SECRET=1\n").unwrap();
        let shared = SessionServices::builder(cwd.clone(), cwd.join(".s")).build();
        let r = resolve("check @.env", &shared, &|_| Err("a deny rule covers it".into()));
        assert_eq!(r.blocks.len(), 1);
        assert!(r.notes[0].contains("deny rule"));
    }
}
