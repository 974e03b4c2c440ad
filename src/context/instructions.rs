//! Instruction files: `CLAUDE.md`, `.claude/CLAUDE.md`, `AGENTS.md` and `CLAUDE.local.md`.
//!
//! Loaded at session start from the user's directory (`~/.claude/CLAUDE.md`) and from every
//! directory from the filesystem root down to the working directory, broad to specific (later
//! files weigh more). Files in directories below the working directory are loaded when a tool
//! first touches that directory. `@path` imports are followed (relative to the importing file,
//! at most [`MAX_DEPTH`] files deep, each file at most once, so cycles end), and an imported
//! file comes before the file that imports it. What an import may read is decided by
//! [`ImportPolicy`]: never a credential location, and from a project file nothing outside the
//! project unless the user approved it.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use super::import_policy::{ImportPolicy, Verdict};
use super::imports;

/// The names looked for in each directory, in load order.
pub const FILE_NAMES: [&str; 4] = ["CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md", "CLAUDE.local.md"];
/// Longest import chain, counting the file that starts it.
pub const MAX_DEPTH: u8 = 5;
/// Larger files are skipped.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Files above this many bytes are loaded with a warning (they crowd the context).
pub const LARGE_FILE_BYTES: usize = 40_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `~/.claude/CLAUDE.md`: the user's instructions for every project.
    User,
    /// Shared project files in the working directory or above it.
    Project,
    /// `CLAUDE.local.md`: the user's private instructions for this project.
    Local,
    /// Files below the working directory, loaded when a tool touches their directory.
    Nested,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Nested => "nested",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Scope::User => "the user's instructions for all projects",
            Scope::Project => "project instructions, shared with the repository",
            Scope::Local => "the user's private instructions for this project",
            Scope::Nested => "instructions for work in this directory",
        }
    }
}

/// An import (or a linked instruction file) that leads outside the project, read or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalImport {
    /// The file holding the `@` reference (for a linked instruction file, the link).
    pub importer: PathBuf,
    /// The reference as written (`~/notes/style.md`), or the link's own path.
    pub reference: String,
    /// Where it leads, canonical.
    pub target: PathBuf,
    /// Whether it was read (approved).
    pub loaded: bool,
    /// An instruction file that is itself a link out of the project, not an `@` reference.
    pub link: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InstructionFile {
    pub path: PathBuf,
    pub scope: Scope,
    pub content: String,
    /// The file that imported this one, if any.
    pub imported_by: Option<PathBuf>,
    /// 1 for a file found by name, +1 per import.
    pub depth: u8,
}

impl InstructionFile {
    pub fn bytes(&self) -> usize {
        self.content.len()
    }
}

/// The instruction files of a session: the set loaded at start and those loaded since.
#[derive(Debug, Clone)]
pub struct Instructions {
    cwd: PathBuf,
    home: Option<PathBuf>,
    /// Loaded at session start, in load order.
    pub files: Vec<InstructionFile>,
    /// Loaded later because a tool touched a directory below the working directory.
    pub nested: Vec<InstructionFile>,
    /// Canonical paths of every file loaded (an import cycle or a repeated file ends here).
    seen: HashSet<PathBuf>,
    /// Directories below the working directory already looked at.
    visited_dirs: HashSet<PathBuf>,
    /// Problems found while loading (missing imports, oversized files, deep chains).
    pub warnings: Vec<String>,
    /// What may be read.
    policy: ImportPolicy,
    /// Imports of project files that lead outside the project, in the order met.
    pub external: Vec<ExternalImport>,
    /// Imports not read because they name a credential location, as notices.
    pub refused: Vec<String>,
}

impl Instructions {
    /// No instruction files (tests, `--bare`-style runs).
    pub fn none(cwd: &Path) -> Self {
        Instructions {
            cwd: cwd.to_path_buf(),
            home: None,
            files: Vec::new(),
            nested: Vec::new(),
            seen: HashSet::new(),
            visited_dirs: HashSet::new(),
            warnings: Vec::new(),
            policy: ImportPolicy::strict(cwd, None),
            external: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Loads the start set for `cwd`; `home` is the user's home directory. No import of a
    /// project file leaves the project.
    pub fn discover(cwd: &Path, home: Option<&Path>) -> Self {
        Self::discover_with(cwd, home, ImportPolicy::strict(cwd, home))
    }

    /// Loads the start set for `cwd` under `policy`.
    pub fn discover_with(cwd: &Path, home: Option<&Path>, policy: ImportPolicy) -> Self {
        let mut this = Instructions::none(cwd);
        this.home = home.map(Path::to_path_buf);
        this.policy = policy;
        this.load_start_set();
        this
    }

    /// Counts the session's other working directories as inside the project (imports from
    /// them need no approval); loads the start set again when that lets a skipped import in.
    pub fn include_dirs(&mut self, dirs: &[PathBuf]) {
        let mut added = false;
        for d in dirs {
            let d = d.canonicalize().unwrap_or_else(|_| d.clone());
            if !self.policy.extra.contains(&d) {
                self.policy.extra.push(d);
                added = true;
            }
        }
        if added
            && self
                .external
                .iter()
                .any(|e| !e.loaded && self.policy.is_inside(&e.target))
        {
            self.reload();
        }
    }

    /// The working directories counted as inside besides the project.
    pub fn included_dirs(&self) -> &[PathBuf] {
        &self.policy.extra
    }

    /// One line per import not read, naming the file and the import (for the startup notices).
    pub fn skipped_notices(&self) -> Vec<String> {
        let mut out = self.refused.clone();
        for e in self.external.iter().filter(|e| !e.loaded) {
            let what = if e.link {
                "not loaded: it is a link".to_string()
            } else {
                format!("@{} not loaded: it", e.reference)
            };
            let why = if self.policy.declined.contains(&e.target) {
                "you declined it for this project"
            } else {
                "such files are read only once you approve them (keel asks in an interactive session here)"
            };
            out.push(format!(
                "{}: {what} leads outside the project to {}; {why}",
                self.shown(&e.importer),
                e.target.display()
            ));
        }
        out
    }

    /// A path as the user knows it: relative to the project when inside it.
    fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.policy.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }

    fn load_start_set(&mut self) {
        let mut files = Vec::new();
        if let Some(home) = self.home.clone() {
            self.load_root(&home.join(".claude").join("CLAUDE.md"), Scope::User, &mut files);
        }
        let dirs: Vec<PathBuf> = self.cwd.ancestors().map(Path::to_path_buf).collect();
        for dir in dirs.iter().rev() {
            self.load_dir(dir, false, &mut files);
        }
        self.files = files;
    }

    /// Reads the start set again from disk and forgets the nested files, which load again when
    /// a tool next touches their directory (after compaction).
    pub fn reload(&mut self) {
        self.seen.clear();
        self.visited_dirs.clear();
        self.nested.clear();
        self.warnings.clear();
        self.external.clear();
        self.refused.clear();
        self.load_start_set();
    }

    fn load_dir(&mut self, dir: &Path, nested: bool, out: &mut Vec<InstructionFile>) {
        for name in FILE_NAMES {
            let scope = match (nested, name) {
                (true, _) => Scope::Nested,
                (false, "CLAUDE.local.md") => Scope::Local,
                (false, _) => Scope::Project,
            };
            self.load_root(&dir.join(name), scope, out);
        }
    }

    fn load_root(&mut self, path: &Path, scope: Scope, out: &mut Vec<InstructionFile>) {
        if path.is_file() {
            self.load(path, scope, 1, None, out);
        }
    }

    /// Loads `path` and, before it, the files it imports.
    fn load(&mut self, path: &Path, scope: Scope, depth: u8, importer: Option<&Path>, out: &mut Vec<InstructionFile>) {
        let canonical = match path.canonicalize() {
            Ok(c) => c,
            Err(_) => {
                if let Some(importer) = importer {
                    self.warnings.push(format!(
                        "{}: imported file {} does not exist",
                        importer.display(),
                        path.display()
                    ));
                }
                return;
            }
        };
        if importer.is_none() && !self.root_allowed(path, &canonical, scope) {
            return;
        }
        if !self.seen.insert(canonical.clone()) {
            return;
        }
        let content = match read_text(&canonical) {
            Ok(c) => c,
            Err(why) => {
                self.warnings.push(format!("{}: skipped, {why}", path.display()));
                return;
            }
        };
        if content.len() > LARGE_FILE_BYTES {
            self.warnings.push(format!(
                "{}: {} KB of instructions; large files crowd the context window",
                path.display(),
                content.len() / 1024
            ));
        }
        let dir = canonical.parent().unwrap_or(Path::new("/")).to_path_buf();
        for reference in imports::references(&content) {
            let Some(target) = imports::resolve(&reference, &dir, self.home.as_deref()) else {
                self.warnings.push(format!(
                    "{}: cannot resolve @{reference} (no home directory)",
                    path.display()
                ));
                continue;
            };
            if depth >= MAX_DEPTH {
                self.warnings.push(format!(
                    "{}: @{reference} not loaded, imports nest at most {MAX_DEPTH} files deep",
                    path.display()
                ));
                continue;
            }
            self.load_import(&reference, &target, scope, depth + 1, &canonical, out);
        }
        out.push(InstructionFile {
            path: canonical,
            scope,
            content,
            imported_by: importer.map(Path::to_path_buf),
            depth,
        });
    }

    /// Loads one import if the policy lets it be read.
    fn load_import(
        &mut self,
        reference: &str,
        target: &Path,
        scope: Scope,
        depth: u8,
        importer: &Path,
        out: &mut Vec<InstructionFile>,
    ) {
        let Ok(canonical) = target.canonicalize() else {
            // Reported as missing by `load`.
            return self.load(target, scope, depth, Some(importer), out);
        };
        match self.policy.check(&canonical, target, scope == Scope::User) {
            Verdict::Credential(why) => {
                self.refused.push(format!(
                    "{}: @{reference} not loaded: {why}, and instruction files never bring credentials into the context",
                    self.shown(importer)
                ));
                return;
            }
            Verdict::External => return self.note_external(importer, reference, &canonical, false, false),
            Verdict::Read if scope != Scope::User && !self.policy.is_inside(&canonical) => {
                self.note_external(importer, reference, &canonical, true, false)
            }
            Verdict::Read => {}
        }
        self.load(target, scope, depth, Some(importer), out);
    }

    /// Whether an instruction file found by name may be read: never a link to a credential
    /// location; one inside the project that is a link leading out of it counts as an
    /// external import. Files found in directories above the project are read as they are.
    fn root_allowed(&mut self, path: &Path, canonical: &Path, scope: Scope) -> bool {
        let verdict = self.policy.check(canonical, path, scope == Scope::User);
        if let Verdict::Credential(why) = &verdict {
            self.refused.push(format!(
                "{}: not loaded: it is a link to {}: {why}, and instruction files never bring credentials into the \
                 context",
                self.shown(path),
                canonical.display()
            ));
            return false;
        }
        if scope == Scope::User || !path.starts_with(&self.policy.root) || self.policy.is_inside(canonical) {
            return true;
        }
        let loaded = verdict == Verdict::Read;
        let link = self.shown(path);
        self.note_external(path, &link, canonical, loaded, true);
        loaded
    }

    fn note_external(&mut self, importer: &Path, reference: &str, target: &Path, loaded: bool, link: bool) {
        let e = ExternalImport {
            importer: importer.to_path_buf(),
            reference: reference.to_string(),
            target: target.to_path_buf(),
            loaded,
            link,
        };
        if !self.external.contains(&e) {
            self.external.push(e);
        }
    }

    /// Called with a path a tool is about to work on or just worked on: loads the instruction
    /// files of every directory between the working directory and that path that was not
    /// looked at yet, and returns them (empty when there is nothing new).
    pub fn touch(&mut self, path: &Path) -> Vec<InstructionFile> {
        let Ok(rel) = path.strip_prefix(&self.cwd) else {
            return Vec::new();
        };
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Vec::new();
        }
        let mut components: Vec<_> = rel.components().collect();
        if !path.is_dir() {
            components.pop();
        }
        let mut found = Vec::new();
        let mut dir = self.cwd.clone();
        for c in components {
            dir.push(c);
            if self.visited_dirs.insert(dir.clone()) {
                self.load_dir(&dir.clone(), true, &mut found);
            }
        }
        self.nested.extend(found.iter().cloned());
        found
    }

    /// Every file loaded so far: the start set, then the nested ones.
    pub fn all(&self) -> impl Iterator<Item = &InstructionFile> {
        self.files.iter().chain(self.nested.iter())
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    // A repository's instruction file may be a FIFO or a link to a device: never block on it.
    let bytes = crate::fsutil::open::read_file_capped(path, MAX_FILE_BYTES).map_err(|e| e.to_string())?;
    if crate::tools::read::looks_binary(&bytes) {
        return Err("not a text file".into());
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The instruction files as the model reads them (empty when there are none).
pub fn render(files: &[InstructionFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "Instruction files. They hold the user's instructions for this work and take precedence over your \
         defaults; where two disagree, the later one wins.",
    );
    for f in files {
        out.push_str(&format!("\n\nContents of {} ({}", f.path.display(), f.scope.label()));
        if let Some(by) = &f.imported_by {
            out.push_str(&format!(", imported by {}", by.display()));
        }
        out.push_str("):\n\n");
        out.push_str(f.content.trim_end());
    }
    out
}

/// Nested files loaded during a turn, as a reminder next to the tool results.
pub fn render_reminder(files: &[InstructionFile]) -> String {
    format!(
        "<system-reminder>\nA tool touched a directory with its own instruction files; follow them for work \
         there.\n\n{}\n</system-reminder>",
        render(files)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn names(files: &[InstructionFile], root: &Path) -> Vec<String> {
        files
            .iter()
            .map(|f| f.path.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn loads_user_then_root_to_cwd_in_order() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        write(&root, "home/.claude/CLAUDE.md", "user rules");
        write(&root, "repo/CLAUDE.md", "repo rules");
        write(&root, "repo/AGENTS.md", "agents rules");
        write(&root, "repo/CLAUDE.local.md", "local rules");
        write(&root, "repo/app/.claude/CLAUDE.md", "app rules");
        write(&root, "repo/app/sub/CLAUDE.md", "nested rules");
        let cwd = root.join("repo/app");
        let ins = Instructions::discover(&cwd, Some(&root.join("home")));
        assert_eq!(
            names(&ins.files, &root),
            vec![
                "home/.claude/CLAUDE.md",
                "repo/CLAUDE.md",
                "repo/AGENTS.md",
                "repo/CLAUDE.local.md",
                "repo/app/.claude/CLAUDE.md"
            ]
        );
        assert_eq!(ins.files[0].scope, Scope::User);
        assert_eq!(ins.files[3].scope, Scope::Local);
        assert!(ins.warnings.is_empty(), "{:?}", ins.warnings);
        let text = render(&ins.files);
        assert!(text.find("user rules").unwrap() < text.find("app rules").unwrap());
        assert!(!text.contains("nested rules"));
    }

    #[test]
    fn nested_files_load_once_when_a_tool_touches_their_subtree() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        write(&root, "CLAUDE.md", "top");
        write(&root, "a/CLAUDE.md", "a rules");
        write(&root, "a/b/AGENTS.md", "b rules");
        let file = write(&root, "a/b/code.rs", "fn x() {}");
        write(&root, "c/CLAUDE.md", "c rules");
        let mut ins = Instructions::discover(&root, None);
        assert_eq!(names(&ins.files, &root), vec!["CLAUDE.md"]);
        let found = ins.touch(&file);
        assert_eq!(names(&found, &root), vec!["a/CLAUDE.md", "a/b/AGENTS.md"]);
        assert!(found.iter().all(|f| f.scope == Scope::Nested));
        assert!(ins.touch(&file).is_empty(), "each directory is looked at once");
        assert!(ins.touch(&root.join("a/other.rs")).is_empty());
        // A directory given as a path (Grep/Glob `path`) counts itself.
        assert_eq!(names(&ins.touch(&root.join("c")), &root), vec!["c/CLAUDE.md"]);
        // Paths outside the working directory or the directory itself load nothing.
        assert!(ins.touch(Path::new("/etc/hosts")).is_empty());
        assert!(ins.touch(&root).is_empty());
        assert_eq!(ins.all().count(), 4);
        let reminder = render_reminder(&ins.nested);
        assert!(reminder.starts_with("<system-reminder>") && reminder.contains("b rules"));
        // After a reload (compaction) nested files load again on the next touch.
        ins.reload();
        assert!(ins.nested.is_empty());
        assert_eq!(ins.touch(&file).len(), 2);
    }

    #[test]
    fn imports_come_first_are_cycle_safe_and_depth_limited() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        write(&root, "CLAUDE.md", "main @docs/one.md and `@docs/ignored.md`\n");
        write(&root, "docs/one.md", "one @two.md");
        write(&root, "docs/two.md", "two @../CLAUDE.md @three.md");
        write(&root, "docs/three.md", "three @four.md");
        write(&root, "docs/four.md", "four @five.md");
        write(&root, "docs/five.md", "five");
        write(&root, "docs/ignored.md", "ignored");
        write(&root, "AGENTS.md", "agents @docs/missing.md @docs/one.md");
        let ins = Instructions::discover(&root, None);
        // CLAUDE.md → one → two → three → four is five files deep; five.md is one too many.
        assert_eq!(
            names(&ins.files, &root),
            vec![
                "docs/four.md",
                "docs/three.md",
                "docs/two.md",
                "docs/one.md",
                "CLAUDE.md",
                "AGENTS.md"
            ]
        );
        let depths: Vec<u8> = ins.files.iter().map(|f| f.depth).collect();
        assert_eq!(depths, vec![5, 4, 3, 2, 1, 1]);
        assert_eq!(
            ins.files[3].imported_by.as_deref(),
            Some(root.join("CLAUDE.md").as_path())
        );
        assert!(
            ins.warnings
                .iter()
                .any(|w| w.contains("@five.md") && w.contains("5 files deep")),
            "{:?}",
            ins.warnings
        );
        assert!(
            ins.warnings
                .iter()
                .any(|w| w.contains("missing.md") && w.contains("does not exist")),
            "{:?}",
            ins.warnings
        );
        assert!(!ins.files.iter().any(|f| f.content == "ignored"));
    }

    /// A hostile repository's instruction files reach for credentials and other files of the
    /// user: by `~/`, by `../`, by absolute path and through links inside the repository.
    #[test]
    fn a_repository_cannot_import_credentials_or_outside_files_without_approval() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let home = base.join("home");
        let repo = base.join("src/repo");
        write(&home, ".ssh/id_rsa", "SSH-SECRET");
        write(&home, ".aws/credentials", "AWS-SECRET");
        write(&home, "notes/private.md", "PRIVATE-NOTES");
        write(
            &home,
            ".claude/CLAUDE.md",
            "user @~/notes/private.md @~/.aws/credentials",
        );
        write(&base, "src/other/secret.md", "OTHER-REPO");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(&repo, "docs/style.md", "IN-REPO-STYLE");
        write(&repo, ".env", "DOTENV-SECRET");
        symlink(home.join(".ssh/id_rsa"), repo.join("docs/key.md")).unwrap();
        symlink(home.join("notes"), repo.join("linked")).unwrap();
        write(
            &repo,
            "CLAUDE.md",
            "@~/.ssh/id_rsa @../other/secret.md @docs/style.md @docs/key.md @linked/private.md @.env",
        );
        let abs = format!("@{}", home.join(".aws/credentials").display());
        write(&repo, "app/AGENTS.md", &format!("{abs} @../docs/style.md"));
        symlink(home.join("notes/private.md"), repo.join("CLAUDE.local.md")).unwrap();
        let cwd = repo.join("app");
        let mut ins = Instructions::discover(&cwd, Some(&home));
        let text = render(&ins.files);
        assert!(text.contains("IN-REPO-STYLE"), "{text}");
        for secret in ["SSH-SECRET", "AWS-SECRET", "DOTENV-SECRET", "OTHER-REPO"] {
            assert!(!text.contains(secret), "{secret} reached the context:\n{text}");
        }
        // The user's own file imports their notes as before (but never credentials).
        let user = ins.files.iter().find(|f| f.path == home.join("notes/private.md"));
        assert_eq!(user.map(|f| f.scope), Some(Scope::User));
        let notices = ins.skipped_notices();
        let has = |a: &str, b: &str| notices.iter().any(|n| n.contains(a) && n.contains(b));
        assert!(
            has("CLAUDE.md: @~/.ssh/id_rsa not loaded", "credentials"),
            "{notices:?}"
        );
        assert!(has("CLAUDE.md: @docs/key.md not loaded", "credentials"), "{notices:?}");
        assert!(has("CLAUDE.md: @.env not loaded", "credentials"), "{notices:?}");
        assert!(has("app/AGENTS.md: @/", "credentials"), "{notices:?}");
        assert!(
            has(".claude/CLAUDE.md: @~/.aws/credentials", "credentials"),
            "{notices:?}"
        );
        assert!(
            has("CLAUDE.md: @../other/secret.md not loaded", "outside the project"),
            "{notices:?}"
        );
        assert!(
            has("CLAUDE.md: @linked/private.md not loaded", "outside the project"),
            "{notices:?}"
        );
        assert!(
            has("CLAUDE.local.md: not loaded: it is a link", "outside the project"),
            "{notices:?}"
        );
        let skipped: Vec<&Path> = ins
            .external
            .iter()
            .filter(|e| !e.loaded)
            .map(|e| e.target.as_path())
            .collect();
        assert_eq!(
            skipped,
            vec![
                base.join("src/other/secret.md").as_path(),
                home.join("notes/private.md").as_path(),
                home.join("notes/private.md").as_path()
            ],
            "each import once, by its real path (the link and CLAUDE.local.md lead to one file)"
        );
        assert!(notices.iter().all(|n| !n.contains("SECRET")), "{notices:?}");
        // Nested files are held to the same rule.
        write(&cwd, "sub/CLAUDE.md", "@../../../other/secret.md");
        let found = ins.touch(&cwd.join("sub/x.rs"));
        assert_eq!(found.len(), 1);
        assert!(!render(&found).contains("OTHER-REPO"));
        assert_eq!(ins.skipped_notices().len(), notices.len() + 1);

        // Approved outside files load (the credential stays out), and stay approved on reload.
        let mut policy = ImportPolicy::strict(&cwd, Some(&home));
        policy.external = super::super::import_policy::External::Approved(vec![
            base.join("src/other/secret.md"),
            home.join("notes/private.md"),
        ]);
        let mut ins = Instructions::discover_with(&cwd, Some(&home), policy);
        for _ in 0..2 {
            let text = render(&ins.files);
            assert!(text.contains("OTHER-REPO") && text.contains("PRIVATE-NOTES"), "{text}");
            assert!(!text.contains("SSH-SECRET") && !text.contains("AWS-SECRET"), "{text}");
            assert!(ins.external.iter().all(|e| e.loaded), "{:?}", ins.external);
            ins.reload();
        }
    }

    /// The session's other working directories count as inside; credentials in them do not.
    #[test]
    fn other_working_directories_are_inside_the_project() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        write(&base, "shared/conventions.md", "SHARED-CONVENTIONS");
        write(&base, "shared/.env.local", "SHARED-SECRET");
        write(
            &base,
            "repo/CLAUDE.md",
            "@../shared/conventions.md @../shared/.env.local",
        );
        let cwd = base.join("repo");
        let mut ins = Instructions::discover(&cwd, None);
        assert!(!render(&ins.files).contains("SHARED-CONVENTIONS"));
        ins.include_dirs(&[base.join("shared")]);
        let text = render(&ins.files);
        assert!(
            text.contains("SHARED-CONVENTIONS") && !text.contains("SHARED-SECRET"),
            "{text}"
        );
        assert_eq!(ins.included_dirs(), &[base.join("shared")]);
        assert_eq!(ins.skipped_notices().len(), 1, "{:?}", ins.skipped_notices());
    }

    /// Imports read regular files only, within the size bound: a FIFO never blocks startup.
    #[test]
    fn imports_read_regular_files_within_the_bound() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let fifo = root.join("pipe.md");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::fs::create_dir_all(root.join("dir.md")).unwrap();
        let big = std::fs::File::create(root.join("big.md")).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        write(&root, "CLAUDE.md", "main @pipe.md @dir.md @big.md");
        let ins = Instructions::discover(&root, None);
        assert_eq!(names(&ins.files, &root), vec!["CLAUDE.md"]);
        for name in ["pipe.md", "dir.md", "big.md"] {
            assert!(
                ins.warnings.iter().any(|w| w.contains(name) && w.contains("skipped")),
                "{name}: {:?}",
                ins.warnings
            );
        }
    }
}
