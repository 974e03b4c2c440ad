//! Turns engine events into headless output: stream-json lines, or progress on stderr with
//! `--verbose`. Permission questions go to the driving program when there is one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::out::Out;
use super::output;
use super::protocol::client::ClientLink;
use super::turn_stats::{CallMeta, TurnStats};
use crate::console::err_line;

/// After this long since a request was first sent, every retry of it is announced on stderr.
const ANNOUNCE_RETRIES_AFTER_MS: u64 = 5_000;
use crate::engine::{EngineEvent, NoticeLevel, TurnOutcome};
use crate::launch::options::OutputFormat;
use crate::permissions::PermissionReply;
use crate::types::message::ContentBlock;

pub struct Printer {
    pub out: Arc<Out>,
    pub format: OutputFormat,
    pub verbose: bool,
    pub include_hook_events: bool,
    pub session_id: String,
    /// Answers permission questions (`--permission-prompt-tool stdio`).
    pub link: Option<Arc<ClientLink>>,
    /// Sub-agents' text and thinking go out too, not only their tool calls and results
    /// (`initialize`'s `forwardSubagentText`).
    pub forward_subagent_text: Arc<AtomicBool>,
    /// `--include-partial-messages`: `system/status` lines announce each request.
    pub partial: bool,
    /// What this turn measured, for its result object; the runner starts and takes it.
    pub stats: Arc<std::sync::Mutex<TurnStats>>,
    structured: HashMap<String, Value>,
}

impl Printer {
    pub fn new(out: Arc<Out>, format: OutputFormat, verbose: bool, session_id: String) -> Self {
        Printer {
            out,
            format,
            verbose,
            include_hook_events: false,
            session_id,
            link: None,
            forward_subagent_text: Arc::default(),
            partial: false,
            stats: Arc::default(),
            structured: HashMap::new(),
        }
    }

    fn stream(&self) -> bool {
        self.format == OutputFormat::StreamJson
    }

    fn line(&self, v: &Value) {
        self.out.line(v);
    }

    /// Consumes engine events until the turn finishes (one-shot mode).
    pub async fn drain(mut self, mut events: UnboundedReceiver<EngineEvent>) -> (Self, UnboundedReceiver<EngineEvent>) {
        while let Some(event) = events.recv().await {
            if let EngineEvent::TurnFinished(_) = event {
                break;
            }
            self.handle(event);
        }
        (self, events)
    }

    /// Consumes engine events across turns until `stop`; each finished turn is reported on
    /// `finished` once everything before it has been printed.
    pub async fn run(
        mut self,
        mut events: UnboundedReceiver<EngineEvent>,
        finished: UnboundedSender<TurnOutcome>,
        stop: CancellationToken,
    ) -> (Self, UnboundedReceiver<EngineEvent>) {
        loop {
            tokio::select! {
                biased;
                e = events.recv() => match e {
                    Some(EngineEvent::TurnFinished(outcome)) => {
                        let _ = finished.send(outcome);
                    }
                    Some(event) => self.handle(event),
                    None => break,
                },
                _ = stop.cancelled() => break,
            }
        }
        (self, events)
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, TurnStats> {
        self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records what the result object reports, whatever the output format.
    fn observe(&mut self, event: &EngineEvent) {
        let mut stats = self.stats();
        match event {
            EngineEvent::RequestStarted { .. } => stats.request_started(),
            EngineEvent::TextDelta(_) | EngineEvent::ThinkingDelta(_) => stats.token(true),
            EngineEvent::ToolCallStreaming { .. } => stats.token(false),
            EngineEvent::Assistant {
                id,
                model,
                message,
                stop_reason,
                ..
            } => stats.assistant(id, model, message, stop_reason, 0),
            EngineEvent::ToolFinished { id, is_error, .. } => stats.tool_finished(id, *is_error, false),
            EngineEvent::PermissionDecided {
                tool_use_id,
                decision,
                source,
                reason_type,
            } => {
                stats.calls.insert(
                    tool_use_id.clone(),
                    CallMeta {
                        decision,
                        source,
                        reason_type: *reason_type,
                    },
                );
            }
            EngineEvent::Subagent { .. } => {
                let mut depth = 0;
                let mut inner = event;
                while let EngineEvent::Subagent { event, .. } = inner {
                    depth += 1;
                    inner = event;
                }
                if let EngineEvent::Assistant {
                    id,
                    model,
                    message,
                    stop_reason,
                    ..
                } = inner
                {
                    stats.assistant(id, model, message, stop_reason, depth);
                }
            }
            _ => {}
        }
    }

    pub fn handle(&mut self, event: EngineEvent) {
        let stream = self.stream();
        self.observe(&event);
        match event {
            EngineEvent::RequestStarted { .. } if stream && self.partial => {
                self.line(&output::system_line(
                    "status",
                    serde_json::json!({"status": "requesting"}),
                    &self.session_id,
                ));
            }
            EngineEvent::Assistant {
                id,
                model,
                message,
                usage,
                ..
            } if stream => {
                for l in output::assistant_lines(&id, &model, &message, &usage, &self.session_id) {
                    self.line(&l);
                }
            }
            EngineEvent::Subagent {
                parent_tool_use_id,
                event,
            } if stream => self.subagent(&parent_tool_use_id, *event),
            EngineEvent::ToolFinished { id, structured, .. } if stream => {
                self.structured.insert(id, structured);
            }
            EngineEvent::ToolResults(message) if stream => {
                for block in &message.content {
                    let (structured, meta) = match block {
                        ContentBlock::ToolResult { tool_use_id, .. } => (
                            self.structured.remove(tool_use_id),
                            self.stats().calls.remove(tool_use_id).map(|m| m.to_json(tool_use_id)),
                        ),
                        _ => (None, None),
                    };
                    let mut line = output::tool_result_line(block, structured.as_ref(), &self.session_id);
                    if let (Some(meta), Value::Object(m)) = (meta, &mut line) {
                        m.insert("tool_result_meta".into(), Value::Array(vec![meta]));
                    }
                    self.line(&line);
                }
            }
            EngineEvent::PermissionRequest(prompt) => match &self.link {
                Some(link) => {
                    tokio::spawn(link.clone().ask_permission(prompt));
                }
                // Nobody can answer: the engine only asks when a front end can, so this is a
                // defensive denial, never a hang.
                None => {
                    let _ = prompt.reply.send(PermissionReply::Deny { feedback: None });
                }
            },
            EngineEvent::PermissionDenied {
                tool_name,
                tool_use_id,
                message,
                ..
            } if stream => {
                self.line(&output::permission_denied_line(
                    &tool_name,
                    &tool_use_id,
                    &message,
                    &self.session_id,
                ));
            }
            EngineEvent::ModeChanged(mode) if stream => {
                self.line(&output::status_line(mode.as_str(), &self.session_id));
            }
            EngineEvent::Assistant { message, .. } if self.verbose && !stream => {
                let text = message.text();
                if !text.trim().is_empty() && message.tool_uses().next().is_some() {
                    err_line!("{}", text.trim_end());
                }
            }
            EngineEvent::ToolStarted { name, input, .. } if self.verbose && !stream => {
                err_line!("→ {name}({})", crate::tools::summarize_input(&input));
            }
            EngineEvent::ToolFinished { content, is_error, .. } if self.verbose && !stream => {
                let text = content.as_text();
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let first: String = first.chars().take(100).collect();
                let mark = if is_error { "✗" } else { "✓" };
                err_line!("  {mark} {first} ({} lines)", text.lines().count());
            }
            EngineEvent::HookStarted {
                hook_id,
                hook_name,
                event,
            } if stream && self.include_hook_events => {
                self.line(&output::hook_started_line(
                    &hook_id,
                    &hook_name,
                    &event,
                    &self.session_id,
                ));
            }
            EngineEvent::HookRun(run) => {
                if stream && self.include_hook_events {
                    self.line(&output::hook_response_line(&run, &self.session_id));
                } else if self.verbose && !stream {
                    let decision = run.decision.map(|d| format!(", {d}")).unwrap_or_default();
                    err_line!(
                        "  hook {} `{}`: {}{decision} ({} ms)",
                        run.event,
                        run.handler,
                        run.outcome,
                        run.duration_ms
                    );
                }
            }
            EngineEvent::RawStream(v) if stream => {
                let (ttft, message_id) = {
                    let mut stats = self.stats();
                    let ttft = stats.stream_event(&v);
                    (ttft, stats.api_message_id.clone())
                };
                let mut line = output::stream_event_line(&v, &self.session_id);
                if let Value::Object(m) = &mut line {
                    if let Some(ms) = ttft {
                        m.insert("ttft_ms".into(), ms.into());
                    }
                    if let Some(id) = message_id {
                        m.insert("api_message_id".into(), id.into());
                    }
                }
                self.line(&line);
            }
            EngineEvent::Retry {
                attempt,
                max_retries,
                delay_ms,
                status,
                error,
                waited_ms,
            } => {
                if stream {
                    self.line(&output::retry_line(
                        attempt,
                        max_retries,
                        delay_ms,
                        status,
                        &error,
                        &self.session_id,
                    ));
                }
                // The first retry of a request is always shown, and every one once the wait is
                // long enough to be noticed, with how long it has lasted: a silent wait looks like
                // a hang.
                if self.verbose || attempt == 1 || waited_ms >= ANNOUNCE_RETRIES_AFTER_MS {
                    let waited = if attempt > 1 {
                        format!(
                            "; {} since the first attempt",
                            crate::provider::http::fmt_duration(std::time::Duration::from_millis(waited_ms),)
                        )
                    } else {
                        String::new()
                    };
                    err_line!("keel: {error}; retrying in {delay_ms} ms (attempt {attempt} of {max_retries}{waited})");
                }
            }
            EngineEvent::Compacted {
                trigger,
                pre_tokens,
                post_tokens,
            } => {
                if stream {
                    self.line(&output::compact_boundary_line(
                        trigger.as_str(),
                        pre_tokens,
                        &self.session_id,
                    ));
                }
                if self.verbose {
                    err_line!(
                        "keel: compacted the conversation ({}): about {pre_tokens} tokens before, {post_tokens} after",
                        trigger.as_str()
                    );
                }
            }
            EngineEvent::Notice { level, message } => {
                if stream {
                    let level_name = format!("{level:?}").to_lowercase();
                    self.line(&output::notice_line(&level_name, &message, &self.session_id));
                }
                if level != NoticeLevel::Info || self.verbose {
                    err_line!("keel: {message}");
                }
            }
            _ => {}
        }
    }

    /// A sub-agent's message, as lines whose `parent_tool_use_id` names the Agent call: its
    /// tool calls and results, and its text and thinking when the program asked for them.
    fn subagent(&mut self, parent: &str, event: EngineEvent) {
        let tag = |mut line: Value| {
            line["parent_tool_use_id"] = Value::String(parent.to_string());
            line
        };
        match event {
            EngineEvent::Assistant {
                id,
                model,
                mut message,
                usage,
                ..
            } => {
                if !self.forward_subagent_text.load(Ordering::Relaxed) {
                    message.content.retain(|b| matches!(b, ContentBlock::ToolUse { .. }));
                }
                for l in output::assistant_lines(&id, &model, &message, &usage, &self.session_id) {
                    self.line(&tag(l));
                }
            }
            EngineEvent::ToolResults(message) => {
                for block in message
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
                {
                    self.line(&tag(output::tool_result_line(block, None, &self.session_id)));
                }
            }
            EngineEvent::Subagent {
                parent_tool_use_id,
                event,
            } => self.subagent(&parent_tool_use_id, *event),
            _ => {}
        }
    }
}
