//! Model providers: one streamed request at a time, cancellable.
//!
//! A provider turns a [`ModelRequest`] into a stream of [`ProviderEvent`]s that ends with
//! exactly one `Completed` event or one error. Retries happen inside the provider and are
//! reported as `Retry` events so the UI can discard partial output of the failed attempt.

pub mod anthropic;
pub mod catalog;
pub mod client;
pub mod endpoint;
pub mod fallback;
pub mod http;
pub mod openai;
pub mod prefix;
pub mod probe;
pub mod reasoning;
pub mod retry;
pub mod script;
pub mod sse;

use std::sync::Arc;

use futures_util::stream::BoxStream;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::types::events::ApiErrorKind;
use crate::types::message::{CacheControl, ContentBlock, Message, StopReason, Usage};

/// Everything one model call needs. Built fresh for each request by the turn driver.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub model: String,
    pub max_tokens: u32,
    pub system: Vec<SystemBlock>,
    pub messages: Arc<Vec<Message>>,
    pub tools: ToolSet,
    /// Indices of messages whose last cacheable block carries a prompt-cache breakpoint
    /// (applied while encoding, so the shared history is never copied for it).
    pub cache_breakpoints: Vec<usize>,
    /// Extended thinking and effort (`--max-thinking-tokens`, `--thinking`, `--effort`).
    pub reasoning: Reasoning,
    /// How many leading messages equal those of the previous request of the same conversation
    /// (the compactor knows; encoders then reuse their encodings without comparing them).
    pub unchanged: Option<prefix::Unchanged>,
}

/// How much the model reasons before answering; `None` fields leave the API's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reasoning {
    pub thinking: Option<Thinking>,
    /// `low`, `medium`, `high`, `xhigh` or `max`.
    pub effort: Option<String>,
    /// `--task-budget`: the run's token budget and what is left of it, for providers whose
    /// API takes one (Anthropic's `output_config.task_budget`); keel enforces it either way.
    pub task_budget: Option<TaskBudget>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskBudget {
    pub total: u64,
    pub remaining: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    Enabled { budget_tokens: u32 },
    Adaptive,
    Disabled,
}

/// The tools offered to the model, shared between requests and JSON-encoded once: they are
/// byte-stable for the session, so re-encoding them for every request would be wasted work.
#[derive(Debug, Clone)]
pub struct ToolSet {
    list: Arc<[ToolDefinition]>,
    /// Tools the provider runs itself, in its own wire shape (Anthropic's
    /// `{"type": "web_search_20250305", …}`); only the Anthropic encoder sends them.
    server: Arc<[Value]>,
    encoded: Arc<serde_json::value::RawValue>,
}

impl ToolSet {
    pub fn new(list: Vec<ToolDefinition>) -> ToolSet {
        ToolSet::with_server_tools(list, Vec::new())
    }

    /// Client tools and server tools (encoded after them).
    pub fn with_server_tools(list: Vec<ToolDefinition>, server: Vec<Value>) -> ToolSet {
        // Serializing plain data (strings and JSON values) cannot fail.
        let mut all: Vec<Value> = list.iter().filter_map(|d| serde_json::to_value(d).ok()).collect();
        all.extend(server.iter().cloned());
        let json = serde_json::to_string(&all).unwrap_or_else(|_| "[]".to_string());
        let encoded = serde_json::value::RawValue::from_string(json)
            .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned());
        ToolSet {
            list: list.into(),
            server: server.into(),
            encoded: encoded.into(),
        }
    }

    /// The provider's own tools of the set.
    pub fn server_tools(&self) -> &[Value] {
        &self.server
    }

    pub fn as_slice(&self) -> &[ToolDefinition] {
        &self.list
    }

    /// The JSON array of the definitions, as sent to the API.
    pub fn encoded(&self) -> &serde_json::value::RawValue {
        &self.encoded
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.server.is_empty()
    }

    /// Whether both are the same set (not merely equal): lets encoders cache per set.
    pub fn same(&self, other: &ToolSet) -> bool {
        Arc::ptr_eq(&self.list, &other.list) && Arc::ptr_eq(&self.server, &other.server)
    }
}

impl Default for ToolSet {
    fn default() -> Self {
        ToolSet::new(Vec::new())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemBlock {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl SystemBlock {
    pub fn text(text: impl Into<String>) -> Self {
        SystemBlock {
            kind: "text",
            text: text.into(),
            cache_control: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A tool call whose input could not be used: never executed, reported to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenToolCall {
    pub id: String,
    pub name: String,
    pub reason: BrokenReason,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BrokenReason {
    /// The input JSON fragments did not form valid JSON.
    Malformed { raw: String, error: String },
    /// The stream stopped (e.g. at max_tokens) before the call was complete.
    Truncated,
}

/// The assembled assistant message of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    pub id: String,
    pub model: String,
    pub content: Vec<ContentBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    /// Calls that must not run; `content` holds no `tool_use` block for truncated ones and an
    /// empty-input `tool_use` (never executed) for malformed ones so the history stays valid.
    pub broken_tool_calls: Vec<BrokenToolCall>,
}

impl ModelResponse {
    /// The model that answered, or `fallback` when the provider did not say.
    pub fn model_or(&self, fallback: &str) -> String {
        if self.model.is_empty() {
            fallback.to_string()
        } else {
            self.model.clone()
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// Raw wire event, for `--include-partial-messages`.
    Raw(Value),
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    ToolUseStarted {
        id: String,
        name: String,
    },
    /// Something the user should know about the request (a slow server, a switch to the
    /// fallback model, a response stopped by a content filter).
    Notice(String),
    /// A retryable failure; the attempt's partial output is void.
    Retry {
        attempt: u32,
        max_retries: u32,
        delay_ms: u64,
        status: Option<u16>,
        error: String,
        /// Time since the request was first sent.
        waited_ms: u64,
    },
    Completed(ModelResponse),
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ProviderError {
    #[error("authentication failed ({status}): {message}")]
    Auth { status: u16, message: String },
    #[error("the API rejected the request ({status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("gave up after {attempts} {}: {last}", if *.attempts == 1 { "attempt" } else { "attempts" })]
    RetriesExhausted {
        attempts: u32,
        last: String,
        /// The last attempt's HTTP status (none: a timeout, a reset, a broken stream).
        status: Option<u16>,
        /// The last attempt said the model is overloaded.
        overloaded: bool,
    },
    #[error("malformed response stream: {0}")]
    Stream(String),
    /// The server could not be reached at all (refused, unknown host), after a few attempts.
    #[error("{0}")]
    Unreachable(String),
    /// The server answered, but not with an event stream (an HTML page, a JSON document, a
    /// TLS mismatch): retrying cannot help.
    #[error("{0}")]
    BadResponse(String),
    /// The server reported an error inside the stream that retrying cannot fix.
    #[error("the server reported an error: {0}")]
    ServerError(String),
    /// The model was overloaded several times in a row and a fallback model is configured.
    #[error("the model is overloaded ({attempts} attempts in a row): {message}")]
    Overloaded { attempts: u32, message: String },
    #[error("request cancelled")]
    Cancelled,
    #[error("{0}")]
    Config(String),
    #[error("script provider: {0}")]
    Script(String),
}

impl ProviderError {
    /// HTTP status behind the error, for the result's `api_error_status`.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Auth { status, .. } | ProviderError::Rejected { status, .. } => Some(*status),
            ProviderError::RetriesExhausted { status, .. } => *status,
            _ => None,
        }
    }

    /// What kind of failure this is, for the result's `api_error_kind`: decided from the
    /// error's variant and status, so programs never read the message. `None` for a
    /// cancelled request (the turn reports the interruption instead).
    pub fn kind(&self) -> Option<ApiErrorKind> {
        Some(match self {
            ProviderError::Auth { .. } => ApiErrorKind::Authentication,
            ProviderError::Rejected { status: 404, .. } => ApiErrorKind::NotFound,
            ProviderError::Rejected { status: 429, .. } => ApiErrorKind::RateLimit,
            ProviderError::Rejected { status, .. } if *status >= 500 => ApiErrorKind::ServerError,
            ProviderError::Rejected { .. } => ApiErrorKind::InvalidRequest,
            ProviderError::RetriesExhausted { overloaded: true, .. } | ProviderError::Overloaded { .. } => {
                ApiErrorKind::Overloaded
            }
            ProviderError::RetriesExhausted { status: Some(429), .. } => ApiErrorKind::RateLimit,
            ProviderError::RetriesExhausted { status: Some(_), .. } | ProviderError::ServerError(_) => {
                ApiErrorKind::ServerError
            }
            ProviderError::RetriesExhausted { status: None, .. } => ApiErrorKind::Connection,
            ProviderError::Unreachable(_) => ApiErrorKind::Unreachable,
            ProviderError::BadResponse(_) => ApiErrorKind::BadResponse,
            ProviderError::Stream(_) => ApiErrorKind::MalformedStream,
            ProviderError::Config(_) | ProviderError::Script(_) => ApiErrorKind::Configuration,
            ProviderError::Cancelled => return None,
        })
    }
}

pub type ProviderStream = BoxStream<'static, Result<ProviderEvent, ProviderError>>;

/// A stream-level failure found by an assembler. `retryable` ones make the client send the
/// request again; `overloaded` ones count towards switching to the fallback model.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFailure {
    pub message: String,
    pub retryable: bool,
    pub overloaded: bool,
    /// The server ran out of context while answering (llama.cpp's slots share one context):
    /// sending the same request again is tried once only.
    pub context_full: bool,
}

impl StreamFailure {
    pub fn retry(message: impl Into<String>) -> StreamFailure {
        StreamFailure {
            message: message.into(),
            retryable: true,
            overloaded: false,
            context_full: false,
        }
    }

    pub fn fatal(message: impl Into<String>) -> StreamFailure {
        StreamFailure {
            message: message.into(),
            retryable: false,
            overloaded: false,
            context_full: false,
        }
    }
}

/// A pure state machine that turns one protocol's SSE events into a [`ModelResponse`].
pub trait StreamAssembler: Send {
    /// Feeds one event (`event` is the SSE event name, often empty); returns UI events.
    fn handle(&mut self, event: &str, data: &str) -> Result<Vec<ProviderEvent>, StreamFailure>;
    /// The stream said it is over (no need to wait for the connection to close).
    fn is_done(&self) -> bool;
    /// The response is complete enough to finish if the stream goes quiet (a stop reason came;
    /// only optional trailers such as usage may follow).
    fn can_finish(&self) -> bool {
        self.is_done()
    }
    /// Ends the stream; an incomplete response is a retryable failure.
    fn finish(self) -> Result<ModelResponse, StreamFailure>;
}

pub trait Provider: Send + Sync {
    /// Short name for `system/init` and diagnostics.
    fn name(&self) -> &str;
    /// Streams one request. The stream ends after `Completed` or an error; cancelling the token
    /// ends it promptly with [`ProviderError::Cancelled`].
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ProviderStream;
}

/// Adapts a spawned producer writing into a channel to a [`ProviderStream`].
pub(crate) fn channel_stream(rx: tokio::sync::mpsc::Receiver<Result<ProviderEvent, ProviderError>>) -> ProviderStream {
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_set_encodes_once_what_serde_would_encode() {
        let list = vec![ToolDefinition {
            name: "Read".into(),
            description: "reads \"files\"\n".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            cache_control: None,
        }];
        let set = ToolSet::new(list.clone());
        assert_eq!(set.encoded().get(), serde_json::to_string(&list).unwrap());
        assert_eq!(set.as_slice(), list.as_slice());
        let request = ModelRequest {
            model: "m".into(),
            max_tokens: 10,
            system: Vec::new(),
            messages: Arc::new(Vec::new()),
            tools: set,
            cache_breakpoints: Vec::new(),
            unchanged: None,
            reasoning: Reasoning::default(),
        };
        let body: Value = serde_json::from_slice(&anthropic::wire_body(&request).unwrap()).unwrap();
        assert_eq!(body["tools"], serde_json::to_value(&list).unwrap());
        let empty = ModelRequest {
            tools: ToolSet::default(),
            ..request
        };
        let body: Value = serde_json::from_slice(&anthropic::wire_body(&empty).unwrap()).unwrap();
        assert!(body.get("tools").is_none(), "no empty tools array");
    }
}
