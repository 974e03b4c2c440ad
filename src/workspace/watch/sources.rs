//! What decides which files count but lies outside the watches: the ignore files of the root's
//! parent directories, each repository's exclude file inside its `.git` (never watched), and
//! the targets of `.gitignore` links. Each is `stat`ed (following links, as the walker reads
//! them) once per update; any change means the ignore rules may have changed, and the tree is
//! walked again. Also: whether a directory lies on a file system whose changes the kernel may
//! not hear of.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::workspace::snapshot::Stamp;

/// A file's identity and times now (`None`: absent or unreadable).
type Key = Option<(u64, Stamp)>;

fn key(path: &Path) -> Key {
    std::fs::metadata(path).ok().map(|m| (m.dev(), Stamp::of(&m)))
}

#[derive(Debug, Default)]
pub(super) struct Sources {
    files: Vec<(PathBuf, Key)>,
}

impl Sources {
    /// The ignore sources above `root` (its own `.gitignore` is watched).
    pub(super) fn above(root: &Path) -> Sources {
        let mut s = Sources::default();
        for dir in root.ancestors().skip(1) {
            s.watch(dir.join(".gitignore"));
            s.watch(dir.join(".git"));
            s.add_git_dir(dir);
        }
        s
    }

    /// A directory holding a `.git` entry: its exclude file, wherever `.git` points.
    pub(super) fn add_git_dir(&mut self, dir: &Path) {
        for p in exclude_files(dir) {
            self.watch(p);
        }
    }

    /// A file read as ignore rules (a `.gitignore` link's target, through the link).
    pub(super) fn watch(&mut self, path: PathBuf) {
        if !self.files.iter().any(|(p, _)| *p == path) {
            let k = key(&path);
            self.files.push((path, k));
        }
    }

    /// Whether any of them changed since it was noted.
    pub(super) fn changed(&self) -> bool {
        self.files.iter().any(|(p, k)| key(p) != *k)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.files.len()
    }
}

/// The files the walker reads as `dir`'s exclude rules: `.git/info/exclude`, or for a `.git`
/// file (a worktree, a submodule) those of the directory it names and of its common directory
/// (the same resolution the walker makes, and the files it goes through to make it).
fn exclude_files(dir: &Path) -> Vec<PathBuf> {
    let git = dir.join(".git");
    let mut out = vec![git.join("info/exclude")];
    if !std::fs::metadata(&git).is_ok_and(|m| m.is_file()) {
        return out;
    }
    let Some(line) = first_line(&git) else {
        return out;
    };
    let Some(real) = line.strip_prefix("gitdir: ") else {
        return out;
    };
    let real = PathBuf::from(real);
    out.push(real.join("commondir"));
    out.push(real.join("info/exclude"));
    if let Some(common) = first_line(&real.join("commondir")) {
        let common = if common.starts_with('.') {
            real.join(common)
        } else {
            PathBuf::from(common)
        };
        out.push(common.join("info/exclude"));
    }
    out
}

/// The first line of a small regular file (never a FIFO or device a repository planted).
fn first_line(path: &Path) -> Option<String> {
    let bytes = crate::fsutil::open::read_file_capped(path, 64 * 1024).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.lines().next().map(str::to_string)
}

/// Whether `dir` lies on a file system whose changes may be made where this kernel does not
/// see them (a network file system, FUSE: sshfs, a virtual machine's shared folder), so no
/// event would tell of them. An unknown answer counts as remote.
pub(super) fn remote(dir: &Path) -> bool {
    use nix::sys::statfs::{FsType, statfs};
    // From statfs(2) and the kernel's magic.h; FUSE covers sshfs and virtiofs.
    const REMOTE: &[i64] = &[
        0x6969,      // NFS
        0x517B,      // SMB
        0xFF53_4D42, // CIFS
        0xFE53_4D42, // SMB2
        0x6573_5546, // FUSE
        0x7375_7245, // Coda
        0x5346_414F, // AFS
        0x6B41_4653, // kAFS
        0x0102_1997, // 9p
        0x00C3_6400, // Ceph
        0x564C,      // NCP
        0x7461_636F, // OCFS2
        0x0116_1970, // GFS2
        0x0BD0_0BD0, // Lustre
        0x1983_0326, // OrangeFS
    ];
    match statfs(dir) {
        Ok(s) => {
            let FsType(t) = s.filesystem_type();
            // `fs_type_t`'s width differs between C libraries and architectures.
            #[allow(clippy::unnecessary_cast)]
            let t = t as i64;
            REMOTE.contains(&t)
        }
        Err(_) => true,
    }
}
