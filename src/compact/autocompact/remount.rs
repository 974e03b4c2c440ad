//! Hot state re-mounted after tier 5, so the model does not resume blind: the recently edited
//! files fresh from disk, the todo list and the current plan. (Instruction files are re-read
//! into the system prompt by the engine, which also re-mounts the skills loaded earlier.)
//!
//! The read-file state follows what the model can now see: every earlier view is partial (the
//! model knows those files from the summary only), except the files shown here in full.

use std::fmt::Write;

use crate::compact::record::FileChange;
use crate::tools::FileAccess;
use crate::tools::file_state::{FileView, ViewKind, file_mtime};
use crate::tools::{Todo, TodoStatus};
use crate::types::message::{ContentBlock, Message, Role};

/// Most edited files shown again.
pub const MAX_FILES: usize = 5;
/// Most bytes of one file shown (about 5,000 tokens).
pub const MAX_FILE_BYTES: usize = 20_000;
/// Most bytes of the plan shown.
const MAX_PLAN_BYTES: usize = 8_000;

/// The newest plan the model presented (the `plan` of its last ExitPlanMode call).
pub fn latest_plan(history: &[Message]) -> Option<String> {
    history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter().rev())
        .find_map(|b| match b {
            ContentBlock::ToolUse { name, input, .. } if crate::tools::kinds::declared(name).effects.leaves_plan => {
                input.get("plan").and_then(|p| p.as_str()).map(str::to_string)
            }
            _ => None,
        })
}

/// The hot-state text, or `None` when there is nothing to re-mount. Files are shown within
/// `budget` bytes in all; views of the files shown are recorded in the read-file state.
pub fn hot_state(
    files: &[FileChange],
    plan: Option<&str>,
    budget: usize,
    todos: &[Todo],
    shared: &FileAccess,
) -> Option<String> {
    let mut out = String::new();
    let mut left = budget;
    let mut shown = 0;
    for f in files.iter().take(MAX_FILES) {
        if left < 200 {
            break;
        }
        if let Some(text) = file_section(f, left.min(MAX_FILE_BYTES), shared) {
            left = left.saturating_sub(text.len());
            if shown == 0 {
                out.push_str("### Recently edited files, fresh from disk");
            }
            out.push_str("\n\n");
            out.push_str(&text);
            shown += 1;
        }
    }
    if !todos.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("### Todo list");
        for t in todos {
            render_todo(&mut out, t);
        }
    }
    if let Some(plan) = plan.map(str::trim).filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("### Current plan\n");
        out.push_str(&clip(plan, MAX_PLAN_BYTES));
    }
    (!out.is_empty()).then(|| format!("## Hot state, re-read after compaction\n\n{out}"))
}

fn render_todo(out: &mut String, t: &Todo) {
    let status = match t.status {
        TodoStatus::Pending => "pending",
        TodoStatus::InProgress => "in progress",
        TodoStatus::Completed => "completed",
    };
    let _ = write!(out, "\n- [{status}] {}", t.content);
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… cut here]", &s[..end])
}

/// One file, line-numbered as Read shows it; records the model's new view of it.
fn file_section(f: &FileChange, max: usize, shared: &FileAccess) -> Option<String> {
    let path = &f.path;
    let meta = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return None,
        Err(_) => return Some(format!("#### {} — no longer exists", path.display())),
    };
    let bytes = crate::fsutil::open::read_file_capped(path, crate::tools::read::MAX_FILE_BYTES).ok()?;
    if crate::fsutil::looks_binary(&bytes) {
        return None;
    }
    let text = String::from_utf8_lossy(&bytes);
    let total = text.lines().count();
    let mut body = String::new();
    let mut shown_lines = 0;
    for (i, line) in text.lines().enumerate() {
        let l = format!("{:>6}\t{}\n", i + 1, line);
        if body.len() + l.len() > max {
            break;
        }
        body.push_str(&l);
        shown_lines += 1;
    }
    let complete = shown_lines == total;
    let kind = if complete {
        ViewKind::Complete
    } else {
        ViewKind::Partial
    };
    shared
        .files()
        .record(path.clone(), FileView::new(&bytes, file_mtime(&meta), kind));
    let head = if complete {
        format!("#### {} (complete, {total} lines)", path.display())
    } else {
        format!(
            "#### {} (lines 1-{shown_lines} of {total}; a partial view: Read the rest before writing the file whole)",
            path.display()
        )
    };
    Some(format!("{head}\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edited_files_todos_and_plan_are_remounted() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.rs");
        let big = dir.path().join("big.rs");
        std::fs::write(&small, "fn a() {}\nfn b() {}\n").unwrap();
        std::fs::write(&big, "let x = 1;\n".repeat(5_000)).unwrap();
        let shared = FileAccess::new(
            Default::default(),
            Default::default(),
            std::sync::Arc::new(crate::checkpoint::Checkpoints::new(dir.path())),
        );
        let todos = vec![Todo {
            content: "Run the tests".into(),
            status: TodoStatus::InProgress,
            active_form: "Running the tests".into(),
            ..Default::default()
        }];
        // Everything known before compaction is partial now; the files shown are re-recorded.
        shared
            .files()
            .record(small.clone(), FileView::new(b"old", None, ViewKind::Complete));
        shared.files().mark_all_partial();
        let change = |p: &std::path::Path, step| FileChange {
            path: p.to_path_buf(),
            edits: 1,
            last_step: step,
            tools: vec!["Edit".into()],
        };
        let gone = dir.path().join("gone.rs");
        let files = vec![change(&small, 9), change(&big, 8), change(&gone, 7)];
        let text = hot_state(&files, Some("1. fix\n2. test"), 30_000, &todos, &shared).unwrap();
        assert!(
            text.contains("(complete, 2 lines)") && text.contains("     2\tfn b() {}"),
            "{text}"
        );
        assert!(text.contains("a partial view"), "{text}");
        assert!(text.contains("gone.rs — no longer exists"));
        assert!(text.contains("- [in progress] Run the tests"));
        assert!(text.contains("### Current plan\n1. fix\n2. test"));
        assert!(shared.files().get(&small).unwrap().is_complete());
        assert!(!shared.files().get(&big).unwrap().is_complete());
        let history = vec![Message::assistant(vec![ContentBlock::ToolUse {
            id: "p".into(),
            name: "ExitPlanMode".into(),
            input: json!({"plan": "the plan"}),
        }])];
        assert_eq!(latest_plan(&history).as_deref(), Some("the plan"));
        assert!(hot_state(&[], None, 1_000, &[], &shared).is_none());
    }
}
