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
    /// A rule file (`.claude/rules/*.md`): the `paths:` globs it loaded for (empty for a rule
    /// that always applies); `None` for every other file.
    pub rule: Option<Vec<String>>,
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
    /// Rules with `paths:` not loaded yet: they load when a tool works on a matching file.
    pub scoped: Vec<super::rules::ScopedRule>,
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
            scoped: Vec::new(),
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
            let project = self.policy.root.clone();
            self.load_rules(&home, Scope::User, &project, &mut files);
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
        self.scoped.clear();
        self.load_start_set();
    }

    /// The files of one directory: its instruction files, with its rules before
    /// `CLAUDE.local.md` (the user's private file weighs most).
    fn load_dir(&mut self, dir: &Path, nested: bool, out: &mut Vec<InstructionFile>) {
        for name in FILE_NAMES {
            if name == "CLAUDE.local.md" {
                let scope = if nested { Scope::Nested } else { Scope::Project };
                self.load_rules(dir, scope, dir, out);
            }
            let scope = match (nested, name) {
                (true, _) => Scope::Nested,
                (false, "CLAUDE.local.md") => Scope::Local,
                (false, _) => Scope::Project,
            };
            self.load_root(&dir.join(name), scope, out);
        }
    }

    pub(super) fn load_root(&mut self, path: &Path, scope: Scope, out: &mut Vec<InstructionFile>) {
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
            rule: None,
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
        self.touch_rules(path, &mut found);
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
    if crate::fsutil::looks_binary(&bytes) {
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
        match f.rule.as_deref() {
            Some([]) => out.push_str(", a rule file"),
            Some(globs) => out.push_str(&format!(", a rule for files matching {}", globs.join(", "))),
            None => {}
        }
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
#[path = "instructions_tests.rs"]
mod tests;
