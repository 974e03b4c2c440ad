//! Rule files: `.claude/rules/**/*.md` (and `.keel/rules`) in the user's directory and in each
//! project directory, loaded as instruction files.
//!
//! A rule without `paths:` front matter loads with the instruction files of its directory; one
//! with `paths:` (globs relative to the directory holding `.claude/`, or to the project for the
//! user's rules) waits until a tool works on a matching file. A repository fills these folders,
//! so the walk is bounded (depth, file count, bytes), never follows a linked folder, and each
//! file goes through the same checks as a `CLAUDE.md` found by name (a link out of the project
//! is an external file that needs approval; a link to a credential location is refused).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::instructions::{InstructionFile, Instructions, Scope};

/// The rule folders of a directory, in load order.
pub const RULE_DIRS: [&str; 2] = [".claude/rules", ".keel/rules"];
/// Deepest subfolder of a rules folder read (`rules/a/b/c.md`).
const MAX_DEPTH: usize = 4;
/// Most rule files read from one rules folder.
pub const MAX_FILES: usize = 100;
/// Larger rule files are skipped.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Bytes of rules loaded from one rules folder; the rest are skipped with a warning.
pub const MAX_FOLDER_BYTES: u64 = 1024 * 1024;

/// A rule with `paths:`, waiting for a tool to work on a matching file.
#[derive(Debug, Clone)]
pub struct ScopedRule {
    pub path: PathBuf,
    pub scope: Scope,
    /// The directory the globs are relative to.
    pub base: PathBuf,
    pub patterns: Vec<String>,
    set: GlobSet,
}

impl ScopedRule {
    /// Whether `path` (absolute) is one of the files this rule speaks for.
    pub fn matches(&self, path: &Path) -> bool {
        path.strip_prefix(&self.base).is_ok_and(|rel| self.set.is_match(rel))
    }
}

/// The `.md` files of a rules folder, sorted, within the bounds; problems go to `warnings`.
pub fn files_in(folder: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut bytes = 0u64;
    walk(folder, 0, &mut out, warnings);
    out.sort();
    if out.len() > MAX_FILES {
        warnings.push(format!(
            "{}: more than {MAX_FILES} rule files; only the first {MAX_FILES} (by name) are read",
            folder.display()
        ));
        out.truncate(MAX_FILES);
    }
    out.retain(|p| {
        // The size a link leads to counts (metadata follows it).
        let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        if size > MAX_FILE_BYTES {
            warnings.push(format!(
                "{}: skipped, {} KB is more than a rule file may hold ({} KB)",
                p.display(),
                size / 1024,
                MAX_FILE_BYTES / 1024
            ));
            return false;
        }
        bytes += size;
        if bytes > MAX_FOLDER_BYTES {
            warnings.push(format!(
                "{}: skipped, the rules of {} already hold {} KB",
                p.display(),
                folder.display(),
                MAX_FOLDER_BYTES / 1024
            ));
            return false;
        }
        true
    });
    out
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, warnings: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    // Read at most a few times the file bound: a folder of a million entries must not stall start.
    for e in entries.flatten().take(MAX_FILES * 4) {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        let is_md = path.extension().is_some_and(|x| x == "md");
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                walk(&path, depth + 1, out, warnings);
            }
        } else if kind.is_symlink() && path.is_dir() {
            warnings.push(format!(
                "{}: a link to a folder; rule folders are not followed through links",
                path.display()
            ));
        } else if is_md {
            out.push(path);
        }
    }
}

/// The `paths:` globs of a rule's text: `None` for a rule that always applies.
pub fn paths_of(text: &str) -> Result<Option<Vec<String>>, String> {
    let doc = crate::frontmatter::parse(text).map_err(|e| e.to_string())?;
    let list = crate::frontmatter::list(&doc.meta, "paths")?;
    Ok(list.filter(|l| !l.is_empty()))
}

/// The text of a rule without its front matter.
pub fn body(text: &str) -> &str {
    crate::frontmatter::parse(text).map(|d| d.body).unwrap_or(text)
}

fn matcher(patterns: &[String]) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim_start_matches("./");
        let glob = GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("`{p}` is not a valid glob: {e}"))?;
        b.add(glob);
    }
    b.build().map_err(|e| e.to_string())
}

impl Instructions {
    /// Loads the rules of `dir`'s rule folders (the user's rules when `scope` is `User`): those
    /// that always apply into `out`, the others into the waiting list. `base` is what their
    /// `paths:` are relative to.
    pub(super) fn load_rules(&mut self, dir: &Path, scope: Scope, base: &Path, out: &mut Vec<InstructionFile>) {
        for folder in RULE_DIRS {
            let folder = dir.join(folder);
            if !folder.is_dir() {
                continue;
            }
            for file in files_in(&folder, &mut self.warnings) {
                self.load_rule(&file, scope, base, out);
            }
        }
    }

    fn load_rule(&mut self, file: &Path, scope: Scope, base: &Path, out: &mut Vec<InstructionFile>) {
        let text = match crate::fsutil::open::read_file_capped(file, MAX_FILE_BYTES) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                self.warnings.push(format!("{}: skipped, {e}", file.display()));
                return;
            }
        };
        let patterns = match paths_of(&text) {
            Ok(p) => p,
            Err(e) => {
                self.warnings.push(format!(
                    "{}: its front matter cannot be read ({e}); the rule is loaded for every file",
                    file.display()
                ));
                None
            }
        };
        match patterns {
            None => self.load_rule_file(file, scope, Vec::new(), out),
            Some(patterns) => match matcher(&patterns) {
                Ok(set) => self.scoped.push(ScopedRule {
                    path: file.to_path_buf(),
                    scope,
                    base: base.to_path_buf(),
                    patterns,
                    set,
                }),
                Err(e) => self
                    .warnings
                    .push(format!("{}: not loaded, its `paths:` {e}", file.display())),
            },
        }
    }

    /// Loads one rule file through the checks of an instruction file found by name, marked as
    /// a rule and without its front matter.
    fn load_rule_file(&mut self, file: &Path, scope: Scope, patterns: Vec<String>, out: &mut Vec<InstructionFile>) {
        let before = out.len();
        self.load_root(file, scope, out);
        let canonical = file.canonicalize().ok();
        if let Some(f) = out[before..]
            .iter_mut()
            .rev()
            .find(|f| Some(&f.path) == canonical.as_ref())
        {
            f.content = body(&f.content).to_string();
            f.rule = Some(patterns);
        }
    }

    /// The waiting rules whose `paths:` match `path`, loaded now (each once).
    pub(super) fn touch_rules(&mut self, path: &Path, out: &mut Vec<InstructionFile>) {
        let due: Vec<ScopedRule> = self.scoped.iter().filter(|r| r.matches(path)).cloned().collect();
        self.scoped.retain(|r| !r.matches(path));
        for r in due {
            self.load_rule_file(&r.path, r.scope, r.patterns.clone(), out);
        }
    }
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

    #[test]
    fn unscoped_rules_load_at_start_and_scoped_ones_on_a_matching_file() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let home = root.join("home");
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(&home, ".claude/rules/style.md", "Prefer short functions.");
        write(&repo, "CLAUDE.md", "Project file.");
        write(&repo, ".claude/rules/testing.md", "Run the tests with make check.");
        write(
            &repo,
            ".claude/rules/git/commits.md",
            "---\ndescription: x\n---\nSign commits.",
        );
        write(
            &repo,
            ".claude/rules/api.md",
            "---\npaths:\n  - \"src/api/**/*.rs\"\n---\nAPI handlers return typed errors.",
        );
        write(&repo, "CLAUDE.local.md", "Local file.");
        let mut ins = Instructions::discover(&repo, Some(&home));
        let names: Vec<String> = ins
            .files
            .iter()
            .map(|f| f.path.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            vec![
                "home/.claude/rules/style.md",
                "repo/CLAUDE.md",
                "repo/.claude/rules/git/commits.md",
                "repo/.claude/rules/testing.md",
                "repo/CLAUDE.local.md"
            ]
        );
        assert!(ins.files[2].rule.is_some() && ins.files[2].content.trim() == "Sign commits.");
        assert_eq!(ins.files[0].scope, Scope::User);
        assert_eq!(ins.scoped.len(), 1);
        assert!(ins.touch(&repo.join("src/web/x.rs")).is_empty());
        write(&repo, "src/api/v1/users.rs", "fn x() {}");
        let found = ins.touch(&repo.join("src/api/v1/users.rs"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].content.trim(), "API handlers return typed errors.");
        assert_eq!(found[0].rule.as_deref(), Some(&["src/api/**/*.rs".to_string()][..]));
        assert!(ins.touch(&repo.join("src/api/v1/other.rs")).is_empty(), "once");
        // After compaction the waiting rule waits again.
        ins.reload();
        assert_eq!(ins.scoped.len(), 1);
    }

    /// A repository's rules folder that links out, links a folder elsewhere, or floods: what
    /// leads out is not read without approval, a linked folder is not followed, and the count
    /// and size are bounded, each said in a warning.
    #[test]
    fn a_hostile_rules_folder_is_bounded() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(&root, "outside/notes.md", "OUTSIDE-SECRET");
        std::fs::create_dir_all(repo.join(".claude/rules")).unwrap();
        symlink(root.join("outside/notes.md"), repo.join(".claude/rules/a.md")).unwrap();
        symlink(root.join("outside"), repo.join(".claude/rules/linked")).unwrap();
        write(&repo, ".claude/rules/big.md", &"x".repeat(MAX_FILE_BYTES as usize + 1));
        for i in 0..(MAX_FILES + 5) {
            write(&repo, &format!(".claude/rules/many/r{i:03}.md"), "small rule");
        }
        let ins = Instructions::discover(&repo, None);
        assert!(ins.files.iter().all(|f| !f.content.contains("OUTSIDE-SECRET")));
        let w = ins.warnings.join("\n");
        assert!(w.contains("not followed through links"), "{w}");
        assert!(w.contains("more than 100 rule files"), "{w}");
        assert!(
            ins.skipped_notices().iter().any(|n| n.contains("a.md")),
            "{:?}",
            ins.skipped_notices()
        );
        assert!(ins.files.len() <= MAX_FILES, "{}", ins.files.len());
    }
}
