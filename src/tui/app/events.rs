//! Engine events into transcript cells and status.

use crate::engine::{EngineEvent, NoticeLevel, TurnOutcome};
use crate::tui::transcript::{CellKind, ToolCell, ToolStatus};
use crate::types::message::ContentBlock;

use super::{Activity, App};

/// Streamed text beyond this size is split at the last finished block.
const FREEZE_AFTER: usize = 1024;

/// Where the last finished top-level markdown block ends: after a blank line, outside a code
/// fence, before a line that starts a new block (not an indented continuation).
pub(crate) fn stable_split(text: &str) -> Option<usize> {
    let mut in_fence = false;
    let mut prev_blank = false;
    let mut best = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if prev_blank && !in_fence && offset > 0 && line.chars().next().is_some_and(|c| !c.is_whitespace()) {
            best = Some(offset);
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        prev_blank = line.ends_with('\n') && line.trim().is_empty();
        offset += line.len();
    }
    best
}

impl App {
    pub fn on_engine_event(&mut self, event: EngineEvent) {
        self.dirty = true;
        match event {
            EngineEvent::RequestStarted { .. } => {
                self.request_cut();
                self.streaming = None;
                self.text_streamed = false;
                self.request_text_cells.clear();
                self.thinking = None;
                self.request_tools.clear();
                self.set_activity(Activity::Thinking);
            }
            EngineEvent::TextDelta(text) => {
                self.on_streamed_chars(text.len());
                self.end_thinking();
                let i = match self.streaming {
                    Some(i) => i,
                    None => {
                        let i = self.transcript.push(CellKind::Assistant {
                            text: String::new(),
                            streaming: true,
                        });
                        self.streaming = Some(i);
                        self.request_text_cells.push(i);
                        i
                    }
                };
                let mut tail = None;
                if let Some(CellKind::Assistant { text: t, streaming }) = self.transcript.get_mut(i) {
                    t.push_str(&text);
                    // Finished blocks are frozen into their own cell, so each frame re-renders
                    // only the block still growing, however long the answer gets.
                    if t.len() >= FREEZE_AFTER
                        && let Some(at) = stable_split(t)
                    {
                        tail = Some(t.split_off(at));
                        *streaming = false;
                    }
                }
                if let Some(tail) = tail {
                    let j = self.transcript.push(CellKind::Assistant {
                        text: tail,
                        streaming: true,
                    });
                    self.streaming = Some(j);
                    self.request_text_cells.push(j);
                }
                self.text_streamed = true;
                self.set_activity(Activity::Responding);
            }
            EngineEvent::ThinkingDelta(text) => {
                self.on_streamed_chars(text.len());
                let i = match self.thinking {
                    Some(i) => i,
                    None => {
                        let i = self.transcript.push(CellKind::Thinking {
                            text: String::new(),
                            streaming: true,
                        });
                        self.thinking = Some(i);
                        i
                    }
                };
                if let Some(CellKind::Thinking { text: t, .. }) = self.transcript.get_mut(i) {
                    t.push_str(&text);
                }
            }
            EngineEvent::ToolCallStreaming { id, name } => {
                self.end_thinking();
                self.end_streaming();
                if self.transcript.tool_index(&id).is_none() {
                    let cell = ToolCell::new(&id, &name, serde_json::Value::Null, &self.cwd);
                    self.transcript.push(CellKind::Tool(Box::new(cell)));
                }
                self.request_tools.push(id);
                self.set_activity(Activity::Responding);
            }
            EngineEvent::RawStream(v) => self.on_raw_stream(&v),
            // The TUI shows the decision where it was asked; the event is for programs.
            EngineEvent::PermissionDecided { .. } => {}
            EngineEvent::ToolResults(_) => {}
            EngineEvent::Retry {
                attempt,
                max_retries,
                delay_ms,
                status,
                error,
                waited_ms,
            } => self.on_retry(attempt, max_retries, delay_ms, status, &error, waited_ms),
            EngineEvent::Assistant {
                message, model, usage, ..
            } => {
                self.request_answered();
                self.status.totals.record(&model, &usage);
                self.status.context_tokens = usage.context_tokens() + usage.output_tokens;
                self.end_thinking();
                self.end_streaming();
                let text = message.text();
                if !self.text_streamed && !text.trim().is_empty() {
                    self.transcript.push(CellKind::Assistant { text, streaming: false });
                }
                for block in &message.content {
                    if let ContentBlock::ToolUse { id, name, input } = block {
                        match self.transcript.tool_mut(id) {
                            Some(t) => t.set_input(input.clone(), &self.cwd),
                            None => {
                                let cell = ToolCell::new(id, name, input.clone(), &self.cwd);
                                self.transcript.push(CellKind::Tool(Box::new(cell)));
                            }
                        }
                    }
                }
                self.retry_cell = None;
            }
            EngineEvent::ToolStarted { id, name, input } => {
                match self.transcript.tool_mut(&id) {
                    Some(t) => {
                        t.set_input(input, &self.cwd);
                        t.status = ToolStatus::Running;
                        t.run_started = Some(std::time::Instant::now());
                    }
                    None => {
                        let mut cell = ToolCell::new(&id, &name, input, &self.cwd);
                        cell.status = ToolStatus::Running;
                        cell.run_started = Some(std::time::Instant::now());
                        self.transcript.push(CellKind::Tool(Box::new(cell)));
                    }
                }
                if !self.request_tools.contains(&id) {
                    self.request_tools.push(id);
                }
                self.set_activity(Activity::Tool(name));
            }
            EngineEvent::ToolFinished {
                id,
                content,
                is_error,
                structured,
                duration_ms,
                ..
            } => {
                let cancelled = self.busy.as_ref().is_some_and(|b| b.cancel.is_cancelled());
                if let Some(t) = self.transcript.tool_mut(&id) {
                    t.output = content.as_text();
                    t.structured = structured;
                    t.live = None;
                    // The time the call waited for the user's answer is not the tool's.
                    t.duration_ms = Some(duration_ms.saturating_sub(t.wait_ms));
                    t.status = match (is_error, cancelled, t.status) {
                        (_, _, ToolStatus::Denied) => ToolStatus::Denied,
                        (true, true, _) => ToolStatus::Interrupted,
                        (true, false, _) => ToolStatus::Error,
                        (false, _, _) => ToolStatus::Ok,
                    };
                }
                // Back to the model once no call of this request still runs.
                let running = self.request_tools.iter().any(|id| {
                    self.transcript
                        .tool_index(id)
                        .and_then(|i| self.transcript.get(i))
                        .is_some_and(|c| matches!(c, CellKind::Tool(t) if matches!(t.status, ToolStatus::Running | ToolStatus::Waiting)))
                });
                if !running {
                    self.set_activity(Activity::Thinking);
                }
            }
            EngineEvent::PermissionDenied { tool_use_id, .. } => {
                if let Some(t) = self.transcript.tool_mut(&tool_use_id) {
                    t.status = ToolStatus::Denied;
                }
            }
            EngineEvent::PermissionRequest(prompt) => self.queue_approval(prompt),
            EngineEvent::ModeChanged(_) => {}
            EngineEvent::Notice { level, message } => self.notice(level, message),
            EngineEvent::CompactStarted { trigger, .. } => {
                self.set_activity(Activity::Command(format!("compacting ({})", trigger.as_str())));
            }
            EngineEvent::Compacted {
                trigger,
                pre_tokens,
                post_tokens,
            } => {
                // The gauge follows at once; the next request refines it.
                self.status.context_tokens = post_tokens;
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Context compacted ({}): about {pre_tokens} → {post_tokens} tokens. Failed checks, \
                         changed files and your requests were carried over verbatim.",
                        trigger.as_str()
                    ),
                );
                self.compact_notice = Some(self.transcript.len() - 1);
            }
            EngineEvent::HookStarted { .. } => {}
            // Failures already arrive as warnings; a block or a decision is worth a line.
            EngineEvent::HookRun(run) => {
                if run.outcome == "blocked" || run.decision.is_some() {
                    let decision = run.decision.map(|d| format!(" ({d})")).unwrap_or_default();
                    self.notice(
                        NoticeLevel::Info,
                        format!("hook {} `{}`: {}{decision}", run.event, run.handler, run.outcome),
                    );
                }
            }
            EngineEvent::TurnFinished(outcome) => self.on_turn_finished(&outcome),
            // The transcript shows a sub-agent's work through its Agent call.
            EngineEvent::Subagent { .. } => {}
        }
    }

    fn set_activity(&mut self, activity: Activity) {
        if let Some(b) = self.busy.as_mut() {
            b.activity = activity;
        }
    }

    fn end_streaming(&mut self) {
        if let Some(i) = self.streaming.take()
            && let Some(CellKind::Assistant { streaming, .. }) = self.transcript.get_mut(i)
        {
            *streaming = false;
        }
        self.release_deferred();
    }

    fn end_thinking(&mut self) {
        if let Some(i) = self.thinking.take()
            && let Some(CellKind::Thinking { streaming, .. }) = self.transcript.get_mut(i)
        {
            *streaming = false;
        }
    }

    /// A retried request voids what streamed since it started.
    fn on_retry(&mut self, attempt: u32, max: u32, delay_ms: u64, status: Option<u16>, error: &str, waited_ms: u64) {
        self.request_cut();
        self.text_streamed = false;
        for i in std::mem::take(&mut self.request_text_cells) {
            if let Some(CellKind::Assistant { text, .. }) = self.transcript.get_mut(i) {
                text.clear();
            }
        }
        if let Some(i) = self.streaming {
            self.request_text_cells.push(i);
        }
        for id in std::mem::take(&mut self.request_tools) {
            if let Some(t) = self.transcript.tool_mut(&id) {
                t.status = ToolStatus::Interrupted;
                t.output = "Discarded: the request was retried.".into();
            }
        }
        let code = status.map(|s| format!(" ({s})")).unwrap_or_default();
        let waited = if waited_ms >= 5_000 {
            format!(", {} s so far", waited_ms / 1000)
        } else {
            String::new()
        };
        let text = format!(
            "API error{code}: {error} · retrying in {:.1} s (attempt {attempt} of {max}{waited})",
            delay_ms as f64 / 1000.0
        );
        match self.retry_cell {
            Some(i) => {
                if let Some(CellKind::Notice { text: t, .. }) = self.transcript.get_mut(i) {
                    *t = text;
                }
            }
            None => {
                let i = self.transcript.push(CellKind::Notice {
                    level: NoticeLevel::Warning,
                    text,
                });
                self.retry_cell = Some(i);
            }
        }
        self.set_activity(Activity::Thinking);
    }

    fn on_turn_finished(&mut self, outcome: &TurnOutcome) {
        self.request_cut();
        self.status.totals.api_ms += outcome.duration_api_ms;
        self.end_streaming();
        self.end_thinking();
        self.drop_approvals();
        // Calls that never finished (an interruption mid-batch) are marked as such.
        for id in std::mem::take(&mut self.request_tools) {
            if let Some(t) = self.transcript.tool_mut(&id)
                && matches!(
                    t.status,
                    ToolStatus::Streaming | ToolStatus::Running | ToolStatus::Waiting
                )
            {
                t.status = ToolStatus::Interrupted;
            }
        }
        if outcome.interrupted {
            self.notice(NoticeLevel::Warning, "Interrupted. Tell keel what to do instead.");
        } else if outcome.is_error {
            self.notice(NoticeLevel::Error, outcome.result.clone());
        }
    }
}
