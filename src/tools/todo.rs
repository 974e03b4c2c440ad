//! TodoWrite: the session's task list, replaced whole on every call.
//!
//! The list lives in `SessionShared::todos`; the engine records each new list in the
//! transcript (`todos` event) so a resumed session gets it back.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Capability, Declared, Effects, RuleGrammar, Todo, TodoStatus, Tool, ToolContext, ToolError, ToolOutput, parse_input,
};

pub struct TodoWriteTool;

#[derive(Deserialize)]
struct Input {
    todos: Vec<Todo>,
}

#[async_trait]
impl Tool for TodoWriteTool {
    fn name(&self) -> &'static str {
        "TodoWrite"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::SESSION,
            grammar: RuleGrammar::Key,
            covered_by: &[],
        }
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Tasks]
    }

    fn description(&self) -> &'static str {
        "Keeps the task list for this session; each call replaces the whole list. Use it for work with \
         several steps: write the steps down when you start, mark one `in_progress` before working on it \
         (one at a time), and mark it `completed` as soon as it is really done — not when it is only \
         attempted, and not while tests still fail. Add steps you discover on the way. Each item has \
         `content` (what to do, imperative: \"Run the tests\"), `activeForm` (the same in progressive form, \
         shown while it runs: \"Running the tests\") and `status` (`pending`, `in_progress`, `completed`). \
         Skip it for a single trivial step."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete, updated task list",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "minLength": 1}
                        },
                        "required": ["content", "status", "activeForm"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let new = input.todos;
        let old = ctx.tasks()?.replace(new.clone());
        let count = |s: TodoStatus| new.iter().filter(|t| t.status == s).count();
        let (done, active, pending) = (
            count(TodoStatus::Completed),
            count(TodoStatus::InProgress),
            count(TodoStatus::Pending),
        );
        let mut text = format!(
            "Task list updated: {} item{}, {done} completed, {active} in progress, {pending} pending.",
            new.len(),
            if new.len() == 1 { "" } else { "s" }
        );
        if active > 1 {
            text.push_str(" More than one item is in progress; finish one before starting the next.");
        }
        if !new.is_empty() && done == new.len() {
            text.push_str(" Every item is completed.");
        } else {
            text.push_str(" Keep it current as you work.");
        }
        Ok(ToolOutput::text(text).with_structured(json!({"oldTodos": old, "newTodos": new})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Grants, TaskList, Workspace};
    use std::sync::Arc;

    #[tokio::test]
    async fn replaces_the_session_list() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new(dir.path().into(), dir.path().into(), Vec::new()));
        let tasks = Arc::new(TaskList::default());
        let grants = Grants {
            tasks: Some(tasks.clone()),
            ..Grants::default()
        };
        let ctx = ToolContext::new(ws, Default::default(), "t").with_grants(grants.only(TodoWriteTool.capabilities()));
        let input = json!({"todos": [
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
            {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"}
        ]});
        let out = TodoWriteTool.call(input, &ctx).await.unwrap();
        assert!(!out.is_error);
        assert_eq!(tasks.get().len(), 2);
        assert_eq!(tasks.get()[0].status, TodoStatus::InProgress);
        assert_eq!(out.structured["oldTodos"], json!([]));
        TodoWriteTool.call(json!({"todos": []}), &ctx).await.unwrap();
        assert!(tasks.get().is_empty());
    }
}
