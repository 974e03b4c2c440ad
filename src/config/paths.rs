//! Where keel keeps its files.

use std::path::{Path, PathBuf};

/// `$KEEL_HOME`, else `~/.keel`.
pub fn keel_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("KEEL_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(h));
    }
    dirs::home_dir().map(|h| h.join(".keel"))
}

/// The per-project directory holding session transcripts: `<home>/projects/<encoded cwd>`.
pub fn project_dir(home: &Path, cwd: &Path) -> PathBuf {
    home.join("projects").join(encode_cwd(cwd))
}

/// Encodes a path as one directory name, as the reference does (`/a/b.c` → `-a-b-c`).
pub fn encode_cwd(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_the_reference() {
        assert_eq!(encode_cwd(Path::new("/work/my.repo")), "-work-my-repo");
    }
}
