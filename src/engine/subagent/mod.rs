//! Sub-agents: a child engine with its own conversation and transcript, built from an agent
//! definition (prompt, tools, model, mode, turns), sharing the parent's permission rules,
//! sandbox and hooks, with a copy of the parent's read-file state.
//!
//! Every runner of a session's agent tree shares one [`Tree`]: the provider, the catalogs and
//! the spawn budget. Each engine that may spawn owns one [`SubagentRunner`] (its tools, its
//! rules, its depth, its running children). A child runs in its own task: cancelling the parent
//! cancels it, but its failure or panic only makes an error result. Background children are
//! tracked in the parent's `SessionServices::tasks` and report through notifications.

mod child;
mod hook_agent;
pub(crate) mod model;
mod worktree_hook;

pub use hook_agent::HOOK_AGENT_TYPE;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::events::{EngineEvent, NoticeLevel};
use super::pipeline::ToolCall;
use super::{Engine, EngineConfig, EventSink};
use crate::agents::budget::{Children, Slot};
use crate::agents::tasks::TaskStatus;
use crate::agents::{AgentCatalog, SpawnBudget};
use crate::context::ProjectContext;
use crate::engine::SessionServices;
use crate::hooks::Hooks;
use crate::permissions::Authorizer;
use crate::provider::Provider;
use crate::skills::Catalog;
use crate::tools::agent::{AgentReport, AgentRequest, AgentRunner};
use crate::tools::registry::{RegistryError, ToolRegistry};

/// Model requests one sub-agent may make unless its definition says otherwise.
pub const MAX_SUBAGENT_TURNS: u32 = 50;

/// Who a child engine is, for its hooks.
#[derive(Debug, Clone)]
pub struct SubagentInfo {
    pub agent_id: String,
    pub agent_type: String,
    pub transcript: PathBuf,
}

/// What every runner of one session's agent tree shares.
pub(crate) struct Tree {
    /// Follows the session's model changes (`Engine::switch_model`).
    provider: RwLock<Arc<dyn Provider>>,
    /// The session's providers: a child whose model names one (`lab/qwen3-coder`) runs there.
    routes: RwLock<Option<Arc<crate::provider::catalog::Catalog>>>,
    hooks: Arc<Hooks>,
    /// The main engine's configuration (window, compaction, whether a human answers).
    base: EngineConfig,
    /// The main engine's project layer (git snapshot, instruction files, core prompt).
    project: ProjectContext,
    agents: RwLock<Arc<AgentCatalog>>,
    skills: Arc<Catalog>,
    budget: Arc<SpawnBudget>,
    /// `worktree.baseRef`.
    worktree_base: crate::agents::worktree::BaseRef,
    next: AtomicU32,
}

pub struct SubagentRunner {
    tree: Arc<Tree>,
    /// The owning engine's tools: a child's are a subset.
    registry: Arc<ToolRegistry>,
    authorizer: Arc<Authorizer>,
    /// The owning engine's events (children's approvals and notices are forwarded there).
    events: EventSink,
    /// The owning engine's depth (the main agent is 0).
    depth: u32,
    /// The owning engine's model (for `model: inherit`); follows a model change of the session.
    model: RwLock<String>,
    children: Arc<Children>,
    /// Budget places reserved for the Agent calls of the current message, by call id.
    pending: Mutex<HashMap<String, Result<Slot, String>>>,
    /// The owning engine's session: what its children start from.
    parent: Arc<SessionServices>,
    /// The owning engine's channel for what finished children hand back (usage, denials).
    report_to: tokio::sync::mpsc::UnboundedSender<crate::tools::agent::Contribution>,
}

impl std::fmt::Debug for SubagentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SubagentRunner(depth {})", self.depth)
    }
}

impl SubagentRunner {
    /// The agent types in force.
    pub fn catalog(&self) -> Arc<AgentCatalog> {
        self.tree.agents.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The model children without a model of their own run on.
    pub(crate) fn model(&self) -> String {
        self.model.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sub-agents started from now on run on the session's new provider and model.
    pub(crate) fn follow_model(&self, provider: Arc<dyn Provider>, model: String) {
        *self.tree.provider.write().unwrap_or_else(|p| p.into_inner()) = provider;
        *self.model.write().unwrap_or_else(|p| p.into_inner()) = model;
    }

    /// The session's providers, for children whose model names one (`NAME/MODEL`).
    pub(crate) fn route_models(&self, providers: Arc<crate::provider::catalog::Catalog>) {
        *self.tree.routes.write().unwrap_or_else(|p| p.into_inner()) = Some(providers);
    }

    /// The provider and bare model for `spec` when it names one of the session's providers
    /// (`lab/qwen3-coder`); `None` for any other model. `Err`: the provider cannot be reached.
    pub(crate) fn route(&self, spec: &str) -> Result<Option<model::Routed>, String> {
        model::route(spec, self.routes().as_deref())
    }

    fn routes(&self) -> Option<Arc<crate::provider::catalog::Catalog>> {
        self.tree.routes.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set_catalog(&self, catalog: Arc<AgentCatalog>) {
        *self.tree.agents.write().unwrap_or_else(|p| p.into_inner()) = catalog;
    }

    /// A runner for an engine one level below this one.
    fn for_child(
        &self,
        registry: Arc<ToolRegistry>,
        authorizer: Arc<Authorizer>,
        events: EventSink,
        model: String,
        parent: Arc<SessionServices>,
        report_to: tokio::sync::mpsc::UnboundedSender<crate::tools::agent::Contribution>,
    ) -> Self {
        SubagentRunner {
            tree: self.tree.clone(),
            registry,
            authorizer,
            events,
            depth: self.depth + 1,
            model: RwLock::new(model),
            children: Arc::default(),
            pending: Mutex::default(),
            parent,
            report_to,
        }
    }

    /// The reserved place of a call, or a fresh reservation.
    fn claim(&self, tool_use_id: &str) -> Result<Slot, String> {
        let reserved = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(tool_use_id);
        match reserved {
            Some(r) => r,
            None => self.tree.budget.reserve(self.depth + 1, &self.children),
        }
    }
}

impl Engine {
    /// Lets this engine's Agent tool run sub-agents of the types in `self.harness`, within its
    /// spawn budgets. Call after the harness is set and before the session state is shared.
    pub fn install_subagents(&mut self) -> Result<(), RegistryError> {
        let mut project = self.project.clone();
        project.listings.clear();
        project.memory = None;
        let tree = Tree {
            provider: RwLock::new(self.provider.clone()),
            routes: RwLock::new(None),
            hooks: self.hooks.clone(),
            base: self.config.clone(),
            project,
            agents: RwLock::new(self.harness.agents.clone()),
            skills: self.harness.skills.clone(),
            budget: SpawnBudget::new(self.harness.limits),
            worktree_base: self.harness.worktree_base.clone(),
            next: AtomicU32::new(0),
        };
        let runner = Arc::new(SubagentRunner {
            tree: Arc::new(tree),
            registry: self.registry.clone(),
            authorizer: self.authorizer.clone(),
            events: self.events.clone(),
            depth: 0,
            model: RwLock::new(self.config.model.clone()),
            children: Arc::default(),
            pending: Mutex::default(),
            parent: self.session.services.clone(),
            report_to: self.contributions.0.clone(),
        });
        // `prompt`, `agent` and `mcp_tool` hooks run on this session's provider, runner and hub.
        self.hooks.set_delegate(Arc::new(hook_agent::EngineHookDelegate {
            runner: Arc::downgrade(&runner),
            mcp: self.session.services.mcp.as_ref().map(Arc::downgrade),
        }));
        if let Some(hub) = &self.session.services.mcp {
            hub.elicitation()
                .set_hooks(Arc::new(super::elicitation_hooks::SessionElicitationHooks {
                    hooks: self.hooks.clone(),
                    mode: self.session.services.mode_cell.clone(),
                    events: self.events.clone(),
                }));
        }
        self.subagents = Some(runner);
        Ok(())
    }

    /// Lets sub-agents whose model names a provider of the session (`lab/qwen3-coder`, from
    /// the Agent call's `model` or the agent type's) run on that provider. Call after
    /// [`Engine::install_subagents`].
    pub fn route_subagent_models(&self, providers: Arc<crate::provider::catalog::Catalog>) {
        if let Some(r) = &self.subagents {
            r.route_models(providers);
        }
    }

    pub(crate) fn subagent_runner(&self) -> Option<&Arc<SubagentRunner>> {
        self.subagents.as_ref()
    }

    /// Before a tool round with a verifier among its calls: records what keel knows of the work
    /// (the user's requests, changed files, commands run) for the verifier's brief.
    pub(super) fn publish_verifier_facts(&self, calls: &[ToolCall]) {
        let field = |c: &ToolCall, k: &str| c.input.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let wants = calls.iter().any(|c| {
            let effects = self.compactor.kinds.get(&c.name).effects;
            if effects.spawns_agent {
                return field(c, "subagent_type").as_deref() == Some("verifier");
            }
            // A skill that runs as the verifier's task (`context: fork`, `agent: verifier`).
            effects.loads_skill
                && field(c, "skill")
                    .and_then(|n| self.harness.skills.get(&n).and_then(|s| s.fork_agent.clone()))
                    .as_deref()
                    == Some("verifier")
        });
        if !wants {
            return;
        }
        let history = self.session.history();
        let requests = crate::compact::autocompact::handoff::user_requests(history);
        let files_changed = self
            .session
            .tool_log
            .files_changed()
            .into_iter()
            .map(|f| f.path)
            .collect();
        let commands = self
            .session
            .tool_log
            .entries()
            .iter()
            .filter(|e| self.compactor.kinds.get(&e.tool).effects.runs_commands && !e.not_run)
            .map(|e| {
                (
                    e.target.clone(),
                    e.exit_code.or(if e.is_error { None } else { Some(0) }),
                )
            })
            .collect();
        *self
            .session
            .services
            .verifier_facts
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = crate::agents::verifier::Facts {
            requests,
            files_changed,
            commands,
        };
    }
}

#[async_trait]
impl AgentRunner for SubagentRunner {
    fn reserve(&self, tool_use_ids: &[String]) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for id in tool_use_ids {
            let r = self.tree.budget.reserve(self.depth + 1, &self.children);
            pending.insert(id.clone(), r);
        }
    }

    fn release(&self, tool_use_ids: &[String]) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for id in tool_use_ids {
            pending.remove(id);
        }
    }

    async fn run(&self, request: AgentRequest, cancel: CancellationToken) -> Result<AgentReport, String> {
        self.run_with_grants(request, Vec::new(), cancel).await
    }
}

impl SubagentRunner {
    /// Runs a sub-agent whose whole task may use `grants` as allow rules (a forked skill's
    /// `allowed-tools`).
    pub(crate) async fn run_with_grants(
        &self,
        request: AgentRequest,
        grants: Vec<crate::permissions::rules::Rule>,
        cancel: CancellationToken,
    ) -> Result<AgentReport, String> {
        let parent = &self.parent;
        let mut slot = self.claim(&request.tool_use_id)?;
        let catalog = self.catalog();
        let def = catalog.get(&request.agent_type).cloned().ok_or_else(|| {
            format!(
                "{}. Call Agent again with one of them.",
                catalog.unknown(&request.agent_type)
            )
        })?;
        let background = request.background.unwrap_or(def.background);
        let child = child::prepare(self, &def, &request, &grants).await?;
        slot.start();
        let parent = parent.clone();
        if background {
            let report = AgentReport {
                agent_id: child.info.agent_id.clone(),
                text: format!(
                    "Started the background sub-agent {} ({}). Go on with other work; its report will arrive as a \
                     notification at a later turn.",
                    child.info.agent_id, def.name
                ),
                is_error: false,
                tool_uses: 0,
                total_tokens: 0,
                duration_ms: 0,
                transcript: child.info.transcript.clone(),
                launched: true,
                notes: Vec::new(),
            };
            let token = CancellationToken::new();
            parent.tasks.add(
                &child.info.agent_id,
                &request.description,
                &def.name,
                child.info.transcript.clone(),
                token.clone(),
            );
            let events = self.events.clone();
            let report_to = self.report_to.clone();
            tokio::spawn(async move {
                let id = child.info.agent_id.clone();
                let tasks = parent.tasks.clone();
                let joined = tokio::spawn(drive(child, report_to, token.clone(), slot)).await;
                let (status, text) = match joined {
                    Ok(r) if token.is_cancelled() => (TaskStatus::Cancelled, r.text_with_notes()),
                    Ok(r) if r.is_error => (TaskStatus::Failed, r.text_with_notes()),
                    Ok(r) => (TaskStatus::Completed, r.text_with_notes()),
                    Err(e) => (TaskStatus::Failed, format!("the sub-agent stopped unexpectedly: {e}")),
                };
                tasks.finish(&id, status, text);
                events.emit(EngineEvent::Notice {
                    level: NoticeLevel::Info,
                    message: format!("background sub-agent {id} {}", status.as_str()),
                });
            });
            return Ok(report);
        }
        // Dropping this call (the parent was cancelled) cancels the child.
        let guard = cancel.clone().drop_guard();
        let joined = tokio::spawn(drive(child, self.report_to.clone(), cancel, slot)).await;
        guard.disarm();
        joined.map_err(|e| format!("the sub-agent stopped unexpectedly: {e}"))
    }
}

trait ReportText {
    fn text_with_notes(&self) -> String;
}

impl ReportText for AgentReport {
    fn text_with_notes(&self) -> String {
        let mut t = self.text.trim_end().to_string();
        for n in &self.notes {
            t.push_str("\n\n");
            t.push_str(n);
        }
        t
    }
}

/// Runs a prepared child to its end and hands its usage and denials to the parent.
async fn drive(
    mut c: child::Child,
    report_to: tokio::sync::mpsc::UnboundedSender<crate::tools::agent::Contribution>,
    cancel: CancellationToken,
    slot: Slot,
) -> AgentReport {
    let started = Instant::now();
    let outcome = c.engine.run_turn(std::mem::take(&mut c.content), cancel).await;
    c.engine.session.services.end();
    let tool_uses = c
        .engine
        .session
        .history()
        .iter()
        .map(|m| m.tool_uses().count() as u32)
        .sum();
    let totals = c.engine.session.totals.clone();
    // The one way a child's accounting reaches its parent; a parent that is gone has no use
    // for it.
    let _ = report_to.send(crate::tools::agent::Contribution {
        usage: totals.by_model.iter().map(|(m, t)| (m.clone(), t.usage)).collect(),
        denials: std::mem::take(&mut c.engine.session.denials),
    });
    drop(c.engine);
    let _ = c.forward.await;
    drop(slot);
    let mut notes = c.notes;
    if let Some(w) = &c.worktree {
        let (hooks, events, mode) = &c.finish_with;
        notes.push(worktree_hook::finish(hooks, *mode, events, w).await);
    }
    let u = totals.usage;
    AgentReport {
        agent_id: c.info.agent_id,
        text: if outcome.is_error {
            format!("The sub-agent did not finish: {}", outcome.result)
        } else {
            outcome.result
        },
        is_error: outcome.is_error,
        tool_uses,
        total_tokens: u.input_tokens + u.output_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens,
        duration_ms: started.elapsed().as_millis() as u64,
        transcript: c.info.transcript,
        launched: false,
        notes,
    }
}
