//! The engine's side of `prompt`, `agent` and `mcp_tool` hooks ([`HookDelegate`]): a side
//! request to the session's provider, a short sub-agent run, a call through the MCP hub.
//!
//! The hook's sub-agent runs without hooks of its own: a hook that starts an agent whose events
//! fire that hook again would never end.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{SubagentRunner, child, drive};
use crate::agents::{AgentDef, AgentSource, Role};
use crate::hooks::{HookDelegate, Hooks};
use crate::mcp::McpHub;
use crate::provider::{ModelRequest, ProviderEvent, Reasoning, SystemBlock, ToolSet};
use crate::tools::agent::AgentRequest;
use crate::types::message::{ContentBlock, Message};

/// The agent type of an `agent` hook's sub-agent (as SubagentStop hooks and transcripts see it).
pub const HOOK_AGENT_TYPE: &str = "hook-agent";
/// Model requests an `agent` hook's sub-agent may make.
const HOOK_AGENT_TURNS: u32 = 50;
/// Output tokens of a `prompt` hook's answer.
const PROMPT_MAX_TOKENS: u32 = 4_096;

const HOOK_AGENT_PROMPT: &str = "You are a checker that keel starts from a hook. Look at the project with your \
tools (read and search files; run commands with Bash where the session's permissions allow) to decide the \
question you are given. Change nothing. Your last message must be only the JSON verdict the task asks for.";

/// What keel lends its hooks: the session's sub-agent runner (provider, model, tools) and its
/// MCP hub. Held weakly: the hooks outlive neither.
pub struct EngineHookDelegate {
    pub(super) runner: Weak<SubagentRunner>,
    pub(super) mcp: Option<Weak<McpHub>>,
}

impl EngineHookDelegate {
    fn runner(&self) -> Result<Arc<SubagentRunner>, String> {
        self.runner.upgrade().ok_or_else(|| "the session has ended".to_string())
    }
}

#[async_trait]
impl HookDelegate for EngineHookDelegate {
    async fn ask_model(&self, system: &str, prompt: &str, model: Option<&str>) -> Result<String, String> {
        let runner = self.runner()?;
        let model = model
            .map(crate::config::models::resolve_alias)
            .unwrap_or_else(|| runner.model());
        if let Some(why) = runner.authorizer.model_refused(&model) {
            return Err(why);
        }
        // A model of a named provider (`lab/qwen3-coder`) is asked there, as a sub-agent's is.
        let (provider, model) = match super::model::route(&model, runner.routes().as_deref())? {
            Some(routed) => routed,
            None => (
                runner.tree.provider.read().unwrap_or_else(|p| p.into_inner()).clone(),
                model,
            ),
        };
        let request = ModelRequest {
            model: model.clone(),
            max_tokens: PROMPT_MAX_TOKENS,
            system: vec![SystemBlock::text(system)],
            messages: Arc::new(vec![Message::user_text(prompt.to_string())]),
            tools: ToolSet::new(Vec::new()),
            cache_breakpoints: Vec::new(),
            reasoning: Reasoning::default(),
            unchanged: None,
        };
        // Dropping this future (the hook timed out) cancels the request.
        let cancel = CancellationToken::new();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let mut stream = provider.stream(request, cancel.clone());
        while let Some(event) = stream.next().await {
            match event {
                Ok(ProviderEvent::Completed(r)) => {
                    // The request counts in the session's usage and cost like a sub-agent's.
                    let _ = runner.report_to.send(crate::tools::agent::Contribution {
                        usage: vec![(r.model_or(&model), r.usage)],
                        denials: Vec::new(),
                    });
                    let text: String = r
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text { text, .. } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    return Ok(text);
                }
                Ok(_) => {}
                Err(e) => return Err(format!("the model request failed: {e}")),
            }
        }
        Err("the model request ended without an answer".into())
    }

    async fn run_agent(&self, prompt: &str, model: Option<&str>) -> Result<String, String> {
        self.runner()?.run_hook_agent(prompt, model).await
    }

    async fn call_mcp_tool(&self, server: &str, tool: &str, input: Value) -> Result<(String, bool), String> {
        let hub = self
            .mcp
            .as_ref()
            .and_then(Weak::upgrade)
            .ok_or_else(|| format!("no MCP server `{server}` is configured for this session"))?;
        let Some(s) = hub.server(server) else {
            return Err(hub.unknown_server(server));
        };
        let cancel = CancellationToken::new();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let result = s
            .call_tool(tool, input, &cancel)
            .await
            .map_err(|e| format!("calling `{tool}` on `{server}` failed: {}", e.message(server)))?;
        let output = crate::mcp::result::tool_output(&result);
        Ok((output.content.as_text(), output.is_error))
    }
}

fn hook_agent_def(model: Option<&str>) -> AgentDef {
    AgentDef {
        name: HOOK_AGENT_TYPE.into(),
        description: "Checks a hook's question with read, search and shell tools".into(),
        tools: Some(["Read", "Grep", "Glob", "Bash"].iter().map(|t| t.to_string()).collect()),
        disallowed_tools: Vec::new(),
        model: model.map(str::to_string),
        permission_mode: None,
        max_turns: Some(HOOK_AGENT_TURNS),
        skills: Vec::new(),
        isolation: None,
        background: false,
        prompt: HOOK_AGENT_PROMPT.into(),
        source: AgentSource::BuiltIn,
        path: None,
        role: Role::Custom,
    }
}

impl SubagentRunner {
    /// Runs an `agent` hook's sub-agent to its end; its final message.
    pub(crate) async fn run_hook_agent(&self, prompt: &str, model: Option<&str>) -> Result<String, String> {
        let def = hook_agent_def(model);
        let request = AgentRequest {
            description: "agent hook".into(),
            prompt: prompt.to_string(),
            agent_type: def.name.clone(),
            tool_use_id: format!("hook-{}", uuid::Uuid::new_v4()),
            background: Some(false),
            worktree: false,
            // The hook's definition carries its model; the request names none of its own.
            model: None,
        };
        let mut slot = self.claim(&request.tool_use_id)?;
        let mut c = child::prepare(self, &def, &request, &[]).await?;
        c.engine.hooks = Arc::new(Hooks::none(
            c.engine.session.services.cwd.clone(),
            c.info.agent_id.clone(),
            c.engine.session.transcript.clone(),
        ));
        slot.start();
        // Dropping this call (the hook timed out) cancels the sub-agent.
        let cancel = CancellationToken::new();
        let _guard = cancel.clone().drop_guard();
        let report = tokio::spawn(drive(c, self.report_to.clone(), cancel, slot))
            .await
            .map_err(|e| format!("the hook's sub-agent stopped unexpectedly: {e}"))?;
        if report.is_error {
            Err(report.text)
        } else {
            Ok(report.text)
        }
    }
}
