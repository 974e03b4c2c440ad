//! Agent: delegates a self-contained task to a sub-agent with its own conversation.
//!
//! The sub-agent's type decides its prompt and tools (built-in types and custom definitions,
//! listed in the system prompt); it gets a copy of the read-file state (what it reads does not
//! leak back), the same permission boundary and its own transcript. Only its final report comes
//! back — at once, or as a notification at a later turn with `run_in_background`. Several
//! Agent calls of one message run at the same time, within the spawn budgets.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    Capability, Declared, Effects, RuleGrammar, Subject, Tool, ToolContext, ToolError, ToolOutput, parse_input,
};

/// What the Agent tool asks the engine to run.
#[derive(Debug, Clone, Default)]
pub struct AgentRequest {
    pub description: String,
    pub prompt: String,
    pub agent_type: String,
    /// The call that asked (its spawn-budget reservation is keyed by it).
    pub tool_use_id: String,
    /// `Some(true)`/`Some(false)` when the call says; `None` follows the definition.
    pub background: Option<bool>,
    /// `isolation: "worktree"` on the call (the definition may ask for it too).
    pub worktree: bool,
    /// `model` on the call: an alias or id it wants instead of the definition's model.
    pub model: Option<String>,
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
    /// It was started in the background; `text` says so and the report comes later.
    pub launched: bool,
    /// Facts to add after the report (a kept worktree's path and branch).
    pub notes: Vec<String>,
}

/// A tool call the permission layer refused, for the result's `permission_denials`.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
}

/// What a finished sub-agent hands its parent's accounting, over the parent engine's channel:
/// its token usage by model and the calls it was refused (the session's result lists those).
#[derive(Debug, Default)]
pub struct Contribution {
    pub usage: Vec<(String, crate::types::message::Usage)>,
    pub denials: Vec<Denial>,
}

/// Runs sub-agents; implemented by the engine, installed in the session state.
#[async_trait]
pub trait AgentRunner: Send + Sync + std::fmt::Debug {
    async fn run(&self, request: AgentRequest, cancel: CancellationToken) -> Result<AgentReport, String>;

    /// Reserves spawn-budget places for the Agent calls of one message, in the order the model
    /// issued them (before any runs, so refusals follow that order).
    fn reserve(&self, _tool_use_ids: &[String]) {}

    /// Frees the places of calls that never reached [`AgentRunner::run`] (refused earlier).
    fn release(&self, _tool_use_ids: &[String]) {}
}

pub struct AgentTool;

#[derive(Deserialize)]
struct Input {
    description: String,
    prompt: String,
    subagent_type: Option<String>,
    run_in_background: Option<bool>,
    isolation: Option<String>,
    model: Option<String>,
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &'static str {
        "Agent"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects {
                spawns_agent: true,
                ..Effects::NONE
            },
            grammar: RuleGrammar::Key,
            covered_by: &["Task"],
        }
    }

    fn subject(&self, input: &Value, _cwd: &std::path::Path) -> Subject {
        let kind = input.get("subagent_type").and_then(Value::as_str);
        Subject::Key(kind.unwrap_or("general-purpose").to_string())
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Agents]
    }

    fn description(&self) -> &'static str {
        "Hands a self-contained task to a sub-agent that works in its own conversation and reports back. \
         Use it for broad searches whose steps would crowd your context, and for independent parts of a task \
         in parallel (several Agent calls in one message run at once). The sub-agent sees only `prompt` (not this conversation), so include every fact it needs and say \
         what its report must contain. `subagent_type`: `general-purpose` (default; your tools), `Explore` or \
         `Plan` (read-only research: Read, Glob, Grep), `verifier` (reviews the work so far from facts keel \
         gathers — the diff, changed files, commands run — and ignores `prompt`), or a project type listed in the \
         system prompt. \
         `run_in_background: true` returns at once and the report arrives later as a notification. \
         `isolation: \"worktree\"` runs it in a fresh git worktree so your files stay untouched. `model`: an \
         alias (`sonnet`, `opus`, `haiku`) or a model id this session offers (default: the agent type's, else \
         yours). It follows the same permission rules; only its final \
         message comes back."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "minLength": 1, "description": "The task in 3-5 words"},
                "prompt": {"type": "string", "minLength": 1, "description": "The complete task for the sub-agent"},
                "subagent_type": {"type": "string", "minLength": 1, "description": "Which kind of sub-agent (see the system prompt)"},
                "run_in_background": {"type": "boolean", "description": "Return at once; the report arrives as a later notification"},
                "isolation": {"type": "string", "enum": ["worktree"], "description": "Run in a fresh git worktree"},
                "model": {"type": "string", "minLength": 1, "description": "Model alias or id for the sub-agent"}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    fn handles_cancellation(&self) -> bool {
        // The sub-agent's own turn stops on the token and records the interruption.
        true
    }

    /// Sub-agents work in their own conversations; the calls of one message run together.
    fn runs_concurrently(&self, _input: &Value) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let runner = ctx.agents()?;
        let request = AgentRequest {
            description: input.description,
            prompt: input.prompt,
            agent_type: input.subagent_type.unwrap_or_else(|| "general-purpose".into()),
            tool_use_id: ctx.tool_use_id.clone(),
            background: input.run_in_background,
            worktree: input.isolation.as_deref() == Some("worktree"),
            model: input.model.map(|m| m.trim().to_string()),
        };
        let report = runner
            .run(request, ctx.cancel.clone())
            .await
            .map_err(ToolError::invalid)?;
        if report.launched {
            let structured = json!({
                "status": "async_launched",
                "agentId": report.agent_id,
                "outputFile": report.transcript.display().to_string(),
            });
            return Ok(ToolOutput::text(report.text).with_structured(structured));
        }
        let mut text = report.text.trim_end().to_string();
        for note in &report.notes {
            text.push_str(&format!("\n\n{note}"));
        }
        let text = format!(
            "{text}\n\n[sub-agent {}: {} tool call(s), {} tokens, {} ms; transcript {}]",
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
