//! Hook events around a tool round and the end of a turn: PostToolBatch (every call of the
//! round with its result), TaskCreated / TaskCompleted (the task list changed), CwdChanged (the
//! shell's `cd`), and StopFailure (the turn ended on an API error).

use std::path::PathBuf;

use serde_json::{Value, json};

use super::Engine;
use super::pipeline::CallRecord;
use crate::hooks::{Event, fields};
use crate::types::events::{TerminalReason, TurnOutcome};
use crate::types::tool::{Todo, TodoStatus};

/// What the state before a tool round was, for the events after it.
pub(super) struct BeforeRound {
    todos: Vec<Todo>,
    cwd: PathBuf,
}

/// What the round's hooks left: notes for the model and a request to stop.
#[derive(Default)]
pub(super) struct RoundVerdict {
    pub notes: Vec<String>,
    pub stop: Option<String>,
}

impl Engine {
    pub(super) fn before_round(&self) -> BeforeRound {
        BeforeRound {
            todos: self.session.services.todos(),
            cwd: self.session.services.shell.cwd(),
        }
    }

    /// Fires the events a finished tool round caused.
    pub(super) async fn after_round(&mut self, before: BeforeRound, records: &[CallRecord]) -> RoundVerdict {
        let mut verdict = RoundVerdict::default();
        self.task_events(&before.todos, &mut verdict).await;
        let cwd = self.session.services.shell.cwd();
        if cwd != before.cwd && self.hooks.has(Event::CwdChanged) {
            let agg = self
                .hooks
                .fire(
                    Event::CwdChanged,
                    None,
                    self.session.services.mode(),
                    fields([
                        ("old_cwd", before.cwd.display().to_string().into()),
                        ("new_cwd", cwd.display().to_string().into()),
                    ]),
                    &self.events,
                )
                .await;
            verdict.notes.extend(agg.context);
            verdict.stop = verdict.stop.or(agg.stop);
        }
        if self.hooks.has(Event::PostToolBatch) && !records.is_empty() {
            let calls: Vec<Value> = records
                .iter()
                .map(|r| {
                    json!({
                        "tool_name": r.call.name,
                        "tool_input": super::tool_hooks::absolute_input(&r.call.input, &self.session.services.cwd),
                        "tool_use_id": r.call.id,
                        "tool_response": r.output.structured,
                        "is_error": r.output.is_error,
                    })
                })
                .collect();
            let agg = self
                .hooks
                .fire(
                    Event::PostToolBatch,
                    None,
                    self.session.services.mode(),
                    fields([("tool_calls", Value::Array(calls))]),
                    &self.events,
                )
                .await;
            verdict.notes.extend(agg.context.iter().cloned());
            // A block ends the loop: the model does not get another request this turn.
            if agg.blocked() {
                verdict.stop.get_or_insert(agg.block_reason());
            }
            verdict.stop = verdict.stop.or(agg.stop);
        }
        verdict
    }

    /// TaskCreated for each new item of the task list, TaskCompleted for each newly completed
    /// one. A TaskCompleted hook that blocks puts the item back to its earlier status and tells
    /// the model why.
    async fn task_events(&mut self, before: &[Todo], verdict: &mut RoundVerdict) {
        let wants = self.hooks.has(Event::TaskCreated) || self.hooks.has(Event::TaskCompleted);
        let mut now = self.session.services.todos();
        if !wants || now == before {
            return;
        }
        let mut reverted = false;
        for (i, todo) in now.iter_mut().enumerate() {
            let earlier = before.iter().find(|t| t.content == todo.content);
            let task = fields([
                ("task_id", (i + 1).to_string().into()),
                ("task_subject", todo.content.clone().into()),
                ("task_description", todo.active_form.clone().into()),
            ]);
            if earlier.is_none() && self.hooks.has(Event::TaskCreated) {
                let agg = self
                    .hooks
                    .fire(
                        Event::TaskCreated,
                        None,
                        self.session.services.mode(),
                        task.clone(),
                        &self.events,
                    )
                    .await;
                verdict.notes.extend(agg.context.iter().cloned());
                if agg.blocked() {
                    verdict.notes.push(format!(
                        "A TaskCreated hook objects to the task `{}`:\n{}",
                        todo.content,
                        agg.block_reason()
                    ));
                }
                verdict.stop = verdict.stop.take().or(agg.stop);
            }
            let completed_now =
                todo.status == TodoStatus::Completed && earlier.is_none_or(|t| t.status != TodoStatus::Completed);
            if completed_now && self.hooks.has(Event::TaskCompleted) {
                let agg = self
                    .hooks
                    .fire(
                        Event::TaskCompleted,
                        None,
                        self.session.services.mode(),
                        task,
                        &self.events,
                    )
                    .await;
                verdict.notes.extend(agg.context.iter().cloned());
                if agg.blocked() {
                    todo.status = earlier.map_or(TodoStatus::InProgress, |t| t.status);
                    reverted = true;
                    verdict.notes.push(format!(
                        "A TaskCompleted hook did not accept the task `{}` as completed; keel set it back to {}. \
                         The hook says:\n{}",
                        todo.content,
                        status_word(todo.status),
                        agg.block_reason()
                    ));
                }
                verdict.stop = verdict.stop.take().or(agg.stop);
            }
        }
        if reverted {
            self.session.services.task_list.replace(now);
            self.session.sync_todos();
        }
    }

    /// Fires InstructionsLoaded for the instruction files loaded at start (`session_start`).
    pub(super) async fn startup_instructions_loaded(&mut self) {
        let files = self.project.instructions.files.clone();
        self.instructions_loaded(&files, "session_start").await;
    }

    /// Fires InstructionsLoaded for nested files a tool round brought (they were loaded after
    /// the first `since`).
    pub(super) async fn nested_instructions_loaded(&mut self, since: usize) {
        let files: Vec<_> = self.project.instructions.nested.iter().skip(since).cloned().collect();
        self.instructions_loaded(&files, "nested_traversal").await;
    }

    async fn instructions_loaded(&mut self, files: &[crate::context::instructions::InstructionFile], reason: &str) {
        if files.is_empty() || !self.hooks.has(Event::InstructionsLoaded) {
            return;
        }
        use crate::context::instructions::Scope;
        for f in files {
            let memory_type = match f.scope {
                Scope::User => "User",
                Scope::Project | Scope::Nested => "Project",
                Scope::Local => "Local",
            };
            let reason = if f.imported_by.is_some() { "include" } else { reason };
            let mut m = fields([
                ("file_path", f.path.display().to_string().into()),
                ("memory_type", memory_type.into()),
                ("load_reason", reason.into()),
            ]);
            if let Some(parent) = &f.imported_by {
                m.insert("parent_file_path".into(), parent.display().to_string().into());
            }
            self.hooks
                .fire(
                    Event::InstructionsLoaded,
                    Some(reason),
                    self.session.services.mode(),
                    m,
                    &self.events,
                )
                .await;
        }
    }

    /// Fires StopFailure when the turn ended on an API error (the hooks cannot change that).
    pub(super) async fn stop_failure(&mut self, outcome: &TurnOutcome) {
        if !matches!(
            outcome.terminal_reason,
            TerminalReason::ApiError | TerminalReason::PromptTooLong
        ) || !self.hooks.has(Event::StopFailure)
        {
            return;
        }
        let kind = outcome.api_error_kind.map(|k| k.as_str()).unwrap_or("unknown");
        self.hooks
            .fire(
                Event::StopFailure,
                Some(kind),
                self.session.services.mode(),
                fields([
                    ("error", kind.into()),
                    ("error_details", outcome.result.clone().into()),
                    ("last_assistant_message", self.session.last_assistant_text().into()),
                ]),
                &self.events,
            )
            .await;
    }
}

fn status_word(s: TodoStatus) -> &'static str {
    match s {
        TodoStatus::Pending => "pending",
        TodoStatus::InProgress => "in progress",
        TodoStatus::Completed => "completed",
    }
}
