//! What a tool call produces and the task list it keeps: plain data for the engine, the
//! ledger, compaction, the transcript and front ends.

use serde_json::Value;

use super::message::ToolResultContent;

/// One entry of the session's task list, in the reference's TodoWrite shape.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// The result of a tool call as the model and hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: ToolResultContent,
    pub is_error: bool,
    /// Structured form for `tool_use_result` (stream-json) and hooks' `tool_response`.
    pub structured: Value,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolOutput {
            structured: Value::String(text.clone()),
            content: ToolResultContent::Text(text),
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolOutput {
            structured: Value::String(format!("Error: {text}")),
            content: ToolResultContent::Text(format!("<tool_use_error>{text}</tool_use_error>")),
            is_error: true,
        }
    }

    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = structured;
        self
    }
}

/// A failure of a tool call; becomes an `is_error` result, never an empty one.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    Invalid(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the call was interrupted before it finished")]
    Cancelled,
}

impl ToolError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        ToolError::Invalid(msg.into())
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            context: context.into(),
            source,
        }
    }
}
