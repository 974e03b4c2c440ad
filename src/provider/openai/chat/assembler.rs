//! Assembles Chat Completions stream chunks into one [`ModelResponse`].
//!
//! Pure (no I/O), so each quirk real servers show is tested from bytes: tool calls assembled by
//! index with the id and name only in the first fragment and arguments split anywhere; several
//! calls in one response, or a server that reuses index 0 for each; arguments sent whole or as
//! an object; `tool_calls: null`; `finish_reason: stop` despite calls; usage on a trailing
//! chunk with `choices: []` or on every chunk; reasoning as `reasoning_content`, `reasoning` or
//! `reasoning_details`; `refusal` deltas; `error` objects inside the stream.

use std::collections::HashSet;

use serde_json::Value;

use crate::provider::openai::fresh_call_id;
use crate::provider::{BrokenReason, BrokenToolCall, ModelResponse, ProviderEvent, StreamAssembler, StreamFailure};
use crate::types::message::{ContentBlock, StopReason, Usage};

#[derive(Debug)]
struct Call {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

#[derive(Debug, Default)]
pub struct Assembler {
    id: String,
    model: String,
    text: String,
    refusal: String,
    reasoning: String,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl Assembler {
    pub fn new() -> Assembler {
        Assembler::default()
    }

    fn chunk(&mut self, v: &Value) -> Result<Vec<ProviderEvent>, StreamFailure> {
        let mut out = Vec::new();
        if let Some(id) = v["id"].as_str().filter(|s| !s.is_empty()) {
            self.id = id.to_string();
        }
        if let Some(model) = v["model"].as_str().filter(|s| !s.is_empty()) {
            self.model = model.to_string();
        }
        if v["usage"].is_object() {
            self.usage = Some(usage(&v["usage"]));
        }
        if let Some(choices) = v["choices"].as_array() {
            // keel asks for one choice; a server that sends more is only read for the first.
            for choice in choices.iter().filter(|c| c["index"].as_u64().unwrap_or(0) == 0) {
                self.delta(&choice["delta"], &mut out);
                if let Some(reason) = choice["finish_reason"].as_str().filter(|s| !s.is_empty()) {
                    if reason == "content_filter" && self.finish.as_deref() != Some(reason) {
                        out.push(ProviderEvent::Notice(
                            "the server's content filter stopped the response".into(),
                        ));
                    }
                    self.finish = Some(reason.to_string());
                }
            }
        }
        Ok(out)
    }

    fn delta(&mut self, d: &Value, out: &mut Vec<ProviderEvent>) {
        if let Some(t) = d["content"].as_str().filter(|s| !s.is_empty()) {
            self.text.push_str(t);
            out.push(ProviderEvent::TextDelta { text: t.to_string() });
        }
        if let Some(t) = d["refusal"].as_str().filter(|s| !s.is_empty()) {
            self.refusal.push_str(t);
            out.push(ProviderEvent::TextDelta { text: t.to_string() });
        }
        // `reasoning_details` repeats `reasoning` where both come (OpenRouter): one of them.
        let plain = ["reasoning_content", "reasoning"]
            .iter()
            .find_map(|k| d[*k].as_str().filter(|s| !s.is_empty()))
            .map(str::to_string);
        let reasoning = plain.or_else(|| {
            let parts: String = d["reasoning_details"]
                .as_array()?
                .iter()
                .filter_map(|r| r["text"].as_str().or_else(|| r["summary"].as_str()))
                .collect();
            (!parts.is_empty()).then_some(parts)
        });
        if let Some(r) = reasoning {
            self.reasoning.push_str(&r);
            out.push(ProviderEvent::ThinkingDelta { text: r });
        }
        if let Some(fragments) = d["tool_calls"].as_array() {
            for f in fragments {
                self.fragment(f, out);
            }
        }
    }

    fn fragment(&mut self, f: &Value, out: &mut Vec<ProviderEvent>) {
        let index = f["index"].as_u64().unwrap_or(0);
        let id = f["id"].as_str().unwrap_or("");
        let name = f["function"]["name"].as_str().unwrap_or("");
        let arguments = match &f["function"]["arguments"] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            // Some servers send the arguments as an object.
            other => other.to_string(),
        };
        let current = self.calls.iter().rposition(|c| c.index == index);
        let starts_new = match current {
            None => true,
            Some(i) => {
                let c = &self.calls[i];
                // A server reusing one index for several calls: a new id, or a name after the
                // previous call's arguments were already complete.
                (!id.is_empty() && !c.id.is_empty() && id != c.id)
                    || (!name.is_empty()
                        && !c.name.is_empty()
                        && serde_json::from_str::<Value>(&c.arguments).is_ok_and(|v| v.is_object()))
            }
        };
        let i = if starts_new {
            self.calls.push(Call {
                index,
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
                announced: false,
            });
            self.calls.len() - 1
        } else {
            current.unwrap_or(0)
        };
        let call = &mut self.calls[i];
        if call.id.is_empty() && !id.is_empty() {
            call.id = id.to_string();
        }
        if call.name.is_empty() && !name.is_empty() {
            call.name = name.to_string();
        }
        call.arguments.push_str(&arguments);
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            if call.id.is_empty() {
                call.id = fresh_call_id();
            }
            out.push(ProviderEvent::ToolUseStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }
}

impl StreamAssembler for Assembler {
    fn handle(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, StreamFailure> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| StreamFailure::retry(format!("a stream chunk carried invalid JSON: {e}")))?;
        if event == "error" || !v["error"].is_null() {
            return Err(stream_error(&v));
        }
        self.chunk(&v)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn can_finish(&self) -> bool {
        self.done || self.finish.is_some()
    }

    fn finish(self) -> Result<ModelResponse, StreamFailure> {
        let reason = match self.finish.clone() {
            Some(r) => r,
            // Some servers end with [DONE] and no finish_reason.
            None if self.done => if self.calls.is_empty() { "stop" } else { "tool_calls" }.to_string(),
            None => {
                return Err(StreamFailure::retry(
                    "the response stream ended before the response was complete",
                ));
            }
        };
        let cut = reason == "length";
        let stop_reason = match reason.as_str() {
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::Refusal,
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            "stop" if !self.refusal.is_empty() && self.text.is_empty() => StopReason::Refusal,
            "stop" => StopReason::EndTurn,
            other => StopReason::Other(other.to_string()),
        };
        let mut content = Vec::new();
        if !self.reasoning.is_empty() {
            content.push(ContentBlock::Thinking {
                thinking: self.reasoning,
                signature: String::new(),
            });
        }
        let text = if self.text.is_empty() { self.refusal } else { self.text };
        if !text.is_empty() {
            content.push(ContentBlock::text(text));
        }
        let mut broken = Vec::new();
        let mut seen = HashSet::new();
        let last = self.calls.len().saturating_sub(1);
        for (i, call) in self.calls.into_iter().enumerate() {
            let id = if call.id.is_empty() || !seen.insert(call.id.clone()) {
                fresh_call_id()
            } else {
                call.id
            };
            let parsed = parse_arguments(&call.arguments);
            // Only the call being written when the limit struck can be cut short, and only if
            // its arguments stop mid-way; a finished call with broken arguments is malformed.
            if cut && i == last && parsed.is_err() && ends_early(&call.arguments) {
                // The output limit cut this call: it never runs, the model is asked to go on.
                broken.push(BrokenToolCall {
                    id,
                    name: call.name,
                    reason: BrokenReason::Truncated,
                });
                continue;
            }
            let parsed = if call.name.is_empty() {
                Err("the call has no function name".to_string())
            } else {
                parsed
            };
            match parsed {
                Ok(input) => content.push(ContentBlock::ToolUse {
                    id,
                    name: call.name,
                    input,
                }),
                Err(error) => {
                    content.push(ContentBlock::ToolUse {
                        id: id.clone(),
                        name: call.name.clone(),
                        input: Value::Object(Default::default()),
                    });
                    broken.push(BrokenToolCall {
                        id,
                        name: call.name,
                        reason: BrokenReason::Malformed {
                            raw: call.arguments,
                            error,
                        },
                    });
                }
            }
        }
        Ok(ModelResponse {
            id: self.id,
            model: self.model,
            content,
            stop_reason,
            usage: self.usage.unwrap_or_default(),
            broken_tool_calls: broken,
        })
    }
}

/// Whether `raw` is JSON that stops before it is complete (what an output limit leaves), as
/// opposed to JSON that is wrong.
pub(crate) fn ends_early(raw: &str) -> bool {
    serde_json::from_str::<Value>(raw).is_err_and(|e| e.is_eof())
}

/// Empty arguments mean a call without parameters; anything else must be a JSON object.
fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!("expected a JSON object, got {other}")),
        Err(e) => Err(e.to_string()),
    }
}

/// `prompt_tokens` includes the cached part; keel counts input without it.
pub(crate) fn usage(u: &Value) -> Usage {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let prompt = n(&u["prompt_tokens"]);
    let cached = u["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .or_else(|| u["prompt_cache_hit_tokens"].as_u64())
        .unwrap_or(0)
        .min(prompt);
    Usage {
        input_tokens: prompt - cached,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
        output_tokens: n(&u["completion_tokens"]),
        cache_creation_1h_input_tokens: 0,
        web_search_requests: 0,
    }
}

/// An error object inside the stream: transient ones are retried, others reported as sent.
pub(crate) fn stream_error(v: &Value) -> StreamFailure {
    let e = if v["error"].is_null() { v } else { &v["error"] };
    let message = e["message"]
        .as_str()
        .or_else(|| e.as_str())
        .unwrap_or("the server sent an error without a message");
    let code = match &e["code"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => e["type"].as_str().unwrap_or("").to_string(),
    };
    let lower = format!("{code} {message}").to_ascii_lowercase();
    let overloaded = lower.contains("overloaded") || code == "529" || code == "503";
    let transient = overloaded
        || ["429", "500", "502", "504", "408"].contains(&code.as_str())
        || [
            "rate_limit",
            "rate limit",
            "server_error",
            "timeout",
            "unavailable",
            "temporarily",
        ]
        .iter()
        .any(|p| lower.contains(p));
    let context_full = crate::provider::http::is_context_full(message);
    let message = if code.is_empty() {
        message.to_string()
    } else {
        format!("{message} (code {code})")
    };
    let message = if context_full {
        crate::provider::http::explain_context_full(&message)
    } else {
        message
    };
    StreamFailure {
        message,
        retryable: transient || context_full,
        overloaded,
        context_full,
    }
}

#[cfg(test)]
#[path = "assembler_tests.rs"]
mod tests;
