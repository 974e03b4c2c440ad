//! The result object's usage blocks and the fields a turn measured (timings, sub-agents,
//! per-model usage since the previous result), in the reference's shapes.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::turn_stats::{ModelExtras, TurnStats};
use crate::config::models;
use crate::engine::session::ModelTotals;
use crate::types::message::Usage;

/// What the runner knows of a result beyond the engine's outcome.
pub struct ResultContext<'a> {
    pub stats: &'a TurnStats,
    /// Usage per model since the previous result (the whole session's for the first).
    pub since_last: &'a BTreeMap<String, ModelTotals>,
    /// 0 for the session's first result, 1 for the next…
    pub result_index: u64,
    /// Prompts that arrived while this turn ran and wait for their own.
    pub queued_turns: u64,
    /// keel's name of the provider (`anthropic`, `openai`, `script`…).
    pub provider: &'a str,
}

/// `cache_creation`: the cache writes by lifetime.
pub fn cache_creation(u: &Usage) -> Value {
    let one_hour = u.cache_creation_1h_input_tokens.min(u.cache_creation_input_tokens);
    json!({
        "ephemeral_5m_input_tokens": u.cache_creation_input_tokens - one_hour,
        "ephemeral_1h_input_tokens": one_hour,
    })
}

/// The result's `usage`: the totals, with the detail blocks the reference adds.
pub fn result_usage(u: &Usage, thinking_tokens: u64) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"thinking_tokens": thinking_tokens},
        "server_tool_use": {"web_search_requests": u.web_search_requests, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": cache_creation(u),
        // Where the request was served; keel's providers do not say.
        "inference_geo": "",
        // Server-side iterations of one request; keel's requests make none.
        "iterations": [],
        "speed": "standard",
        "fallback_credit": null,
    })
}

/// `modelUsage` (and `model_usage_since_last_result`): one entry per model.
pub fn model_usage(
    by_model: &BTreeMap<String, ModelTotals>,
    extras: &BTreeMap<String, ModelExtras>,
    provider: &str,
) -> Value {
    let entries: Map<String, Value> = by_model
        .iter()
        .map(|(model, t)| {
            let info = models::info(model);
            let x = extras.get(model).copied().unwrap_or_default();
            let c = cache_creation(&t.usage);
            (
                model.clone(),
                json!({
                    "inputTokens": t.usage.input_tokens,
                    "outputTokens": t.usage.output_tokens,
                    "cacheReadInputTokens": t.usage.cache_read_input_tokens,
                    "cacheCreationInputTokens": t.usage.cache_creation_input_tokens,
                    "webSearchRequests": t.usage.web_search_requests,
                    "costUSD": if t.unpriced { Value::Null } else { json!(round6(t.cost_usd)) },
                    "contextWindow": info.context_window,
                    "maxOutputTokens": info.max_output,
                    "thinkingTokens": x.thinking_tokens(),
                    "cacheCreationEphemeral5mInputTokens": c["ephemeral_5m_input_tokens"],
                    "cacheCreationEphemeral1hInputTokens": c["ephemeral_1h_input_tokens"],
                    "canonicalModel": canonical(model),
                    "provider": provider,
                    // Priced from keel's table (or the settings' prices), or not at all.
                    "costBasis": if t.unpriced { "unpriced" } else { "list" },
                }),
            )
        })
        .collect();
    Value::Object(entries)
}

/// The model's name without a provider prefix or a date suffix (`claude-sonnet-4-5`).
fn canonical(model: &str) -> String {
    let name = model.rsplit('/').next().unwrap_or(model);
    match name.rsplit_once('-') {
        Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => head.to_string(),
        _ => name.to_string(),
    }
}

/// The fields of the result object this turn measured.
pub fn add_turn_fields(m: &mut Map<String, Value>, ctx: &ResultContext<'_>) {
    let s = ctx.stats;
    m.insert("fast_mode_state".into(), "off".into());
    m.insert("fast_mode_disabled_reason".into(), "unsupported".into());
    m.insert("subagent_stats".into(), s.subagents.to_json());
    m.insert("safety_stops".into(), s.safety_stops.into());
    m.insert("begun_message_ids".into(), json!(s.begun_message_ids));
    s.timing_fields(m);
    m.insert("queued_turn_count".into(), ctx.queued_turns.into());
    m.insert("result_index".into(), ctx.result_index.into());
    m.insert(
        "model_usage_since_last_result".into(),
        model_usage(ctx.since_last, &s.by_model, ctx.provider),
    );
}

pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_drop_prefix_and_date() {
        assert_eq!(canonical("claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
        assert_eq!(canonical("anthropic/claude-opus-5-5"), "claude-opus-5-5");
        assert_eq!(canonical("gpt-4.1"), "gpt-4.1");
    }

    #[test]
    fn cache_writes_split_by_lifetime() {
        let u = Usage {
            cache_creation_input_tokens: 50,
            cache_creation_1h_input_tokens: 20,
            ..Usage::default()
        };
        assert_eq!(
            cache_creation(&u),
            json!({"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 20})
        );
    }
}
