//! Words resolved as the shell will resolve them: `~` expanded, relative paths against the
//! working directory (physically or logically), and words keel cannot know reported as such.

use std::path::{Path, PathBuf};

use super::Word;

/// What a word names on disk, as far as keel can tell before the shell runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Paths(Vec<PathBuf>),
    /// Depends on the shell's run-time state (variables other than `HOME`, complex globs).
    Unknown,
}

/// Resolves a word used as a file name: `~` and `$HOME` are expanded, a glob in the last path
/// component is matched against the directory as the shell would; anything else dynamic is
/// unknown. `..` is folded as the kernel folds it (after a symbolic link: the target's parent).
pub fn resolve_word(w: &Word, cwd: &Path, home: Option<&Path>) -> Resolved {
    resolve_word_with(w, cwd, home, crate::fsutil::paths::resolve_physical)
}

/// The same for the argument of `cd`, which the shell folds lexically (`cd link/..` returns
/// to where it started) unless given `-P`.
pub fn resolve_word_logical(w: &Word, cwd: &Path, home: Option<&Path>) -> Resolved {
    resolve_word_with(w, cwd, home, crate::fsutil::paths::resolve)
}

fn resolve_word_with(w: &Word, cwd: &Path, home: Option<&Path>, resolve: fn(&Path, &str) -> PathBuf) -> Resolved {
    if !w.dynamic {
        return Resolved::Paths(vec![resolve(cwd, &w.text)]);
    }
    let text = match expand_home(&w.text, home) {
        Some(t) => t,
        None => return Resolved::Unknown,
    };
    if !text.contains(['*', '?', '[']) {
        return if text.contains(['$', '{']) {
            Resolved::Unknown
        } else {
            Resolved::Paths(vec![resolve(cwd, &text)])
        };
    }
    let full = resolve(cwd, &text);
    let (Some(dir), Some(pattern)) = (full.parent(), full.file_name().and_then(|n| n.to_str())) else {
        return Resolved::Unknown;
    };
    if dir.to_string_lossy().contains(['*', '?', '[', '$', '{']) || pattern.contains(['$', '{']) {
        return Resolved::Unknown;
    }
    let Ok(glob) = globset::GlobBuilder::new(pattern).literal_separator(true).build() else {
        return Resolved::Unknown;
    };
    let matcher = glob.compile_matcher();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Resolved::Paths(vec![full]);
    };
    let mut hits: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            // As in the shell, a leading `*` or `?` does not match a hidden name.
            (pattern.starts_with('.') || !name.starts_with('.')) && matcher.is_match(name.as_ref())
        })
        .map(|e| e.path())
        .collect();
    hits.sort();
    // No match: the shell passes the pattern through literally.
    if hits.is_empty() {
        Resolved::Paths(vec![full])
    } else {
        Resolved::Paths(hits)
    }
}

/// Expands a leading `~`, `$HOME` or `${HOME}`; `None` when other variables remain.
fn expand_home(text: &str, home: Option<&Path>) -> Option<String> {
    let home = home.map(|h| h.display().to_string());
    let replaced = if text == "~" || text == "$HOME" || text == "${HOME}" {
        home?
    } else if let Some(rest) = text
        .strip_prefix("~/")
        .or_else(|| text.strip_prefix("$HOME/"))
        .or_else(|| text.strip_prefix("${HOME}/"))
    {
        format!("{}/{rest}", home?)
    } else if text.starts_with('~') {
        return None;
    } else {
        text.to_string()
    };
    (!replaced.contains('$')).then_some(replaced)
}
