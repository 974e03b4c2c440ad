//! The TUI's side of skills, sub-agents, memory and the task list: `/tasks`, `/todos`,
//! `/skills`, `/agents`, `/memory` and the `#` prefix that saves a note to the project's memory.

use std::fmt::Write;

use super::{App, Effect};
use crate::engine::NoticeLevel;
use crate::skills::listing::one_line;
use crate::tui::worker::Job;

/// Most characters of one description in `/skills` and `/agents` (a repository's may be long).
const REPORT_CAP: usize = 300;

/// The note of a `# note` line (a memory), if it is one.
pub fn memory_note(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('#')?;
    // `#` alone or a markdown heading marker run (`## Title`) is not a note.
    if rest.starts_with('#') || rest.trim().is_empty() {
        return None;
    }
    Some(rest.trim())
}

impl App {
    /// `# note`: appended to the project's MEMORY.md by the engine task.
    pub(super) fn remember(&mut self, note: &str) {
        self.effects.push(Effect::Job(Job::Remember { note: note.to_string() }));
        self.dirty = true;
    }

    /// `/memory`: opens MEMORY.md in the user's editor.
    pub(super) fn open_memory(&mut self) {
        match &self.harness.memory_file {
            Some(path) => self.effects.push(Effect::Edit(path.clone())),
            None => self.notice(
                NoticeLevel::Warning,
                "Project memory is off (autoMemoryEnabled is false, or KEEL_DISABLE_AUTO_MEMORY is set).",
            ),
        }
    }

    /// `/todos`: the task list as a checklist.
    pub(crate) fn todos_report(&self) -> String {
        let todos = self.shared.todos();
        if todos.is_empty() {
            return "No todos yet: keel keeps a task list when a task has several steps.".to_string();
        }
        let blocked = crate::types::todo_deps::blocked_flags(&todos);
        todos
            .iter()
            .zip(blocked)
            .map(|(t, blocked)| {
                let mark = match t.status {
                    crate::tools::TodoStatus::Completed => "[x]",
                    crate::tools::TodoStatus::InProgress => "[~]",
                    crate::tools::TodoStatus::Pending => "[ ]",
                };
                let waits = if blocked {
                    format!(" (blocked by {})", t.blocked_on(&todos))
                } else {
                    String::new()
                };
                format!("- {mark} {}{waits}", t.content)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(super) fn tasks_report(&self) -> String {
        let tasks = self.shared.tasks.list();
        let shells = self.shared.shell.shells.running();
        if tasks.is_empty() && shells.is_empty() {
            return "No background tasks. Sub-agents started with `run_in_background` and background shells \
                    are listed here."
                .into();
        }
        let mut s = String::new();
        if !tasks.is_empty() {
            s.push_str("**Background sub-agents**\n\n");
            for t in &tasks {
                let _ = writeln!(
                    s,
                    "- `{}` {} — {} ({}, {:.0} s) — transcript `{}`",
                    t.id,
                    t.status.as_str(),
                    t.description,
                    t.agent_type,
                    t.elapsed.as_secs_f64(),
                    t.transcript.display()
                );
            }
        }
        if !shells.is_empty() {
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str("**Background shells (running)**\n\n");
            for id in shells {
                let _ = writeln!(s, "- `{id}` (BashOutput shows its output)");
            }
        }
        s
    }

    pub(super) fn skills_report(&self) -> String {
        let skills = &self.harness.skills;
        if skills.is_empty() {
            return "No skills or custom commands here. Skills live in `.claude/skills/<name>/SKILL.md` (project) or \
                    `~/.claude/skills/` (personal); commands in `.claude/commands/*.md`."
                .into();
        }
        let mut s = String::new();
        for sk in skills.iter() {
            let mut marks = Vec::new();
            if sk.disable_model_invocation {
                marks.push("user only");
            }
            if !sk.user_invocable {
                marks.push("model only");
            }
            if sk.grants() {
                marks.push("grants tools");
            }
            if sk.fork_agent.is_some() {
                marks.push("runs in a sub-agent");
            }
            let marks = if marks.is_empty() {
                String::new()
            } else {
                format!(" [{}]", marks.join(", "))
            };
            let _ = writeln!(
                s,
                "- `/{}` — {} ({}){marks}",
                sk.name,
                one_line(&sk.description, REPORT_CAP),
                sk.source.label()
            );
        }
        s
    }

    pub(super) fn agents_report(&self) -> String {
        let mut s = String::from("Sub-agent types for the Agent tool:\n\n");
        for d in self.harness.agents.iter() {
            let tools = match &d.tools {
                Some(t) => t.join(", "),
                None => "all tools".into(),
            };
            let _ = writeln!(
                s,
                "- `{}` ({}) — {} Tools: {tools}.",
                d.name,
                d.source.label(),
                one_line(&d.description, REPORT_CAP)
            );
        }
        let l = self.harness.limits;
        let _ = write!(
            s,
            "\nSpawn budgets: depth {}, {} running per parent, {} per session (settings `agents.maxDepth`, \
             `agents.maxChildren`, `agents.maxTotal`).",
            l.max_depth, l.max_children, l.max_total
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_hash_lines_but_not_headings() {
        assert_eq!(memory_note("# use pnpm, not npm"), Some("use pnpm, not npm"));
        assert_eq!(memory_note("#always run make check"), Some("always run make check"));
        assert_eq!(memory_note("## Title"), None);
        assert_eq!(memory_note("#"), None);
        assert_eq!(memory_note("fix #12"), None);
    }
}
