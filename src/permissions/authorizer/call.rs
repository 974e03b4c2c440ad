//! The call as the permission check sees it: its tool, input, declaration and subject, read
//! once. Separate from the decision so the callers that build a call need only this type.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::shell::plan::CommandPlan;
use crate::tools::{Tool, kinds};
use crate::types::tool::{Declared, Subject};

/// A call as the permission check sees it.
pub struct Call<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    /// The tool says this call only observes.
    pub read_only: bool,
    pub declared: Declared,
    pub subject: Subject,
    /// A command line read once (strict and tolerant), when the call runs one.
    pub plan: Option<Arc<CommandPlan>>,
    /// The session's own folder: its spilled results and shell output are read without asking.
    pub session_dir: Option<PathBuf>,
}

impl<'a> Call<'a> {
    /// A call of a registered tool: its own declaration and reading of the input.
    pub fn of(tool: &'a dyn Tool, name: &'a str, input: &'a Value, cwd: &Path) -> Self {
        Call {
            tool: name,
            input,
            read_only: tool.is_read_only(input),
            declared: tool.declared(),
            subject: tool.subject(input, cwd),
            plan: None,
            session_dir: None,
        }
        .planned()
    }

    /// A call known only by its tool's name (as `tools::kinds` knows that name).
    pub fn named(tool: &'a str, input: &'a Value, read_only: bool, cwd: &Path) -> Self {
        Call {
            tool,
            input,
            read_only,
            declared: kinds::declared(tool),
            subject: kinds::subject(tool, input, cwd),
            plan: None,
            session_dir: None,
        }
        .planned()
    }

    /// The call made in a session whose own folder is `dir` (its model output is read unasked).
    pub fn in_session(mut self, dir: &Path) -> Self {
        self.session_dir = Some(dir.to_path_buf());
        self
    }

    /// Reads the command line of a call that runs one, once.
    fn planned(mut self) -> Self {
        if let (Subject::Command(line), true) = (&self.subject, self.declared.effects.runs_commands) {
            self.plan = Some(CommandPlan::new(line));
        }
        self
    }
}
