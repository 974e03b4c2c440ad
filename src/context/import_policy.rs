//! Which `@` imports of instruction files are read.
//!
//! A cloned repository's instruction files are the repository's words, but an import is a
//! file read without any permission check, straight into the model's context. So:
//! - no import, from any file, reads a credential location (the list the sandbox keeps
//!   unreadable: `~/.ssh`, `~/.aws`, `.netrc`, `.env*`, keys, …);
//! - an import from a project file (shared, local or nested) that leads outside the project
//!   (the repository root, or the working directory outside a repository), after following
//!   links, is read only when the user approved it for this project. The interactive session
//!   asks once; the answer is kept in keel's own state for the project
//!   (`<keel home>/projects/<project>/external-imports.json`), never in a repository file.
//!   Headless runs skip unapproved ones and say so.
//!
//! The user's own file (`~/.claude/CLAUDE.md`) imports from anywhere but credential locations.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::sandbox::secrets::credential_reason;

/// Where the answers for a project are kept, in its directory below keel's home.
pub const FILE: &str = "external-imports.json";

/// How external imports of project files are treated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum External {
    /// Only the targets the user approved are read.
    Approved(Vec<PathBuf>),
    /// Every one is read (used to find what to ask about; never for a session's context).
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportPolicy {
    /// The project root, canonical: the repository root, or the working directory.
    pub root: PathBuf,
    /// The user's home directory as given and as its real path (credential locations are
    /// recognised under both).
    homes: Vec<PathBuf>,
    pub external: External,
    /// Targets the user declined for this project (for the notices).
    pub declined: Vec<PathBuf>,
    /// Where keel and the reference tool keep their own state (sessions of every project,
    /// settings with server tokens): never imported by a project file, approved or not.
    private: Vec<PathBuf>,
    /// The session's other working directories (`--add-dir`, `additionalDirectories`),
    /// canonical: inside like the project.
    pub extra: Vec<PathBuf>,
}

/// What becomes of one file about to be read as an import (or as a linked instruction file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Read,
    /// A credential location: never read.
    Credential(String),
    /// Outside the project and not approved.
    External,
}

impl ImportPolicy {
    /// No approvals: imports of project files stay inside the project of `cwd`.
    pub fn strict(cwd: &Path, home: Option<&Path>) -> Self {
        let mut homes: Vec<PathBuf> = home.map(Path::to_path_buf).into_iter().collect();
        if let Some(real) = home.and_then(|h| h.canonicalize().ok())
            && !homes.contains(&real)
        {
            homes.push(real);
        }
        let mut private = Vec::new();
        for h in &homes {
            private.extend([h.join(".keel"), h.join(".claude.json"), h.join(".claude/projects")]);
        }
        if let Some(kh) = crate::config::paths::keel_home() {
            private.push(kh.canonicalize().unwrap_or(kh));
        }
        let root = project_root(cwd, &homes);
        ImportPolicy {
            root,
            homes,
            private,
            external: External::Approved(Vec::new()),
            declined: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// The session's policy: [`strict`](Self::strict) plus what the user approved for this
    /// project, read from `keel_home`.
    pub fn for_session(cwd: &Path, home: Option<&Path>, keel_home: Option<&Path>) -> Self {
        let mut policy = Self::strict(cwd, home);
        if let Some(kh) = keel_home {
            let answers = Answers::load(kh, &policy.root);
            policy.external = External::Approved(answers.approved);
            policy.declined = answers.declined;
        }
        policy
    }

    /// Whether `target` (canonical; `lexical` is the path as written) may be read for a file
    /// of the given kind (`user` for the user's own files, which may import from anywhere).
    pub fn check(&self, target: &Path, lexical: &Path, user: bool) -> Verdict {
        if let Some(why) = self.credential(target).or_else(|| self.credential(lexical)) {
            return Verdict::Credential(why);
        }
        if user {
            return Verdict::Read;
        }
        if let Some(p) = self
            .private
            .iter()
            .find(|p| target.starts_with(p) || lexical.starts_with(p))
        {
            return Verdict::Credential(format!(
                "{} holds agent state (sessions, settings with tokens)",
                p.display()
            ));
        }
        if self.is_inside(target) {
            return Verdict::Read;
        }
        match &self.external {
            External::All => Verdict::Read,
            External::Approved(list) if list.iter().any(|p| p == target) => Verdict::Read,
            External::Approved(_) => Verdict::External,
        }
    }

    /// Whether `path` (canonical) lies in the project or another working directory.
    pub fn is_inside(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.extra.iter().any(|d| path.starts_with(d))
    }

    fn credential(&self, path: &Path) -> Option<String> {
        if self.homes.is_empty() {
            return credential_reason(path, None);
        }
        self.homes.iter().find_map(|h| credential_reason(path, Some(h)))
    }
}

/// The project of `cwd` (canonical): the nearest directory above it holding `.git`, else
/// `cwd` itself (the boundary skills and agents use too). A repository at the home directory
/// or above it (a dotfiles repository) does not make the whole home the project: a folder
/// unpacked somewhere below would otherwise import any file of the user's.
pub fn project_root(cwd: &Path, homes: &[PathBuf]) -> PathBuf {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let root = crate::skills::discover::project_dirs(&cwd)
        .pop()
        .unwrap_or_else(|| cwd.clone());
    if root != cwd && homes.iter().any(|h| h.starts_with(&root)) {
        return cwd;
    }
    root
}

/// The user's recorded answers for one project: targets approved and declined (canonical).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answers {
    pub approved: Vec<PathBuf>,
    pub declined: Vec<PathBuf>,
}

fn answers_file(keel_home: &Path, root: &Path) -> PathBuf {
    crate::config::paths::project_dir(keel_home, root).join(FILE)
}

impl Answers {
    /// The answers for `root`; none when the file is missing, unreadable or kept for another
    /// folder (the per-project directory name is not unique for every path).
    pub fn load(keel_home: &Path, root: &Path) -> Answers {
        let record = std::fs::read_to_string(answers_file(keel_home, root))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let Some(record) = record.filter(|r| r.get("project").and_then(Value::as_str) == root.to_str()) else {
            return Answers::default();
        };
        let list = |key: &str| -> Vec<PathBuf> {
            record
                .get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(PathBuf::from).collect())
                .unwrap_or_default()
        };
        Answers {
            approved: list("approved"),
            declined: list("declined"),
        }
    }

    /// Whether `target` was answered either way.
    pub fn decided(&self, target: &Path) -> bool {
        self.approved.iter().chain(&self.declined).any(|p| p == target)
    }

    /// Records the answer for `targets` (a later answer replaces an earlier one).
    pub fn record(keel_home: &Path, root: &Path, targets: &[PathBuf], approve: bool) -> std::io::Result<()> {
        let project = root
            .to_str()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the folder's path is not UTF-8"))?;
        let mut answers = Answers::load(keel_home, root);
        answers.approved.retain(|p| !targets.contains(p));
        answers.declined.retain(|p| !targets.contains(p));
        let list = if approve {
            &mut answers.approved
        } else {
            &mut answers.declined
        };
        list.extend(targets.iter().cloned());
        let strings = |l: &[PathBuf]| -> Vec<String> { l.iter().map(|p| p.display().to_string()).collect() };
        let record = serde_json::json!({
            "project": project,
            "approved": strings(&answers.approved),
            "declined": strings(&answers.declined),
            "answeredAt": chrono::Utc::now().to_rfc3339(),
        });
        let mut text = serde_json::to_string_pretty(&record).map_err(std::io::Error::other)?;
        text.push('\n');
        let file = answers_file(keel_home, root);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        crate::fsutil::write_atomic(&file, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_never_read_and_outside_needs_approval() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let home = base.join("home");
        let repo = home.join("src/repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("app")).unwrap();
        let p = ImportPolicy::strict(&repo.join("app"), Some(&home));
        assert_eq!(p.root, repo, "the repository root, not the working directory");
        // A dotfiles repository at home does not make the home directory the project.
        std::fs::create_dir_all(home.join(".git")).unwrap();
        let unpacked = home.join("Downloads/unpacked");
        std::fs::create_dir_all(&unpacked).unwrap();
        assert_eq!(ImportPolicy::strict(&unpacked, Some(&home)).root, unpacked);
        assert_eq!(ImportPolicy::strict(&home, Some(&home)).root, home);
        assert_eq!(ImportPolicy::strict(&repo.join("app"), Some(&home)).root, repo);
        let inside = repo.join("docs/a.md");
        let outside = home.join("notes/b.md");
        assert_eq!(p.check(&inside, &inside, false), Verdict::Read);
        assert_eq!(p.check(&outside, &outside, false), Verdict::External);
        assert_eq!(p.check(&outside, &outside, true), Verdict::Read, "the user's own file");
        for secret in [
            home.join(".ssh/id_rsa"),
            home.join(".aws/credentials"),
            home.join(".netrc"),
            repo.join(".env"),
            repo.join("deploy.pem"),
            PathBuf::from("/etc/shadow"),
        ] {
            assert!(
                matches!(p.check(&secret, &secret, true), Verdict::Credential(_)),
                "{}",
                secret.display()
            );
        }
        // A link named harmlessly whose real file is a credential, and the reverse.
        assert!(matches!(
            p.check(&home.join(".ssh/id_rsa"), &inside, false),
            Verdict::Credential(_)
        ));
        assert!(matches!(
            p.check(&inside, &home.join(".aws/config"), false),
            Verdict::Credential(_)
        ));
        // Agent state: no project file imports it, approved or not; the user's own may.
        let mut approved = p.clone();
        let state = home.join(".keel/projects/x/session.jsonl");
        approved.external = External::All;
        assert!(matches!(approved.check(&state, &state, false), Verdict::Credential(_)));
        assert!(matches!(
            approved.check(&home.join(".claude.json"), &home.join(".claude.json"), false),
            Verdict::Credential(_)
        ));
        assert_eq!(approved.check(&state, &state, true), Verdict::Read);
        assert_eq!(
            approved.check(&home.join(".claude/team.md"), &home.join(".claude/team.md"), false),
            Verdict::Read
        );
        approved.external = External::Approved(vec![outside.clone()]);
        assert_eq!(approved.check(&outside, &outside, false), Verdict::Read);
        assert_eq!(
            approved.check(&home.join("notes/c.md"), &home.join("notes/c.md"), false),
            Verdict::External
        );
    }

    #[test]
    fn answers_are_kept_per_project_and_replaced() {
        let t = tempfile::tempdir().unwrap();
        let kh = t.path().join("keel");
        let root = t.path().join("repo");
        let a = PathBuf::from("/x/a.md");
        let b = PathBuf::from("/x/b.md");
        assert_eq!(Answers::load(&kh, &root), Answers::default());
        Answers::record(&kh, &root, &[a.clone(), b.clone()], false).unwrap();
        Answers::record(&kh, &root, std::slice::from_ref(&a), true).unwrap();
        let got = Answers::load(&kh, &root);
        assert_eq!(got.approved, vec![a.clone()]);
        assert_eq!(got.declined, vec![b.clone()]);
        assert!(got.decided(&b) && !got.decided(Path::new("/x/c.md")));
        // A record kept for another folder (same directory name) is not this project's.
        let file = answers_file(&kh, &root);
        let text = std::fs::read_to_string(&file)
            .unwrap()
            .replace(root.to_str().unwrap(), "/elsewhere");
        std::fs::write(&file, text).unwrap();
        assert_eq!(Answers::load(&kh, &root), Answers::default());
        let p = ImportPolicy::for_session(&root, None, Some(&kh));
        assert_eq!(p.external, External::Approved(Vec::new()));
    }
}
