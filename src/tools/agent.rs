//! Agent: delegates a self-contained task to a sub-agent with its own conversation.
//!
//! The sub-agent runs on the same model and tools (without Agent itself: one level deep), with
//! a copy of the read-file state (what it reads does not leak back), the same permission
//! boundary and mode, and its own transcript. Only its final report comes back.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{SessionShared, Tool, ToolContext, ToolError, ToolOutput, parse_input};

/// The sub-agent types keel offers.
pub const AGENT_TYPES: &[&str] = &["general-purpose", "Explore"];

/// What the Agent tool asks the engine to run.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    pub description: String,
    pub prompt: String,
    pub agent_type: String,
}

/// What a finished sub-agent reports.
#[derive(Debug, Clone)]
pub struct AgentReport {
    pub agent_id: String,
    pub text: String,
    pub is_error: bool,
    pub tool_uses: u32,
    pub total_tokens: u64,
    pub duration_ms: u64,
    pub transcript: std::path::PathBuf,
}

/// A tool call the permission layer refused, for the result's `permission_denials`.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
}

/// What finished sub-agents leave for the parent's accounting: their token usage by model and
/// the calls they were refused (the session's result lists those too).
#[derive(Debug, Default)]
pub struct SubagentTally {
    pub usage: Vec<(String, crate::message::Usage)>,
    pub denials: Vec<Denial>,
}

/// Runs sub-agents; implemented by the engine, installed in the session state.
#[async_trait]
pub trait AgentRunner: Send + Sync + std::fmt::Debug {
    async fn run(
        &self,
        request: AgentRequest,
        parent: &SessionShared,
        cancel: CancellationToken,
    ) -> Result<AgentReport, String>;
}

pub struct AgentTool;

#[derive(Deserialize)]
struct Input {
    description: String,
    prompt: String,
    subagent_type: Option<String>,
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &'static str {
        "Agent"
    }

    fn description(&self) -> &'static str {
        "Hands a self-contained task to a sub-agent that works in its own conversation and reports back. \
         Use it for broad searches or investigations whose intermediate steps would crowd your context. The \
         sub-agent sees only `prompt` (not this conversation), so include every fact it needs and say what its \
         report must contain. `subagent_type`: `general-purpose` (default; all tools but Agent) or `Explore` \
         (read-only: Read, Glob, Grep). It follows the same permission rules; only its final message comes back."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "minLength": 1, "description": "The task in 3-5 words"},
                "prompt": {"type": "string", "minLength": 1, "description": "The complete task for the sub-agent"},
                "subagent_type": {"type": "string", "enum": AGENT_TYPES, "description": "Which kind of sub-agent"}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    fn handles_cancellation(&self) -> bool {
        // The sub-agent's own turn stops on the token and records the interruption.
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let runner: Arc<dyn AgentRunner> = ctx
            .shared
            .agents
            .clone()
            .ok_or_else(|| ToolError::invalid("sub-agents are not available in this session"))?;
        let request = AgentRequest {
            description: input.description,
            prompt: input.prompt,
            agent_type: input.subagent_type.unwrap_or_else(|| "general-purpose".into()),
        };
        let report = runner
            .run(request, &ctx.shared, ctx.cancel.clone())
            .await
            .map_err(ToolError::invalid)?;
        let text = format!(
            "{}\n\n[sub-agent {}: {} tool call(s), {} tokens, {} ms; transcript {}]",
            report.text.trim_end(),
            report.agent_id,
            report.tool_uses,
            report.total_tokens,
            report.duration_ms,
            report.transcript.display()
        );
        let structured = json!({
            "status": if report.is_error { "failed" } else { "completed" },
            "agentId": report.agent_id,
            "content": [{"type": "text", "text": report.text}],
            "totalTokens": report.total_tokens,
            "totalDurationMs": report.duration_ms,
            "totalToolUseCount": report.tool_uses,
        });
        let out = if report.is_error {
            ToolOutput::error(text)
        } else {
            ToolOutput::text(text)
        };
        Ok(out.with_structured(structured))
    }
}
