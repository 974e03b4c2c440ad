//! What one confined shell command may do, and how that travels to the helper on its argv.
//!
//! Three kinds of confinement share one mechanism:
//! - [`Kind::Jail`]: a command keel approved on its own because it only reads. Nothing is
//!   writable but `/dev/null`, the command's private temp dir and keel's own report file;
//!   no network, no unix sockets, home directories private but for the working directories
//!   and toolchains (see [`super::reads`]), credential locations unreadable, no capabilities.
//! - [`Kind::Workspace`]: a file command acceptEdits approved (`mkdir`, `cp`, …): the jail
//!   plus writes in the working directories, whose configuration stays read-only.
//! - [`Kind::Sandbox`]: the opt-in write sandbox (`--sandbox`) for every other command:
//!   writes in the working directories; configuration that runs code later stays unwritable
//!   whether or not it exists (see [`config_paths`]).

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Jail,
    Workspace,
    Sandbox,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Jail => "jail",
            Kind::Workspace => "workspace",
            Kind::Sandbox => "sandbox",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        [Kind::Jail, Kind::Workspace, Kind::Sandbox]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// What one confined command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub kind: Kind,
    /// Write rights beneath each of these (directories or single files).
    pub writable: Vec<PathBuf>,
    /// Existing paths inside `writable` that stay read-only: each becomes a read-only mount
    /// point, so it can be neither written nor replaced, moved or removed.
    pub protected: Vec<PathBuf>,
    /// Paths inside `writable` that do not exist but must not appear: their parent directory
    /// (and its ancestors up to the writable root) lose the right to create entries, while
    /// everything already inside stays writable.
    pub reserved: Vec<PathBuf>,
    /// Trees whose content the command cannot read but for the `readable` paths inside them
    /// (home directories, keel's state).
    pub private: Vec<PathBuf>,
    /// Paths readable although a `private` tree holds them (the deepest of the two decides).
    pub readable: Vec<PathBuf>,
    /// Paths whose content the command cannot read whatever holds them (credential
    /// locations, `denyRead`).
    pub hidden: Vec<PathBuf>,
    pub allow_network: bool,
    /// The commands' private temporary directory, given to them as `TMPDIR`.
    pub tmp_dir: Option<PathBuf>,
    /// The filtering proxy's socket (`sandbox.network` domain lists): the write sandbox's
    /// commands reach the network only through it ([`super::bridge`]).
    pub proxy: Option<PathBuf>,
}

/// Names at the top of each working directory that configure programs keel, git or the
/// reference tool run later, outside any sandbox. `.git` is kept whole: besides its config and
/// hooks, `commondir`, `info/`, `modules/` and `config.worktree` redirect or extend what git
/// runs, and moving `.git` itself away would let a new one take its place.
pub const WORKSPACE_CONFIG: &[&str] = &[".git", ".keel", ".claude", ".mcp.json"];

/// The same for the home directory, when it lies inside a writable directory: start-up and
/// tool configuration that runs programs, and the directories on a usual `PATH` where a
/// program named like a common one (`git`) would be found first.
pub const HOME_CONFIG: &[&str] = &[
    ".keel",
    ".claude",
    ".ssh",
    ".gitconfig",
    ".config/git",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".config/fish",
    ".config/systemd",
    ".config/autostart",
    ".npmrc",
    ".cargo/config.toml",
    ".cargo/config",
    ".cargo/bin",
    ".local/bin",
];

/// The configuration paths of `working_dirs` (and of `home` when a working directory holds
/// it): `(existing, missing)`.
pub fn config_paths(working_dirs: &[PathBuf], home: Option<&Path>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut candidates: Vec<PathBuf> = working_dirs
        .iter()
        .flat_map(|d| WORKSPACE_CONFIG.iter().map(move |n| d.join(n)))
        .collect();
    if let Some(h) = home
        && working_dirs.iter().any(|d| h.starts_with(d))
    {
        candidates.extend(HOME_CONFIG.iter().map(|n| h.join(n)));
    }
    candidates.sort();
    candidates.dedup();
    let (mut existing, mut missing) = (Vec::new(), Vec::new());
    for c in candidates {
        match c.symlink_metadata() {
            Err(_) => missing.push(c),
            // A link (a repository may commit `.claude -> somewhere`) cannot be a mount point:
            // a mount would cover its target, and the link itself could then be removed and
            // a real directory made in its place. So the name is reserved like a missing one,
            // and what it leads to is protected where it exists, reserved where it does not
            // (writing through a dangling link would create it).
            Ok(m) if m.file_type().is_symlink() => {
                let target = crate::fsutil::paths::real_path(&c);
                missing.push(c);
                if target.symlink_metadata().is_ok_and(|t| !t.file_type().is_symlink()) {
                    existing.push(target);
                } else {
                    missing.push(target);
                }
            }
            Ok(_) => existing.push(c),
        }
    }
    for list in [&mut existing, &mut missing] {
        list.sort();
        list.dedup();
    }
    (existing, missing)
}

/// Lets a write-sandboxed command create new entries at the top of its writable directories
/// (`echo x > notes.txt`): the configuration names missing there leave `reserved`, which takes
/// the right to create entries from their whole directory, and are returned for keel to look
/// at once the command is gone ([`super::quarantine`]). Only where every reserved path below
/// a directory lies directly in it — one further down (the home directory's `.config/git` when
/// the home is inside) keeps the directory closed, as Landlock cannot take a right back below
/// a grant — and only for names that do not exist at all (a link keeps its name reserved).
pub fn open_top(policy: &mut Policy) -> Vec<PathBuf> {
    if policy.kind != Kind::Sandbox {
        return Vec::new();
    }
    let mut opened: Vec<PathBuf> = Vec::new();
    for root in &policy.writable {
        if policy.tmp_dir.as_ref() == Some(root) {
            continue;
        }
        let inner: Vec<&PathBuf> = policy
            .reserved
            .iter()
            .filter(|r| r.starts_with(root) && *r != root)
            .collect();
        let flat = inner
            .iter()
            .all(|r| r.parent() == Some(root.as_path()) && r.symlink_metadata().is_err());
        if flat {
            opened.extend(inner.into_iter().cloned());
        }
    }
    opened.sort();
    opened.dedup();
    policy.reserved.retain(|r| !opened.contains(r));
    opened
}

impl Policy {
    /// The helper's arguments for this policy (before `--` and the command).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--kind".to_string(), self.kind.as_str().to_string()];
        let mut push = |flag: &str, paths: &[PathBuf]| {
            for p in paths {
                args.push(flag.to_string());
                args.push(p.display().to_string());
            }
        };
        push("--write", &self.writable);
        push("--protect", &self.protected);
        push("--reserve", &self.reserved);
        push("--private", &self.private);
        push("--read", &self.readable);
        push("--hide", &self.hidden);
        if self.allow_network {
            args.push("--net".into());
        }
        if let Some(p) = &self.proxy {
            args.extend(["--proxy".to_string(), p.display().to_string()]);
        }
        args
    }

    /// Reads the arguments [`Policy::to_args`] wrote; returns the policy and the index of the
    /// command after `--`.
    pub fn from_args(args: &[String]) -> Result<(Policy, usize), String> {
        let mut policy = Policy {
            kind: Kind::Sandbox,
            writable: Vec::new(),
            protected: Vec::new(),
            reserved: Vec::new(),
            private: Vec::new(),
            readable: Vec::new(),
            hidden: Vec::new(),
            allow_network: false,
            tmp_dir: None,
            proxy: None,
        };
        let mut i = 0;
        while i < args.len() {
            let value = || args.get(i + 1).ok_or_else(|| format!("{} needs a value", args[i]));
            match args[i].as_str() {
                "--kind" => {
                    let v = value()?;
                    policy.kind = Kind::parse(v).ok_or_else(|| format!("unknown kind {v}"))?;
                }
                "--write" => policy.writable.push(PathBuf::from(value()?)),
                "--protect" => policy.protected.push(PathBuf::from(value()?)),
                "--reserve" => policy.reserved.push(PathBuf::from(value()?)),
                "--private" => policy.private.push(PathBuf::from(value()?)),
                "--read" => policy.readable.push(PathBuf::from(value()?)),
                "--hide" => policy.hidden.push(PathBuf::from(value()?)),
                "--proxy" => policy.proxy = Some(PathBuf::from(value()?)),
                "--net" => {
                    policy.allow_network = true;
                    i += 1;
                    continue;
                }
                "--" => return Ok((policy, i + 1)),
                other => return Err(format!("unknown option {other}")),
            }
            i += 2;
        }
        Err("no command to run".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip() {
        let p = Policy {
            kind: Kind::Jail,
            writable: vec!["/tmp/x".into(), "/dev/null".into()],
            protected: vec!["/w/.git".into()],
            reserved: vec!["/w/.keel".into()],
            private: vec!["/root".into()],
            readable: vec!["/root/.cargo".into()],
            hidden: vec!["/root/.ssh".into()],
            allow_network: true,
            tmp_dir: None,
            proxy: None,
        };
        let mut args = p.to_args();
        args.extend(["--".into(), "bash".into()]);
        let (back, at) = Policy::from_args(&args).unwrap();
        assert_eq!(back, p);
        assert_eq!(args[at], "bash");
        assert!(Policy::from_args(&["--bogus".into()]).is_err());
        assert!(Policy::from_args(&["--kind".into(), "jail".into()]).is_err());
    }

    #[test]
    fn config_paths_split_existing_from_missing() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().to_path_buf();
        std::fs::create_dir(w.join(".git")).unwrap();
        let (existing, missing) = config_paths(std::slice::from_ref(&w), None);
        assert_eq!(existing, vec![w.join(".git")]);
        assert!(missing.contains(&w.join(".keel")) && missing.contains(&w.join(".mcp.json")));
        // A home inside the workspace brings its shell start-up files.
        let home = w.join("home");
        std::fs::create_dir(&home).unwrap();
        let (_, missing) = config_paths(std::slice::from_ref(&w), Some(&home));
        assert!(missing.contains(&home.join(".bashrc")));
        // And the directories where a program named like a common one would be found first.
        assert!(missing.contains(&home.join(".local/bin")) && missing.contains(&home.join(".cargo/bin")));
    }

    #[test]
    fn linked_configuration_names_are_reserved_and_their_targets_kept() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().canonicalize().unwrap();
        std::fs::create_dir(w.join("cfg")).unwrap();
        std::os::unix::fs::symlink("cfg", w.join(".claude")).unwrap();
        std::os::unix::fs::symlink("nowhere/mcp.json", w.join(".mcp.json")).unwrap();
        let (existing, missing) = config_paths(std::slice::from_ref(&w), None);
        // The links' names can be neither replaced nor recreated once removed.
        assert!(missing.contains(&w.join(".claude")) && missing.contains(&w.join(".mcp.json")));
        // An existing target is a read-only mount; a missing one may not be created.
        assert!(existing.contains(&w.join("cfg")), "{existing:?}");
        assert!(missing.contains(&w.join("nowhere/mcp.json")), "{missing:?}");
        assert!(!existing.contains(&w.join(".claude")));
    }

    #[test]
    fn the_top_opens_only_where_every_reserved_name_lies_directly_in_it() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().canonicalize().unwrap();
        let (ws, home) = (w.join("ws"), w.join("home"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(home.join(".config")).unwrap();
        std::os::unix::fs::symlink("elsewhere", ws.join(".claude")).unwrap();
        let mut p = Policy {
            kind: Kind::Sandbox,
            writable: vec![ws.clone(), home.clone(), w.join("tmp")],
            protected: Vec::new(),
            reserved: vec![
                ws.join(".keel"),
                ws.join(".mcp.json"),
                home.join(".bashrc"),
                home.join(".config/git"),
            ],
            hidden: Vec::new(),
            private: Vec::new(),
            readable: Vec::new(),
            allow_network: false,
            tmp_dir: Some(w.join("tmp")),
            proxy: None,
        };
        let opened = open_top(&mut p);
        assert_eq!(opened, vec![ws.join(".keel"), ws.join(".mcp.json")]);
        assert_eq!(p.reserved, vec![home.join(".bashrc"), home.join(".config/git")]);
        // A link's name stays reserved, and so does its directory.
        p.reserved.push(ws.join(".claude"));
        assert!(open_top(&mut p).is_empty());
        // The jail and workspace confinement never open.
        let mut jail = p.clone();
        jail.kind = Kind::Workspace;
        jail.reserved = vec![ws.join(".keel")];
        assert!(open_top(&mut jail).is_empty());
    }
}
