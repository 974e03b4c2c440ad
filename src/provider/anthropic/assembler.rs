//! Assembles Anthropic Messages SSE events into one [`ModelResponse`].
//!
//! Pure state machine (no I/O) so every stream quirk can be tested from bytes: pings with odd
//! spacing, tool JSON split mid-key, empty tool input, thinking signatures, in-stream errors and
//! streams cut by `max_tokens` in the middle of a tool call.

use serde_json::Value;

pub use crate::provider::StreamFailure;
use crate::provider::{BrokenReason, BrokenToolCall, ModelResponse, ProviderEvent, StreamAssembler};
use crate::types::message::{ContentBlock, StopReason, Usage};

#[derive(Debug)]
enum Partial {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    /// A call of a tool the server runs (web search), kept to be sent back.
    ServerToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// A block that arrives whole in its start event (a server tool's result).
    Whole(ContentBlock),
    /// A block type keel does not model (other server tools' results); skipped.
    Ignored,
}

#[derive(Debug, Default)]
pub struct Assembler {
    id: String,
    model: String,
    usage: Usage,
    blocks: Vec<(usize, Partial, bool)>,
    stop_reason: Option<StopReason>,
    stopped: bool,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once `message_stop` arrived.
    pub fn is_done(&self) -> bool {
        self.stopped
    }

    /// Feeds one SSE event. Returns the UI-level events it produced.
    pub fn handle(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, StreamFailure> {
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| StreamFailure::retry(format!("event `{event}` carried invalid JSON: {e}")))?;
        // The `type` field is authoritative; the `event:` line may be missing on some proxies.
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event).to_string();
        let mut out = Vec::new();
        match kind.as_str() {
            "message_start" => {
                let msg = &v["message"];
                self.id = str_of(&msg["id"]);
                self.model = str_of(&msg["model"]);
                merge_usage(&mut self.usage, &msg["usage"]);
            }
            "content_block_start" => {
                let index = index_of(&v)?;
                let block = &v["content_block"];
                let partial = match block.get("type").and_then(Value::as_str) {
                    Some("text") => Partial::Text(str_of(&block["text"])),
                    Some("tool_use") => {
                        let id = str_of(&block["id"]);
                        let name = str_of(&block["name"]);
                        out.push(ProviderEvent::ToolUseStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        // A non-empty start input (rare) seeds the JSON buffer.
                        let json = match &block["input"] {
                            Value::Object(m) if !m.is_empty() => block["input"].to_string(),
                            _ => String::new(),
                        };
                        Partial::ToolUse { id, name, json }
                    }
                    Some("thinking") => Partial::Thinking {
                        thinking: str_of(&block["thinking"]),
                        signature: str_of(&block["signature"]),
                    },
                    Some("redacted_thinking") => Partial::Redacted(str_of(&block["data"])),
                    // Server tools run on the provider's side: no ToolUseStarted, nothing for
                    // keel to run; the blocks go back with the history as the API requires.
                    Some("server_tool_use") => Partial::ServerToolUse {
                        id: str_of(&block["id"]),
                        name: str_of(&block["name"]),
                        json: match &block["input"] {
                            Value::Object(m) if !m.is_empty() => block["input"].to_string(),
                            _ => String::new(),
                        },
                    },
                    Some("web_search_tool_result") => Partial::Whole(ContentBlock::WebSearchToolResult {
                        tool_use_id: str_of(&block["tool_use_id"]),
                        content: block["content"].clone(),
                    }),
                    _ => Partial::Ignored,
                };
                if let Partial::Text(t) = &partial
                    && !t.is_empty()
                {
                    out.push(ProviderEvent::TextDelta { text: t.clone() });
                }
                self.blocks.push((index, partial, false));
            }
            "content_block_delta" => {
                let index = index_of(&v)?;
                let delta = &v["delta"];
                let block = self.block_mut(index)?;
                match (delta.get("type").and_then(Value::as_str), block) {
                    (Some("text_delta"), Partial::Text(t)) => {
                        let piece = str_of(&delta["text"]);
                        t.push_str(&piece);
                        out.push(ProviderEvent::TextDelta { text: piece });
                    }
                    (Some("input_json_delta"), Partial::ToolUse { json, .. } | Partial::ServerToolUse { json, .. }) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or(""));
                    }
                    (Some("thinking_delta"), Partial::Thinking { thinking, .. }) => {
                        let piece = str_of(&delta["thinking"]);
                        thinking.push_str(&piece);
                        out.push(ProviderEvent::ThinkingDelta { text: piece });
                    }
                    (Some("signature_delta"), Partial::Thinking { signature, .. }) => {
                        signature.push_str(delta["signature"].as_str().unwrap_or(""));
                    }
                    (Some("citations_delta"), _) | (_, Partial::Ignored) => {}
                    (other, _) => {
                        return Err(StreamFailure::retry(format!(
                            "delta of type {} does not fit content block {index}",
                            other.unwrap_or("<none>")
                        )));
                    }
                }
            }
            "content_block_stop" => {
                let index = index_of(&v)?;
                let entry = self
                    .blocks
                    .iter_mut()
                    .find(|(i, _, _)| *i == index)
                    .ok_or_else(|| unknown_block(index))?;
                entry.2 = true;
            }
            "message_delta" => {
                if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(StopReason::parse(reason));
                }
                // Usage in message_delta is cumulative: replace, never add.
                merge_usage(&mut self.usage, &v["usage"]);
            }
            "message_stop" => self.stopped = true,
            "ping" => {}
            "error" => {
                let kind = v["error"]["type"].as_str().unwrap_or("error");
                let message = v["error"]["message"].as_str().unwrap_or("unknown error");
                return Err(StreamFailure {
                    message: format!("{kind}: {message}"),
                    retryable: matches!(
                        kind,
                        "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error"
                    ),
                    overloaded: kind == "overloaded_error",
                    context_full: false,
                });
            }
            _ => {}
        }
        Ok(out)
    }

    fn block_mut(&mut self, index: usize) -> Result<&mut Partial, StreamFailure> {
        self.blocks
            .iter_mut()
            .find(|(i, _, _)| *i == index)
            .map(|(_, p, _)| p)
            .ok_or_else(|| unknown_block(index))
    }

    /// Ends the stream. A stream that ends without a stop reason was cut off (retryable).
    pub fn finish(self) -> Result<ModelResponse, StreamFailure> {
        let Some(stop_reason) = self.stop_reason else {
            return Err(StreamFailure::retry(
                "the response stream ended before the message was complete",
            ));
        };
        let mut content = Vec::new();
        let mut broken = Vec::new();
        for (_, partial, closed) in self.blocks {
            match partial {
                Partial::Text(text) => {
                    if !text.is_empty() {
                        content.push(ContentBlock::text(text));
                    }
                }
                Partial::ToolUse { id, name, json } => {
                    if !closed {
                        broken.push(BrokenToolCall {
                            id,
                            name,
                            reason: BrokenReason::Truncated,
                        });
                        continue;
                    }
                    match parse_tool_input(&json) {
                        Ok(input) => content.push(ContentBlock::ToolUse { id, name, input }),
                        Err(error) => {
                            content.push(ContentBlock::ToolUse {
                                id: id.clone(),
                                name: name.clone(),
                                input: Value::Object(Default::default()),
                            });
                            broken.push(BrokenToolCall {
                                id,
                                name,
                                reason: BrokenReason::Malformed { raw: json, error },
                            });
                        }
                    }
                }
                Partial::Thinking { thinking, signature } => {
                    content.push(ContentBlock::Thinking { thinking, signature })
                }
                Partial::Redacted(data) => content.push(ContentBlock::RedactedThinking { data }),
                // A server call cut off by the stream's end is dropped with its missing result.
                Partial::ServerToolUse { id, name, json } if closed => {
                    let input = parse_tool_input(&json).unwrap_or_else(|_| Value::Object(Default::default()));
                    content.push(ContentBlock::ServerToolUse { id, name, input });
                }
                Partial::ServerToolUse { .. } => {}
                Partial::Whole(block) => content.push(block),
                Partial::Ignored => {}
            }
        }
        Ok(ModelResponse {
            id: self.id,
            model: self.model,
            content,
            stop_reason,
            usage: self.usage,
            broken_tool_calls: broken,
        })
    }
}

/// Empty input means a tool with no arguments; anything else must be a JSON object.
fn parse_tool_input(json: &str) -> Result<Value, String> {
    if json.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!("expected a JSON object, got {other}")),
        Err(e) => Err(e.to_string()),
    }
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn index_of(v: &Value) -> Result<usize, StreamFailure> {
    v["index"]
        .as_u64()
        .map(|i| i as usize)
        .ok_or_else(|| StreamFailure::retry("content block event without an index"))
}

fn unknown_block(index: usize) -> StreamFailure {
    StreamFailure::retry(format!("event for content block {index}, which was never started"))
}

fn merge_usage(usage: &mut Usage, v: &Value) {
    let set = |field: &mut u64, key: &str| {
        if let Some(n) = v.get(key).and_then(Value::as_u64) {
            *field = n;
        }
    };
    set(&mut usage.input_tokens, "input_tokens");
    set(&mut usage.cache_creation_input_tokens, "cache_creation_input_tokens");
    set(&mut usage.cache_read_input_tokens, "cache_read_input_tokens");
    set(&mut usage.output_tokens, "output_tokens");
    if let Some(n) = v
        .pointer("/cache_creation/ephemeral_1h_input_tokens")
        .and_then(Value::as_u64)
    {
        usage.cache_creation_1h_input_tokens = n;
    }
    if let Some(n) = v
        .pointer("/server_tool_use/web_search_requests")
        .and_then(Value::as_u64)
    {
        usage.web_search_requests = n;
    }
}

impl StreamAssembler for Assembler {
    fn handle(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, StreamFailure> {
        Assembler::handle(self, event, data)
    }

    fn is_done(&self) -> bool {
        self.stopped
    }

    fn can_finish(&self) -> bool {
        self.stopped
    }

    fn finish(self) -> Result<ModelResponse, StreamFailure> {
        Assembler::finish(self)
    }
}

#[cfg(test)]
mod tests;
