//! Path handling shared by the file tools.

use std::path::{Component, Path, PathBuf};

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

/// A path shown relative to `base` when it lies below it, else absolute.
pub fn display_relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
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
}
