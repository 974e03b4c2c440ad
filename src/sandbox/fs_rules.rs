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

/// The rules for `policy`. Reads: everything but the private trees (bar the readable paths
/// inside them, the writable paths among those), the hidden paths and `/dev` (bar a few safe
/// devices; the write sandbox also keeps `/dev/shm`). Writes: the writable paths, minus the
/// right to create entries in the parents of reserved paths.
pub fn grants(policy: &Policy) -> Vec<Grant> {
    let mut out = Vec::new();
    let mut hidden: Vec<PathBuf> = policy.hidden.clone();
    hidden.push(PathBuf::from("/dev"));
    let mut readable = policy.readable.clone();
    readable.extend(policy.writable.iter().cloned());
    let tree = ReadTree {
        hidden: normalize(&hidden),
        private: normalize(&policy.private),
        readable: normalize(&readable),
    };
    tree.visit(Path::new("/"), &mut out);
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

/// The read side of a policy, every path canonical. A path is readable unless a hidden path
/// holds it or the deepest private or readable path holding it is a private one (a path that
/// is both counts as readable).
struct ReadTree {
    hidden: Vec<PathBuf>,
    private: Vec<PathBuf>,
    readable: Vec<PathBuf>,
}

impl ReadTree {
    fn open(&self, p: &Path) -> bool {
        if self.hidden.iter().any(|h| p.starts_with(h)) {
            return false;
        }
        let deepest = |list: &[PathBuf]| {
            list.iter()
                .filter(|b| p.starts_with(b))
                .map(|b| b.components().count())
                .max()
        };
        match (deepest(&self.private), deepest(&self.readable)) {
            (Some(closed), Some(opened)) => opened >= closed,
            (Some(_), None) => false,
            _ => true,
        }
    }

    fn below<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = &'a PathBuf> {
        self.hidden
            .iter()
            .chain(&self.private)
            .chain(&self.readable)
            .filter(move |b| b.starts_with(dir) && b.as_path() != dir)
    }

    /// Whether everything beneath `path` is as readable as `path` itself: then one rule (or
    /// none) covers it.
    fn uniform(&self, path: &Path) -> bool {
        let here = self.open(path);
        self.below(path).all(|b| self.open(b) == here)
    }

    /// Rules for `path` and what it holds.
    fn visit(&self, path: &Path, out: &mut Vec<Grant>) {
        if !self.uniform(path) {
            self.split(path, out);
        } else if self.open(path) {
            out.push(Grant {
                path: path.to_path_buf(),
                access: read_rights(),
            });
        }
    }

    /// A directory whose entries differ: a readable one gets the right to list it and each
    /// entry its own rules (links none: access through them is judged at the target); an
    /// unreadable one gets nothing, and only the entries on the way to a readable path are
    /// looked at.
    fn split(&self, dir: &Path, out: &mut Vec<Grant>) {
        if self.open(dir) {
            out.push(Grant {
                path: dir.to_path_buf(),
                access: AccessFs::ReadDir.into(),
            });
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                if !e.file_type().is_ok_and(|t| t.is_symlink()) {
                    self.visit(&e.path(), out);
                }
            }
            return;
        }
        let ways: BTreeSet<PathBuf> = self
            .below(dir)
            .filter(|b| self.open(b))
            .filter_map(|b| b.strip_prefix(dir).ok()?.components().next().map(|c| dir.join(c)))
            .collect();
        for way in ways {
            self.visit(&way, out);
        }
    }
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
            private: Vec::new(),
            readable: Vec::new(),
            hidden: Vec::new(),
            allow_network: false,
            tmp_dir: None,
            proxy: None,
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

    /// A private home gets no rule at all (not even a listing); only its allowed entries are
    /// granted, a credential file inside one of them stays out, and a link from the workspace
    /// into the home gets nothing (Landlock judges it at its closed target).
    #[test]
    fn a_private_home_opens_only_its_allowed_entries() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let home = base.join("home");
        for f in [
            ".cargo/bin/cargo",
            ".cargo/credentials.toml",
            ".config/git/config",
            ".config/git/credentials",
            ".keel/projects/p/s/tool-results/a.txt",
            ".keel/projects/other/t.jsonl",
            "notes",
        ] {
            let p = home.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        std::fs::create_dir_all(base.join("work/src")).unwrap();
        std::fs::create_dir_all(base.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(home.join(".config"), base.join("work/vendor")).unwrap();
        let mut p = policy(Kind::Jail);
        p.private = vec![home.clone(), home.join(".keel")];
        p.readable = vec![
            base.join("work"),
            home.join(".cargo"),
            home.join(".config/git/config"),
            home.join(".keel/projects/p/s/tool-results"),
        ];
        p.hidden = vec![home.join(".cargo/credentials.toml")];
        let g = grants(&p);
        let list: Option<BitFlags<AccessFs>> = Some(AccessFs::ReadDir.into());
        assert_eq!(rights_of(&g, &base), list);
        assert_eq!(rights_of(&g, &base.join("elsewhere")), Some(read_rights()));
        assert_eq!(rights_of(&g, &base.join("work")), Some(read_rights()));
        assert_eq!(rights_of(&g, &base.join("work/vendor")), None);
        for closed in [
            home.clone(),
            home.join("notes"),
            home.join(".config"),
            home.join(".config/git"),
            home.join(".config/git/credentials"),
            home.join(".cargo/credentials.toml"),
            home.join(".keel"),
            home.join(".keel/projects/other"),
            home.join(".keel/projects/other/t.jsonl"),
        ] {
            assert_eq!(rights_of(&g, &closed), None, "{closed:?}");
        }
        assert_eq!(
            rights_of(&g, &home.join(".cargo")),
            list,
            "split around its credential file"
        );
        assert_eq!(rights_of(&g, &home.join(".cargo/bin")), Some(read_rights()));
        assert_eq!(rights_of(&g, &home.join(".config/git/config")), Some(read_rights()));
        assert_eq!(
            rights_of(&g, &home.join(".keel/projects/p/s/tool-results")),
            Some(read_rights())
        );
        // No rule lies inside a closed tree but the allowed ones.
        for rule in &g {
            if rule.path.starts_with(&home) {
                assert!(
                    p.readable.iter().any(|r| rule.path.starts_with(r)),
                    "{:?} granted inside the private home",
                    rule.path
                );
            }
        }
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
