//! Events the engine emits; the headless printer and the TUI consume the same stream.

use serde_json::Value;

use crate::message::{Message, ToolResultContent, Usage};

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
    },
    /// The engine waits for a human decision; answer through `prompt.reply`.
    PermissionRequest(crate::permissions::PermissionPrompt),
    /// A hook handler ran (or could not run).
    HookRun(crate::hooks::HookRun),
    /// The permission mode changed (Shift+Tab, ExitPlanMode approval).
    ModeChanged(crate::permissions::Mode),
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// Compaction of the conversation is about to start (the PreCompact point).
    CompactStarted {
        trigger: crate::compact::autocompact::Trigger,
        custom_instructions: Option<String>,
    },
    /// The conversation was compacted (the PostCompact point); `pre_tokens`/`post_tokens` are
    /// the estimated request sizes before and after.
    Compacted {
        trigger: crate::compact::autocompact::Trigger,
        pre_tokens: u64,
        post_tokens: u64,
    },
    TurnFinished(TurnOutcome),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultSubtype {
    Success,
    ErrorMaxTurns,
    ErrorDuringExecution,
}

impl ResultSubtype {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultSubtype::Success => "success",
            ResultSubtype::ErrorMaxTurns => "error_max_turns",
            ResultSubtype::ErrorDuringExecution => "error_during_execution",
        }
    }
}

/// How one user turn ended.
#[derive(Debug, Clone, PartialEq)]
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
}
