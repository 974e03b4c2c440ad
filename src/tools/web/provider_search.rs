//! WebSearch through the provider's own web search server tool (Anthropic Messages, or OpenAI
//! Responses' `web_search`, whose citations the Responses assembler reads): a side request
//! to the session's model with the `web_search_20250305` tool, whose results the API sends as
//! `server_tool_use` and `web_search_tool_result` blocks. A response that stops with
//! `pause_turn` (the server paused a long search) is continued by sending it back whole, those
//! blocks included, as the API requires. The hits and the model's summary of them become the
//! WebSearch result; the session's own history holds only the WebSearch call and its result.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::search::{Filters, Found, Hit, ProviderSearch};
use crate::provider::{ModelRequest, Provider, ProviderEvent, Reasoning, SystemBlock, ToolSet};
use crate::tools::SideRequests;
use crate::types::message::{ContentBlock, Message, StopReason};

/// The server tool's type, as the API names it.
pub const TOOL_TYPE: &str = "web_search_20250305";
/// Searches the server may run for one WebSearch call.
const MAX_USES: u32 = 5;
/// Continuations of a paused search.
const MAX_CONTINUATIONS: usize = 3;
const MAX_TOKENS: u32 = 4_096;

const SYSTEM: &str = "You search the web for the user's query with the web_search tool, then summarise in a few \
sentences what the results say, naming the URLs you draw on. Report only what the results contain.";

/// Which API's search tool the side request offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchTool {
    /// Anthropic Messages: `web_search_20250305`, results as `web_search_tool_result` blocks.
    Anthropic,
    /// OpenAI Responses: `web_search`, results as the answer's `url_citation` annotations,
    /// which the Responses assembler turns into the same result blocks.
    OpenAiResponses,
}

pub struct AnthropicSearch {
    provider: Arc<dyn Provider>,
    model: String,
    tool: SearchTool,
}

impl AnthropicSearch {
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self::with_tool(provider, model, SearchTool::Anthropic)
    }

    pub fn with_tool(provider: Arc<dyn Provider>, model: impl Into<String>, tool: SearchTool) -> Self {
        AnthropicSearch {
            provider,
            model: model.into(),
            tool,
        }
    }
}

/// The Responses API's search tool: it filters by allowed domains only, so blocked domains are
/// left to keel's own filter of the results (and named to the model in the request).
pub fn responses_tool_definition(filters: &Filters) -> Value {
    let mut tool = json!({"type": "web_search"});
    if !filters.allowed.is_empty() {
        tool["filters"] = json!({"allowed_domains": filters.allowed});
    }
    tool
}

/// The server tool's definition with the call's domain filters.
pub fn tool_definition(filters: &Filters) -> Value {
    let mut tool = json!({"type": TOOL_TYPE, "name": "web_search", "max_uses": MAX_USES});
    if !filters.allowed.is_empty() {
        tool["allowed_domains"] = json!(filters.allowed);
    }
    if !filters.blocked.is_empty() {
        tool["blocked_domains"] = json!(filters.blocked);
    }
    tool
}

#[async_trait]
impl ProviderSearch for AnthropicSearch {
    fn label(&self) -> String {
        format!("{}'s web search", self.provider.name())
    }

    async fn search(&self, query: &str, filters: &Filters, spent: &SideRequests) -> Result<Found, String> {
        let (definition, ask) = match self.tool {
            SearchTool::Anthropic => (tool_definition(filters), format!("Search the web for: {query}")),
            SearchTool::OpenAiResponses if filters.blocked.is_empty() => (
                responses_tool_definition(filters),
                format!("Search the web for: {query}"),
            ),
            SearchTool::OpenAiResponses => (
                responses_tool_definition(filters),
                format!(
                    "Search the web for: {query}\nDo not use results from these domains: {}",
                    filters.blocked.join(", ")
                ),
            ),
        };
        let tools = ToolSet::with_server_tools(Vec::new(), vec![definition]);
        let mut messages = vec![Message::user_text(ask)];
        let mut found = Found::default();
        let mut summary = String::new();
        // Dropping this future (the call was interrupted) cancels the request.
        let cancel = CancellationToken::new();
        let _cancel_on_drop = cancel.clone().drop_guard();
        for _ in 0..=MAX_CONTINUATIONS {
            let request = ModelRequest {
                model: self.model.clone(),
                max_tokens: MAX_TOKENS,
                system: vec![SystemBlock::text(SYSTEM)],
                messages: Arc::new(messages.clone()),
                tools: tools.clone(),
                cache_breakpoints: Vec::new(),
                reasoning: Reasoning::default(),
                unchanged: None,
            };
            let response = complete(self.provider.stream(request, cancel.clone())).await?;
            spent.record(&response.model_or(&self.model), response.usage);
            read_blocks(&response.content, &mut found.hits, &mut summary)?;
            if response.stop_reason != StopReason::PauseTurn {
                break;
            }
            messages.push(Message::assistant(response.content));
        }
        if found.hits.is_empty() && summary.trim().is_empty() {
            return Err("the provider's search returned nothing".into());
        }
        found.summary = Some(summary.trim().to_string()).filter(|s| !s.is_empty());
        Ok(found)
    }
}

/// The response a stream ends with.
async fn complete(mut stream: crate::provider::ProviderStream) -> Result<crate::provider::ModelResponse, String> {
    while let Some(event) = stream.next().await {
        match event {
            Ok(ProviderEvent::Completed(r)) => return Ok(r),
            Ok(_) => {}
            Err(e) => return Err(format!("the search request failed: {e}")),
        }
    }
    Err("the search request ended without a response".into())
}

/// Hits from the search result blocks, text from the text blocks; a search error the server
/// reports is the call's error.
fn read_blocks(content: &[ContentBlock], hits: &mut Vec<Hit>, summary: &mut String) -> Result<(), String> {
    for block in content {
        match block {
            ContentBlock::WebSearchToolResult { content, .. } => match content {
                Value::Array(results) => hits.extend(results.iter().filter_map(hit)),
                other => {
                    let code = other.get("error_code").and_then(Value::as_str).unwrap_or("unknown");
                    return Err(format!("the provider's search failed ({})", explain_error(code)));
                }
            },
            ContentBlock::Text { text, .. } => {
                if !summary.is_empty() && !summary.ends_with(char::is_whitespace) {
                    summary.push(' ');
                }
                summary.push_str(text);
            }
            _ => {}
        }
    }
    Ok(())
}

fn hit(v: &Value) -> Option<Hit> {
    if v.get("type").and_then(Value::as_str) != Some("web_search_result") {
        return None;
    }
    let url = v.get("url").and_then(Value::as_str)?.to_string();
    let title = v.get("title").and_then(Value::as_str).unwrap_or(&url).to_string();
    let snippet = v
        .get("page_age")
        .and_then(Value::as_str)
        .map(|age| format!("page age: {age}"))
        .unwrap_or_default();
    Some(Hit { title, url, snippet })
}

fn explain_error(code: &str) -> String {
    let why = match code {
        "too_many_requests" => "too many requests: try again later",
        "invalid_tool_input" => "the query was not accepted",
        "max_uses_exceeded" => "the search ran out of searches for this call",
        "query_too_long" => "the query is too long",
        "unavailable" => "the search is unavailable right now",
        _ => "",
    };
    if why.is_empty() {
        code.to_string()
    } else {
        format!("{code}: {why}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_errors_from_blocks() {
        let content = vec![
            ContentBlock::text("Searching."),
            ContentBlock::ServerToolUse {
                id: "srvtoolu_1".into(),
                name: "web_search".into(),
                input: json!({"query": "q"}),
            },
            ContentBlock::WebSearchToolResult {
                tool_use_id: "srvtoolu_1".into(),
                content: json!([
                    {"type": "web_search_result", "url": "https://a.example/", "title": "A", "encrypted_content": "x", "page_age": "2 days ago"},
                    {"type": "something_else"}
                ]),
            },
            ContentBlock::text("A says hello."),
        ];
        let (mut hits, mut summary) = (Vec::new(), String::new());
        read_blocks(&content, &mut hits, &mut summary).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].url, "https://a.example/");
        assert_eq!(hits[0].snippet, "page age: 2 days ago");
        assert_eq!(summary, "Searching. A says hello.");
        let failed = vec![ContentBlock::WebSearchToolResult {
            tool_use_id: "s".into(),
            content: json!({"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}),
        }];
        let err = read_blocks(&failed, &mut hits, &mut summary).unwrap_err();
        assert!(err.contains("max_uses_exceeded"), "{err}");
    }

    #[test]
    fn the_definition_carries_the_filters() {
        let f = Filters {
            allowed: vec!["docs.rs".into()],
            blocked: vec![],
        };
        assert_eq!(
            tool_definition(&f),
            json!({"type": TOOL_TYPE, "name": "web_search", "max_uses": MAX_USES, "allowed_domains": ["docs.rs"]})
        );
    }
}
