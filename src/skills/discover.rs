//! Finding skills and commands, and the session's catalog of them.
//!
//! Order (the first of a name wins): the user's skills (`~/.claude/skills`, `~/.keel/skills`),
//! the project's (`.claude/skills`, `.keel/skills` in the working directory, then each parent up
//! to the repository root), those of `--add-dir` directories, plugins' (`plugin:name`); then
//! the single-file commands in the same order (`.claude/commands/git/log.md` is `git:log`), so
//! a skill beats a command of the same name.

use std::path::{Path, PathBuf};

use super::{Kind, Skill, Source, read_file};

/// Most entries read from one directory (a hostile repository cannot make startup crawl).
const MAX_ENTRIES: usize = 500;
/// Deepest subdirectory of a commands folder (`a/b/c.md` is `a:b:c`).
const MAX_COMMAND_DEPTH: usize = 3;

/// Where to look.
pub struct Places<'a> {
    pub cwd: &'a Path,
    /// The user's home directory (`~/.claude`).
    pub user_home: Option<&'a Path>,
    /// keel's home (`~/.keel`).
    pub keel_home: Option<&'a Path>,
    pub add_dirs: &'a [PathBuf],
    /// Loaded plugins: (name, root).
    pub plugins: &'a [(String, PathBuf)],
    /// Names taken by built-in slash commands.
    pub reserved: &'a [&'a str],
}

#[derive(Debug, Clone, Default)]
pub struct Catalog {
    skills: Vec<Skill>,
    /// Files that were not loaded, with why (shown once at startup).
    pub warnings: Vec<String>,
}

impl Catalog {
    pub fn discover(p: &Places<'_>) -> Catalog {
        let mut c = Catalog::default();
        let project_dirs = project_dirs(p.cwd);
        let mut skill_roots: Vec<(PathBuf, Source, Option<String>)> = Vec::new();
        if let Some(h) = p.user_home {
            skill_roots.push((h.join(".claude/skills"), Source::User, None));
        }
        if let Some(k) = p.keel_home {
            skill_roots.push((k.join("skills"), Source::User, None));
        }
        for d in &project_dirs {
            skill_roots.push((d.join(".claude/skills"), Source::Project, None));
            skill_roots.push((d.join(".keel/skills"), Source::Project, None));
        }
        for d in p.add_dirs {
            skill_roots.push((d.join(".claude/skills"), Source::AddedDir, None));
        }
        for (name, root) in p.plugins {
            skill_roots.push((root.join("skills"), Source::Plugin(name.clone()), Some(name.clone())));
        }
        for (root, source, ns) in skill_roots {
            for dir in subdirs(&root) {
                let file = dir.join("SKILL.md");
                if !file.is_file() {
                    continue;
                }
                let base = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let name = qualify(ns.as_deref(), &base);
                c.add(read_file(&file, &name, Kind::Skill, source.clone()), p.reserved);
            }
        }

        let mut command_roots: Vec<(PathBuf, Source, Option<String>)> = Vec::new();
        if let Some(h) = p.user_home {
            command_roots.push((h.join(".claude/commands"), Source::User, None));
        }
        if let Some(k) = p.keel_home {
            command_roots.push((k.join("commands"), Source::User, None));
        }
        for d in &project_dirs {
            command_roots.push((d.join(".claude/commands"), Source::Project, None));
            command_roots.push((d.join(".keel/commands"), Source::Project, None));
        }
        for (name, root) in p.plugins {
            command_roots.push((root.join("commands"), Source::Plugin(name.clone()), Some(name.clone())));
        }
        for (root, source, ns) in command_roots {
            let mut files = Vec::new();
            collect_commands(&root, &root, 0, &mut files);
            files.sort();
            for (name, path) in files {
                let name = qualify(ns.as_deref(), &name);
                c.add(read_file(&path, &name, Kind::Command, source.clone()), p.reserved);
            }
        }
        c.skills.sort_by(|a, b| a.name.cmp(&b.name));
        c
    }

    /// A catalog of the given skills (tests, embedding).
    pub fn from_skills(mut skills: Vec<Skill>) -> Catalog {
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        Catalog {
            skills,
            warnings: Vec::new(),
        }
    }

    fn add(&mut self, loaded: Result<Skill, String>, reserved: &[&str]) {
        let skill = match loaded {
            Ok(s) => s,
            Err(e) => return self.warnings.push(e),
        };
        if reserved.contains(&skill.name.as_str()) {
            return self.warnings.push(format!(
                "{}: /{} is a built-in command; the file is ignored",
                skill.path.display(),
                skill.name
            ));
        }
        if let Some(first) = self.get(&skill.name) {
            crate::debug::log(format!(
                "{}: /{} is already defined by {}; this one is ignored",
                skill.path.display(),
                skill.name,
                first.path.display()
            ));
            return;
        }
        self.skills.push(skill);
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        let name = name.strip_prefix('/').unwrap_or(name);
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter()
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Skills the model may load with the Skill tool.
    pub fn for_model(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.model_invocable())
    }

    /// Skills and commands the user may run as `/name`.
    pub fn for_user(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.user_invocable)
    }

    /// The error for a name that is not here, listing what is.
    pub fn unknown(&self, name: &str, for_model: bool) -> String {
        let names: Vec<&str> = if for_model {
            self.for_model().map(|s| s.name.as_str()).collect()
        } else {
            self.for_user().map(|s| s.name.as_str()).collect()
        };
        if names.is_empty() {
            format!("there is no skill named `{name}`, and no skills are available in this session")
        } else {
            format!(
                "there is no skill named `{name}`; available skills: {}",
                names.join(", ")
            )
        }
    }
}

fn qualify(ns: Option<&str>, name: &str) -> String {
    match ns {
        Some(ns) => format!("{ns}:{name}"),
        None => name.to_string(),
    }
}

/// The working directory and its parents up to the repository root (nearest first); only the
/// working directory outside a repository.
pub fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        out.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return out;
        }
    }
    vec![cwd.to_path_buf()]
}

fn subdirs(root: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .take(MAX_ENTRIES)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn collect_commands(root: &Path, dir: &Path, depth: usize, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten().take(MAX_ENTRIES) {
        let path = e.path();
        if path.is_dir() {
            if depth < MAX_COMMAND_DEPTH {
                collect_commands(root, &path, depth + 1, out);
            }
            continue;
        }
        if path.extension().is_none_or(|x| x != "md") {
            continue;
        }
        let Ok(rel) = path.with_extension("").strip_prefix(root).map(Path::to_path_buf) else {
            continue;
        };
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(":");
        out.push((name, path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: PathBuf, s: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    }

    #[test]
    fn finds_skills_and_commands_everywhere_with_precedence() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let home = root.join("home");
        let repo = root.join("repo");
        let cwd = repo.join("app");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        write(
            home.join(".claude/skills/review/SKILL.md"),
            "---\ndescription: personal review\n---\nP\n",
        );
        write(
            cwd.join(".claude/skills/review/SKILL.md"),
            "---\ndescription: project review\n---\nQ\n",
        );
        write(
            repo.join(".keel/skills/release/SKILL.md"),
            "---\ndescription: cut a release\n---\nR\n",
        );
        write(
            root.join(".claude/skills/outside/SKILL.md"),
            "---\ndescription: above the repo\n---\n",
        );
        write(
            cwd.join(".claude/skills/broken/SKILL.md"),
            "---\ndescription: [oops\n---\n",
        );
        write(cwd.join(".claude/skills/no-file/README.md"), "not a skill");
        write(
            cwd.join(".claude/commands/release.md"),
            "a command shadowed by the skill\n",
        );
        write(
            repo.join(".claude/commands/git/log.md"),
            "---\ndescription: show the log\n---\nLog\n",
        );
        write(cwd.join(".claude/commands/compact.md"), "shadows a built-in\n");
        let extra = root.join("extra");
        write(
            extra.join(".claude/skills/extra-skill/SKILL.md"),
            "---\ndescription: from add-dir\n---\n",
        );
        let plugin = root.join("plug");
        write(
            plugin.join("skills/deploy/SKILL.md"),
            "---\ndescription: deploy it\n---\n",
        );
        write(plugin.join("commands/status.md"), "---\ndescription: status\n---\n");
        let c = Catalog::discover(&Places {
            cwd: &cwd,
            user_home: Some(&home),
            keel_home: None,
            add_dirs: std::slice::from_ref(&extra),
            plugins: &[("ops".to_string(), plugin.clone())],
            reserved: &["compact"],
        });
        let names: Vec<&str> = c.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "extra-skill",
                "git:log",
                "ops:deploy",
                "ops:status",
                "release",
                "review"
            ]
        );
        assert_eq!(c.get("review").unwrap().description, "personal review");
        assert_eq!(c.get("release").unwrap().kind, Kind::Skill);
        assert_eq!(c.get("/git:log").unwrap().kind, Kind::Command);
        assert_eq!(c.get("ops:deploy").unwrap().source, Source::Plugin("ops".into()));
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("broken/SKILL.md:") && w.contains("invalid YAML"))
        );
        assert!(c.warnings.iter().any(|w| w.contains("built-in")));
        let msg = c.unknown("deplyo", true);
        assert!(msg.contains("deplyo") && msg.contains("ops:deploy"), "{msg}");
    }
}
