//! TodoWrite: the session's task list, replaced whole on every call.
//!
//! The list lives in `SessionShared::todos`; the engine records each new list in the
//! transcript (`todos` event) so a resumed session gets it back.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::types::todo_deps::{Dependencies, todo_label};

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
        "The session's task list; each call replaces the whole list. For work of several steps: list them \
         at the start (and any found later), mark one `in_progress` before working on it (one at a time), \
         and `completed` only when it is really done, not while tests fail. Items: `content` (imperative: \
         \"Run the tests\"), `activeForm` (progressive: \"Running the tests\"), `status`; optionally an \
         `id`, and `blockedBy`/`blocks` naming other ids: a blocked entry waits until what it depends on is \
         completed. Skip it for one trivial step."
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
                            "activeForm": {"type": "string", "minLength": 1},
                            "id": {"type": "string", "minLength": 1, "description": "A short id other entries can name"},
                            "blockedBy": {"type": "array", "items": {"type": "string"}, "description": "Ids of entries that must be completed before this one"},
                            "blocks": {"type": "array", "items": {"type": "string"}, "description": "Ids of entries that wait for this one"}
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
        let deps = Dependencies::resolve(&new).map_err(|e| {
            ToolError::invalid(format!(
                "The task list was not changed: {e}. Fix the ids and send the whole list again."
            ))
        })?;
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
        text.push_str(&blocking_notes(&new, &deps));
        if !new.is_empty() && done == new.len() {
            text.push_str(" Every item is completed.");
        } else {
            text.push_str(" Keep it current as you work.");
        }
        Ok(ToolOutput::text(text).with_structured(json!({"oldTodos": old, "newTodos": new})))
    }
}

/// What the dependencies say about the list: entries started before what they wait for is
/// done, and which entries are blocked.
fn blocking_notes(todos: &[Todo], deps: &Dependencies) -> String {
    let mut out = String::new();
    let mut blocked = Vec::new();
    for (i, t) in todos.iter().enumerate() {
        let open = deps.open_blockers(todos, i);
        if open.is_empty() {
            continue;
        }
        let waits: Vec<String> = open.iter().map(|b| format!("\"{}\"", todo_label(b))).collect();
        match t.status {
            TodoStatus::Pending => blocked.push(format!("\"{}\" (waits on {})", todo_label(t), waits.join(", "))),
            status => out.push_str(&format!(
                " \"{}\" is {} but waits on {}, which {} not completed: finish that first.",
                todo_label(t),
                if status == TodoStatus::Completed {
                    "completed"
                } else {
                    "in progress"
                },
                waits.join(", "),
                if waits.len() == 1 { "is" } else { "are" }
            )),
        }
    }
    if !blocked.is_empty() {
        out.push_str(&format!(" Blocked: {}.", blocked.join("; ")));
    }
    out
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

    #[tokio::test]
    async fn dependencies_are_checked_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspace::new(dir.path().into(), dir.path().into(), Vec::new()));
        let tasks = Arc::new(TaskList::default());
        let grants = Grants {
            tasks: Some(tasks.clone()),
            ..Grants::default()
        };
        let ctx = ToolContext::new(ws, Default::default(), "t").with_grants(grants.only(TodoWriteTool.capabilities()));
        let item = |id: &str, status: &str, blocked_by: &[&str]| json!({"id": id, "content": format!("do {id}"), "activeForm": format!("doing {id}"), "status": status, "blockedBy": blocked_by});
        let out = TodoWriteTool
            .call(
                json!({"todos": [item("fix", "in_progress", &[]), item("test", "pending", &["fix"])]}),
                &ctx,
            )
            .await
            .unwrap();
        let text = out.content.as_text();
        assert!(text.contains("Blocked: \"test\" (waits on \"fix\")"), "{text}");
        assert_eq!(tasks.get()[1].blocked_by, ["fix"]);
        let started = TodoWriteTool
            .call(
                json!({"todos": [item("fix", "pending", &[]), item("test", "in_progress", &["fix"])]}),
                &ctx,
            )
            .await
            .unwrap();
        assert!(
            started
                .content
                .as_text()
                .contains("\"test\" is in progress but waits on \"fix\"")
        );
        let err = TodoWriteTool
            .call(
                json!({"todos": [item("a", "pending", &["b"]), item("b", "pending", &["a"])]}),
                &ctx,
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("cycle") && err.contains("not changed"), "{err}");
        let err = TodoWriteTool
            .call(json!({"todos": [item("a", "pending", &["ghost"])]}), &ctx)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"ghost\""), "{err}");
        assert_eq!(tasks.get().len(), 2, "a refused list leaves the old one");
    }
}
