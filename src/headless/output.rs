//! The reference's headless JSON shapes: `system/init`, `assistant`, `user`, `system/*` and
//! the final `result` object.

use serde_json::{Map, Value, json};

use crate::engine::TurnOutcome;
use crate::engine::session::{Denial, Totals};
use crate::message::{ContentBlock, Message, Usage};

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub struct InitInfo<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub tools: Vec<&'a str>,
    pub model: &'a str,
    pub permission_mode: &'a str,
    pub api_key_source: &'a str,
}

pub fn init_line(i: &InitInfo<'_>) -> Value {
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": i.cwd,
        "session_id": i.session_id,
        "tools": i.tools,
        "mcp_servers": [],
        "model": i.model,
        "permissionMode": i.permission_mode,
        "slash_commands": [],
        "apiKeySource": i.api_key_source,
        "keel_version": env!("CARGO_PKG_VERSION"),
        "output_style": "default",
        "agents": [],
        "skills": [],
        "plugins": [],
        "uuid": uuid(),
    })
}

/// One `assistant` line per content block, sharing the message id, as the reference streams.
pub fn assistant_lines(
    id: &str,
    model: &str,
    message: &Message,
    stop_reason: &str,
    usage: &Usage,
    session_id: &str,
) -> Vec<Value> {
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
                    "stop_reason": stop_reason,
                    "stop_sequence": null,
                    "usage": usage_json(usage),
                },
                "parent_tool_use_id": null,
                "session_id": session_id,
                "uuid": uuid(),
            })
        })
        .collect()
}

/// One `user` line per tool result, carrying the structured result as `tool_use_result`.
pub fn tool_result_line(block: &ContentBlock, structured: Option<&Value>, session_id: &str) -> Value {
    let mut line = json!({
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": null,
        "session_id": session_id,
        "uuid": uuid(),
    });
    if let (Some(s), Value::Object(m)) = (structured, &mut line) {
        m.insert("tool_use_result".into(), s.clone());
    }
    line
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
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
    })
}

/// The final `result` object, keys in the reference's order.
pub fn result_object(outcome: &TurnOutcome, session_id: &str, totals: &Totals, denials: &[Denial]) -> Value {
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
    m.insert(
        "stop_reason".into(),
        outcome.stop_reason.clone().map(Value::String).unwrap_or(Value::Null),
    );
    m.insert("session_id".into(), session_id.into());
    // Unknown (no price for a model used) is not zero.
    let total = if totals.cost_known() {
        json!(round6(totals.cost_usd))
    } else {
        Value::Null
    };
    m.insert("total_cost_usd".into(), total);
    m.insert("usage".into(), usage_json(&totals.usage));
    let model_usage: Map<String, Value> = totals
        .by_model
        .iter()
        .map(|(model, t)| {
            (
                model.clone(),
                json!({
                    "inputTokens": t.usage.input_tokens,
                    "outputTokens": t.usage.output_tokens,
                    "cacheReadInputTokens": t.usage.cache_read_input_tokens,
                    "cacheCreationInputTokens": t.usage.cache_creation_input_tokens,
                    "costUSD": if t.unpriced { Value::Null } else { json!(round6(t.cost_usd)) },
                }),
            )
        })
        .collect();
    m.insert("modelUsage".into(), Value::Object(model_usage));
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
    if let Some(status) = outcome.api_error_status {
        m.insert("api_error_status".into(), status.into());
    }
    m.insert("uuid".into(), uuid().into());
    Value::Object(m)
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
