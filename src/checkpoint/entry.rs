//! Reading and writing one directory entry for a rewind without following any symbolic link
//! on the way: the directory is opened from `/` with no link resolved (a command may have put a
//! link to somewhere else in place of a directory, and a rewind must never write through it),
//! and the entry itself is looked at, not followed. Regular files and symbolic links are
//! handled; anything else (a FIFO, a device, a directory) is an error, never opened.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;

use super::hex_hash;
use crate::fsutil::open::OpenError;
use crate::fsutil::replace::{Options, Replace, write_in_dir};

/// What stands at a path.
#[derive(Debug)]
pub enum Entry {
    Absent,
    /// A regular file, open for reading.
    File(File, Metadata),
    /// A symbolic link and its target (UTF-8 only).
    Link(String),
}

/// What a rewind puts at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Absent,
    File(Vec<u8>, u32),
    Link(String),
}

/// The hash that stands for a symbolic link's target in the log (never equal to a file's).
pub fn link_hash(target: &str) -> String {
    hex_hash(format!("symlink\0{target}").as_bytes())
}

fn other(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

fn split(path: &Path) -> std::io::Result<(&Path, &OsStr)> {
    match (path.parent(), path.file_name()) {
        (Some(d), Some(n)) => Ok((d, n)),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path has no file name",
        )),
    }
}

/// Opens `dir` following no link (`None`: it does not exist and `create` is off).
fn open_dir(dir: &Path, create: bool) -> std::io::Result<Option<OwnedFd>> {
    match crate::fsutil::open::directory(dir, &[], create) {
        Ok(fd) => Ok(Some(fd)),
        Err(OpenError::NotFound(_)) if !create => Ok(None),
        Err(OpenError::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOENT) && !create => Ok(None),
        Err(OpenError::Io { source, .. }) => Err(source),
        Err(OpenError::Moved(_) | OpenError::DanglingLink { .. }) => Err(other(
            "a symbolic link now stands where keel changed a file or directory, and a rewind never writes through one",
        )),
        Err(e) => Err(other(e)),
    }
}

/// What stands at `path` now.
pub fn read(path: &Path) -> std::io::Result<Entry> {
    let (dir, name) = split(path)?;
    let Some(dir) = open_dir(dir, false)? else {
        return Ok(Entry::Absent);
    };
    let st = match nix::sys::stat::fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(Entry::Absent),
        Err(e) => return Err(e.into()),
    };
    match st.st_mode & libc::S_IFMT {
        libc::S_IFLNK => {
            let target = nix::fcntl::readlinkat(dir.as_fd(), name)?;
            let target = target.into_string().map_err(|_| {
                other(format!(
                    "{} is a symbolic link to a path that is not UTF-8",
                    path.display()
                ))
            })?;
            Ok(Entry::Link(target))
        }
        libc::S_IFREG => {
            let fd = nix::fcntl::openat(
                dir.as_fd(),
                name,
                OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )?;
            let file = File::from(fd);
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(other(format!("{} changed while it was being read", path.display())));
            }
            Ok(Entry::File(file, meta))
        }
        libc::S_IFDIR => Err(other(format!("{} is now a directory", path.display()))),
        _ => Err(other(format!(
            "{} is now a special file (FIFO, socket or device)",
            path.display()
        ))),
    }
}

/// What stands at `path` now, read whole (files up to `cap` bytes).
pub fn read_content(path: &Path, cap: u64) -> std::io::Result<Content> {
    Ok(match read(path)? {
        Entry::Absent => Content::Absent,
        Entry::Link(t) => Content::Link(t),
        Entry::File(mut f, meta) => {
            let mut bytes = Vec::new();
            (&mut f).take(cap + 1).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > cap {
                return Err(other(format!("{} is larger than {cap} bytes", path.display())));
            }
            Content::File(bytes, meta.mode() & 0o7777)
        }
    })
}

/// The log's hash of a content (`None`: absent).
pub fn hash_of(c: &Content) -> Option<String> {
    match c {
        Content::Absent => None,
        Content::File(b, _) => Some(hex_hash(b)),
        Content::Link(t) => Some(link_hash(t)),
    }
}

/// Puts `content` at `path` atomically (a file or a link is renamed over the name), or removes
/// what is there. Missing directories are made; none is followed if it is a link.
pub fn write(path: &Path, content: &Content) -> std::io::Result<()> {
    let (dir_path, name) = split(path)?;
    let Some(dir) = open_dir(dir_path, !matches!(content, Content::Absent))? else {
        return Ok(());
    };
    match content {
        Content::Absent => match nix::unistd::unlinkat(dir.as_fd(), name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(e.into()),
        },
        Content::File(bytes, mode) => {
            let opts = Options {
                sync: true,
                mode: *mode,
                replace: Replace::Any,
            };
            write_in_dir(&dir, dir_path, name, bytes, opts)?;
            Ok(())
        }
        Content::Link(target) => {
            let tmp = format!(".keel-link-{}-{}", std::process::id(), rand_suffix());
            nix::unistd::symlinkat(target.as_str(), dir.as_fd(), tmp.as_str())?;
            if let Err(e) = nix::fcntl::renameat(dir.as_fd(), tmp.as_str(), dir.as_fd(), name) {
                let _ = nix::unistd::unlinkat(dir.as_fd(), tmp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
                return Err(e.into());
            }
            let _ = nix::unistd::fsync(dir.as_fd());
            Ok(())
        }
    }
}

fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
}
