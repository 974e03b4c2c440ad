//! Sub-agent types and the machinery around running them: definitions ([`definition`]), the
//! session's catalog (this file), spawn budgets ([`budget`]), background tasks ([`tasks`]),
//! git worktree isolation ([`worktree`]) and the verifier's facts ([`verifier`]). The runner
//! that builds and drives a child engine is `engine/subagent.rs`.
//!
//! Precedence on a name clash: `--agents` > project (`.claude/agents/**`, `.keel/agents/**`, from
//! the working directory up to the repository root, nearest first) > user (`~/.claude/agents`,
//! `~/.keel/agents`) > plugins (`plugin:name`). Built-in names are reserved: a repository cannot
//! redefine `verifier` or `Explore`.

pub mod budget;
pub mod definition;
pub mod tasks;
pub mod verifier;
pub mod worktree;

use std::path::{Path, PathBuf};

pub use budget::{Limits, SpawnBudget};
pub use definition::{AgentDef, AgentSource, Isolation, Role};

/// How the listing of custom types starts (to find it in the project layer again).
pub const LISTING_LEAD: &str = "Sub-agent types defined for this project, besides the built-in ones (the Agent \
tool's `subagent_type`; each works in its own conversation and reports back):";

/// Most characters of one type's description in the listing.
const MAX_DESCRIPTION: usize = 600;
/// Most definition files read from one folder tree.
const MAX_FILES: usize = 500;
const MAX_DEPTH: usize = 4;

/// Where to look for definitions.
pub struct AgentPlaces<'a> {
    pub cwd: &'a Path,
    pub user_home: Option<&'a Path>,
    pub keel_home: Option<&'a Path>,
    /// `--agents` JSON, already parsed.
    pub cli: Vec<AgentDef>,
    /// Loaded plugins: (name, root).
    pub plugins: &'a [(String, PathBuf)],
}

#[derive(Debug, Clone, Default)]
pub struct AgentCatalog {
    defs: Vec<AgentDef>,
    pub warnings: Vec<String>,
}

impl AgentCatalog {
    /// The built-in types only.
    pub fn builtin() -> AgentCatalog {
        AgentCatalog {
            defs: AgentDef::builtins(),
            warnings: Vec::new(),
        }
    }

    /// The built-in types and the given definitions (`--agents`), no files (safe mode).
    pub fn with_builtins_and(defs: Vec<AgentDef>) -> AgentCatalog {
        let mut c = AgentCatalog::builtin();
        for def in defs {
            c.add(def);
        }
        c
    }

    pub fn discover(p: AgentPlaces<'_>) -> AgentCatalog {
        let mut c = AgentCatalog::builtin();
        for def in p.cli {
            c.add(def);
        }
        // Each folder with the folder its files must really lie in (see `skills::discover::leaves`).
        #[allow(clippy::type_complexity)]
        let mut roots: Vec<(PathBuf, AgentSource, Option<String>, Option<PathBuf>)> = Vec::new();
        let project = crate::skills::discover::project_dirs(p.cwd);
        let repo = project.last().cloned();
        for d in &project {
            roots.push((d.join(".claude/agents"), AgentSource::Project, None, repo.clone()));
            roots.push((d.join(".keel/agents"), AgentSource::Project, None, repo.clone()));
        }
        if let Some(h) = p.user_home {
            roots.push((h.join(".claude/agents"), AgentSource::User, None, None));
        }
        if let Some(k) = p.keel_home {
            roots.push((k.join("agents"), AgentSource::User, None, None));
        }
        for (name, root) in p.plugins {
            roots.push((
                root.join("agents"),
                AgentSource::Plugin(name.clone()),
                Some(name.clone()),
                Some(root.clone()),
            ));
        }
        for (root, source, ns, bound) in roots {
            let bound = bound.as_deref();
            let mut files = Vec::new();
            collect(&root, 0, bound, &mut files);
            files.sort();
            for f in files {
                if let Some(w) = crate::skills::discover::leaves(&f, bound) {
                    c.warnings.push(w);
                    continue;
                }
                let text = match read(&f) {
                    Ok(t) => t,
                    Err(e) => {
                        c.warnings.push(e);
                        continue;
                    }
                };
                match AgentDef::parse_file(&text, &f, source.clone(), ns.as_deref()) {
                    Ok(Some(def)) => c.add(def),
                    Ok(None) => crate::debug::log(format!("{}: no front matter; not an agent definition", f.display())),
                    Err(e) => c.warnings.push(e),
                }
            }
        }
        c
    }

    /// Adds a definition unless its name is taken (built-ins always, others by precedence).
    fn add(&mut self, def: AgentDef) {
        if let Some(existing) = self.get(&def.name) {
            let place = def
                .path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or(def.source.label());
            if existing.source == AgentSource::BuiltIn {
                self.warnings.push(format!(
                    "{place}: `{}` is a built-in agent type; this definition is ignored",
                    def.name
                ));
            } else {
                crate::debug::log(format!("{place}: agent `{}` is already defined; ignored", def.name));
            }
            return;
        }
        self.defs.push(def);
    }

    /// Adds definitions given at run time (the SDK's `initialize`): they replace custom ones of
    /// the same name; built-in names stay reserved. Returns warnings.
    pub fn add_overriding(&mut self, defs: Vec<AgentDef>) -> Vec<String> {
        let mut warnings = Vec::new();
        for def in defs {
            match self.defs.iter().position(|d| d.name == def.name) {
                Some(i) if self.defs[i].source == AgentSource::BuiltIn => warnings.push(format!(
                    "`{}` is a built-in agent type; the definition is ignored",
                    def.name
                )),
                Some(i) => self.defs[i] = def,
                None => self.defs.push(def),
            }
        }
        warnings
    }

    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.defs.iter().find(|d| d.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &AgentDef> {
        self.defs.iter()
    }

    pub fn names(&self) -> Vec<&str> {
        self.defs.iter().map(|d| d.name.as_str()).collect()
    }

    /// The error for an unknown `subagent_type`, listing the types.
    pub fn unknown(&self, name: &str) -> String {
        format!(
            "there is no sub-agent type `{name}`; available types: {}",
            self.names().join(", ")
        )
    }

    /// The listing of the custom types for the model's context (the built-in ones are
    /// described by the Agent tool itself), within `budget` characters like the skill listing
    /// (a repository's hundreds of definitions must not fill the context); `None` when there
    /// are none.
    pub fn listing(&self, budget: usize) -> Option<String> {
        let entries: Vec<(&str, String)> = self
            .defs
            .iter()
            .filter(|d| d.source != AgentSource::BuiltIn)
            .map(|d| {
                (
                    d.name.as_str(),
                    crate::skills::listing::one_line(&d.description, MAX_DESCRIPTION),
                )
            })
            .collect();
        crate::skills::listing::fit(LISTING_LEAD, &entries, budget)
    }
}

fn read(path: &Path) -> Result<String, String> {
    let bytes = crate::fsutil::open::read_file_capped(path, crate::skills::MAX_FILE)
        .map_err(|e| format!("{}: {e}; not loaded", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text; not loaded", path.display()))
}

fn collect(dir: &Path, depth: usize, bound: Option<&Path>, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if out.len() >= MAX_FILES {
            return;
        }
        let p = e.path();
        if p.is_dir() {
            // A linked folder elsewhere (`/`, the home directory) is not crawled.
            if depth < MAX_DEPTH && crate::skills::discover::within(&p, bound) {
                collect(&p, depth + 1, bound, out);
            }
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
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
    fn discovers_with_precedence_and_reserved_builtins() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let home = root.join("home");
        let cwd = root.join("repo");
        std::fs::create_dir_all(cwd.join(".git")).unwrap();
        let def = |name: &str, d: &str| format!("---\nname: {name}\ndescription: {d}\n---\nPrompt of {d}\n");
        write(
            cwd.join(".claude/agents/review/reviewer.md"),
            &def("reviewer", "project reviewer"),
        );
        write(
            home.join(".claude/agents/reviewer.md"),
            &def("reviewer", "user reviewer"),
        );
        write(home.join(".claude/agents/docs.md"), &def("docs-writer", "user docs"));
        write(
            cwd.join(".claude/agents/verifier.md"),
            &def("verifier", "always says pass"),
        );
        write(cwd.join(".claude/agents/README.md"), "# Our agents\n");
        write(cwd.join(".keel/agents/bad.md"), "---\nname: bad\n---\n");
        let plugin = root.join("plug");
        write(plugin.join("agents/deployer.md"), &def("deployer", "plugin deployer"));
        let cli = AgentDef::parse_cli(r#"{"docs-writer": {"description": "cli docs", "prompt": "P"}}"#).unwrap();
        let c = AgentCatalog::discover(AgentPlaces {
            cwd: &cwd,
            user_home: Some(&home),
            keel_home: None,
            cli,
            plugins: &[("ops".into(), plugin)],
        });
        assert_eq!(c.get("reviewer").unwrap().description, "project reviewer");
        assert_eq!(c.get("docs-writer").unwrap().description, "cli docs");
        assert_eq!(c.get("ops:deployer").unwrap().source, AgentSource::Plugin("ops".into()));
        assert_eq!(c.get("verifier").unwrap().source, AgentSource::BuiltIn);
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings.iter().any(|w| w.contains("built-in agent type")));
        assert!(c.warnings.iter().any(|w| w.contains("bad.md:2:")));
        let msg = c.unknown("reviewr");
        assert!(
            msg.contains("general-purpose") && msg.contains("reviewer") && msg.contains("ops:deployer"),
            "{msg}"
        );
        let listing = c.listing(10_000).unwrap();
        assert!(
            listing.contains("- reviewer: project reviewer") && !listing.contains("verifier"),
            "{listing}"
        );
        assert_eq!(AgentCatalog::builtin().listing(10_000), None);
    }

    /// A repository with hundreds of long definitions does not fill the context: the listing
    /// keeps every name within its budget.
    #[test]
    fn the_listing_stays_within_its_budget() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().canonicalize().unwrap();
        let long = "Use this agent for everything, always, proactively. ".repeat(20);
        for i in 0..300 {
            write(
                cwd.join(format!(".claude/agents/a{i:03}.md")),
                &format!("---\nname: agent-{i:03}\ndescription: {long}\n---\nP\n"),
            );
        }
        let c = AgentCatalog::discover(AgentPlaces {
            cwd: &cwd,
            user_home: None,
            keel_home: None,
            cli: Vec::new(),
            plugins: &[],
        });
        let budget = 8_000;
        let listing = c.listing(budget).unwrap();
        let entries: usize = listing.lines().skip(1).map(|l| l.chars().count() + 1).sum();
        assert!(entries <= budget, "{entries} characters");
        assert!(listing.contains("- agent-000") && listing.contains("- agent-299"));
    }

    /// A repository's or plugin's agent file linked to a file outside it (the user's private
    /// notes, another project's prompts) is not read, and a linked folder is not crawled.
    #[test]
    fn a_repositorys_links_to_files_outside_it_are_not_read() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let cwd = root.join("repo");
        std::fs::create_dir_all(cwd.join(".claude/agents")).unwrap();
        std::fs::create_dir_all(cwd.join(".git")).unwrap();
        let private = root.join("private");
        write(
            private.join("notes.md"),
            "---\nname: notes\ndescription: PRIVATE-NOTES\n---\nPRIVATE-BODY\n",
        );
        symlink(private.join("notes.md"), cwd.join(".claude/agents/notes.md")).unwrap();
        symlink(&private, cwd.join(".claude/agents/linked")).unwrap();
        let plugin = root.join("plug");
        std::fs::create_dir_all(plugin.join("agents")).unwrap();
        symlink(private.join("notes.md"), plugin.join("agents/notes.md")).unwrap();
        write(
            cwd.join("docs/reviewer.md"),
            "---\nname: reviewer\ndescription: shared\n---\nP\n",
        );
        symlink(cwd.join("docs/reviewer.md"), cwd.join(".claude/agents/reviewer.md")).unwrap();
        let c = AgentCatalog::discover(AgentPlaces {
            cwd: &cwd,
            user_home: None,
            keel_home: None,
            cli: Vec::new(),
            plugins: &[("ops".into(), plugin)],
        });
        assert!(
            c.get("reviewer").is_some(),
            "a link inside the repository: {:?}",
            c.warnings
        );
        assert!(c.get("notes").is_none() && c.get("ops:notes").is_none());
        assert!(
            c.listing(10_000).is_some_and(|l| !l.contains("PRIVATE")),
            "{:?}",
            c.listing(10_000)
        );
        assert_eq!(
            c.warnings.iter().filter(|w| w.contains("leads outside")).count(),
            2,
            "{:?}",
            c.warnings
        );
    }
}
