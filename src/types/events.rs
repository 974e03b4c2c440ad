//! Events the engine emits; the headless printer, the SDK protocol and the TUI consume the
//! same stream. Plain data at the bottom of the module graph: the engine, hooks and front ends
//! all depend on it, it depends on none of them.

use serde_json::Value;
use tokio::sync::mpsc;

use super::message::{Message, ToolResultContent, Usage};
use super::permission::{Mode, PermissionPrompt};

/// Sends engine events to whoever consumes them; a consumer that went away is not an error.
#[derive(Clone)]
pub struct EventSink(mpsc::UnboundedSender<EngineEvent>);

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<EngineEvent>) -> Self {
        EventSink(tx)
    }

    /// A sink and the receiver its events arrive on.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<EngineEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventSink(tx), rx)
    }

    pub fn emit(&self, event: EngineEvent) {
        let _ = self.0.send(event);
    }

    pub fn notice(&self, level: NoticeLevel, message: impl Into<String>) {
        let message = message.into();
        tracing::info!(?level, %message, "notice");
        self.emit(EngineEvent::Notice { level, message });
    }
}

/// One hook run, for the transcript and `stream-json`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookRun {
    /// Pairs this run with its `HookStarted` event.
    pub hook_id: String,
    /// `Event:target` (`PreToolUse:Bash`, `SessionStart:startup`), or the event alone.
    pub hook_name: String,
    pub event: String,
    pub handler: String,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub outcome: String,
    pub decision: Option<String>,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

#[derive(Debug)]
pub enum EngineEvent {
    /// A model request is about to be sent (1-based index within the turn).
    RequestStarted {
        request: u32,
    },
    TextDelta(String),
    ThinkingDelta(String),
    /// The model started writing a tool call.
    ToolCallStreaming {
        id: String,
        name: String,
    },
    /// A raw provider event, for `--include-partial-messages`.
    RawStream(Value),
    /// A retryable API failure; partial output streamed since the last request is void.
    Retry {
        attempt: u32,
        max_retries: u32,
        delay_ms: u64,
        status: Option<u16>,
        error: String,
        /// Time since the request was first sent.
        waited_ms: u64,
    },
    /// A complete assistant message, as appended to the history.
    Assistant {
        id: String,
        model: String,
        message: Message,
        stop_reason: String,
        usage: Usage,
    },
    ToolStarted {
        id: String,
        name: String,
        input: Value,
    },
    ToolFinished {
        id: String,
        name: String,
        content: ToolResultContent,
        is_error: bool,
        structured: Value,
        duration_ms: u64,
    },
    /// The user message carrying tool results, as appended to the history.
    ToolResults(Message),
    PermissionDenied {
        tool_name: String,
        tool_use_id: String,
        tool_input: Value,
        /// What the model was told.
        message: String,
    },
    /// How a call's permission was decided (for `tool_result_meta`): `decision` is `accept` or
    /// `reject`; `source` who decided (`config`, `hook`, `user`); `reason_type` why, when known
    /// (`rule`, `mode`, `read_only`, `safe_command`, `hook`).
    PermissionDecided {
        tool_use_id: String,
        decision: &'static str,
        source: &'static str,
        reason_type: Option<&'static str>,
    },
    /// The engine waits for a human decision; answer through `prompt.reply`.
    PermissionRequest(PermissionPrompt),
    /// A hook handler is about to run.
    HookStarted {
        hook_id: String,
        hook_name: String,
        event: String,
    },
    /// A hook handler ran (or could not run).
    HookRun(HookRun),
    /// The permission mode changed (Shift+Tab, ExitPlanMode approval).
    ModeChanged(Mode),
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// Compaction of the conversation is about to start (the PreCompact point).
    CompactStarted {
        trigger: Trigger,
        custom_instructions: Option<String>,
    },
    /// The conversation was compacted (the PostCompact point); `pre_tokens`/`post_tokens` are
    /// the estimated request sizes before and after.
    Compacted {
        trigger: Trigger,
        pre_tokens: u64,
        post_tokens: u64,
    },
    TurnFinished(TurnOutcome),
    /// A message of a sub-agent the Agent call `parent_tool_use_id` started (its `Assistant`
    /// and `ToolResults` events), for front ends that show them nested.
    Subagent {
        parent_tool_use_id: String,
        event: Box<EngineEvent>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultSubtype {
    #[default]
    Success,
    ErrorMaxTurns,
    ErrorDuringExecution,
    ErrorMaxBudgetUsd,
    /// `--task-budget` spent.
    ErrorMaxTaskBudget,
    ErrorMaxStructuredOutputRetries,
}

impl ResultSubtype {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultSubtype::Success => "success",
            ResultSubtype::ErrorMaxTurns => "error_max_turns",
            ResultSubtype::ErrorDuringExecution => "error_during_execution",
            ResultSubtype::ErrorMaxBudgetUsd => "error_max_budget_usd",
            ResultSubtype::ErrorMaxTaskBudget => "error_max_task_budget",
            ResultSubtype::ErrorMaxStructuredOutputRetries => "error_max_structured_output_retries",
        }
    }
}

/// Why the turn's loop stopped, in the reference's `terminal_reason` vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TerminalReason {
    /// The model finished (or a `/compact` turn ran).
    #[default]
    Completed,
    /// Interrupted while the model was answering.
    AbortedStreaming,
    /// Interrupted while tools ran.
    AbortedTools,
    MaxTurns,
    /// The API failed (after retries) or the provider stream broke.
    ApiError,
    PromptTooLong,
    /// A hook said `continue: false`, or a UserPromptSubmit hook rejected the prompt.
    HookStopped,
    /// A Stop hook said `continue: false`.
    StopHookPrevented,
    BudgetExhausted,
    StructuredOutputRetryExhausted,
}

impl TerminalReason {
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalReason::Completed => "completed",
            TerminalReason::AbortedStreaming => "aborted_streaming",
            TerminalReason::AbortedTools => "aborted_tools",
            TerminalReason::MaxTurns => "max_turns",
            TerminalReason::ApiError => "api_error",
            TerminalReason::PromptTooLong => "prompt_too_long",
            TerminalReason::HookStopped => "hook_stopped",
            TerminalReason::StopHookPrevented => "stop_hook_prevented",
            TerminalReason::BudgetExhausted => "budget_exhausted",
            TerminalReason::StructuredOutputRetryExhausted => "structured_output_retry_exhausted",
        }
    }
}

/// What kind of model API failure ended a turn (the result's `api_error_kind`), so a program
/// driving keel tells a rate limit from a bad key without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiErrorKind {
    /// The key was refused (401, 403).
    Authentication,
    /// 429, after keel's retries.
    RateLimit,
    /// The model was overloaded (529, 503), after keel's retries.
    Overloaded,
    /// Another 5xx status, after keel's retries, or an error the server reported in the stream.
    ServerError,
    /// The request is larger than the model's context window.
    ContextWindow,
    /// 404: no such model or endpoint.
    NotFound,
    /// Another 4xx status: the server refused the request as it was.
    InvalidRequest,
    /// The server could not be reached (refused, unknown host).
    Unreachable,
    /// Every attempt ended without a status: timeouts, resets, streams cut short.
    Connection,
    /// The server answered, but not with an event stream.
    BadResponse,
    /// The event stream could not be read.
    MalformedStream,
    /// keel's own configuration of the provider is wrong.
    Configuration,
}

impl ApiErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiErrorKind::Authentication => "authentication",
            ApiErrorKind::RateLimit => "rate_limit",
            ApiErrorKind::Overloaded => "overloaded",
            ApiErrorKind::ServerError => "server_error",
            ApiErrorKind::ContextWindow => "context_window",
            ApiErrorKind::NotFound => "not_found",
            ApiErrorKind::InvalidRequest => "invalid_request",
            ApiErrorKind::Unreachable => "unreachable",
            ApiErrorKind::Connection => "connection",
            ApiErrorKind::BadResponse => "bad_response",
            ApiErrorKind::MalformedStream => "malformed_stream",
            ApiErrorKind::Configuration => "configuration",
        }
    }
}

/// How one user turn ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnOutcome {
    pub subtype: ResultSubtype,
    pub is_error: bool,
    /// The final assistant text (success) or the error message.
    pub result: String,
    pub errors: Vec<String>,
    pub stop_reason: Option<String>,
    pub num_turns: u32,
    pub duration_ms: u64,
    pub duration_api_ms: u64,
    pub interrupted: bool,
    pub api_error_status: Option<u16>,
    pub api_error_kind: Option<ApiErrorKind>,
    pub terminal_reason: TerminalReason,
    /// The validated final output when a JSON schema was asked for (`--json-schema`).
    pub structured_output: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Auto,
    Manual,
}

impl Trigger {
    /// The reference's names (`PreCompact` matcher, `compact_boundary`).
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}
