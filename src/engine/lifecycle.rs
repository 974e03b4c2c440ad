//! Session- and turn-level hook events: SessionStart, UserPromptSubmit, Stop, SessionEnd.

use serde_json::Value;

use super::Engine;
use super::events::NoticeLevel;
use crate::hooks::{Event, fields};
use crate::types::message::ContentBlock;

/// Consecutive Stop-hook blocks after which keel ends the turn anyway.
pub const MAX_STOP_BLOCKS: u32 = 8;

/// What the UserPromptSubmit hooks decided.
pub enum PromptVerdict {
    Accept,
    /// The prompt is rejected; the reason is for the user, not the model.
    Reject(String),
}

/// What the Stop hooks decided.
pub enum StopVerdict {
    Stop,
    /// Keep working: this text goes to the model.
    Continue(String),
    /// Stop now (`continue: false`), with this reason for the user.
    Halt(String),
}

impl Engine {
    /// Fires SessionStart (`startup`, `resume`, `clear`, `compact`); hook output reaches the
    /// model with the next prompt.
    pub async fn session_start(&mut self, source: &str) {
        if matches!(source, "startup" | "resume") {
            self.startup_instructions_loaded().await;
        }
        if !self.hooks.has(Event::SessionStart) {
            return;
        }
        let agg = self
            .hooks
            .fire(
                Event::SessionStart,
                Some(source),
                self.session.services.mode(),
                fields([("source", source.into()), ("model", self.config.model.clone().into())]),
                &self.events,
            )
            .await;
        self.pending_context.extend(agg.context);
    }

    /// Fires SessionEnd (`clear`, `logout`, `prompt_input_exit`, `other`) and waits for the
    /// session's background hooks.
    pub async fn session_end(&mut self, reason: &str) {
        if !self.hooks.has(Event::SessionEnd) {
            self.hooks.wait_background().await;
            return;
        }
        self.hooks
            .fire(
                Event::SessionEnd,
                Some(reason),
                self.session.services.mode(),
                fields([("reason", reason.into())]),
                &self.events,
            )
            .await;
        self.hooks.wait_background().await;
    }

    /// Runs UserPromptSubmit and assembles the user message (prompt plus pending context).
    pub(super) async fn submit_prompt(&mut self, content: &mut Vec<ContentBlock>) -> PromptVerdict {
        // A sub-agent's task comes from the main agent, not from the user.
        if self.subagent.is_none() && self.hooks.has(Event::UserPromptSubmit) {
            let prompt: String = content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            let agg = self
                .hooks
                .fire(
                    Event::UserPromptSubmit,
                    None,
                    self.session.services.mode(),
                    fields([("prompt", Value::String(prompt))]),
                    &self.events,
                )
                .await;
            if agg.blocked() {
                return PromptVerdict::Reject(agg.block_reason());
            }
            if let Some(reason) = agg.stop {
                return PromptVerdict::Reject(reason);
            }
            self.pending_context.extend(agg.context);
        }
        for ctx in std::mem::take(&mut self.pending_context) {
            content.push(ContentBlock::text(format!(
                "<system-reminder>\n{ctx}\n</system-reminder>"
            )));
        }
        PromptVerdict::Accept
    }

    /// Runs the Stop hooks when the model wants to end its turn.
    pub(super) async fn stop_check(&mut self, stop_hook_active: bool, consecutive_blocks: u32) -> StopVerdict {
        // A sub-agent's Stop hooks are the SubagentStop hooks, matched on its type.
        let event = if self.subagent.is_some() {
            Event::SubagentStop
        } else {
            Event::Stop
        };
        if !self.hooks.has(event) {
            return StopVerdict::Stop;
        }
        let mut f = fields([
            ("stop_hook_active", stop_hook_active.into()),
            ("last_assistant_message", self.session.last_assistant_text().into()),
        ]);
        let target = self.subagent.as_ref().map(|s| {
            f.insert("agent_id".into(), s.agent_id.clone().into());
            f.insert("agent_type".into(), s.agent_type.clone().into());
            f.insert(
                "agent_transcript_path".into(),
                s.transcript.display().to_string().into(),
            );
            s.agent_type.clone()
        });
        let agg = self
            .hooks
            .fire(event, target.as_deref(), self.session.services.mode(), f, &self.events)
            .await;
        if let Some(reason) = agg.stop {
            return StopVerdict::Halt(reason);
        }
        if !agg.blocked() && agg.context.is_empty() {
            return StopVerdict::Stop;
        }
        if consecutive_blocks >= MAX_STOP_BLOCKS {
            self.events.notice(
                NoticeLevel::Warning,
                format!(
                    "Stop hooks sent the model back {MAX_STOP_BLOCKS} times in a row; ending the turn anyway \
                     (a hook should check `stop_hook_active` to avoid loops)"
                ),
            );
            return StopVerdict::Stop;
        }
        let mut text = String::new();
        if agg.blocked() {
            text.push_str(&format!(
                "A Stop hook did not let the turn end yet:\n{}",
                agg.block_reason()
            ));
        }
        for c in agg.context {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&c);
        }
        StopVerdict::Continue(text)
    }
}
