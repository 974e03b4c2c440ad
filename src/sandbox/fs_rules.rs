//! The Landlock file-system rules of a policy.
//!
//! Landlock only grants: a right given on a directory holds for everything beneath it, and
//! nothing can be taken back below. To keep one path out of a granted tree, keel grants the
//! tree's *siblings* instead: every directory on the way from the root to a kept-out path is
//! "partial" (it gets only the rights that are safe for all it holds), and each of its other
//! entries gets the full rights. Symbolic links are never granted as entries: access through
//! a link is judged at its target.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use landlock::{ABI, AccessFs, BitFlags};

use super::policy::{Kind, Policy};

/// The ABI whose rights keel asks for (newer rights are not needed).
pub const FS_ABI: ABI = ABI::V5;

/// Device files a command may open although `/dev` is otherwise closed.
pub const SAFE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

pub fn read_rights() -> BitFlags<AccessFs> {
    AccessFs::from_read(FS_ABI)
}

/// Every write right but creating device nodes and device ioctls.
pub fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(FS_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
}

fn make_rights() -> BitFlags<AccessFs> {
    AccessFs::MakeReg
        | AccessFs::MakeDir
        | AccessFs::MakeSym
        | AccessFs::MakeSock
        | AccessFs::MakeFifo
        | AccessFs::MakeChar
        | AccessFs::MakeBlock
}

/// One rule: `access` beneath `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub access: BitFlags<AccessFs>,
}

/// The rules for `policy`. Reads: everything but the hidden paths and `/dev` (bar a few safe
/// devices; the write sandbox also keeps `/dev/shm`). Writes: the writable paths, minus the
/// right to create entries in the parents of reserved paths.
pub fn grants(policy: &Policy) -> Vec<Grant> {
    let mut out = Vec::new();
    let mut hidden: Vec<PathBuf> = policy.hidden.clone();
    hidden.push(PathBuf::from("/dev"));
    let hidden = normalize(&hidden);
    for (path, access) in except(
        Path::new("/"),
        &hidden,
        &BTreeSet::new(),
        read_rights(),
        AccessFs::ReadDir.into(),
    ) {
        out.push(Grant { path, access });
    }
    let mut devices: Vec<&str> = SAFE_DEVICES.to_vec();
    if policy.kind == Kind::Sandbox {
        devices.push("/dev/shm");
    }
    for d in devices {
        out.push(Grant {
            path: d.into(),
            access: read_rights() | write_rights(),
        });
    }

    let protected: BTreeSet<PathBuf> = policy.protected.iter().cloned().collect();
    for root in &policy.writable {
        // Writable paths are readable, unless they hold something hidden.
        if !hidden.iter().any(|h| h.starts_with(root)) {
            out.push(Grant {
                path: root.clone(),
                access: read_rights(),
            });
        }
        let inner: Vec<PathBuf> = policy
            .reserved
            .iter()
            .filter(|r| r.starts_with(root) && r.as_path() != root)
            .cloned()
            .collect();
        if inner.is_empty() {
            out.push(Grant {
                path: root.clone(),
                access: write_rights(),
            });
            continue;
        }
        // Partial directories keep every right but creating entries; their other entries
        // (protected ones are read-only mounts and get nothing) keep all rights.
        for (path, access) in except(
            root,
            &inner,
            &protected,
            write_rights(),
            write_rights() & !make_rights(),
        ) {
            out.push(Grant { path, access });
        }
    }
    out
}

/// Rules granting `full` beneath `root` except below the `kept_out` paths: every directory
/// on the way to one of them gets `partial`, each of their other entries `full`. Entries in
/// `skip` get nothing.
fn except(
    root: &Path,
    kept_out: &[PathBuf],
    skip: &BTreeSet<PathBuf>,
    full: BitFlags<AccessFs>,
    partial: BitFlags<AccessFs>,
) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    let kept_out: Vec<&PathBuf> = kept_out
        .iter()
        .filter(|k| k.starts_with(root) && k.as_path() != root)
        .collect();
    if kept_out.is_empty() {
        return vec![(root.to_path_buf(), full)];
    }
    let mut partials: BTreeSet<PathBuf> = BTreeSet::new();
    for k in &kept_out {
        let mut p = k.parent();
        while let Some(dir) = p {
            if !dir.starts_with(root) {
                break;
            }
            partials.insert(dir.to_path_buf());
            p = dir.parent();
        }
    }
    let exact: BTreeSet<&Path> = kept_out.iter().map(|k| k.as_path()).collect();
    let mut out = Vec::new();
    for dir in &partials {
        out.push((dir.clone(), partial));
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            if partials.contains(&path) || exact.contains(path.as_path()) || skip.contains(&path) {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                continue;
            }
            out.push((path, full));
        }
    }
    out
}

/// Absolute, symlink-free forms of the paths that exist (a link is kept out at its target,
/// which is where Landlock judges access).
fn normalize(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = paths.iter().filter_map(|p| p.canonicalize().ok()).collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(kind: Kind) -> Policy {
        Policy {
            kind,
            writable: Vec::new(),
            protected: Vec::new(),
            reserved: Vec::new(),
            hidden: Vec::new(),
            allow_network: false,
            tmp_dir: None,
        }
    }

    fn rights_of(grants: &[Grant], p: &Path) -> Option<BitFlags<AccessFs>> {
        let mut found = None;
        for g in grants.iter().filter(|g| g.path == p) {
            found = Some(found.unwrap_or(BitFlags::EMPTY) | g.access);
        }
        found
    }

    #[test]
    fn hidden_paths_are_left_out_and_their_siblings_granted() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(base.join("home/src")).unwrap();
        std::fs::write(base.join("home/notes"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("home/.ssh"), base.join("home/link")).unwrap();
        let mut p = policy(Kind::Jail);
        p.hidden.push(base.join("home/.ssh"));
        let g = grants(&p);
        assert_eq!(rights_of(&g, &base.join("home/.ssh")), None);
        assert_eq!(
            rights_of(&g, &base.join("home/link")),
            None,
            "links are judged at their target"
        );
        assert_eq!(rights_of(&g, &base.join("home")), Some(AccessFs::ReadDir.into()));
        assert_eq!(rights_of(&g, &base.join("home/src")), Some(read_rights()));
        assert_eq!(rights_of(&g, &base.join("home/notes")), Some(read_rights()));
        assert_eq!(rights_of(&g, Path::new("/")), Some(AccessFs::ReadDir.into()));
        assert_eq!(rights_of(&g, Path::new("/dev")), None);
        assert!(rights_of(&g, Path::new("/dev/null")).is_some());
    }

    #[test]
    fn reserved_names_take_the_create_right_from_their_parent_only() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(w.join("src")).unwrap();
        std::fs::create_dir_all(w.join(".git")).unwrap();
        let mut p = policy(Kind::Sandbox);
        p.writable.push(w.clone());
        p.protected.push(w.join(".git"));
        p.reserved.push(w.join(".keel"));
        let g = grants(&p);
        let top = rights_of(&g, &w).unwrap();
        assert!(!top.contains(AccessFs::MakeDir) && top.contains(AccessFs::RemoveFile));
        assert!(rights_of(&g, &w.join("src")).unwrap().contains(AccessFs::MakeDir));
        assert!(
            !rights_of(&g, &w.join(".git"))
                .unwrap_or(BitFlags::EMPTY)
                .contains(AccessFs::WriteFile),
            "protected paths are read-only mounts and get no write rule"
        );
        // Without reserved names the whole directory is writable.
        p.reserved.clear();
        assert!(rights_of(&grants(&p), &w).unwrap().contains(AccessFs::MakeReg));
    }
}
