//! Finding skills and commands, and the session's catalog of them.
//!
//! Order (the first of a name wins): the user's skills and commands (`~/.claude/skills`,
//! `~/.keel/skills`, `~/.claude/commands`, `~/.keel/commands`), the project's (`.claude/skills`,
//! `.keel/skills` in the working directory, then each parent up to the repository root; then its
//! commands), those of `--add-dir` directories, plugins' (`plugin:name`). Within one source a
//! skill beats a command of the same name (`.claude/commands/git/log.md` is `git:log`); across
//! sources the user's come first, so a repository never takes a name the user defined.

use std::path::{Path, PathBuf};

use super::{Kind, Skill, Source, read_file};

/// Most entries read from one directory (a hostile repository cannot make startup crawl).
const MAX_ENTRIES: usize = 500;
/// Most command files read from one commands folder and its subfolders.
const MAX_COMMANDS: usize = 2_000;
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
    /// Skill folders plugins name in their manifest (`"skills"`), besides their `skills/`:
    /// (plugin name, folder).
    pub plugin_skills: &'a [(String, PathBuf)],
    /// Names taken by built-in slash commands.
    pub reserved: &'a [&'a str],
}

#[derive(Debug, Clone, Default)]
pub struct Catalog {
    skills: Vec<Skill>,
    /// Files that were not loaded, with why (shown once at startup).
    pub warnings: Vec<String>,
    /// Whether the workspace may run commands, so the hooks of its own skills (project and
    /// nested ones) may run; off unless the launcher says so.
    pub project_trusted: bool,
}

impl Catalog {
    pub fn discover(p: &Places<'_>) -> Catalog {
        let mut c = Catalog::default();
        for root in roots(p) {
            let bound = root.bound.as_deref();
            let ns = root.ns.as_deref();
            // A plugin's skills and commands know its folder (their hooks' `CLAUDE_PLUGIN_ROOT`).
            let plugin_root = match &root.source {
                Source::Plugin(name) => p.plugins.iter().find(|(n, _)| n == name).map(|(_, r)| r.clone()),
                _ => None,
            };
            let of_plugin = |loaded: Result<Skill, String>| {
                loaded.map(|mut s| {
                    s.plugin_root.clone_from(&plugin_root);
                    s
                })
            };
            if root.kind == Kind::Skill {
                for dir in subdirs(&root.dir) {
                    let file = dir.join("SKILL.md");
                    if !file.is_file() {
                        continue;
                    }
                    if let Some(w) = leaves(&file, bound) {
                        c.warnings.push(w);
                        continue;
                    }
                    let base = dir
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let loaded = of_plugin(read_file(&file, &qualify(ns, &base), Kind::Skill, root.source.clone()));
                    c.add_from(loaded, p, root.package.as_deref());
                }
                continue;
            }
            let mut files = Vec::new();
            collect_commands(&root.dir, &root.dir, 0, bound, &mut files);
            if files.len() >= MAX_COMMANDS {
                c.warnings.push(format!(
                    "{}: more than {MAX_COMMANDS} command files; only the first {MAX_COMMANDS} found are read",
                    root.dir.display()
                ));
            }
            files.sort();
            for (name, path) in files {
                if let Some(w) = leaves(&path, bound) {
                    c.warnings.push(w);
                    continue;
                }
                let name = qualify(ns, &name);
                c.add(
                    of_plugin(read_file(&path, &name, Kind::Command, root.source.clone())),
                    p,
                );
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
            project_trusted: false,
        }
    }

    /// Adds a skill of a nested package (`package` names its folder): a name taken already
    /// becomes `<package>:<name>`, so both stay reachable.
    fn add_from(&mut self, loaded: Result<Skill, String>, p: &Places<'_>, package: Option<&str>) {
        match (loaded, package) {
            (Ok(mut skill), Some(pkg)) if self.get(&skill.name).is_some() => {
                skill.name = format!("{pkg}:{}", skill.name);
                self.add(Ok(skill), p)
            }
            (loaded, _) => self.add(loaded, p),
        }
    }

    fn add(&mut self, loaded: Result<Skill, String>, p: &Places<'_>) {
        let skill = match loaded {
            Ok(s) => s,
            Err(e) => return self.warnings.push(e),
        };
        let reserved = p.reserved;
        // `plugin:name` belongs to that plugin: a repository's command in a folder named like
        // it must not stand in for the plugin's skill (and inherit rules like `Skill(ops:*)`).
        let namespace = skill.name.split_once(':').map(|(ns, _)| ns);
        let own = matches!(&skill.source, Source::Plugin(p) if Some(p.as_str()) == namespace);
        if !own && let Some(ns) = namespace.filter(|ns| p.plugins.iter().any(|(name, _)| name == ns)) {
            return self.warnings.push(format!(
                "{}: /{} would take a name of the plugin `{ns}`; the file is ignored",
                skill.path.display(),
                skill.name
            ));
        }
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
        let name = super::requested_name(name);
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

/// One folder of skill or command files.
struct Root {
    dir: PathBuf,
    source: Source,
    /// The plugin's name, for `plugin:name`.
    ns: Option<String>,
    kind: Kind,
    /// The folder its files must really lie in (links followed), if any.
    bound: Option<PathBuf>,
    /// For a nested package's skills (`services/api/.claude/skills`): the package folder's name,
    /// which qualifies a clashing name.
    package: Option<String>,
}

/// The folders to read, first come first served: the user's skills and commands, then the
/// project's (skills before commands, nearest folder first), the skills of packages below the
/// working directory (nearest first), `--add-dir` skills, plugins. A source's commands come
/// before the next source's skills, so a repository's skill cannot take the name of the user's
/// own command (and the `Skill(name)` rules the user wrote for it). Each folder comes with the
/// folder its files must really lie in (links followed): the repository for the project's, the
/// plugin's own folder for a plugin's; none for the user's.
fn roots(p: &Places<'_>) -> Vec<Root> {
    let mut out = Vec::new();
    let project = project_dirs(p.cwd);
    let repo = project.last().cloned();
    let mut add = |dir: PathBuf, source: &Source, ns: Option<&String>, kind: Kind| {
        let bound = match source {
            Source::Project => repo.clone(),
            Source::Plugin(name) => p
                .plugins
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, root)| root.clone())
                .or_else(|| dir.parent().map(Path::to_path_buf)),
            _ => None,
        };
        out.push(Root {
            dir,
            source: source.clone(),
            ns: ns.cloned(),
            kind,
            bound,
            package: None,
        })
    };
    let user = Source::User;
    if let Some(h) = p.user_home {
        add(h.join(".claude/skills"), &user, None, Kind::Skill);
    }
    if let Some(k) = p.keel_home {
        add(k.join("skills"), &user, None, Kind::Skill);
    }
    if let Some(h) = p.user_home {
        add(h.join(".claude/commands"), &user, None, Kind::Command);
    }
    if let Some(k) = p.keel_home {
        add(k.join("commands"), &user, None, Kind::Command);
    }
    for d in &project {
        add(d.join(".claude/skills"), &Source::Project, None, Kind::Skill);
        add(d.join(".keel/skills"), &Source::Project, None, Kind::Skill);
    }
    for d in &project {
        add(d.join(".claude/commands"), &Source::Project, None, Kind::Command);
        add(d.join(".keel/commands"), &Source::Project, None, Kind::Command);
    }
    for dir in super::nested::skill_folders(p.cwd) {
        // `<package>/.claude/skills`: the package is two levels up.
        let package = dir
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned());
        out.push(Root {
            dir,
            source: Source::Project,
            ns: None,
            kind: Kind::Skill,
            bound: repo.clone(),
            package,
        });
    }
    let mut add = |dir: PathBuf, source: &Source, ns: Option<&String>, kind: Kind, bound: Option<PathBuf>| {
        out.push(Root {
            dir,
            source: source.clone(),
            ns: ns.cloned(),
            kind,
            bound,
            package: None,
        })
    };
    for d in p.add_dirs {
        add(d.join(".claude/skills"), &Source::AddedDir, None, Kind::Skill, None);
    }
    for (name, root) in p.plugins {
        let source = Source::Plugin(name.clone());
        let bound = Some(root.clone());
        add(root.join("skills"), &source, Some(name), Kind::Skill, bound.clone());
        for (_, extra) in p.plugin_skills.iter().filter(|(n, _)| n == name) {
            add(extra.clone(), &source, Some(name), Kind::Skill, bound.clone());
        }
        add(root.join("commands"), &source, Some(name), Kind::Command, bound);
    }
    out
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

/// Whether `path` really lies inside `bound` (links followed), or `bound` is `None`.
pub fn within(path: &Path, bound: Option<&Path>) -> bool {
    let Some(bound) = bound else { return true };
    match (path.canonicalize(), bound.canonicalize()) {
        (Ok(real), Ok(bound)) => real.starts_with(bound),
        _ => false,
    }
}

/// Why a repository's or plugin's definition file is not read: it is a link to a file outside
/// its folder (`SKILL.md -> ~/.ssh/id_rsa` would put that file in the model's context, and its
/// first paragraph in every listing, without the permission check a Read gets).
pub fn leaves(file: &Path, bound: Option<&Path>) -> Option<String> {
    (!within(file, bound)).then(|| {
        format!(
            "{}: leads outside {} (a link); only files inside it are read, so it is not loaded",
            file.display(),
            bound.map(|b| b.display().to_string()).unwrap_or_default()
        )
    })
}

fn collect_commands(root: &Path, dir: &Path, depth: usize, bound: Option<&Path>, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten().take(MAX_ENTRIES) {
        if out.len() >= MAX_COMMANDS {
            return;
        }
        let path = e.path();
        if path.is_dir() {
            // A linked folder elsewhere (`/`, the home directory) is not crawled.
            if depth < MAX_COMMAND_DEPTH && within(&path, bound) {
                collect_commands(root, &path, depth + 1, bound, out);
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
mod tests;
