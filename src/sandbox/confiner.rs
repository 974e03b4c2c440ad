//! The session's side of confinement: which policy one command gets, given how it was
//! approved and what the kernel can enforce.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::policy::{Kind, Policy, config_paths};
use super::reads::{ReadLists, ReadScope};
use super::secrets::ScanCache;
use super::{Confinement, SandboxMode, capabilities};

type DenyFn = dyn Fn(&Path) -> bool + Send + Sync;

/// Per-session confinement state: the working directories, the private temp dir, what
/// commands may read and the credential scan.
pub struct Confiner {
    working_dirs: Vec<PathBuf>,
    home: Option<PathBuf>,
    tmp_dir: PathBuf,
    /// What commands may read: the session's (`with_reads`), or else one built from the
    /// environment alone on first use (reading the environment and the homes costs a few
    /// hundred path comparisons, which a session that sets its own need not pay twice).
    reads: Arc<OnceLock<ReadScope>>,
    /// Readable besides the working directories: a sub-agent's worktree keeps the repository's
    /// `.git`, where its objects and refs are.
    also_readable: Vec<PathBuf>,
    cache: Mutex<ScanCache>,
    /// Read deny rules, so files they name stay unreadable in the jail too.
    denied: Arc<DenyFn>,
}

impl std::fmt::Debug for Confiner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confiner")
            .field("working_dirs", &self.working_dirs)
            .field("tmp_dir", &self.tmp_dir)
            .finish_non_exhaustive()
    }
}

impl Confiner {
    pub fn new(
        working_dirs: Vec<PathBuf>,
        home: Option<PathBuf>,
        tmp_dir: PathBuf,
        denied: impl Fn(&Path) -> bool + Send + Sync + 'static,
    ) -> Self {
        Confiner {
            working_dirs,
            home,
            tmp_dir,
            reads: Arc::default(),
            also_readable: Vec::new(),
            cache: Mutex::new(ScanCache::default()),
            denied: Arc::new(denied),
        }
    }

    /// The session's read policy (its settings and the paths it hands its commands), in place
    /// of the one built from the environment alone.
    pub fn with_reads(mut self, reads: ReadScope) -> Self {
        self.reads = Arc::new(OnceLock::from(reads));
        self
    }

    /// The same state for commands working in `to`, a git worktree of the repository `from`
    /// (a sub-agent's): working directories in the repository move to the same place in the
    /// worktree, and `denied` (the worktree's own Read deny rules, which cover the copies of the
    /// files the parent's rules name) decides what stays unreadable.
    pub fn rebased(&self, from: &Path, to: &Path, denied: impl Fn(&Path) -> bool + Send + Sync + 'static) -> Confiner {
        Confiner {
            working_dirs: self
                .working_dirs
                .iter()
                .map(|d| crate::fsutil::rebase_path(d, from, to))
                .collect(),
            home: self.home.clone(),
            tmp_dir: self.tmp_dir.clone(),
            reads: self.reads.clone(),
            also_readable: self
                .also_readable
                .iter()
                .cloned()
                .chain(std::iter::once(from.join(".git")))
                .collect(),
            cache: Mutex::new(ScanCache::default()),
            denied: Arc::new(denied),
        }
    }

    /// Whether the kernel provides the read-only jail (else keel falls back to asking for
    /// everything its allow-list of programs and options does not cover).
    pub fn jail_available(&self) -> bool {
        capabilities().jail
    }

    pub fn tmp_dir(&self) -> &Path {
        &self.tmp_dir
    }

    /// The policy for one command approved `how`; `None` runs it unconfined; `Err` means it
    /// must not run. `report` is keel's working-directory report file, which stays writable.
    pub fn policy(&self, how: Confinement, sandbox: &SandboxMode, report: &Path) -> Result<Option<Policy>, String> {
        if let SandboxMode::Refuse(reason) = sandbox {
            return Err(reason.clone());
        }
        let jail = self.jail_available();
        let policy = match (how, sandbox) {
            (Confinement::ReadOnly, _) if jail => self.jail(report),
            (Confinement::WorkspaceWrite { creates_at_top }, _) if jail => self.workspace(report, creates_at_top),
            (_, SandboxMode::Enforced(template)) => self.sandbox(template, report),
            _ => return Ok(None),
        };
        Ok(Some(policy))
    }

    /// After a command ran: one that could write may have created credential files.
    pub fn after_command(&self, policy: Option<&Policy>) {
        if policy.is_none_or(|p| p.kind != Kind::Jail) {
            self.cache.lock().unwrap_or_else(|p| p.into_inner()).invalidate();
        }
    }

    fn read_scope(&self) -> &ReadScope {
        self.reads.get_or_init(|| {
            let keel_home = crate::config::paths::keel_home();
            ReadScope::new(
                self.home.as_deref(),
                keel_home.as_deref(),
                Default::default(),
                Default::default(),
            )
        })
    }

    /// What one command may read: the session's read lists, plus (for commands keel approved
    /// on its own) the credential files a scan of the working directories found.
    fn reads(&self, scan_workspace: bool) -> ReadLists {
        let readable: Vec<PathBuf> = self.working_dirs.iter().chain(&self.also_readable).cloned().collect();
        let mut lists = self.read_scope().lists(&readable);
        if scan_workspace {
            let denied = self.denied.clone();
            let scan = self
                .cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&self.working_dirs, &move |p: &Path| denied(p));
            lists.hidden.extend(scan.found);
        }
        lists
    }

    /// Jailed commands get a temp dir of their own, apart from the one commands that may
    /// write use: nothing a jailed command leaves there (a link planted under a name another
    /// command will write to) reaches a command with more rights.
    fn jail_tmp(&self) -> PathBuf {
        let mut name = self.tmp_dir.file_name().unwrap_or_default().to_os_string();
        name.push("-jail");
        self.tmp_dir.with_file_name(name)
    }

    fn jail(&self, report: &Path) -> Policy {
        let tmp = self.jail_tmp();
        let reads = self.reads(true);
        Policy {
            kind: Kind::Jail,
            writable: vec![tmp.clone(), report.to_path_buf()],
            protected: Vec::new(),
            reserved: Vec::new(),
            private: reads.private,
            readable: reads.readable,
            hidden: reads.hidden,
            allow_network: false,
            tmp_dir: Some(tmp),
            proxy: None,
        }
    }

    fn workspace(&self, report: &Path, creates_at_top: bool) -> Policy {
        let (existing, missing) = config_paths(&self.working_dirs, self.home.as_deref());
        // Without a mount namespace the configuration cannot be bound read-only; the check
        // already refused every path of these commands that names it.
        let protected = if capabilities().mount_namespace {
            existing
        } else {
            Vec::new()
        };
        // Missing configuration cannot be created either, unless the command must create a
        // new entry at the top (then only the check, which saw every name, guards it).
        let reserved = if creates_at_top { Vec::new() } else { missing };
        let tmp = self.jail_tmp();
        let mut writable = self.working_dirs.clone();
        writable.extend([tmp.clone(), report.to_path_buf()]);
        let reads = self.reads(true);
        Policy {
            kind: Kind::Workspace,
            writable,
            protected,
            reserved,
            private: reads.private,
            readable: reads.readable,
            hidden: reads.hidden,
            allow_network: false,
            tmp_dir: Some(tmp),
            proxy: None,
        }
    }

    fn sandbox(&self, template: &Policy, report: &Path) -> Policy {
        // Every writable root keeps its configuration, not only the working directories: an
        // extra writable path (`sandbox.additionalWritePaths`) may hold a repository or the
        // home directory with its shell start-up files and `~/.keel`.
        let roots: Vec<PathBuf> = template
            .writable
            .iter()
            .filter(|p| template.tmp_dir.as_ref() != Some(*p))
            .chain(self.working_dirs.iter())
            .cloned()
            .collect();
        let (protected, reserved) = config_paths(&roots, self.home.as_deref());
        let mut p = template.clone();
        p.writable.push(report.to_path_buf());
        p.protected = protected;
        p.reserved = reserved;
        // A command the check could not see into (a script, inline code) must not print the
        // user's files and tokens into the conversation, network or not: home directories are
        // private but for what builds and tests need. (The working directories are not
        // scanned here: commands that write would force a new scan every time.)
        let reads = self.reads(false);
        p.private = reads.private;
        p.readable = reads.readable;
        p.hidden = reads.hidden;
        p
    }
}

/// Environment variables a jailed command does not get: names that look like they carry a
/// secret (keel's own API key among them).
pub fn secret_env_names() -> Vec<OsString> {
    const MARKS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "PRIVATE",
        "SESSION",
    ];
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| {
            let upper = k.to_string_lossy().to_ascii_uppercase();
            MARKS.iter().any(|m| upper.contains(m))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file command acceptEdits approved cannot create missing configuration by a name its
    /// command line does not spell (a backup suffix, say): the kernel reserves those names
    /// unless the command must create something new at the top.
    #[test]
    fn workspace_commands_keep_missing_configuration_reserved() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().canonicalize().unwrap();
        std::fs::create_dir(w.join(".git")).unwrap();
        let c = Confiner::new(vec![w.clone()], None, w.join("tmp"), |_| false);
        let report = w.join("report");
        let p = c.workspace(&report, false);
        for name in [".keel", ".claude", ".mcp.json"] {
            assert!(p.reserved.contains(&w.join(name)), "{name}: {:?}", p.reserved);
        }
        assert!(
            !p.reserved.contains(&w.join(".git")),
            "existing ones are mounted read-only"
        );
        assert!(c.workspace(&report, true).reserved.is_empty());
    }

    /// Every confined command gets the session's read lists: the home private, the working
    /// directories readable; a sub-agent's worktree keeps the repository's `.git` readable
    /// (its objects and refs live there) without the repository itself.
    #[test]
    fn policies_carry_the_read_lists_and_worktrees_keep_the_repository_git() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let (home, repo, wt) = (base.join("home"), base.join("home/repo"), base.join("wt"));
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let c = Confiner::new(vec![repo.clone()], Some(home.clone()), base.join("tmp"), |_| false);
        let report = base.join("report");
        let template = Policy {
            kind: Kind::Sandbox,
            writable: vec![repo.clone()],
            protected: Vec::new(),
            reserved: Vec::new(),
            private: Vec::new(),
            readable: Vec::new(),
            hidden: Vec::new(),
            allow_network: true,
            tmp_dir: None,
            proxy: None,
        };
        for p in [
            c.jail(&report),
            c.workspace(&report, false),
            c.sandbox(&template, &report),
        ] {
            assert!(p.private.contains(&home), "{:?}: {:?}", p.kind, p.private);
            assert!(p.readable.contains(&repo), "{:?}: {:?}", p.kind, p.readable);
        }
        let child = c.rebased(&repo, &wt, |_| false);
        let p = child.jail(&report);
        assert!(
            p.readable.contains(&wt) && p.readable.contains(&repo.join(".git")),
            "{:?}",
            p.readable
        );
        assert!(!p.readable.contains(&repo), "{:?}", p.readable);
    }
}
