//! The atomic write itself, relative to an open directory: a temporary file is created in that
//! directory, written, synced, given its permissions and renamed over the name, all through the
//! directory's descriptor, so no path is looked up again between the check and the write.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::UnlinkatFlags;

use super::stale;

/// What may stand at the target name when the new content is renamed over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Whatever is there (or nothing).
    Any,
    /// Nothing: the file is new, and one that appeared meanwhile is not overwritten.
    Nothing,
    /// The file that was read (device and inode), and no other.
    Same { dev: u64, ino: u64 },
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// fsync the data and the directory (off for copies of data kept durably elsewhere).
    pub sync: bool,
    /// Permission bits of the new file (an existing file's are passed to keep them).
    pub mode: u32,
    pub replace: Replace,
}

/// Why the rename did not happen although the data was written.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    #[error("a file appeared at that name while it was being written; nothing was overwritten")]
    Appeared,
    #[error("the file was replaced by another one while it was being written; nothing was overwritten")]
    Swapped,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<Errno> for ReplaceError {
    fn from(e: Errno) -> Self {
        ReplaceError::Io(e.into())
    }
}

impl From<ReplaceError> for std::io::Error {
    fn from(e: ReplaceError) -> Self {
        match e {
            ReplaceError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::AlreadyExists, other.to_string()),
        }
    }
}

/// Writes `bytes` as `name` in the directory `dir` (whose path, `dir_path`, is only recorded so
/// a leftover temporary file can be found after a crash). Returns the new file's metadata.
pub fn write_in_dir(
    dir: &OwnedFd,
    dir_path: &Path,
    name: &OsStr,
    bytes: &[u8],
    opts: Options,
) -> Result<Metadata, ReplaceError> {
    let tmp_name = stale::temp_name();
    stale::record(dir_path, &tmp_name);
    let fd = nix::fcntl::openat(
        dir.as_fd(),
        tmp_name.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )?;
    let mut tmp = File::from(fd);
    let written = fill(&mut tmp, bytes, opts).and_then(|meta| {
        check_target(dir, name, opts.replace)?;
        super::crash::point("write-rename");
        rename(dir, &tmp_name, name, opts.replace)?;
        Ok(meta)
    });
    let meta = match written {
        Ok(m) => m,
        Err(e) => {
            let _ = nix::unistd::unlinkat(dir.as_fd(), tmp_name.as_str(), UnlinkatFlags::NoRemoveDir);
            return Err(e);
        }
    };
    if opts.sync {
        let _ = nix::unistd::fsync(dir);
    }
    Ok(meta)
}

fn fill(tmp: &mut File, bytes: &[u8], opts: Options) -> Result<Metadata, ReplaceError> {
    tmp.write_all(bytes)?;
    nix::sys::stat::fchmod(tmp.as_fd(), Mode::from_bits_truncate(opts.mode & 0o7777))?;
    if opts.sync {
        tmp.sync_all()?;
    }
    Ok(tmp.metadata()?)
}

fn check_target(dir: &OwnedFd, name: &OsStr, replace: Replace) -> Result<(), ReplaceError> {
    let Replace::Same { dev, ino } = replace else {
        return Ok(());
    };
    match nix::sys::stat::fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) if st.st_dev == dev && st.st_ino == ino => Ok(()),
        Ok(_) | Err(Errno::ENOENT) => Err(ReplaceError::Swapped),
        Err(e) => Err(e.into()),
    }
}

fn rename(dir: &OwnedFd, tmp: &str, name: &OsStr, replace: Replace) -> Result<(), ReplaceError> {
    if replace == Replace::Nothing {
        match renameat_noreplace(dir, tmp, name) {
            Ok(()) => return Ok(()),
            Err(Errno::EEXIST) => return Err(ReplaceError::Appeared),
            // File systems without RENAME_NOREPLACE: check, then rename.
            Err(Errno::EINVAL) | Err(Errno::ENOSYS) => {
                if nix::sys::stat::fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok() {
                    return Err(ReplaceError::Appeared);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    nix::fcntl::renameat(dir.as_fd(), tmp, dir.as_fd(), name)?;
    Ok(())
}

fn renameat_noreplace(dir: &OwnedFd, tmp: &str, name: &OsStr) -> Result<(), Errno> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(tmp).map_err(|_| Errno::EINVAL)?;
    let to = std::ffi::CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: both strings are NUL-terminated and outlive the call; the descriptor is open.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            dir.as_raw_fd(),
            from.as_ptr(),
            dir.as_raw_fd(),
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    Errno::result(r).map(drop)
}

/// The mode bits to give a file: an existing file's own, else 0666 minus the umask.
pub fn mode_for(existing: Option<&Metadata>) -> u32 {
    existing
        .map(|m| m.mode() & 0o7777)
        .unwrap_or(0o666 & !super::current_umask())
}
