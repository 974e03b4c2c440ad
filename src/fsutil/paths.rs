//! Path handling shared by the file tools.

use std::path::{Component, Path, PathBuf};

use crate::fsutil::open::OpenError;
use crate::types::tool::ToolError;

/// Resolves a path from a tool input: `~` expands to the home directory, relative paths are
/// taken from `cwd`, and `.`/`..` are folded lexically (the file need not exist).
pub fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let expanded = if raw == "~" {
        dirs::home_dir().unwrap_or_else(|| PathBuf::from(raw))
    } else if let Some(rest) = raw.strip_prefix("~/") {
        match dirs::home_dir() {
            Some(home) => home.join(rest),
            None => PathBuf::from(raw),
        }
    } else {
        PathBuf::from(raw)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&joined)
}

/// Folds `.` and `..` without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path with symbolic links resolved as far as it exists (a new file's parent is
/// resolved, the missing rest appended). A link whose target does not exist yet resolves to
/// that target: writing through it creates the target, so that is where a check must look.
pub fn real_path(p: &Path) -> PathBuf {
    real_path_within(p, 40)
}

fn real_path_within(p: &Path, links_left: u32) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
        return p.to_path_buf();
    };
    let parent = real_path_within(parent, links_left);
    let here = parent.join(name);
    if links_left > 0
        && let Ok(target) = std::fs::read_link(&here)
    {
        return real_path_within(&normalize(&parent.join(target)), links_left - 1);
    }
    here
}

/// Resolves a path from a shell command line as the kernel will: like [`resolve`], but a
/// `..` that follows a symbolic link leads to the parent of the link's target, not back to
/// the directory holding the link (`link/../x` is not `./x` when `link` points elsewhere).
pub fn resolve_physical(cwd: &Path, raw: &str) -> PathBuf {
    let joined = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match dirs::home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => PathBuf::from(raw),
        },
        _ => PathBuf::from(raw),
    };
    let joined = if joined.is_absolute() { joined } else { cwd.join(joined) };
    if !joined.components().any(|c| c == Component::ParentDir) {
        return normalize(&joined);
    }
    let mut out = PathBuf::new();
    for comp in joined.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                out = real_path(&out);
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The message for a file that could not be opened (other than a missing file or a directory,
/// which each tool words itself).
pub fn open_failure(err: OpenError, path: &Path, tool: &str) -> ToolError {
    match err {
        OpenError::NotRegular { kind, .. } => ToolError::invalid(format!(
            "{} is {kind}, not a regular file; {tool} only works on regular files (reading a pipe or a device \
             could block or never end). Use Bash for special files.",
            path.display()
        )),
        OpenError::DanglingLink { target, .. } => ToolError::invalid(format!(
            "{} is a symbolic link to {}, which does not exist. Use the path of an existing file.",
            path.display(),
            target.display()
        )),
        OpenError::Moved(_) => ToolError::invalid(format!(
            "{} changed while it was being opened: a symbolic link replaced part of its path after the \
             permission check, so {tool} did nothing. Check the path (e.g. `ls -l`) and call {tool} again.",
            path.display()
        )),
        OpenError::NotFound(p) => ToolError::invalid(format!("{} does not exist.", p.display())),
        OpenError::Directory(p) => ToolError::invalid(format!("{} is a directory, not a file.", p.display())),
        OpenError::Io { source, .. } => ToolError::io(format!("cannot open {}", path.display()), source),
    }
}

/// A file next to `path` whose name is not valid UTF-8 but reads as `path`'s name once its
/// invalid bytes are shown as U+FFFD (what a listing shows and a model then asks for).
pub fn non_utf8_sibling(path: &Path) -> Option<PathBuf> {
    let wanted = path.file_name()?.to_str()?;
    if !wanted.contains('\u{fffd}') {
        return None;
    }
    std::fs::read_dir(path.parent()?)
        .ok()?
        .flatten()
        .map(|e| e.file_name())
        .find(|n| n.to_str().is_none() && n.to_string_lossy() == wanted)
        .and_then(|n| Some(path.parent()?.join(n)))
}

/// Says that a file's name is not UTF-8 and how to reach it.
pub fn non_utf8_message(asked: &Path, actual: &Path) -> String {
    format!(
        "{} names a file whose name is not valid UTF-8 (its exact bytes: {}). File tools take paths as \
         UTF-8 text and cannot name it. Reach it with Bash using that quoting, e.g. `cat {}`, or rename it \
         to a UTF-8 name with `mv`.",
        asked.display(),
        bash_quote(actual),
        bash_quote(actual)
    )
}

/// A path as a bash `$'…'` word with every byte that is not printable ASCII escaped, so a
/// name that is not UTF-8 can be typed exactly.
pub fn bash_quote(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::from("$'");
    for &b in path.as_os_str().as_bytes() {
        match b {
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// A path shown relative to `base` when it lies below it, else absolute.
pub fn display_relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

/// What a call that names one file acts on: its `file_path`, resolved against `cwd`.
pub fn file_path_subject(input: &serde_json::Value, cwd: &Path) -> crate::types::tool::Subject {
    input
        .get("file_path")
        .and_then(serde_json::Value::as_str)
        .map(|p| crate::types::tool::Subject::Path(resolve(cwd, p)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_and_dotdot() {
        let cwd = Path::new("/work/repo");
        assert_eq!(resolve(cwd, "src/a.rs"), PathBuf::from("/work/repo/src/a.rs"));
        assert_eq!(resolve(cwd, "./src/../b.rs"), PathBuf::from("/work/repo/b.rs"));
        assert_eq!(resolve(cwd, "/etc/hosts"), PathBuf::from("/etc/hosts"));
    }

    #[test]
    fn links_are_followed_as_the_kernel_follows_them() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(base.join("home/.aws/sso")).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::os::unix::fs::symlink(base.join("home/.aws/sso"), ws.join("lnk")).unwrap();
        // `lnk/..` is the link target's parent, not the workspace.
        assert_eq!(
            resolve_physical(&ws, "lnk/../credentials"),
            base.join("home/.aws/credentials")
        );
        assert_eq!(resolve_physical(&ws, "./a/../b"), ws.join("b"));
        assert_eq!(resolve_physical(&ws, "src/x"), ws.join("src/x"));
        // A dangling link resolves to the file writing through it would create.
        std::os::unix::fs::symlink(".mcp.json", ws.join("cfg")).unwrap();
        assert_eq!(real_path(&ws.join("cfg")), ws.join(".mcp.json"));
        std::os::unix::fs::symlink("loop", ws.join("loop")).unwrap();
        assert_eq!(real_path(&ws.join("loop")), ws.join("loop"), "a link loop ends");
    }

    #[test]
    fn names_that_are_not_utf8_are_found_and_quoted() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9 it's.txt"));
        std::fs::write(&raw, "x").unwrap();
        let asked = dir.path().join("caf\u{fffd} it's.txt");
        assert_eq!(non_utf8_sibling(&asked), Some(raw.clone()));
        assert!(non_utf8_sibling(&dir.path().join("cafe it's.txt")).is_none());
        let quoted = bash_quote(&raw);
        assert!(quoted.ends_with("caf\\xe9 it\\'s.txt'"), "{quoted}");
        // bash reads the quoted word back as the exact bytes.
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("cat {quoted}"))
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"x");
    }
}
