//! Opening a file exactly where a permission check resolved it.
//!
//! The check resolves a tool's path once (symbolic links followed) and decides on the result.
//! The tools then open that resolved path with no second lookup that could go elsewhere: from a
//! descriptor of the workspace root that contains it (or `/` for an approved path outside),
//! with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so a link swapped in after the check
//! makes the open fail instead of leading out of the workspace. Kernels without `openat2` get
//! the same guarantee from a walk of `openat(O_NOFOLLOW)` calls, one component at a time.
//!
//! Files are first opened with `O_PATH` (no side effects, never blocks) and refused unless they
//! are regular files, so a FIFO, a socket or a device such as `/dev/zero` is never read.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

/// Why a file could not be opened; the tools turn each into a message the model can act on.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{} does not exist", .0.display())]
    NotFound(PathBuf),
    #[error("{} is a directory", .0.display())]
    Directory(PathBuf),
    #[error("{} is {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The path is a symbolic link that did not resolve when the call was checked.
    #[error("{} is a symbolic link to {}, which does not exist", path.display(), target.display())]
    DanglingLink { path: PathBuf, target: PathBuf },
    /// A symbolic link appeared in the path after the permission check resolved it.
    #[error("{} changed while it was being opened (a symbolic link replaced part of its path)", .0.display())]
    Moved(PathBuf),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl OpenError {
    fn io(path: &Path, e: impl Into<std::io::Error>) -> Self {
        OpenError::Io {
            path: path.to_path_buf(),
            source: e.into(),
        }
    }
}

/// A regular file opened for reading, with its metadata (from the descriptor).
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub meta: Metadata,
}

/// The workspace root below which `real` lies (the longest), else `/`; and the rest of the path.
fn split_root<'a>(real: &'a Path, roots: &[PathBuf]) -> (PathBuf, &'a Path) {
    let best = roots
        .iter()
        .filter(|r| real.starts_with(r))
        .max_by_key(|r| r.as_os_str().len());
    match best {
        Some(r) => (r.clone(), real.strip_prefix(r).unwrap_or(Path::new(""))),
        None => (PathBuf::from("/"), real.strip_prefix("/").unwrap_or(real)),
    }
}

fn open_root(root: &Path) -> Result<OwnedFd, OpenError> {
    nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ENOENT => OpenError::NotFound(root.to_path_buf()),
        e => OpenError::io(root, e),
    })
}

/// Whether `openat2` works here (it may be missing or filtered by seccomp); probed on first use.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens `rel` below `dir` following no symbolic link and never leaving `dir`. `rel` must be
/// free of `..` (it comes from a resolved path).
pub fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag) -> nix::Result<OwnedFd> {
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(Errno::EXDEV);
    }
    let rel: &Path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    // openat2 refuses flags that mean nothing with O_PATH.
    let flags = if flags.contains(OFlag::O_PATH) {
        flags | OFlag::O_CLOEXEC
    } else {
        flags | OFlag::O_CLOEXEC | OFlag::O_NOCTTY
    };
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let how = OpenHow::new()
            .flags(flags)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        match nix::fcntl::openat2(dir, rel, how) {
            Err(Errno::ENOSYS) | Err(Errno::EPERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
            r => return r,
        }
    }
    walk(dir, rel, flags)
}

/// `open_beneath` without `openat2`: one `openat(O_NOFOLLOW)` per component.
fn walk(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag) -> nix::Result<OwnedFd> {
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let Some((last, dirs)) = parts.split_last() else {
        return nix::fcntl::openat(dir, ".", flags, Mode::empty());
    };
    let mut held: Option<OwnedFd> = None;
    for part in dirs {
        let cur = held.as_ref().map(|f| f.as_fd()).unwrap_or(dir);
        let next = nix::fcntl::openat(
            cur,
            *part,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| if is_link(cur, part) { Errno::ELOOP } else { e })?;
        held = Some(next);
    }
    let cur = held.as_ref().map(|f| f.as_fd()).unwrap_or(dir);
    let fd = nix::fcntl::openat(cur, *last, flags | OFlag::O_NOFOLLOW, Mode::empty())?;
    // `O_PATH | O_NOFOLLOW` opens a link itself instead of failing.
    if flags.contains(OFlag::O_PATH)
        && nix::sys::stat::fstat(&fd).is_ok_and(|s| s.st_mode & libc::S_IFMT == libc::S_IFLNK)
    {
        return Err(Errno::ELOOP);
    }
    Ok(fd)
}

fn is_link(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|s| s.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// Maps an open failure of `real` to an [`OpenError`], telling a dangling link from a swap.
fn classify(real: &Path, e: Errno) -> OpenError {
    match e {
        Errno::ENOENT => OpenError::NotFound(real.to_path_buf()),
        Errno::ELOOP | Errno::EXDEV => match std::fs::read_link(real) {
            Ok(target) if std::fs::metadata(real).is_err() => OpenError::DanglingLink {
                path: real.to_path_buf(),
                target,
            },
            _ => OpenError::Moved(real.to_path_buf()),
        },
        e => OpenError::io(real, e),
    }
}

/// What kind of non-regular file `meta` describes, for messages.
pub fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// Opens the path as it was resolved by the permission check (`real`: symbolic links already
/// followed) without following any link, below the workspace root that contains it. Refuses
/// directories and non-regular files before opening them for reading.
pub fn regular(real: &Path, roots: &[PathBuf]) -> Result<Opened, OpenError> {
    let (root, rel) = split_root(real, roots);
    let root_fd = open_root(&root)?;
    let path_fd = open_beneath(root_fd.as_fd(), rel, OFlag::O_PATH).map_err(|e| classify(real, e))?;
    let handle = File::from(path_fd);
    let meta = handle.metadata().map_err(|e| OpenError::io(real, e))?;
    if meta.is_dir() {
        return Err(OpenError::Directory(real.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(OpenError::NotRegular {
            path: real.to_path_buf(),
            kind: kind_of(&meta),
        });
    }
    // Reopen the very inode for reading. The magic link in /proc names the descriptor, not a path.
    let proc_path = format!("/proc/self/fd/{}", handle.as_raw_fd());
    let file = match nix::fcntl::open(
        proc_path.as_str(),
        OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => File::from(fd),
        // No /proc: open the path again the same way and make sure it is the same file.
        Err(Errno::ENOENT) => File::from(
            open_beneath(root_fd.as_fd(), rel, OFlag::O_RDONLY | OFlag::O_NONBLOCK).map_err(|e| classify(real, e))?,
        ),
        Err(e) => return Err(OpenError::io(real, e)),
    };
    let now = file.metadata().map_err(|e| OpenError::io(real, e))?;
    if now.dev() != meta.dev() || now.ino() != meta.ino() || !now.is_file() {
        return Err(OpenError::Moved(real.to_path_buf()));
    }
    clear_nonblock(&file);
    Ok(Opened { file, meta: now })
}

/// Regular files ignore O_NONBLOCK; cleared anyway so the descriptor behaves as usual.
fn clear_nonblock(file: &File) {
    if let Ok(bits) = nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_GETFL) {
        let flags = OFlag::from_bits_truncate(bits) & !OFlag::O_NONBLOCK;
        let _ = nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_SETFL(flags));
    }
}

/// Opens (for `*at` calls and fsync) the directory `real_dir`, resolved like [`regular`]'s
/// paths; with `create`, missing directories are made one by one below the last existing one.
pub fn directory(real_dir: &Path, roots: &[PathBuf], create: bool) -> Result<OwnedFd, OpenError> {
    let (root, rel) = split_root(real_dir, roots);
    let root_fd = open_root(&root)?;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY;
    match open_beneath(root_fd.as_fd(), rel, flags) {
        Ok(fd) => return Ok(fd),
        Err(Errno::ENOENT) if create => {}
        Err(Errno::ENOTDIR) => return Err(OpenError::io(real_dir, Errno::ENOTDIR)),
        Err(e) => return Err(classify(real_dir, e)),
    }
    let mut cur = root_fd;
    for part in rel.components() {
        let Component::Normal(name) = part else {
            return Err(OpenError::Moved(real_dir.to_path_buf()));
        };
        let next = match open_beneath(cur.as_fd(), Path::new(name), flags) {
            Err(Errno::ENOENT) => {
                match nix::sys::stat::mkdirat(cur.as_fd(), name, Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(OpenError::io(real_dir, e)),
                }
                open_beneath(cur.as_fd(), Path::new(name), flags)
            }
            r => r,
        };
        cur = next.map_err(|e| classify(real_dir, e))?;
    }
    Ok(cur)
}

/// Reads at most `cap` bytes; `Err(size_seen)` when the file holds more (it may have grown
/// since its size was checked, or be endless).
pub fn read_capped(file: &mut File, cap: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
    let hint = file.metadata().map(|m| m.len()).unwrap_or(0).min(cap);
    let mut bytes = Vec::with_capacity(hint as usize + 1);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Why keel could not read one of the repository's files for itself (instruction files,
/// custom commands, files shown again after compaction).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}, not a regular file")]
    NotRegular(&'static str),
    #[error("larger than {} KB", .0 / 1024)]
    TooLarge(u64),
}

/// Reads a file keel loads by itself (links followed as usual): never a FIFO, socket or
/// device (opened without blocking, refused), never more than `cap` bytes.
pub fn read_file_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind_of(&meta)));
    }
    clear_nonblock(&file);
    match read_capped(&mut file, cap)? {
        Ok(bytes) => Ok(bytes),
        Err(_) => Err(ReadError::TooLarge(cap)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("sub/a.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("secret"), "SECRET\n").unwrap();
        (t, ws, outside)
    }

    fn read(o: Opened) -> String {
        let mut s = String::new();
        let mut f = o.file;
        f.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn opens_resolved_paths_and_refuses_links_that_appear_later() {
        let (_t, ws, outside) = setup();
        let roots = vec![ws.clone()];
        assert_eq!(read(regular(&ws.join("sub/a.txt"), &roots).unwrap()), "inside\n");
        // A link that was resolved by the check is never followed at open time.
        symlink(outside.join("secret"), ws.join("link")).unwrap();
        assert!(matches!(regular(&ws.join("link"), &roots), Err(OpenError::Moved(_))));
        // A directory of the path replaced by a link to the outside.
        std::fs::rename(ws.join("sub"), ws.join("sub.old")).unwrap();
        symlink(&outside, ws.join("sub")).unwrap();
        std::fs::write(outside.join("a.txt"), "OUTSIDE\n").unwrap();
        assert!(matches!(
            regular(&ws.join("sub/a.txt"), &roots),
            Err(OpenError::Moved(_))
        ));
        // Outside every root (an approved path), still no link is followed.
        assert_eq!(read(regular(&outside.join("secret"), &roots).unwrap()), "SECRET\n");
        assert!(matches!(regular(&ws.join("sub/secret"), &[]), Err(OpenError::Moved(_))));
    }

    #[test]
    fn dangling_links_and_missing_files_are_named() {
        let (_t, ws, _) = setup();
        symlink(ws.join("nowhere"), ws.join("dangling")).unwrap();
        let roots = vec![ws.clone()];
        assert!(matches!(
            regular(&ws.join("dangling"), &roots),
            Err(OpenError::DanglingLink { .. })
        ));
        assert!(matches!(
            regular(&ws.join("missing"), &roots),
            Err(OpenError::NotFound(_))
        ));
        assert!(matches!(regular(&ws.join("sub"), &roots), Err(OpenError::Directory(_))));
    }

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let (_t, ws, _) = setup();
        let fifo = ws.join("pipe");
        nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o644)).unwrap();
        let err = regular(&fifo, std::slice::from_ref(&ws)).unwrap_err();
        assert!(
            matches!(
                err,
                OpenError::NotRegular {
                    kind: "a FIFO (named pipe)",
                    ..
                }
            ),
            "{err}"
        );
        let err = regular(Path::new("/dev/zero"), &[]).unwrap_err();
        assert!(
            matches!(
                err,
                OpenError::NotRegular {
                    kind: "a character device",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn walk_fallback_gives_the_same_answers() {
        let (_t, ws, outside) = setup();
        symlink(&outside, ws.join("out")).unwrap();
        let root = open_root(&ws).unwrap();
        assert!(walk(root.as_fd(), Path::new("sub/a.txt"), OFlag::O_RDONLY).is_ok());
        assert_eq!(
            walk(root.as_fd(), Path::new("out/secret"), OFlag::O_RDONLY).unwrap_err(),
            Errno::ELOOP
        );
        assert_eq!(
            walk(root.as_fd(), Path::new("out"), OFlag::O_PATH).unwrap_err(),
            Errno::ELOOP
        );
        assert_eq!(
            open_beneath(root.as_fd(), Path::new("../outside/secret"), OFlag::O_RDONLY).unwrap_err(),
            Errno::EXDEV
        );
    }

    #[test]
    fn directories_are_created_beneath_the_root_only() {
        let (_t, ws, outside) = setup();
        let roots = vec![ws.clone()];
        directory(&ws.join("new/deeper"), &roots, true).unwrap();
        assert!(ws.join("new/deeper").is_dir());
        symlink(&outside, ws.join("out")).unwrap();
        assert!(directory(&ws.join("out/made"), &roots, true).is_err());
        assert!(!outside.join("made").exists());
    }

    #[test]
    fn keels_own_reads_refuse_special_files() {
        let (_t, ws, _) = setup();
        nix::unistd::mkfifo(&ws.join("pipe"), Mode::from_bits_truncate(0o644)).unwrap();
        assert!(matches!(
            read_file_capped(&ws.join("pipe"), 10),
            Err(ReadError::NotRegular(_))
        ));
        assert!(matches!(
            read_file_capped(Path::new("/dev/zero"), 10),
            Err(ReadError::NotRegular(_))
        ));
        assert!(matches!(
            read_file_capped(&ws.join("sub/a.txt"), 3),
            Err(ReadError::TooLarge(3))
        ));
        assert_eq!(read_file_capped(&ws.join("sub/a.txt"), 100).unwrap(), b"inside\n");
    }

    #[test]
    fn capped_reads_stop_after_the_cap() {
        let mut zero = File::open("/dev/zero").unwrap();
        assert_eq!(read_capped(&mut zero, 1000).unwrap(), Err(1001));
        let (_t, ws, _) = setup();
        let mut f = File::open(ws.join("sub/a.txt")).unwrap();
        assert_eq!(read_capped(&mut f, 100).unwrap().unwrap(), b"inside\n");
    }
}
