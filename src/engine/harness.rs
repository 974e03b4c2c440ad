//! What surrounds the loop: the session's skills, sub-agent types, plugins and spawn budgets,
//! and the inventory front ends report (`system/init`, the SDK's `initialize`).

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Engine;
use super::events::NoticeLevel;
use super::pipeline::CallRecord;
use crate::agents::{AgentCatalog, AgentDef, Limits};
use crate::plugins::Plugins;
use crate::provider::{ModelRequest, Provider};
use crate::skills::Catalog;
use crate::types::message::ContentBlock;

#[derive(Debug, Clone)]
pub struct Harness {
    pub skills: Arc<Catalog>,
    pub agents: Arc<AgentCatalog>,
    pub plugins: Arc<Plugins>,
    pub limits: Limits,
    /// `worktree.baseRef`: where `isolation: worktree` sub-agents start.
    pub worktree_base: crate::agents::worktree::BaseRef,
    /// The project's MEMORY.md, when auto memory is on.
    pub memory_file: Option<std::path::PathBuf>,
    /// `--safe-mode`: no customisation was loaded.
    pub safe_mode: bool,
}

impl Default for Harness {
    fn default() -> Self {
        Harness {
            skills: Arc::new(Catalog::default()),
            agents: Arc::new(AgentCatalog::builtin()),
            plugins: Arc::new(Plugins::default()),
            limits: Limits::default(),
            worktree_base: Default::default(),
            memory_file: None,
            safe_mode: false,
        }
    }
}

/// The session's agents, skills, slash commands and plugins, in the shapes of the headless
/// `system/init` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    /// Sub-agent type names (`subagent_type` values).
    pub agents: Vec<String>,
    /// Skills the model may load.
    pub skills: Vec<String>,
    /// Slash commands that run in headless mode (built-ins and user-invocable skills).
    pub slash_commands: Vec<String>,
    /// `{"name", "path"}` per plugin.
    pub plugins: Vec<Value>,
    /// Whether the session runs in safe mode (no customisations).
    pub safe_mode: bool,
}

impl Inventory {
    /// The fields as JSON, to merge into `system/init`.
    pub fn to_json(&self) -> Value {
        json!({
            "agents": self.agents,
            "skills": self.skills,
            "slash_commands": self.slash_commands,
            "plugins": self.plugins,
        })
    }
}

impl Engine {
    /// What this session offers: sub-agent types, skills, slash commands and plugins. Front ends
    /// report it (`system/init`); it reflects agent types registered later with
    /// [`Engine::register_agents`].
    pub fn inventory(&self) -> Inventory {
        let agents = self
            .subagent_runner()
            .map(|r| r.catalog())
            .unwrap_or_else(|| self.harness.agents.clone());
        Inventory {
            agents: agents.names().into_iter().map(str::to_string).collect(),
            skills: self.harness.skills.for_model().map(|s| s.name.clone()).collect(),
            slash_commands: crate::commands::headless_names(&self.harness.skills),
            plugins: self.harness.plugins.describe(),
            safe_mode: self.harness.safe_mode,
        }
    }

    /// Adds sub-agent types at run time (the SDK's `initialize` `agents`), in the `--agents`
    /// JSON shape: `{"name": {"description", "prompt", "tools", "model", …}}`. They take
    /// precedence like `--agents`; built-in names stay reserved. Returns warnings.
    pub fn register_agents(&mut self, json: &str) -> Result<Vec<String>, String> {
        let defs = AgentDef::parse_cli(json)?;
        let mut catalog = (*self.harness.agents).clone();
        let warnings = catalog.add_overriding(defs);
        let catalog = Arc::new(catalog);
        self.harness.agents = catalog.clone();
        if let Some(runner) = self.subagent_runner() {
            runner.set_catalog(catalog.clone());
        }
        // The model learns of them through the project layer's listing.
        if self
            .registry
            .all()
            .iter()
            .any(|t| t.tool.declared().effects.spawns_agent)
        {
            let mut project = self.project.clone();
            project.listings.retain(|l| !l.starts_with(crate::agents::LISTING_LEAD));
            let window = self.compactor.window.total;
            project
                .listings
                .extend(catalog.listing(crate::skills::listing::budget(window)));
            self.set_project(project);
        }
        Ok(warnings)
    }
}

impl Engine {
    /// Appends a note to the project's MEMORY.md (the TUI's `#` prefix); the model hears of it
    /// with the next prompt. Returns the file.
    pub fn remember(&mut self, note: &str) -> Result<std::path::PathBuf, String> {
        let memory = self
            .project
            .memory
            .as_mut()
            .ok_or("project memory is off (autoMemoryEnabled is false, or KEEL_DISABLE_AUTO_MEMORY is set)")?;
        memory
            .append_note(note)
            .map_err(|e| format!("cannot write {}: {e}", memory.file.display()))?;
        let file = memory.file.clone();
        self.pending_context.push(format!(
            "The user saved a note to the project's memory ({}): {note}",
            file.display()
        ));
        Ok(file)
    }

    /// Takes the usage and denials of finished sub-agents into the session's totals.
    pub(super) fn absorb_subagents(&mut self) {
        while let Ok(finished) = self.contributions.1.try_recv() {
            for (model, usage) in finished.usage {
                self.session.totals.record(&model, &usage);
                self.session.log_event(
                    crate::transcript::USAGE_EVENT,
                    serde_json::json!({"model": model, "usage": usage, "for": "subagent"}),
                );
            }
            self.session.denials.extend(finished.denials);
        }
    }

    /// The provider for `request`: the session's, or, when a loaded skill's model names one of
    /// the session's providers (`lab/qwen3-coder`), that one, with the bare model in the request.
    pub(super) fn provider_for(&mut self, request: &mut ModelRequest) -> Result<Arc<dyn Provider>, String> {
        if request.model == self.config.model {
            return Ok(self.provider.clone());
        }
        if let Some((spec, (provider, model))) = &self.skill_route
            && *spec == request.model
        {
            request.model = model.clone();
            return Ok(provider.clone());
        }
        let Some(runner) = &self.subagents else {
            return Ok(self.provider.clone());
        };
        match runner.route(&request.model)? {
            None => Ok(self.provider.clone()),
            Some((provider, model)) => {
                let spec = std::mem::replace(&mut request.model, model.clone());
                self.skill_route = Some((spec, (provider.clone(), model)));
                Ok(provider)
            }
        }
    }

    /// Takes the usage of the model requests a round's calls made on the side (a provider's web
    /// search) into the session's totals; its output tokens count in `--task-budget` through them.
    pub(super) fn absorb_side_requests(&mut self, records: &[super::pipeline::CallRecord]) {
        for r in records {
            for (model, usage) in &r.side_requests {
                self.session.totals.record(model, usage);
                self.session.log_event(
                    crate::transcript::USAGE_EVENT,
                    serde_json::json!({"model": model, "usage": usage, "for": r.call.name}),
                );
            }
        }
    }

    /// A large repository's git snapshot, taken in the background, once it is ready: sent once,
    /// with the next message (the project layer said it would follow).
    pub(super) fn late_git_note(&mut self) -> Vec<ContentBlock> {
        let Some(snapshot) = self.project.take_late_git() else {
            return Vec::new();
        };
        vec![ContentBlock::text(format!(
            "<system-reminder>\n{}\n</system-reminder>",
            snapshot.render()
        ))]
    }

    /// Reports of background sub-agents that finished since the last look, as reminders.
    pub(super) fn background_notes(&mut self) -> Vec<ContentBlock> {
        self.absorb_subagents();
        self.session
            .services
            .tasks
            .take_notifications()
            .into_iter()
            .map(ContentBlock::text)
            .collect()
    }

    /// The instructions of skills loaded by this round's Skill calls, in call order.
    pub(super) fn loaded_skills(&self, records: &[CallRecord]) -> Vec<ContentBlock> {
        let ids: Vec<&str> = records
            .iter()
            .filter(|r| self.compactor.kinds.get(&r.call.name).effects.loads_skill)
            .map(|r| r.call.id.as_str())
            .collect();
        if ids.is_empty() {
            return Vec::new();
        }
        self.session
            .services
            .skills
            .take_queued(&ids)
            .into_iter()
            .map(ContentBlock::text)
            .collect()
    }

    /// When the model ends its turn while background sub-agents run and no later turn will
    /// come (headless mode, a sub-agent), waits for the next one to finish and returns its
    /// report; `None` when nothing runs (or the wait was cancelled).
    pub(super) async fn await_background(&mut self, cancel: &CancellationToken) -> Option<Vec<ContentBlock>> {
        if self.config.interactive && self.subagent.is_none() {
            return None;
        }
        let tasks = self.session.services.tasks.clone();
        let running = tasks.running();
        if running > 0 {
            self.events.notice(
                NoticeLevel::Info,
                format!("waiting for {running} background sub-agent(s) to finish"),
            );
        }
        if !tasks.wait_for_one(cancel).await {
            return None;
        }
        let notes = self.background_notes();
        (!notes.is_empty()).then_some(notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, Session};
    use crate::provider::script::ScriptProvider;
    use crate::tools::registry::ToolRegistry;

    #[test]
    fn agent_types_registered_at_run_time_reach_the_inventory() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::new(
            "s".into(),
            dir.path().to_path_buf(),
            dir.path().join("s"),
            crate::transcript::Transcript::disabled(dir.path().join("t.jsonl")),
        );
        let config = EngineConfig {
            model: "claude-sonnet-4-5".into(),
            max_tokens: 1_000,
            max_turns: None,
            system: Vec::new(),
            context_window: None,
            compact: crate::compact::CompactSettings::default(),
            interactive: false,
            ..Default::default()
        };
        let provider = Arc::new(ScriptProvider::parse("[]").unwrap());
        let registry = Arc::new(ToolRegistry::new(crate::tools::builtin_tools()).unwrap());
        let (mut engine, _rx) = Engine::basic(config, provider, registry, session);
        engine.install_subagents().unwrap();
        let warnings = engine
            .register_agents(r#"{"sdk-reviewer": {"description": "d", "prompt": "p"}, "verifier": {"description": "d", "prompt": "p"}}"#)
            .unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let inv = engine.inventory();
        assert!(inv.agents.contains(&"sdk-reviewer".to_string()) && inv.agents.contains(&"verifier".to_string()));
        assert!(
            engine
                .subagent_runner()
                .unwrap()
                .catalog()
                .get("sdk-reviewer")
                .is_some()
        );
        let system: String = engine.config.system.iter().map(|b| b.text.clone()).collect();
        assert!(system.contains("- sdk-reviewer: d"), "{system}");
        assert_eq!(
            inv.to_json()["slash_commands"],
            serde_json::json!([
                "help",
                "compact",
                "context",
                "cost",
                "permissions",
                "mcp",
                "skills",
                "agents"
            ])
        );
        assert!(engine.register_agents("not json").is_err());
    }

    /// A repository too large to wait for at start-up: the project layer says the snapshot
    /// follows, and it goes, once, with the first message after git is done; the system prompt
    /// stays what it was.
    #[tokio::test]
    async fn a_large_repositorys_snapshot_follows_in_the_next_message() {
        use crate::context::{Gather, ProjectContext};
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir(&cwd).unwrap();
        crate::context::git::tests::large_index(&cwd, crate::context::git::LARGE_INDEX + 1);
        let session = Session::new(
            "s".into(),
            cwd.clone(),
            dir.path().join("s"),
            crate::transcript::Transcript::disabled(dir.path().join("t.jsonl")),
        );
        let config = EngineConfig {
            model: "claude-sonnet-4-5".into(),
            max_tokens: 1_000,
            ..Default::default()
        };
        let provider = Arc::new(ScriptProvider::parse(r#"[{"text": "one"}, {"text": "two"}]"#).unwrap());
        let registry = Arc::new(ToolRegistry::new(crate::tools::builtin_tools()).unwrap());
        let (mut engine, _rx) = Engine::basic(config, provider, registry, session);
        let project = ProjectContext::gather(&Gather {
            cwd: &cwd,
            model: "claude-sonnet-4-5",
            home: None,
            replace: None,
            append: None,
        });
        engine.set_project(project.clone());
        let system = engine.config.system.clone();
        let text: String = system.iter().map(|b| b.text.clone()).collect();
        assert!(
            text.contains("is still being taken and follows in a later message"),
            "{text}"
        );
        assert!(!text.contains("Recent commits"), "{text}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while project.git_now().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the background snapshot never finished"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for prompt in ["first", "second"] {
            engine
                .run_turn(
                    vec![ContentBlock::text(prompt)],
                    tokio_util::sync::CancellationToken::new(),
                )
                .await;
        }
        let users: Vec<String> = engine
            .session
            .history()
            .iter()
            .filter(|m| m.role == crate::types::message::Role::User)
            .map(|m| m.text())
            .collect();
        assert_eq!(users.len(), 2, "{users:?}");
        assert!(
            users[0].starts_with("first") && users[0].contains("<system-reminder>\nGit (a snapshot from the start"),
            "{}",
            users[0]
        );
        assert!(
            users[0].contains("- Branch: trunk") && users[0].contains("many files"),
            "{}",
            users[0]
        );
        assert_eq!(users[1], "second", "sent once");
        assert_eq!(engine.config.system, system, "the system prompt did not change");
    }
}
