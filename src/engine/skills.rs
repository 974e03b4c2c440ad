//! The engine's side of skills: loading one for the Skill tool or for `/name args`.
//!
//! Loading a skill: its `allowed-tools` become temporary allow rules of the session (until the
//! turn ends), its `model` the turn's model; the body is rendered and each `` !`cmd` `` runs as
//! a Bash call through the tool pipeline — PreToolUse hooks, the permission check (where those
//! rules now count), the sandbox — and a refused or failed command aborts the load. The text
//! then joins the conversation: with the tool round's results for the Skill tool, as the
//! prompt for `/name`. A `context: fork` skill runs as a sub-agent's task instead.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::pipeline::{Pipeline, ToolCall};
use super::{Engine, EventSink};
use crate::engine::SessionServices;
use crate::hooks::Hooks;
use crate::permissions::Authorizer;
use crate::permissions::rules::{Anchors, Behavior, Rule};
use crate::skills::render::{self, Part, Vars};
use crate::skills::{Catalog, Kind, Skill};
use crate::tools::agent::AgentRequest;
use crate::tools::registry::ToolRegistry;
use crate::tools::skill::SkillRunner;
use crate::tools::{ToolContext, ToolError, ToolOutput};
use crate::types::message::ContentBlock;

/// Loads skills for one engine (the main agent or a sub-agent), with its tools and rules.
pub struct SkillInvoker {
    pub catalog: Arc<Catalog>,
    registry: Arc<ToolRegistry>,
    authorizer: Arc<Authorizer>,
    hooks: Arc<Hooks>,
    events: EventSink,
    interactive: bool,
    session_id: String,
    /// The session the skills load into.
    services: Arc<SessionServices>,
    /// Runs `context: fork` skills (the engine's sub-agent runner, when it has one).
    agents: Option<Arc<super::subagent::SubagentRunner>>,
    /// The sub-agent this engine runs, if any (for the hooks' payloads).
    agent: Option<super::subagent::SubagentInfo>,
}

impl std::fmt::Debug for SkillInvoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SkillInvoker")
    }
}

/// A skill turned into text (or a sub-agent's report, for `context: fork`).
pub enum Loaded {
    Inline(String),
    Forked {
        agent_type: String,
        report: String,
        is_error: bool,
    },
}

impl SkillInvoker {
    fn new(engine: &Engine, catalog: Arc<Catalog>) -> Self {
        SkillInvoker {
            catalog,
            registry: engine.registry.clone(),
            authorizer: engine.authorizer.clone(),
            hooks: engine.hooks.clone(),
            events: engine.events.clone(),
            interactive: engine.config.interactive,
            session_id: engine.session.id.clone(),
            services: engine.session.services.clone(),
            agents: engine.subagents.clone(),
            agent: engine.subagent.clone(),
        }
    }

    /// Loads `skill` for `args` in the session; `call_id` names the calls it makes.
    pub async fn load(
        &self,
        skill: &Skill,
        args: &str,
        cancel: &CancellationToken,
        call_id: &str,
    ) -> Result<Loaded, String> {
        let shared = &self.services;
        let grants = grant_rules(skill, &shared.cwd)?;
        // The rules count for the skill's own commands; a forked skill's task gets them too.
        shared.skills.grant(&skill.name, grants.clone());
        // Its hooks too: from here until the turn ends (or the forked task does).
        let hook_owner = self.activate_hooks(skill);
        let vars = Vars {
            session_id: &self.session_id,
            project_dir: &shared.cwd,
        };
        let parts = render::render(skill, args, &vars);
        let text = match self.run_snippets(skill, parts, cancel, call_id).await {
            Ok(t) => t,
            Err(e) => {
                shared.skills.revoke(&skill.name);
                if let Some(o) = &hook_owner {
                    self.hooks.remove_scoped(o);
                }
                return Err(e);
            }
        };
        if skill.fork_agent.is_none() {
            let model = skill.model.as_ref().map(|m| crate::config::models::resolve_alias(m));
            // A model outside managed settings' allowlist is not switched to.
            let mut refused = model.as_deref().and_then(|m| self.authorizer.model_refused(m));
            // A model of a named provider (`lab/qwen3-coder`) must be reachable to switch to.
            if let (None, Some(m), Some(runner)) = (&refused, &model, &self.agents) {
                refused = runner.route(m).err();
            }
            match refused {
                Some(why) => self.events.notice(
                    crate::engine::events::NoticeLevel::Warning,
                    format!("skill {}: {why}; it runs on the session's model", skill.name),
                ),
                None => shared.skills.set_model(model),
            }
        } else {
            shared.skills.revoke(&skill.name);
        }
        let Some(agent_type) = &skill.fork_agent else {
            shared.skills.record(&skill.name, &text);
            if let Some(o) = hook_owner {
                shared.skills.note_hooks(o);
            }
            return Ok(Loaded::Inline(text));
        };
        let _remove_hooks = ScopedHooks {
            hooks: &self.hooks,
            owner: hook_owner,
        };
        let runner = self.agents.clone().ok_or_else(|| {
            format!(
                "the skill `{}` runs in a sub-agent (context: fork), and sub-agents are not available here",
                skill.name
            )
        })?;
        let report = runner
            .run_with_grants(
                AgentRequest {
                    description: format!("skill {}", skill.name),
                    prompt: text,
                    agent_type: agent_type.clone(),
                    tool_use_id: call_id.to_string(),
                    background: Some(false),
                    worktree: false,
                    model: None,
                },
                grants,
                cancel.clone(),
            )
            .await?;
        Ok(Loaded::Forked {
            agent_type: agent_type.clone(),
            report: report.text,
            is_error: report.is_error,
        })
    }

    /// Registers the skill's front matter `hooks`; the owner to remove them by. Problems are
    /// notices: the skill still loads, without its hooks. The workspace's own skills (project
    /// and nested ones) are the repository's code: their hooks run only in a trusted folder.
    fn activate_hooks(&self, skill: &Skill) -> Option<String> {
        let hooks = skill.hooks.as_ref()?;
        let warn = |m: String| self.events.notice(crate::engine::events::NoticeLevel::Warning, m);
        if skill.source == crate::skills::Source::Project && !self.catalog.project_trusted {
            warn(format!(
                "the hooks of the skill `{}` ({}) do not run: it comes from this folder, which is not trusted; \
                 trust the folder when keel asks at the next start to use them",
                skill.name,
                skill.path.display()
            ));
            return None;
        }
        if self.hooks.config().only_managed {
            warn(format!(
                "the hooks of the skill `{}` do not run: settings allow only managed hooks",
                skill.name
            ));
            return None;
        }
        let mut config = crate::hooks::HookConfig::default();
        let label = format!("skill {} ({})", skill.name, skill.path.display());
        // A plugin's skill: its hooks are the plugin's, `${CLAUDE_PLUGIN_ROOT}` its folder.
        let hooks = match &skill.plugin_root {
            Some(root) => &crate::plugins::substitute(hooks.clone(), &root.display().to_string()),
            None => hooks,
        };
        if let Err(e) = config.add_layer(hooks, &label) {
            warn(format!("{e}; the skill's hooks do not run"));
            return None;
        }
        if let Some(root) = &skill.plugin_root {
            config.set_plugin_root(&label, root);
        }
        for w in &config.warnings {
            warn(w.clone());
        }
        let owner = format!("skill:{}", skill.name);
        self.hooks.add_scoped(&owner, config);
        Some(owner)
    }

    /// Runs each `!`cmd`` as a Bash call through the pipeline and puts its output in place.
    async fn run_snippets(
        &self,
        skill: &Skill,
        parts: Vec<Part>,
        cancel: &CancellationToken,
        call_id: &str,
    ) -> Result<String, String> {
        let pipeline = Pipeline {
            registry: &self.registry,
            services: &self.services,
            grants: self.services.grants(),
            events: &self.events,
            authorizer: &self.authorizer,
            hooks: &self.hooks,
            interactive: self.interactive,
            agent: self.agent.as_ref(),
        };
        let mut out = String::new();
        for (i, part) in parts.into_iter().enumerate() {
            let command = match part {
                Part::Text(t) => {
                    out.push_str(&t);
                    continue;
                }
                Part::Command(c) => c,
            };
            if self.registry.get("Bash").is_none() {
                return Err(format!(
                    "the skill `{}` was not loaded: it runs shell commands (!`…`), and the Bash tool is not available in this session",
                    skill.name
                ));
            }
            let call = ToolCall {
                id: format!("{call_id}-sh{i}"),
                name: "Bash".into(),
                input: json!({"command": command, "description": format!("shell snippet of the skill {}", skill.name)}),
            };
            let Some(record) = pipeline.run_all(vec![call], &[], cancel).await.pop() else {
                return Err(format!(
                    "the skill `{}` was not loaded: its command `{command}` did not run",
                    skill.name
                ));
            };
            let output = record.output.content.as_text();
            if record.output.is_error {
                let what = if record.denied { "was not allowed" } else { "failed" };
                return Err(format!(
                    "the skill `{}` was not loaded: its command `{command}` {what}: {}",
                    skill.name,
                    strip_error_tags(&output)
                ));
            }
            out.push_str(output.trim_end());
        }
        Ok(out)
    }
}

fn strip_error_tags(s: &str) -> String {
    s.trim()
        .trim_start_matches("<tool_use_error>")
        .trim_end_matches("</tool_use_error>")
        .to_string()
}

/// The skill's `allowed-tools` as allow rules (relative paths from the session's directory).
fn grant_rules(skill: &Skill, cwd: &std::path::Path) -> Result<Vec<Rule>, String> {
    let anchors = Anchors {
        cwd: cwd.to_path_buf(),
        base_dir: skill.dir.clone(),
        home: dirs::home_dir(),
    };
    let source = format!("allowed-tools of the skill {}", skill.name);
    skill
        .allowed_tools
        .iter()
        .map(|t| {
            Rule::parse(t, Behavior::Allow, &source, &anchors)
                .map_err(|e| format!("the skill `{}` was not loaded: {e}", skill.name))
        })
        .collect()
}

/// The text added to the conversation for a skill the model loaded.
fn injected(name: &str, text: &str) -> String {
    format!("<skill name=\"{name}\">\n{}\n</skill>", text.trim_end())
}

#[async_trait]
impl SkillRunner for SkillInvoker {
    fn grants(&self, skill: &str) -> Vec<String> {
        self.catalog
            .get(skill)
            .map(|s| s.allowed_tools.clone())
            .unwrap_or_default()
    }

    async fn load(&self, name: &str, args: &str, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let skill = self
            .catalog
            .get(name)
            .filter(|s| s.kind == Kind::Skill || s.described)
            .ok_or_else(|| {
                ToolError::invalid(format!(
                    "{}. Call Skill with one of these names, or do the task without a skill.",
                    self.catalog.unknown(name, true)
                ))
            })?;
        if skill.disable_model_invocation {
            return Err(ToolError::invalid(format!(
                "the skill `{name}` can only be run by the user, as /{name} (disable-model-invocation); do the task \
                 without it, or tell the user to run /{name}"
            )));
        }
        match SkillInvoker::load(self, skill, args, &ctx.cancel, &ctx.tool_use_id)
            .await
            .map_err(ToolError::invalid)?
        {
            Loaded::Inline(text) => {
                self.services
                    .skills
                    .queue(&ctx.tool_use_id, injected(&skill.name, &text));
                Ok(ToolOutput::text(format!(
                    "Loaded the skill `{}`; its instructions follow in this message. Follow them for this task.",
                    skill.name
                )))
            }
            Loaded::Forked {
                agent_type,
                report,
                is_error,
            } => {
                let text = format!(
                    "The skill `{}` ran in a {agent_type} sub-agent. Its report:\n\n{report}",
                    skill.name
                );
                Ok(if is_error {
                    ToolOutput::error(text)
                } else {
                    ToolOutput::text(text)
                })
            }
        }
    }
}

impl Engine {
    /// Gives this engine's Skill tool a loader for `catalog` (after the sub-agent runner, so
    /// forked skills can use it).
    pub fn install_skills(&mut self, catalog: Arc<Catalog>) {
        self.skill_runner = Some(Arc::new(self.skill_invoker(catalog)));
    }

    pub(crate) fn skill_invoker(&self, catalog: Arc<Catalog>) -> SkillInvoker {
        SkillInvoker::new(self, catalog)
    }

    /// Expands `/name args` typed by the user into the turn's prompt: the skill's rendered
    /// text (its `allowed-tools` apply for the turn; the user invoked it, so nothing is asked),
    /// or a forked skill's report. An error says what went wrong and nothing runs.
    pub async fn expand_slash_skill(
        &mut self,
        name: &str,
        args: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<ContentBlock>, String> {
        let catalog = self.harness.skills.clone();
        let skill = catalog
            .get(name)
            .filter(|s| s.user_invocable)
            .ok_or_else(|| crate::commands::unknown(name, &catalog))?;
        // Owned parts: the engine itself is not held across the hooks' run.
        let (hooks, events, mode) = (self.hooks.clone(), self.events.clone(), self.session.services.mode());
        let context = prompt_expansion(&hooks, &events, mode, skill, args).await?;
        let invoker = self.skill_invoker(catalog.clone());
        let id = format!("slash-{}", uuid::Uuid::new_v4().simple());
        let mut expanded = match invoker.load(skill, args, cancel, &id).await {
            Ok(Loaded::Inline(text)) => Ok(vec![ContentBlock::text(text)]),
            Ok(Loaded::Forked {
                agent_type,
                report,
                is_error,
            }) => {
                let state = if is_error { "did not finish" } else { "finished" };
                Ok(vec![ContentBlock::text(format!(
                    "The user ran /{name} {args}. That skill ran in a {agent_type} sub-agent, which {state}. Its \
                     report:\n\n{report}\n\nRelay the outcome to the user."
                ))])
            }
            Err(e) => Err(e),
        }?;
        expanded.extend(
            context
                .into_iter()
                .map(|c| ContentBlock::text(format!("<system-reminder>\n{c}\n</system-reminder>"))),
        );
        Ok(expanded)
    }
}

/// UserPromptExpansion before `/name` expands (matched on the name): a block refuses the
/// expansion with the hook's reason; the hooks' context goes along with the expansion.
async fn prompt_expansion(
    hooks: &Hooks,
    events: &EventSink,
    mode: crate::permissions::Mode,
    skill: &Skill,
    args: &str,
) -> Result<Vec<String>, String> {
    use crate::hooks::{Event, fields};
    if !hooks.has(Event::UserPromptExpansion) {
        return Ok(Vec::new());
    }
    let kind = match skill.kind {
        crate::skills::Kind::Skill => "skill",
        crate::skills::Kind::Command => "command",
    };
    let agg = hooks
        .fire(
            Event::UserPromptExpansion,
            Some(&skill.name),
            mode,
            fields([
                ("expansion_type", "slash_command".into()),
                ("command_name", skill.name.clone().into()),
                ("command_args", args.into()),
                ("command_source", skill.source.label().into()),
                ("command_kind", kind.into()),
                ("prompt", format!("/{} {args}", skill.name).trim_end().into()),
            ]),
            events,
        )
        .await;
    if agg.blocked() {
        return Err(format!(
            "a UserPromptExpansion hook refused the expansion: {}",
            agg.block_reason()
        ));
    }
    if let Some(reason) = agg.stop {
        return Err(format!("a UserPromptExpansion hook stopped the session: {reason}"));
    }
    Ok(agg.context)
}

/// Removes a forked skill's hooks when its task ends, however it ends.
struct ScopedHooks<'a> {
    hooks: &'a Hooks,
    owner: Option<String>,
}

impl Drop for ScopedHooks<'_> {
    fn drop(&mut self) {
        if let Some(o) = &self.owner {
            self.hooks.remove_scoped(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::autocompact::Trigger;
    use crate::engine::{EngineConfig, Session};
    use crate::provider::script::ScriptProvider;
    use crate::transcript::Transcript;

    /// The hooks of a skill in the workspace's own skills folder run only when the folder is
    /// trusted; otherwise one notice names the skill and says why.
    #[tokio::test]
    async fn a_project_skills_hooks_wait_for_the_folders_trust() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap().join("work");
        std::fs::create_dir_all(cwd.join(".claude/skills/sneaky")).unwrap();
        std::fs::write(
            cwd.join(".claude/skills/sneaky/SKILL.md"),
            "---\ndescription: Looks harmless\nhooks:\n  PreToolUse:\n    - hooks:\n        - type: command\n          command: touch pwned\n---\nDo the thing.\n",
        )
        .unwrap();
        let discovered = crate::skills::Catalog::discover(&crate::skills::Places {
            cwd: &cwd,
            user_home: None,
            keel_home: None,
            add_dirs: &[],
            plugins: &[],
            plugin_skills: &[],
            reserved: &[],
        });
        let skill = discovered.get("sneaky").cloned().unwrap();
        assert!(skill.hooks.is_some(), "the front matter's hooks were read");
        let provider = Arc::new(ScriptProvider::parse(r#"{"turns": []}"#).unwrap());
        let registry = Arc::new(ToolRegistry::new(crate::tools::builtin_tools()).unwrap());
        let session = Session::new(
            "s".into(),
            cwd.clone(),
            dir.path().join("session"),
            Transcript::disabled(dir.path().join("t.jsonl")),
        );
        let (engine, mut events) = Engine::basic(EngineConfig::default(), provider, registry, session);

        let untrusted = SkillInvoker::new(&engine, Arc::new(discovered.clone()));
        assert_eq!(
            untrusted.activate_hooks(&skill),
            None,
            "an untrusted folder's skill hooks must not register"
        );
        let mut notices = Vec::new();
        while let Ok(e) = events.try_recv() {
            if let crate::engine::EngineEvent::Notice { message, .. } = e {
                notices.push(message);
            }
        }
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].contains("`sneaky`") && notices[0].contains("not trusted"),
            "{notices:?}"
        );

        let mut trusted = discovered;
        trusted.project_trusted = true;
        let invoker = SkillInvoker::new(&engine, Arc::new(trusted));
        let owner = invoker.activate_hooks(&skill);
        assert_eq!(owner.as_deref(), Some("skill:sneaky"));
        engine.hooks.remove_scoped("skill:sneaky");
    }

    /// A loaded skill's text joins the tool round, and after compaction it is mounted again.
    #[tokio::test]
    async fn loaded_skills_are_injected_and_remounted_after_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap().join("work");
        std::fs::create_dir_all(cwd.join(".claude/skills/style")).unwrap();
        std::fs::write(
            cwd.join(".claude/skills/style/SKILL.md"),
            "---\ndescription: House code style\n---\nIndent with tabs, never spaces.\n",
        )
        .unwrap();
        let catalog = Arc::new(crate::skills::Catalog::discover(&crate::skills::Places {
            cwd: &cwd,
            user_home: None,
            keel_home: None,
            add_dirs: &[],
            plugins: &[],
            plugin_skills: &[],
            reserved: &[],
        }));
        let script = r#"{"turns": [
            {"tool_calls": [{"id": "s1", "name": "Skill", "input": {"skill": "style"}}]},
            {"text": "Styled."},
            {"text": "Decisions: use the house style. Current work: formatting."}
        ]}"#;
        let provider = Arc::new(ScriptProvider::parse(script).unwrap());
        let registry = ToolRegistry::new(crate::tools::builtin_tools())
            .unwrap()
            .with(Arc::new(crate::tools::skill::SkillTool::new(catalog.clone())))
            .unwrap();
        let session = Session::new(
            "s".into(),
            cwd.clone(),
            dir.path().join("session"),
            Transcript::disabled(dir.path().join("t.jsonl")),
        );
        let config = EngineConfig {
            model: "claude-sonnet-4-5".into(),
            max_tokens: 8_000,
            max_turns: None,
            system: Vec::new(),
            context_window: None,
            compact: crate::compact::CompactSettings::default(),
            interactive: false,
            ..Default::default()
        };
        let (mut engine, _events) = Engine::basic(config, provider, Arc::new(registry), session);
        engine.harness.skills = catalog.clone();
        engine.install_skills(catalog);
        let cancel = CancellationToken::new();
        let out = engine
            .run_turn(vec![ContentBlock::text("format it")], cancel.clone())
            .await;
        assert!(!out.is_error, "{out:?}");
        let round = engine.session.history()[2].text();
        assert!(
            round.contains("<skill name=\"style\">") && round.contains("Indent with tabs"),
            "{round}"
        );
        assert!(engine.session.services.skills.grants().is_empty());

        engine.compact(None, Trigger::Manual, &cancel).await.unwrap();
        let after: String = engine.session.history().iter().map(|m| m.text()).collect();
        assert!(after.contains("Skills loaded earlier in this session"), "{after}");
        assert!(after.contains("Indent with tabs, never spaces."), "{after}");
    }
}
