//! Sub-agents: a child engine with its own conversation and transcript, the parent's model,
//! permission boundary and hooks, a copy of the parent's read-file state, and no Agent tool of
//! its own (one level deep). SubagentStart fires before it runs; its Stop hooks fire as
//! SubagentStop.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::events::EngineEvent;
use super::{Engine, EngineConfig, EventSink, Session};
use crate::hooks::{Event, Hooks, fields};
use crate::message::ContentBlock;
use crate::permissions::Authorizer;
use crate::provider::{Provider, SystemBlock};
use crate::tools::agent::{AgentReport, AgentRequest, AgentRunner};
use crate::tools::registry::ToolRegistry;
use crate::tools::{SessionShared, builtin_tools};
use crate::transcript::Transcript;

/// Model requests one sub-agent may make.
pub const MAX_SUBAGENT_TURNS: u32 = 50;

const SUBAGENT_NOTE: &str = "You are working as a sub-agent for keel's main session. The main agent gave \
you the task below and sees nothing of your work except your final message: make it a complete, \
self-contained report of what you found or did, with file paths and the evidence (commands run and \
their results). Say plainly what you could not do or verify.";

/// Who a child engine is, for its hooks.
#[derive(Debug, Clone)]
pub struct SubagentInfo {
    pub agent_id: String,
    pub agent_type: String,
    pub transcript: PathBuf,
}

pub struct SubagentRunner {
    provider: Arc<dyn Provider>,
    general: Arc<ToolRegistry>,
    explore: Arc<ToolRegistry>,
    authorizer: Arc<Authorizer>,
    hooks: Arc<Hooks>,
    config: EngineConfig,
    parent_events: EventSink,
    next: AtomicU32,
}

impl std::fmt::Debug for SubagentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubagentRunner")
    }
}

impl Engine {
    /// Lets this engine's Agent tool run sub-agents. Call before the session state is shared.
    pub fn install_subagents(&mut self) -> Result<(), crate::tools::registry::RegistryError> {
        let offered = |name: &str| self.registry.get(name).is_some();
        let pick = |keep: &dyn Fn(&str) -> bool| {
            ToolRegistry::new(
                builtin_tools()
                    .into_iter()
                    .filter(|t| offered(t.name()) && keep(t.name()))
                    .collect(),
            )
        };
        let general = pick(&|n| !matches!(n, "Agent" | "ExitPlanMode"))?;
        let explore = pick(&|n| matches!(n, "Read" | "Glob" | "Grep"))?;
        let mut config = self.config.clone();
        config.system.push(SystemBlock::text(SUBAGENT_NOTE));
        config.max_turns = Some(MAX_SUBAGENT_TURNS);
        let runner = SubagentRunner {
            provider: self.provider.clone(),
            general: Arc::new(general),
            explore: Arc::new(explore),
            authorizer: self.authorizer.clone(),
            hooks: self.hooks.clone(),
            config,
            parent_events: self.events.clone(),
            next: AtomicU32::new(0),
        };
        if let Some(shared) = Arc::get_mut(&mut self.session.shared) {
            shared.agents = Some(Arc::new(runner));
        }
        Ok(())
    }
}

#[async_trait]
impl AgentRunner for SubagentRunner {
    async fn run(
        &self,
        request: AgentRequest,
        parent: &SessionShared,
        cancel: CancellationToken,
    ) -> Result<AgentReport, String> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let short: String = uuid::Uuid::new_v4().simple().to_string().chars().take(8).collect();
        let agent_id = format!("agent-{n}-{short}");
        let dir = parent.session_dir.join("subagents");
        let transcript_path = dir.join(format!("{agent_id}.jsonl"));
        let transcript = Transcript::create(&transcript_path).map_err(|e| e.to_string())?;
        let mut session = Session::new(agent_id.clone(), parent.cwd.clone(), dir.join(&agent_id), transcript);
        match Arc::get_mut(&mut session.shared) {
            Some(child) => {
                child.inherit_from(parent);
                // No deeper nesting, and what the child reads stays in its copy of the state.
                child.agents = None;
                // The sub-agent's runs and changes are the session's evidence.
                child.evidence = parent.evidence.clone();
                *child.file_state.get_mut().unwrap_or_else(|p| p.into_inner()) = parent.files().clone();
            }
            None => return Err("internal error: the sub-agent's state is already shared".into()),
        }
        let registry = if request.agent_type == "Explore" {
            &self.explore
        } else {
            &self.general
        };
        let (mut child, mut events) = Engine::new(
            self.config.clone(),
            self.provider.clone(),
            registry.clone(),
            self.authorizer.clone(),
            self.hooks.clone(),
            session,
        );
        child.subagent = Some(SubagentInfo {
            agent_id: agent_id.clone(),
            agent_type: request.agent_type.clone(),
            transcript: transcript_path.clone(),
        });
        // Approvals, notices and hook runs of the child reach the user like the parent's own.
        let forward_to = self.parent_events.clone();
        let forward = tokio::spawn(async move {
            while let Some(ev) = events.recv().await {
                if matches!(
                    ev,
                    EngineEvent::PermissionRequest(_) | EngineEvent::Notice { .. } | EngineEvent::HookRun(_)
                ) {
                    forward_to.emit(ev);
                }
            }
        });

        let mut content = vec![ContentBlock::text(request.prompt.clone())];
        if self.hooks.has(Event::SubagentStart) {
            let agg = self
                .hooks
                .fire(
                    Event::SubagentStart,
                    Some(&request.agent_type),
                    parent.mode(),
                    fields([
                        ("agent_id", agent_id.clone().into()),
                        ("agent_type", request.agent_type.clone().into()),
                    ]),
                    &self.parent_events,
                )
                .await;
            for ctx in agg.context {
                content.push(ContentBlock::text(format!(
                    "<system-reminder>\n{ctx}\n</system-reminder>"
                )));
            }
        }
        let started = Instant::now();
        let outcome = child.run_turn(content, cancel).await;
        child.session.shared.end();
        let tool_uses = child
            .session
            .history()
            .iter()
            .map(|m| m.tool_uses().count() as u32)
            .sum();
        let totals = child.session.totals.clone();
        {
            let mut tally = parent.subagent_tally.lock().unwrap_or_else(|p| p.into_inner());
            for (model, t) in &totals.by_model {
                tally.usage.push((model.clone(), t.usage));
            }
            tally.denials.append(&mut child.session.denials);
        }
        drop(child);
        let _ = forward.await;
        let u = totals.usage;
        Ok(AgentReport {
            agent_id,
            text: if outcome.is_error {
                format!("The sub-agent did not finish: {}", outcome.result)
            } else {
                outcome.result
            },
            is_error: outcome.is_error,
            tool_uses,
            total_tokens: u.input_tokens + u.output_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens,
            duration_ms: started.elapsed().as_millis() as u64,
            transcript: transcript_path,
        })
    }
}
