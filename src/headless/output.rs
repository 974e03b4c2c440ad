//! The reference's headless JSON shapes: `system/init`, `assistant`, `user`, `system/*` and
//! the final `result` object.

use serde_json::{Map, Value, json};

use crate::engine::TurnOutcome;
use crate::engine::session::{Denial, Totals};
use crate::types::message::{ContentBlock, Message, Usage};

pub use super::result_fields::ResultContext;
use super::result_fields::{add_turn_fields, model_usage, result_usage, round6};

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// When a message line was written, as the reference stamps them (UTC, milliseconds).
fn timestamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub struct InitInfo<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub tools: Vec<String>,
    /// `[{"name", "status"}]` per MCP server.
    pub mcp_servers: Vec<Value>,
    pub model: &'a str,
    pub permission_mode: &'a str,
    pub api_key_source: &'a str,
    /// Sub-agent types the Agent tool offers.
    pub agents: Vec<&'a str>,
    pub slash_commands: Vec<&'a str>,
    pub skills: Vec<&'a str>,
    /// `{"name", "path"}` per plugin.
    pub plugins: Vec<Value>,
    /// `--safe-mode`: shown as `"safe_mode": true` (absent otherwise).
    pub safe_mode: bool,
    /// Facts about the session (`facts::init_fields`), after the inventory.
    pub facts: Map<String, Value>,
}

pub fn init_line(i: &InitInfo<'_>) -> Value {
    let mut line = json!({
        "type": "system",
        "subtype": "init",
        "cwd": i.cwd,
        "session_id": i.session_id,
        "tools": i.tools,
        "mcp_servers": i.mcp_servers,
        "model": i.model,
        "permissionMode": i.permission_mode,
        "slash_commands": i.slash_commands,
        "apiKeySource": i.api_key_source,
        // Clients check this slot for a version; it carries keel's.
        "claude_code_version": env!("CARGO_PKG_VERSION"),
        "keel_version": env!("CARGO_PKG_VERSION"),
        "output_style": "default",
        "agents": i.agents,
        "skills": i.skills,
        "plugins": i.plugins,
        "uuid": uuid(),
    });
    if i.safe_mode {
        line["safe_mode"] = Value::Bool(true);
    }
    if let Value::Object(m) = &mut line {
        m.extend(i.facts.clone());
    }
    line
}

/// One `assistant` line per content block, sharing the message id, as the reference streams.
/// Their `stop_reason` is null, as in the reference's lines, which go out while the message is
/// still streaming; the result and the `message_delta` event carry it.
pub fn assistant_lines(id: &str, model: &str, message: &Message, usage: &Usage, session_id: &str) -> Vec<Value> {
    message
        .content
        .iter()
        .map(|block| {
            json!({
                "type": "assistant",
                "message": {
                    "id": id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [block],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": usage_json(usage),
                    "context_management": null,
                },
                "parent_tool_use_id": null,
                "session_id": session_id,
                "uuid": uuid(),
                "timestamp": timestamp(),
            })
        })
        .collect()
}

/// One `user` line per tool result, carrying the structured result as `tool_use_result`; a
/// failed call's is the reference's `"Error: <message>"` string.
pub fn tool_result_line(block: &ContentBlock, structured: Option<&Value>, session_id: &str) -> Value {
    let mut line = json!({
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": null,
        "session_id": session_id,
        "uuid": uuid(),
        "timestamp": timestamp(),
    });
    let result = match (block, structured) {
        (_, Some(Value::String(s))) => Some(Value::String(s.clone())),
        (
            ContentBlock::ToolResult {
                content,
                is_error: true,
                ..
            },
            _,
        ) => Some(Value::String(format!(
            "Error: {}",
            without_error_tags(&content.as_text())
        ))),
        (_, s) => s.cloned(),
    };
    if let (Some(s), Value::Object(m)) = (result, &mut line) {
        m.insert("tool_use_result".into(), s);
    }
    line
}

/// An error text without the `<tool_use_error>` wrapper the model sees.
pub fn without_error_tags(text: &str) -> &str {
    text.strip_prefix("<tool_use_error>")
        .and_then(|t| t.strip_suffix("</tool_use_error>"))
        .unwrap_or(text)
}

/// A user message echoed back (`--replay-user-messages`).
pub fn replay_line(message: &Value, session_id: &str) -> Value {
    json!({
        "type": "user",
        "message": message,
        "parent_tool_use_id": null,
        "session_id": session_id,
        "uuid": uuid(),
        "timestamp": timestamp(),
        "isReplay": true,
    })
}

/// `system/status`: the permission mode changed.
pub fn status_line(permission_mode: &str, session_id: &str) -> Value {
    system_line(
        "status",
        json!({"status": null, "permissionMode": permission_mode}),
        session_id,
    )
}

/// `system/session_state_changed` (`running`, `idle`), for clients that ask for it.
pub fn session_state_line(state: &str, session_id: &str) -> Value {
    system_line(
        "session_state_changed",
        json!({"state": state, "sdk_host_only": true}),
        session_id,
    )
}

/// `system/hook_started` (`--include-hook-events`).
pub fn hook_started_line(hook_id: &str, hook_name: &str, event: &str, session_id: &str) -> Value {
    system_line(
        "hook_started",
        json!({"hook_id": hook_id, "hook_name": hook_name, "hook_event": event}),
        session_id,
    )
}

/// `system/permission_denied`: one per denied call, with what the model was told.
pub fn permission_denied_line(tool_name: &str, tool_use_id: &str, message: &str, session_id: &str) -> Value {
    system_line(
        "permission_denied",
        json!({"tool_name": tool_name, "tool_use_id": tool_use_id, "message": without_error_tags(message)}),
        session_id,
    )
}

/// `system/compact_boundary`: the conversation was compacted.
pub fn compact_boundary_line(trigger: &str, pre_tokens: u64, session_id: &str) -> Value {
    system_line(
        "compact_boundary",
        json!({"compact_metadata": {"trigger": trigger, "pre_tokens": pre_tokens}}),
        session_id,
    )
}

/// `system/notice`: keel's warnings and information.
pub fn notice_line(level: &str, message: &str, session_id: &str) -> Value {
    system_line("notice", json!({"level": level, "message": message}), session_id)
}

/// `system/hook_response` (`--include-hook-events`).
pub fn hook_response_line(run: &crate::hooks::HookRun, session_id: &str) -> Value {
    let mut output = run.stdout.clone();
    output.push_str(&run.stderr);
    system_line(
        "hook_response",
        json!({
            "hook_id": run.hook_id,
            "hook_name": run.hook_name,
            "hook_event": run.event,
            "output": output,
            "stdout": run.stdout,
            "stderr": run.stderr,
            "exit_code": run.exit_code,
            "outcome": run.outcome,
            "decision": run.decision,
            "duration_ms": run.duration_ms,
        }),
        session_id,
    )
}

pub fn retry_line(
    attempt: u32,
    max_retries: u32,
    delay_ms: u64,
    status: Option<u16>,
    error: &str,
    session_id: &str,
) -> Value {
    json!({
        "type": "system",
        "subtype": "api_retry",
        "attempt": attempt,
        "max_retries": max_retries,
        "retry_delay_ms": delay_ms,
        "error_status": status,
        "error": error,
        "session_id": session_id,
        "uuid": uuid(),
    })
}

pub fn system_line(subtype: &str, fields: Value, session_id: &str) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "system".into());
    m.insert("subtype".into(), subtype.into());
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    m.insert("session_id".into(), session_id.into());
    m.insert("uuid".into(), uuid().into());
    Value::Object(m)
}

pub fn stream_event_line(event: &Value, session_id: &str) -> Value {
    json!({"type": "stream_event", "event": event, "parent_tool_use_id": null, "session_id": session_id, "uuid": uuid()})
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": u.output_tokens,
        "server_tool_use": {"web_search_requests": u.web_search_requests, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": super::result_fields::cache_creation(u),
    })
}

/// The final `result` object, keys in the reference's order.
pub fn result_object(
    outcome: &TurnOutcome,
    session_id: &str,
    totals: &Totals,
    denials: &[Denial],
    ctx: &ResultContext<'_>,
) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "result".into());
    m.insert("subtype".into(), outcome.subtype.as_str().into());
    m.insert("is_error".into(), outcome.is_error.into());
    m.insert("duration_ms".into(), outcome.duration_ms.into());
    m.insert("duration_api_ms".into(), outcome.duration_api_ms.into());
    m.insert("num_turns".into(), outcome.num_turns.into());
    if outcome.subtype == crate::engine::ResultSubtype::Success || !outcome.is_error {
        m.insert("result".into(), outcome.result.clone().into());
    }
    // A turn cut short (`--max-turns`) reports the model's last stop reason.
    let stop_reason = outcome
        .stop_reason
        .clone()
        .or_else(|| ctx.stats.last_stop_reason.clone());
    m.insert(
        "stop_reason".into(),
        stop_reason.map(Value::String).unwrap_or(Value::Null),
    );
    m.insert("session_id".into(), session_id.into());
    // Unknown (no price for a model used) is not zero.
    let total = if totals.cost_known() {
        json!(round6(totals.cost_usd))
    } else {
        Value::Null
    };
    m.insert("total_cost_usd".into(), total);
    let thinking: u64 = ctx.stats.by_model.values().map(|x| x.thinking_tokens()).sum();
    m.insert("usage".into(), result_usage(&totals.usage, thinking));
    m.insert(
        "modelUsage".into(),
        model_usage(&totals.by_model, &ctx.stats.session_by_model, ctx.provider),
    );
    m.insert(
        "permission_denials".into(),
        Value::Array(
            denials
                .iter()
                .map(|d| json!({"tool_name": d.tool_name, "tool_use_id": d.tool_use_id, "tool_input": d.tool_input}))
                .collect(),
        ),
    );
    if outcome.is_error {
        m.insert("errors".into(), json!(outcome.errors));
    }
    m.insert(
        "api_error_status".into(),
        outcome.api_error_status.map(Value::from).unwrap_or(Value::Null),
    );
    if let Some(kind) = outcome.api_error_kind {
        m.insert("api_error_kind".into(), kind.as_str().into());
    }
    if let Some(v) = &outcome.structured_output {
        m.insert("structured_output".into(), v.clone());
    }
    m.insert("terminal_reason".into(), outcome.terminal_reason.as_str().into());
    add_turn_fields(&mut m, ctx);
    m.insert("uuid".into(), uuid().into());
    Value::Object(m)
}

/// The result object for a run that failed before any turn (bad flags, unreadable settings):
/// programs reading `--output-format json` still get one object.
pub fn startup_error_object(message: &str, session_id: Option<&str>) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "result".into());
    m.insert("subtype".into(), "error_during_execution".into());
    m.insert("is_error".into(), true.into());
    m.insert("duration_ms".into(), 0.into());
    m.insert("duration_api_ms".into(), 0.into());
    m.insert("num_turns".into(), 0.into());
    m.insert("result".into(), message.into());
    m.insert("stop_reason".into(), Value::Null);
    m.insert("session_id".into(), session_id.map(Value::from).unwrap_or(Value::Null));
    m.insert("total_cost_usd".into(), json!(0.0));
    m.insert("usage".into(), usage_json(&Usage::default()));
    m.insert("modelUsage".into(), json!({}));
    m.insert("permission_denials".into(), json!([]));
    m.insert("errors".into(), json!([message]));
    m.insert("terminal_reason".into(), "turn_setup_failed".into());
    m.insert("uuid".into(), uuid().into());
    Value::Object(m)
}

/// Adds keel's warnings (startup problems, transcript lines that could not be saved) to a
/// result object as `warnings`, when there are any.
pub fn with_warnings(mut result: Value, warnings: &[String]) -> Value {
    if let (false, Value::Object(m)) = (warnings.is_empty(), &mut result) {
        m.insert("warnings".into(), json!(warnings));
    }
    result
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
