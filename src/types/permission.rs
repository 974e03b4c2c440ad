//! Permission modes, the question put to a human and its answer, the update objects a program
//! sends back, and the preview an approval dialog shows: plain data shared by the engine,
//! the permission layer and every front end.

use std::path::PathBuf;

use serde_json::Value;
use tokio::sync::oneshot;

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

    /// How much runs without a question: plan < default = dontAsk (which denies instead of
    /// asking) < acceptEdits < bypassPermissions. Ceilings and "only tighten" compare by it.
    pub fn latitude(self) -> u8 {
        match self {
            Mode::Plan => 0,
            Mode::Default | Mode::DontAsk => 1,
            Mode::AcceptEdits => 2,
            Mode::BypassPermissions => 3,
        }
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

    /// The next mode for Shift+Tab that does not pass `ceiling`.
    pub fn cycle_within(self, bypass_available: bool, ceiling: Option<Mode>) -> Mode {
        let mut next = self.cycle(bypass_available);
        // Four steps visit every mode of the cycle once; `plan` never passes a ceiling.
        for _ in 0..4 {
            if ceiling.is_none_or(|c| next.latitude() <= c.latitude()) {
                return next;
            }
            next = next.cycle(bypass_available);
        }
        Mode::Plan
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
    pub preview: Preview,
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
        updates: Vec<Update>,
    },
    /// A program's refusal: `message` is what the model is told; `interrupt` ends the turn.
    Reject {
        message: String,
        interrupt: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    Allow,
    Ask,
    Deny,
}

impl Behavior {
    pub fn as_str(self) -> &'static str {
        match self {
            Behavior::Allow => "allow",
            Behavior::Ask => "ask",
            Behavior::Deny => "deny",
        }
    }
}

/// Where a permission update lives: only this session, or also a settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// This session only (also the reference's `cliArg`).
    Session,
    /// `.keel/settings.local.json` in the project.
    LocalSettings,
    /// `.keel/settings.json` in the project.
    ProjectSettings,
    /// `$KEEL_HOME/settings.json`.
    UserSettings,
}

impl Destination {
    pub fn parse(s: &str) -> Option<Destination> {
        match s {
            "session" | "cliArg" => Some(Destination::Session),
            "localSettings" => Some(Destination::LocalSettings),
            "projectSettings" => Some(Destination::ProjectSettings),
            "userSettings" => Some(Destination::UserSettings),
            _ => None,
        }
    }
}

/// What a rules update does with the destination's rules of its behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleOp {
    Add,
    /// The given rules become the destination's only rules of that behaviour.
    Replace,
    Remove,
}

/// An update a program sent with its approval (`updatedPermissions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    Rules {
        op: RuleOp,
        behavior: Behavior,
        rules: Vec<String>,
        destination: Destination,
    },
    SetMode {
        mode: Mode,
        destination: Destination,
    },
    Directories {
        add: bool,
        directories: Vec<String>,
        destination: Destination,
    },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preview {
    /// Why keel asks (the rule or protection that applies).
    pub reason: String,
    pub body: Body,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub enum Body {
    /// Nothing specific: show the prompt's `detail`.
    #[default]
    Detail,
    Command {
        command: String,
        description: Option<String>,
    },
    /// A file that does not exist yet, and all it will contain.
    NewFile {
        path: PathBuf,
        content: String,
    },
    /// A change to an existing file.
    Diff {
        path: PathBuf,
        lines: Vec<DiffLine>,
        /// Something the reader must know (the anchor was not found, the final newline changes).
        note: Option<String>,
    },
    Plan(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Add,
    Remove,
    /// Unchanged lines left out between two changes.
    Gap,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    /// 1-based line number before the change (context and removed lines).
    pub old: Option<usize>,
    /// 1-based line number after the change (context and added lines).
    pub new: Option<usize>,
    pub text: String,
}

impl Body {
    /// Added and removed lines of a diff.
    pub fn stats(&self) -> (usize, usize) {
        match self {
            Body::Diff { lines, .. } => (
                lines.iter().filter(|l| l.kind == LineKind::Add).count(),
                lines.iter().filter(|l| l.kind == LineKind::Remove).count(),
            ),
            Body::NewFile { content, .. } => (content.lines().count(), 0),
            _ => (0, 0),
        }
    }
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

    #[test]
    fn the_cycle_skips_modes_above_a_ceiling() {
        assert_eq!(Mode::Default.cycle_within(true, Some(Mode::Default)), Mode::Plan);
        assert_eq!(Mode::Plan.cycle_within(true, Some(Mode::AcceptEdits)), Mode::Default);
        assert_eq!(Mode::Plan.cycle_within(true, Some(Mode::Plan)), Mode::Plan);
        assert_eq!(Mode::Plan.cycle_within(true, None), Mode::BypassPermissions);
    }
}
