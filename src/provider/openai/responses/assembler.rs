//! Assembles Responses API stream events into one [`ModelResponse`].
//!
//! Pure (no I/O). Output items are keyed by `output_index`: messages (text and refusal deltas),
//! function calls (arguments in deltas, authoritative in `.done`), reasoning (summary deltas;
//! the encrypted content arrives with `output_item.done` and is kept so the next request can
//! send it back). The stream ends with `response.completed`, `response.incomplete` (the output
//! limit: calls still open are cut and never run) or `response.failed`.

use serde_json::Value;

use crate::provider::openai::fresh_call_id;
use crate::provider::reasoning;
use crate::provider::{BrokenReason, BrokenToolCall, ModelResponse, ProviderEvent, StreamAssembler, StreamFailure};
use crate::types::message::{ContentBlock, StopReason, Usage};

#[derive(Debug)]
enum Item {
    Message {
        text: String,
    },
    Call {
        call_id: String,
        name: String,
        arguments: String,
        done: bool,
    },
    /// The server's own web search (`web_search_call`): its id and status.
    Search {
        id: String,
        status: String,
    },
    Reasoning {
        summary: String,
        /// Index of the summary part being written (parts are joined by a blank line).
        part: Option<u64>,
        encrypted: Option<String>,
    },
    Other,
}

#[derive(Debug, Default)]
pub struct Assembler {
    id: String,
    model: String,
    items: Vec<(u64, Item)>,
    usage: Option<Usage>,
    /// `completed`, `incomplete` or `failed`, once the stream said so.
    status: Option<String>,
    incomplete_reason: Option<String>,
    refused: bool,
    /// `url_citation` annotations of the output text: what a web search found.
    citations: Vec<Value>,
}

impl Assembler {
    pub fn new() -> Assembler {
        Assembler::default()
    }

    fn item(&mut self, index: u64) -> Option<&mut Item> {
        self.items.iter_mut().find(|(i, _)| *i == index).map(|(_, it)| it)
    }

    fn response_fields(&mut self, r: &Value) {
        if let Some(id) = r["id"].as_str().filter(|s| !s.is_empty()) {
            self.id = id.to_string();
        }
        if let Some(model) = r["model"].as_str().filter(|s| !s.is_empty()) {
            self.model = model.to_string();
        }
        if r["usage"].is_object() {
            self.usage = Some(usage(&r["usage"]));
        }
    }

    fn added(&mut self, index: u64, item: &Value, out: &mut Vec<ProviderEvent>) {
        let new = match item["type"].as_str() {
            Some("message") => Item::Message { text: String::new() },
            Some("function_call") => {
                let call_id = item["call_id"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .unwrap_or_else(fresh_call_id);
                let name = str_of(&item["name"]);
                out.push(ProviderEvent::ToolUseStarted {
                    id: call_id.clone(),
                    name: name.clone(),
                });
                Item::Call {
                    call_id,
                    name,
                    arguments: str_of(&item["arguments"]),
                    done: false,
                }
            }
            Some("reasoning") => Item::Reasoning {
                summary: String::new(),
                part: None,
                encrypted: None,
            },
            Some("web_search_call") => Item::Search {
                id: str_of(&item["id"]),
                status: str_of(&item["status"]),
            },
            _ => Item::Other,
        };
        self.items.retain(|(i, _)| *i != index);
        self.items.push((index, new));
    }

    fn done_item(&mut self, index: u64, item: &Value) {
        if self.item(index).is_none() {
            let mut ignored = Vec::new();
            self.added(index, item, &mut ignored);
        }
        if item["type"].as_str() == Some("message") {
            self.citations.extend(citations(&item["content"]));
        }
        match self.item(index) {
            Some(Item::Message { text }) if text.is_empty() => {
                *text = joined(&item["content"], &["output_text", "refusal"], &["text", "refusal"]);
            }
            Some(Item::Search { status, .. }) => {
                if let Some(s) = item["status"].as_str() {
                    *status = s.to_string();
                }
            }
            Some(Item::Call {
                call_id,
                name,
                arguments,
                done,
            }) => {
                if let Some(a) = item["arguments"].as_str() {
                    *arguments = a.to_string();
                }
                if name.is_empty() {
                    *name = str_of(&item["name"]);
                }
                if let Some(id) = item["call_id"].as_str().filter(|s| !s.is_empty()) {
                    *call_id = id.to_string();
                }
                *done = true;
            }
            Some(Item::Reasoning { summary, encrypted, .. }) => {
                if summary.is_empty() {
                    *summary = joined(&item["summary"], &["summary_text"], &["text"]);
                }
                *encrypted = item["encrypted_content"].as_str().map(str::to_string);
            }
            _ => {}
        }
    }
}

/// The `url_citation` annotations of a message's parts, as search results (`url`, `title`),
/// each URL once.
fn citations(parts: &Value) -> Vec<Value> {
    let mut seen = Vec::new();
    let notes = parts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["annotations"].as_array());
    for note in notes.flatten() {
        if note["type"].as_str() != Some("url_citation") {
            continue;
        }
        let Some(url) = note["url"].as_str().filter(|u| !u.is_empty()) else {
            continue;
        };
        if seen.iter().any(|v: &Value| v["url"] == url) {
            continue;
        }
        let title = note["title"].as_str().unwrap_or(url);
        seen.push(serde_json::json!({"type": "web_search_result", "url": url, "title": title}));
    }
    seen
}

/// Texts of the parts of a content or summary array whose type is one of `kinds`.
fn joined(parts: &Value, kinds: &[&str], fields: &[&str]) -> String {
    let Some(parts) = parts.as_array() else {
        return String::new();
    };
    parts
        .iter()
        .filter(|p| p["type"].as_str().is_some_and(|t| kinds.contains(&t)))
        .filter_map(|p| fields.iter().find_map(|f| p[*f].as_str()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

impl StreamAssembler for Assembler {
    fn handle(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, StreamFailure> {
        if data.trim().is_empty() || data.trim() == "[DONE]" {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| StreamFailure::retry(format!("event `{event}` carried invalid JSON: {e}")))?;
        let kind = v["type"].as_str().unwrap_or(event).to_string();
        let index = v["output_index"].as_u64().unwrap_or(0);
        let delta = v["delta"].as_str().unwrap_or("");
        let mut out = Vec::new();
        match kind.as_str() {
            "response.created" | "response.in_progress" | "response.queued" => self.response_fields(&v["response"]),
            "response.output_item.added" => self.added(index, &v["item"], &mut out),
            "response.output_text.delta" | "response.refusal.delta" => {
                self.refused |= kind == "response.refusal.delta";
                if self.item(index).is_none() {
                    self.items.push((index, Item::Message { text: String::new() }));
                }
                if let Some(Item::Message { text }) = self.item(index) {
                    text.push_str(delta);
                    out.push(ProviderEvent::TextDelta {
                        text: delta.to_string(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(Item::Call { arguments, .. }) = self.item(index) {
                    arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(Item::Call { arguments, .. }), Some(all)) = (self.item(index), v["arguments"].as_str()) {
                    *arguments = all.to_string();
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let this_part = v["summary_index"].as_u64().or(v["content_index"].as_u64());
                if self.item(index).is_none() {
                    self.items.push((
                        index,
                        Item::Reasoning {
                            summary: String::new(),
                            part: None,
                            encrypted: None,
                        },
                    ));
                }
                if let Some(Item::Reasoning { summary, part, .. }) = self.item(index) {
                    let mut shown = delta.to_string();
                    if part.is_some() && *part != this_part && !summary.is_empty() {
                        summary.push_str("\n\n");
                        shown.insert_str(0, "\n\n");
                    }
                    *part = this_part;
                    summary.push_str(delta);
                    out.push(ProviderEvent::ThinkingDelta { text: shown });
                }
            }
            "response.output_item.done" => self.done_item(index, &v["item"]),
            "response.completed" | "response.incomplete" => {
                let r = &v["response"];
                self.response_fields(r);
                if let Some(output) = r["output"].as_array() {
                    // Items the stream did not announce (a server that sends only the summary).
                    for (i, item) in output.iter().enumerate() {
                        if self.item(i as u64).is_none() {
                            self.done_item(i as u64, item);
                        }
                    }
                }
                self.incomplete_reason = r["incomplete_details"]["reason"].as_str().map(str::to_string);
                self.status = Some(
                    if kind == "response.completed" {
                        "completed"
                    } else {
                        "incomplete"
                    }
                    .into(),
                );
            }
            "response.failed" => {
                let err = &v["response"]["error"];
                return Err(failure(err));
            }
            "error" => return Err(failure(if v["error"].is_object() { &v["error"] } else { &v })),
            _ => {}
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.status.is_some()
    }

    fn finish(self) -> Result<ModelResponse, StreamFailure> {
        let Some(status) = self.status else {
            return Err(StreamFailure::retry(
                "the response stream ended before the response was complete",
            ));
        };
        let incomplete = status == "incomplete";
        let mut content = Vec::new();
        let mut broken = Vec::new();
        let mut calls = 0;
        let mut first_search: Option<String> = None;
        // The API's usage does not count searches: each search call is one.
        let mut searches = 0;
        for (_, item) in self.items {
            match item {
                Item::Search { id, status } => {
                    searches += 1;
                    // A failed search is the provider's search error, as Anthropic's API says it.
                    if status == "failed" {
                        content.push(ContentBlock::WebSearchToolResult {
                            tool_use_id: id.clone(),
                            content: serde_json::json!({"type": "web_search_tool_result_error", "error_code": "unavailable"}),
                        });
                    }
                    first_search.get_or_insert(id);
                }
                Item::Reasoning { summary, encrypted, .. } => content.push(ContentBlock::Thinking {
                    thinking: summary,
                    signature: reasoning::responses_signature(encrypted.as_deref()),
                }),
                Item::Message { text } if !text.is_empty() => content.push(ContentBlock::text(text)),
                Item::Call {
                    call_id,
                    name,
                    arguments,
                    done,
                } => {
                    let parsed = parse_arguments(&arguments);
                    // A finished call with broken arguments is malformed, not cut.
                    if incomplete
                        && (!done
                            || (parsed.is_err() && crate::provider::openai::chat::assembler::ends_early(&arguments)))
                    {
                        broken.push(BrokenToolCall {
                            id: call_id,
                            name,
                            reason: BrokenReason::Truncated,
                        });
                        continue;
                    }
                    calls += 1;
                    match parsed {
                        Ok(input) => content.push(ContentBlock::ToolUse {
                            id: call_id,
                            name,
                            input,
                        }),
                        Err(error) => {
                            content.push(ContentBlock::ToolUse {
                                id: call_id.clone(),
                                name: name.clone(),
                                input: Value::Object(Default::default()),
                            });
                            broken.push(BrokenToolCall {
                                id: call_id,
                                name,
                                reason: BrokenReason::Malformed { raw: arguments, error },
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        if !self.citations.is_empty() {
            let tool_use_id = first_search.unwrap_or_else(|| "url_citation".into());
            content.push(ContentBlock::WebSearchToolResult {
                tool_use_id,
                content: Value::Array(self.citations),
            });
        }
        let stop_reason = match (incomplete, self.incomplete_reason.as_deref()) {
            (true, Some("max_output_tokens")) | (true, None) => StopReason::MaxTokens,
            (true, Some("content_filter")) => StopReason::Refusal,
            (true, Some(other)) => StopReason::Other(other.to_string()),
            (false, _) if calls > 0 => StopReason::ToolUse,
            (false, _) if self.refused => StopReason::Refusal,
            (false, _) => StopReason::EndTurn,
        };
        Ok(ModelResponse {
            id: self.id,
            model: self.model,
            content,
            stop_reason,
            usage: Usage {
                web_search_requests: searches,
                ..self.usage.unwrap_or_default()
            },
            broken_tool_calls: broken,
        })
    }
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

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

/// `input_tokens` includes the cached part; keel counts input without it.
fn usage(u: &Value) -> Usage {
    let input = u["input_tokens"].as_u64().unwrap_or(0);
    let cached = u["input_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0)
        .min(input);
    Usage {
        input_tokens: input - cached,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
        output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        cache_creation_1h_input_tokens: 0,
        web_search_requests: 0,
    }
}

/// A failed response or an `error` event: transient codes are retried.
fn failure(err: &Value) -> StreamFailure {
    let code = err["code"]
        .as_str()
        .map(str::to_string)
        .or_else(|| err["code"].as_u64().map(|n| n.to_string()))
        .or_else(|| err["type"].as_str().map(str::to_string))
        .unwrap_or_default();
    let message = err["message"]
        .as_str()
        .unwrap_or("the response failed without a message");
    let lower = format!("{code} {message}").to_ascii_lowercase();
    let overloaded = lower.contains("overloaded") || code == "503" || code == "529";
    let retryable = overloaded
        || [
            "server_error",
            "rate_limit",
            "timeout",
            "unavailable",
            "429",
            "500",
            "502",
            "504",
        ]
        .iter()
        .any(|p| lower.contains(p));
    StreamFailure {
        message: if code.is_empty() {
            message.to_string()
        } else {
            format!("{code}: {message}")
        },
        retryable,
        overloaded,
        context_full: false,
    }
}

#[cfg(test)]
#[path = "assembler_tests.rs"]
mod tests;
