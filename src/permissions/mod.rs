//! Permission modes and the approval protocol between the engine and a front end.
//!
//! The rule engine (allow/ask/deny, compound shell commands, protected paths) plugs into the
//! tool pipeline's authorization step; this module also defines how the engine asks a human.

pub mod authorizer;
pub mod commands;
pub mod config;
pub mod option_tables;
pub mod options;
pub mod preview;
pub mod protected;
pub mod rules;
pub mod shell;
pub mod updates;

use serde_json::Value;
use tokio::sync::oneshot;

pub use authorizer::{AskInfo, Authorizer, Decision, HookDecision, Verdict};

/// The reference's permission modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Default,
    AcceptEdits,
    Plan,
    DontAsk,
    BypassPermissions,
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::DontAsk,
        Mode::BypassPermissions,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::DontAsk => "dontAsk",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// The next mode for Shift+Tab: default → acceptEdits → plan → (bypass when it was enabled
    /// at launch) → default.
    pub fn cycle(self, bypass_available: bool) -> Mode {
        match self {
            Mode::Default => Mode::AcceptEdits,
            Mode::AcceptEdits => Mode::Plan,
            Mode::Plan if bypass_available => Mode::BypassPermissions,
            _ => Mode::Default,
        }
    }
}

/// A question to the human: may this tool call run?
#[derive(Debug)]
pub struct PermissionPrompt {
    pub tool_use_id: String,
    pub tool_name: String,
    pub input: Value,
    /// What exactly would happen (the command, or a diff of the edit), for display.
    pub detail: String,
    /// The rule that "always allow" would save, e.g. `Bash(npm test:*)`.
    pub suggested_rule: Option<String>,
    /// What the call would do, for a dialog to show as given (whole command, file, diff).
    pub preview: preview::Preview,
    /// Why keel asks (which rule or protection), for programs that answer (SDK `can_use_tool`).
    pub reason: String,
    /// What "always allow" would do, as update objects (`permission_suggestions`).
    pub suggestions: Vec<Value>,
    pub reply: oneshot::Sender<PermissionReply>,
}

/// The human's answer. A dropped reply channel counts as a denial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionReply {
    AllowOnce,
    /// Allow and remember: for the session, and saved as a rule when the prompt suggested one.
    AllowAlways,
    Deny {
        feedback: Option<String>,
    },
    /// A program's approval (SDK `can_use_tool`): the call runs with `updated_input` when given
    /// (validated again), and the updates are applied first.
    Allow {
        updated_input: Option<Value>,
        updates: Vec<updates::Update>,
    },
    /// A program's refusal: `message` is what the model is told; `interrupt` ends the turn.
    Reject {
        message: String,
        interrupt: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_cycle() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        assert_eq!(Mode::parse("auto"), None);
        assert_eq!(Mode::Default.cycle(false), Mode::AcceptEdits);
        assert_eq!(Mode::Plan.cycle(false), Mode::Default);
        assert_eq!(Mode::Plan.cycle(true), Mode::BypassPermissions);
        assert_eq!(Mode::BypassPermissions.cycle(true), Mode::Default);
    }
}
