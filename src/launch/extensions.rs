//! Lowers the harness's inputs — plugin folders, skill and command files, sub-agent
//! definitions (`--agents` and files), the `agents` budgets and the project memory — into typed
//! parts once at startup, and installs them in the engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::options::Options;
use super::setup::SetupError;
use crate::agents::worktree::BaseRef;
use crate::agents::{AgentCatalog, AgentDef, AgentPlaces, Limits};
use crate::config::settings::Settings;
use crate::context::ProjectContext;
use crate::engine::Engine;
use crate::engine::harness::Harness;
use crate::memory::Memory;
use crate::permissions::Authorizer;
use crate::permissions::rules::{Behavior, Rule};
use crate::plugins::Plugins;
use crate::skills::{Catalog, Places, listing};
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::skill::SkillTool;

/// Where a session runs, for finding its extensions.
#[derive(Clone, Copy)]
pub struct Where<'a> {
    pub cwd: &'a Path,
    pub user_home: Option<&'a Path>,
    pub keel_home: &'a Path,
    /// Whether the project may run commands (its plugins' hooks and servers).
    pub project_trusted: bool,
}

pub struct Extensions {
    pub plugins: Arc<Plugins>,
    pub skills: Arc<Catalog>,
    pub agents: Arc<AgentCatalog>,
    pub limits: Limits,
    pub worktree_base: BaseRef,
    pub memory: Option<Memory>,
    /// Files not loaded and other things to say once at startup.
    pub warnings: Vec<String>,
    /// `--safe-mode`: none of the above was loaded.
    pub safe_mode: bool,
}

/// Loads plugins (their hooks join `settings` as layers), skills, agent types, budgets and
/// memory. `add_dirs` are the working directories besides the first. In a folder that is not
/// trusted, the plugins a repository placed in its skills folders are not loaded (as its
/// `plugins` setting is ignored).
pub fn load(
    cli: &Options,
    settings: &mut Settings,
    places: &Where<'_>,
    add_dirs: &[PathBuf],
) -> Result<Extensions, SetupError> {
    if cli.safe_mode {
        return safe_mode(cli, settings);
    }
    let Where {
        cwd,
        user_home,
        keel_home,
        project_trusted,
    } = *places;
    let mut found_warnings = Vec::new();
    let mut found = crate::plugins::in_skill_folders(cwd, user_home, &mut found_warnings);
    if !project_trusted {
        let (theirs, rest): (Vec<_>, Vec<_>) = found
            .into_iter()
            .partition(|(_, scope)| *scope == crate::config::settings::Scope::Project);
        found = rest;
        for (dir, _) in theirs {
            found_warnings.push(format!(
                "{}: a plugin in the project's skills folder, not loaded because this folder is not trusted",
                dir.display()
            ));
        }
    }
    let plugins =
        Plugins::load(&cli.plugin_dir, cwd, settings, found).map_err(|e| SetupError::Invalid(e.to_string()))?;
    plugins.add_hook_layers(settings);
    let roots = plugins.roots();
    let plugin_skills = plugins.skill_roots();
    let reserved = crate::commands::reserved_names();
    let mut skills = Catalog::discover(&Places {
        cwd,
        user_home,
        keel_home: Some(keel_home),
        add_dirs,
        plugins: &roots,
        plugin_skills: &plugin_skills,
        reserved: &reserved,
    });
    skills.project_trusted = project_trusted;
    let cli_agents = match &cli.agents {
        Some(json) => AgentDef::parse_cli(json).map_err(SetupError::Invalid)?,
        None => Vec::new(),
    };
    let agents = AgentCatalog::discover(AgentPlaces {
        cwd,
        user_home,
        keel_home: Some(keel_home),
        cli: cli_agents,
        plugins: &roots,
    });
    let (limits, refused) = Limits::from_settings(settings)?;
    let worktree_base = worktree_base(settings)?;
    let memory =
        crate::memory::enabled(settings.flag(&["autoMemoryEnabled"])?).then(|| Memory::load(keel_home, user_home, cwd));
    let warnings: Vec<String> = found_warnings
        .iter()
        .chain(&plugins.warnings)
        .chain(&skills.warnings)
        .chain(&agents.warnings)
        .chain(&refused)
        .cloned()
        .collect();
    Ok(Extensions {
        plugins: Arc::new(plugins),
        skills: Arc::new(skills),
        agents: Arc::new(agents),
        limits,
        worktree_base,
        memory,
        warnings,
        safe_mode: false,
    })
}

/// Safe mode's extensions: the built-in agent types (and `--agents`, given for this run), the
/// budgets; no plugins, skills or memory.
fn safe_mode(cli: &Options, settings: &Settings) -> Result<Extensions, SetupError> {
    let cli_agents = match &cli.agents {
        Some(json) => AgentDef::parse_cli(json).map_err(SetupError::Invalid)?,
        None => Vec::new(),
    };
    let (limits, warnings) = Limits::from_settings(settings)?;
    Ok(Extensions {
        plugins: Arc::new(Plugins::default()),
        skills: Arc::new(Catalog::default()),
        agents: Arc::new(AgentCatalog::with_builtins_and(cli_agents)),
        limits,
        memory: None,
        warnings,
        safe_mode: true,
        worktree_base: worktree_base(settings)?,
    })
}

/// `worktree.baseRef`: what worktree sub-agents start from (a setting, kept in safe mode).
fn worktree_base(settings: &Settings) -> Result<BaseRef, SetupError> {
    Ok(match settings.nested(&["worktree", "baseRef"]) {
        None => BaseRef::default(),
        Some((serde_json::Value::String(s), layer)) => {
            BaseRef::parse(s).map_err(|e| SetupError::Invalid(format!("{}: {e}", layer.label())))?
        }
        Some((v, layer)) => {
            return Err(SetupError::Invalid(format!(
                "{}: worktree.baseRef must be \"head\", \"fresh\" or a git ref, found {v}",
                layer.label()
            )));
        }
    })
}

impl Extensions {
    /// Folders the session hands its shell commands to read although they lie in a private
    /// home or keel's state: the project's memory and each skill's own folder (its scripts).
    pub fn handed_to_commands(&self) -> Vec<PathBuf> {
        let skills = self
            .skills
            .iter()
            .filter(|s| s.kind == crate::skills::Kind::Skill)
            .map(|s| s.dir.clone());
        self.memory.iter().map(|m| m.dir.clone()).chain(skills).collect()
    }

    /// Lets the file tools use the memory folder without asking.
    pub fn grant_memory(&self, authorizer: &mut Authorizer) -> Result<(), SetupError> {
        let Some(m) = &self.memory else { return Ok(()) };
        let anchors = authorizer.anchors().clone();
        let rules = m
            .allow_rules()
            .iter()
            .map(|t| Rule::parse(t, Behavior::Allow, "project memory", &anchors))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SetupError::Invalid(e.to_string()))?;
        authorizer.add_rules(rules);
        Ok(())
    }

    /// Adds the Skill tool when the model has skills to load; `agents.maxDepth: 0` takes the
    /// Agent tool away.
    pub fn add_tools(&self, registry: ToolRegistry) -> Result<ToolRegistry, RegistryError> {
        let registry = if self.limits.max_depth == 0 {
            registry.subset(|n| n != "Agent")?
        } else {
            registry
        };
        if self.skills.for_model().next().is_none() {
            return Ok(registry);
        }
        registry.with(Arc::new(SkillTool::new(self.skills.clone())))
    }

    /// Puts the listings of skills and sub-agent types, and the memory, in the project layer.
    /// `window` is the context window in tokens (the skill listing gets about 1% of it).
    pub fn decorate(&self, project: &mut ProjectContext, registry: &ToolRegistry, window: u64) {
        let offers =
            |is: fn(&crate::tools::Effects) -> bool| registry.all().iter().any(|t| is(&t.tool.declared().effects));
        let budget = listing::budget(window);
        if offers(|e| e.loads_skill)
            && let Some((l, left)) = listing::render_fitted(self.skills.for_model(), budget)
        {
            project.listings.push(l);
            project.listing_notes = left.describe(budget);
        }
        if offers(|e| e.spawns_agent)
            && let Some(l) = self.agents.listing(listing::budget(window))
        {
            project.listings.push(l);
        }
        project.memory = self.memory.clone();
    }

    /// Installs the harness and the runners of sub-agents and skills.
    pub fn install(self, engine: &mut Engine) -> Result<(), RegistryError> {
        engine.harness = Harness {
            skills: self.skills.clone(),
            agents: self.agents,
            plugins: self.plugins,
            limits: self.limits,
            worktree_base: self.worktree_base,
            memory_file: self.memory.as_ref().map(|m| m.file.clone()),
            safe_mode: self.safe_mode,
        };
        engine.install_subagents()?;
        engine.install_skills(self.skills);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository's plugin placed in its skills folder loads in a folder the project may run
    /// commands in, and not in one it has not trusted (said in a warning).
    #[test]
    fn a_projects_plugin_in_its_skills_folder_needs_trust() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let plugin = repo.join(".claude/skills/tools/.claude-plugin");
        std::fs::create_dir_all(&plugin).unwrap();
        std::fs::write(plugin.join("plugin.json"), r#"{"name": "tools"}"#).unwrap();
        let keel_home = repo.join("keel-home");
        let load = |trusted: bool| {
            let places = Where {
                cwd: &repo,
                user_home: None,
                keel_home: &keel_home,
                project_trusted: trusted,
            };
            load(&Options::default(), &mut Settings::default(), &places, &[]).unwrap()
        };
        assert_eq!(load(true).plugins.list.len(), 1);
        let untrusted = load(false);
        assert!(untrusted.plugins.list.is_empty());
        assert!(
            untrusted.warnings.iter().any(|w| w.contains("not trusted")),
            "{:?}",
            untrusted.warnings
        );
    }
}
