//! What a tool call produces and the task list it keeps: plain data for the engine, the
//! ledger, compaction, the transcript and front ends.

use serde_json::Value;

use super::message::ToolResultContent;

/// One entry of the session's task list, in the reference's TodoWrite shape, with the task
/// tools' dependency fields (`blockedBy`, `blocks`: ids of other entries; see `todo_deps`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Todo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub content: String,
    pub status: TodoStatus,
    #[serde(rename = "activeForm")]
    pub active_form: String,
    #[serde(rename = "blockedBy", default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    #[default]
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

    /// Adds text at the end of what the model sees (a note after the tool's own result).
    pub fn append_text(&mut self, more: &str) {
        match &mut self.content {
            ToolResultContent::Text(t) => t.push_str(more),
            ToolResultContent::Blocks(blocks) => {
                blocks.push(super::message::ToolResultBlock::Text { text: more.into() })
            }
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

/// What a tool's calls may do, as the tool declares it. Permissions, compaction, the evidence
/// ledger and the approval dialog decide on these facts, never on a tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Effects {
    /// Only observes (reads, searches, lists): an old result can be folded away.
    pub read_only: bool,
    /// Changes the file its input names.
    pub edits_files: bool,
    /// Runs shell commands.
    pub runs_commands: bool,
    /// Talks to a server.
    pub network: bool,
    /// Starts a sub-agent, whose own calls are checked one by one.
    pub spawns_agent: bool,
    /// Loads instructions that may grant tools (a skill).
    pub loads_skill: bool,
    /// Ends plan mode (a human approves the plan).
    pub leaves_plan: bool,
    /// Changes only the session's own state (its task list, its background shells).
    pub session_only: bool,
}

impl Effects {
    pub const READS: Effects = Effects {
        read_only: true,
        edits_files: false,
        runs_commands: false,
        network: false,
        spawns_agent: false,
        loads_skill: false,
        leaves_plan: false,
        session_only: false,
    };
    pub const EDITS: Effects = Effects {
        read_only: false,
        edits_files: true,
        ..Effects::NONE
    };
    pub const RUNS: Effects = Effects {
        read_only: false,
        runs_commands: true,
        ..Effects::NONE
    };
    pub const SESSION: Effects = Effects {
        session_only: true,
        ..Effects::NONE
    };
    /// Nothing declared: checked like any call that may change something.
    pub const NONE: Effects = Effects {
        read_only: false,
        ..Effects::READS
    };
}

/// What the specifier of a tool's permission rules names: `Bash(npm test:*)` a command
/// prefix, `Read(/src/**)` a path, `WebFetch(domain:example.com)` a host, `Agent(Explore)` or
/// `Tool(param:value)` a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuleGrammar {
    #[default]
    Key,
    Path,
    Command,
    /// `domain:example.com` (that host) or `domain:*.example.com` (its subdomains).
    Domain,
}

/// A tool's declaration: its effects, its rule grammar, and the other rule names that cover
/// it (as `Edit(...)` rules cover Write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Declared {
    pub effects: Effects,
    pub grammar: RuleGrammar,
    pub covered_by: &'static [&'static str],
}

/// What one call acts on, as its tool reads its input.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Subject {
    #[default]
    None,
    /// A path, resolved against the working directory (links not yet followed).
    Path(std::path::PathBuf),
    /// A shell command line.
    Command(String),
    /// A URL.
    Url(String),
    /// A name the rules match (an agent type, a skill).
    Key(String),
}
