//! The session engine and its turn driver.
//!
//! [`Engine`] owns the [`Session`] (long-lived state) and drives one user turn at a time:
//! project state into a request, stream the model's output as [`EngineEvent`]s, run tool calls
//! through the [`pipeline`], append results, repeat until the model stops calling tools, the
//! turn limit is reached or the user cancels.

mod authorize;
mod compaction;
mod config_watch;
mod elicitation_hooks;
mod facade;
pub mod harness;
mod lifecycle;
pub mod mentions;
#[cfg(test)]
mod new_tool_tests;
mod observers;
pub mod pipeline;
mod precheck;
#[cfg(test)]
mod precheck_tests;
pub mod rewind;
mod round_hooks;
pub mod services;
pub mod session;
mod skill_state;
pub mod skills;
mod skills_filter;
mod structured;
pub mod subagent;
mod task_budget;
mod tool_hooks;
mod turn;
mod verification;

use std::sync::Arc;

use tokio::sync::mpsc;

pub use crate::types::events;
pub use crate::types::events::{EngineEvent, EventSink, NoticeLevel, ResultSubtype, TerminalReason, TurnOutcome};
pub use compaction::{CompactError, CompactReport};
pub use facade::RunReport;
pub use rewind::RewindReport;
pub use services::{ServicesBuilder, SessionServices};
pub use session::Session;

pub use crate::compact::CompactSettings;
use crate::compact::Compactor;
pub use crate::compact::autocompact::Trigger as CompactTrigger;
use crate::config::models;
use crate::context::ProjectContext;
use crate::context::tokens::{self, Window};
use crate::hooks::Hooks;
use crate::permissions::Authorizer;
use crate::provider::{Provider, SystemBlock};
use crate::tools::registry::ToolRegistry;

#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    pub model: String,
    pub max_tokens: u32,
    /// Model requests allowed per user turn (`--max-turns`).
    pub max_turns: Option<u32>,
    pub system: Vec<SystemBlock>,
    /// Whether a front end answers permission questions; headless mode cannot.
    pub interactive: bool,
    /// Context window in tokens when it differs from the model table's: `KEEL_CONTEXT_WINDOW`
    /// or the `contextWindow` setting.
    pub context_window: Option<u64>,
    pub compact: CompactSettings,
    /// Spending limit of the session in USD (`--max-budget-usd`): a turn stops once it is reached.
    pub max_budget_usd: Option<f64>,
    /// Extended thinking and effort for the turn's requests.
    pub reasoning: crate::provider::Reasoning,
}

pub struct Engine {
    pub(crate) config: EngineConfig,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) authorizer: Arc<Authorizer>,
    pub(crate) hooks: Arc<Hooks>,
    pub(crate) session: Session,
    /// The layers in front of the conversation (instruction files load lazily through it).
    pub(crate) project: ProjectContext,
    /// The request view of the history and the compaction tiers' state.
    pub(crate) compactor: Compactor,
    events: EventSink,
    /// Hook output waiting to be shown to the model with the next user message.
    pending_context: Vec<String>,
    /// Set when this engine runs a sub-agent (its Stop hooks fire as SubagentStop).
    pub(crate) subagent: Option<subagent::SubagentInfo>,
    /// The registry generation the compactor's fixed token count was computed for.
    tools_generation: u64,
    /// Where the StructuredOutput tool leaves the final answer, when one is required
    /// (`--json-schema`): a turn then ends only with a valid one.
    pub(crate) structured: Option<crate::tools::structured::StructuredSlot>,
    /// Skills, sub-agent types, plugins and spawn budgets of the session.
    pub(crate) harness: harness::Harness,
    /// The settings files watched for `ConfigChange` (the main session only).
    config_watch: Option<config_watch::ConfigWatch>,
    /// This engine's runner of sub-agents, when installed.
    subagents: Option<Arc<subagent::SubagentRunner>>,
    /// This engine's loader of skills for the Skill tool, when installed.
    skill_runner: Option<Arc<skills::SkillInvoker>>,
    /// Where this engine's finished sub-agents send their usage and denials, and where the
    /// turn driver takes them from.
    contributions: (
        mpsc::UnboundedSender<crate::tools::agent::Contribution>,
        mpsc::UnboundedReceiver<crate::tools::agent::Contribution>,
    ),
    /// What the current run spent of `--task-budget`.
    task_spend: task_budget::TaskSpend,
    /// The provider of a loaded skill's model on a named provider, by that model's spec.
    skill_route: Option<(String, subagent::model::Routed)>,
}

impl Engine {
    pub fn new(
        config: EngineConfig,
        provider: Arc<dyn Provider>,
        registry: Arc<ToolRegistry>,
        authorizer: Arc<Authorizer>,
        hooks: Arc<Hooks>,
        session: Session,
    ) -> (Engine, mpsc::UnboundedReceiver<EngineEvent>) {
        let (events, rx) = EventSink::channel();
        let window = Window::new(
            models::info(&config.model).context_window,
            config.context_window,
            config.max_tokens,
        );
        let mut compactor = Compactor::new(window, config.compact);
        compactor.kinds = crate::tools::kinds::KindTable::of(&registry);
        let tools_generation = registry.generation();
        compactor.set_fixed_tokens(tokens::system(&config.system) + tokens::tool_set(&registry.tool_set()));
        let project = ProjectContext::bare(&session.services.cwd, "");
        (
            Engine {
                config,
                provider,
                registry,
                authorizer,
                hooks,
                session,
                project,
                compactor,
                events,
                pending_context: Vec::new(),
                subagent: None,
                tools_generation,
                structured: None,
                harness: harness::Harness::default(),
                config_watch: None,
                subagents: None,
                skill_runner: None,
                contributions: mpsc::unbounded_channel(),
                task_spend: Default::default(),
                skill_route: None,
            },
            rx,
        )
    }

    /// Installs the project layer and the system prompt built from it (keeping the listings
    /// and memory keel added to the previous one).
    pub fn set_project(&mut self, mut project: ProjectContext) {
        project.adopt_sections(&self.project);
        self.config.system = project.system_blocks();
        self.project = project;
        self.compactor
            .set_fixed_tokens(tokens::system(&self.config.system) + tokens::tool_set(&self.registry.tool_set()));
    }

    /// An engine without permission rules (only the session's directory counts as a working
    /// directory) and without hooks: for embedding, benchmarks and tests.
    pub fn basic(
        config: EngineConfig,
        provider: Arc<dyn Provider>,
        registry: Arc<ToolRegistry>,
        session: Session,
    ) -> (Engine, mpsc::UnboundedReceiver<EngineEvent>) {
        let cwd = session.services.cwd.clone();
        let authorizer = Arc::new(Authorizer::new(Vec::new(), vec![cwd.clone()], None, None));
        let hooks = Arc::new(Hooks::none(cwd, session.id.clone(), session.transcript.clone()));
        Engine::new(config, provider, registry, authorizer, hooks, session)
    }

    /// Everything this engine can give a tool call: the session's capabilities and the
    /// engine's own sub-agent and skill runners.
    pub(crate) fn grants(&self) -> crate::tools::Grants {
        crate::tools::Grants {
            agents: self
                .subagents
                .clone()
                .map(|r| r as Arc<dyn crate::tools::agent::AgentRunner>),
            skills: self
                .skill_runner
                .clone()
                .map(|r| r as Arc<dyn crate::tools::skill::SkillRunner>),
            ..self.session.services.grants()
        }
    }

    /// Whether the Skill tool can load skills in this engine.
    pub fn has_skill_runner(&self) -> bool {
        self.skill_runner.is_some()
    }

    pub fn events(&self) -> &EventSink {
        &self.events
    }

    /// Continues the session on another model (and possibly another provider): the output
    /// limit and the context window follow the new model.
    pub fn switch_model(&mut self, provider: Arc<dyn Provider>, model: String) {
        let info = models::info(&model);
        self.provider = provider;
        self.config.max_tokens = info.max_output;
        self.config.model = model;
        self.compactor.window = Window::new(info.context_window, self.config.context_window, info.max_output);
        if let Some(r) = &self.subagents {
            r.follow_model(self.provider.clone(), self.config.model.clone());
        }
    }
}
