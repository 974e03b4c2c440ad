//! Provider-neutral conversation types.
//!
//! The shapes follow the Anthropic Messages API because it is the richest of the wire formats
//! keel speaks (thinking blocks with signatures, tool results with image blocks); other
//! providers map to and from these types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        Message {
            role: Role::Assistant,
            content,
        }
    }

    /// All text blocks joined, without thinking or tool blocks.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text, .. } = block {
                out.push_str(text);
            }
        }
        out
    }

    pub fn tool_uses(&self) -> impl Iterator<Item = ToolUse<'_>> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some(ToolUse { id, name, input }),
            _ => None,
        })
    }
}

/// A borrowed view of one tool call inside an assistant message.
#[derive(Debug, Clone, Copy)]
pub struct ToolUse<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub input: &'a Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: ToolResultContent,
        #[serde(default)]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// Extended thinking; must be sent back unchanged (with its signature) while a tool loop
    /// continues.
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    /// A call of a tool the provider runs itself (Anthropic's web search): the API requires it
    /// back unchanged, with its result, while the conversation goes on.
    ServerToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// The provider's own search results for a [`ContentBlock::ServerToolUse`] (titles, URLs and
    /// encrypted page content), or its error; kept exactly as received.
    WebSearchToolResult {
        tool_use_id: String,
        content: Value,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    pub fn tool_result(tool_use_id: impl Into<String>, content: ToolResultContent, is_error: bool) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content,
            is_error,
            cache_control: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    #[serde(rename = "type")]
    pub kind: String,
}

impl CacheControl {
    pub fn ephemeral() -> Self {
        CacheControl {
            kind: "ephemeral".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageSource {
    #[serde(rename = "type")]
    pub kind: String,
    pub media_type: String,
    pub data: String,
}

/// The body of a tool result: plain text, or text and image blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<ToolResultBlock>),
}

impl ToolResultContent {
    /// The textual part of the result (images are represented by a marker).
    pub fn as_text(&self) -> String {
        match self {
            ToolResultContent::Text(t) => t.clone(),
            ToolResultContent::Blocks(blocks) => {
                let mut out = String::new();
                for b in blocks {
                    match b {
                        ToolResultBlock::Text { text } => out.push_str(text),
                        ToolResultBlock::Image { source } => out.push_str(&format!("[image {}]", source.media_type)),
                    }
                }
                out
            }
        }
    }

    pub fn text_len(&self) -> usize {
        match self {
            ToolResultContent::Text(t) => t.len(),
            ToolResultContent::Blocks(blocks) => blocks
                .iter()
                .map(|b| match b {
                    ToolResultBlock::Text { text } => text.len(),
                    ToolResultBlock::Image { .. } => 0,
                })
                .sum(),
        }
    }
}

impl From<String> for ToolResultContent {
    fn from(s: String) -> Self {
        ToolResultContent::Text(s)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultBlock {
    Text { text: String },
    Image { source: ImageSource },
}

/// Token usage as reported by the provider. `input_tokens` is the uncached part only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// The part of `cache_creation_input_tokens` written with a one-hour lifetime (the API's
    /// `cache_creation.ephemeral_1h_input_tokens`); the rest lived five minutes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_1h_input_tokens: u64,
    /// Searches the provider's own web search tool ran for the request (the API's
    /// `server_tool_use.web_search_requests`), billed per search.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_search_requests: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_creation_1h_input_tokens += other.cache_creation_1h_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.output_tokens += other.output_tokens;
        self.web_search_requests += other.web_search_requests;
    }

    /// Tokens the request occupied in the context window.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    PauseTurn,
    Refusal,
    #[serde(untagged)]
    Other(String),
}

impl StopReason {
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ToolUse => "tool_use",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::Other(s) => s,
        }
    }

    pub fn parse(s: &str) -> Self {
        serde_json::from_value(Value::String(s.to_string())).unwrap_or_else(|_| StopReason::Other(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_result_serializes_in_wire_shape() {
        let b = ContentBlock::tool_result("toolu_1", ToolResultContent::Text("ok".into()), true);
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            json!({"type":"tool_result","tool_use_id":"toolu_1","content":"ok","is_error":true})
        );
    }

    #[test]
    fn thinking_round_trips_with_signature() {
        let v = json!({"type":"thinking","thinking":"hmm","signature":"sig=="});
        let b: ContentBlock = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&b).unwrap(), v);
        let r = json!({"type":"redacted_thinking","data":"opaque"});
        let b: ContentBlock = serde_json::from_value(r.clone()).unwrap();
        assert_eq!(serde_json::to_value(&b).unwrap(), r);
    }

    #[test]
    fn server_tool_blocks_round_trip() {
        for v in [
            json!({"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}),
            json!({"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://a.example/","title":"A","encrypted_content":"Eq==","page_age":null}]}),
        ] {
            let b: ContentBlock = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&b).unwrap(), v);
        }
    }

    #[test]
    fn stop_reason_parses_known_and_unknown() {
        assert_eq!(StopReason::parse("tool_use"), StopReason::ToolUse);
        assert_eq!(
            StopReason::parse("model_context_window_exceeded").as_str(),
            "model_context_window_exceeded"
        );
    }
}
