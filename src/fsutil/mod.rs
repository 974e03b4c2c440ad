//! File-system helpers: atomic writes that never leave a half-written file, opening files
//! exactly where a permission check resolved them (`open`), the atomic write relative to an
//! open directory (`replace`), the temporary files a killed keel left behind (`stale`), and the
//! fault-injection points of crash-safety tests (`crash`).

pub mod crash;
pub mod open;
pub mod paths;
pub mod replace;
pub mod stale;
pub mod walk;

/// Output files larger than this are not loaded whole (head and tail are shown instead).
pub const MAX_LOADED_BYTES: u64 = 4 * 1024 * 1024;

/// Content sniffing: a NUL byte in the first 8 KiB marks a binary file (as git and ripgrep do).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

use std::path::Path;

use replace::{Options, Replace};

/// `path` moved from below `from` to the same place below `to` (unchanged when it is not below
/// `from`): a repository path's twin in a git worktree of it.
pub fn rebase_path(path: &Path, from: &Path, to: &Path) -> std::path::PathBuf {
    match path.strip_prefix(from) {
        Ok(rel) if rel.as_os_str().is_empty() => to.to_path_buf(),
        Ok(rel) => to.join(rel),
        Err(_) => path.to_path_buf(),
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// fsynced, given the old file's permissions, and renamed over the target. Parent directories
/// are created. A crash at any point leaves either the old or the new content.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, bytes, true)
}

/// Like [`write_atomic`] (never a half-written file), but without forcing the data to disk:
/// for copies of data that is kept durably elsewhere (the transcript), where the fsyncs would
/// only cost time.
pub fn write_atomic_copy(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, bytes, false)
}

/// Like [`write_atomic`], for secrets (sign-in tokens): the file is always owner-only (0600,
/// whatever mode an existing one had) and a directory this creates is owner-only (0700). The
/// temporary file is created 0600, so the secret is never readable by others, not even briefly.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path has no file name"))?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let dir_fd: std::os::fd::OwnedFd = std::fs::File::open(dir)?.into();
    let abs_dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    replace::write_in_dir(
        &dir_fd,
        &abs_dir,
        name,
        bytes,
        Options {
            sync: true,
            mode: 0o600,
            replace: Replace::Any,
        },
    )?;
    Ok(())
}

/// For keel's own files (settings, spill files): the path is trusted, so it is opened normally.
fn write_atomic_with(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path has no file name"))?;
    std::fs::create_dir_all(dir)?;
    let old = std::fs::metadata(path).ok();
    let dir_fd: std::os::fd::OwnedFd = std::fs::File::open(dir)?.into();
    let abs_dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    replace::write_in_dir(
        &dir_fd,
        &abs_dir,
        name,
        bytes,
        Options {
            sync,
            mode: replace::mode_for(old.as_ref()),
            replace: Replace::Any,
        },
    )?;
    Ok(())
}

/// The process umask, read once from /proc (without the race of setting and restoring it);
/// keel never changes its umask.
#[cfg(unix)]
fn current_umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Umask:"))
                    .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            })
            .unwrap_or(0o022)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_permissions_and_replaces_content() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o755);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }

    #[test]
    fn creates_parent_directories() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/c.txt");
        write_atomic(&p, b"x").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
    }
}
