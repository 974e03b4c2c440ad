//! The engine's side of context management: the request view before each model call,
//! automatic and manual compaction (tier 5), and what is noted after each round of tool calls
//! (keel's tool record, lazily loaded instruction files).
//!
//! PreCompact / PostCompact hooks attach at [`Engine::before_compact`] and
//! [`Engine::after_compact`], the one place before and after every compaction.

use std::time::Instant;

use futures_util::StreamExt;

use crate::tools::kinds::KindTable;

use crate::hooks::{Event as HookEvent, fields};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Engine;
use super::events::{EngineEvent, NoticeLevel, ResultSubtype, TurnOutcome};
use super::pipeline::CallRecord;
use crate::compact::RequestView;
use crate::compact::autocompact::{self, Trigger, handoff, remount, summary};
use crate::compact::calls;
use crate::compact::record::{self, CallFacts};
use crate::context::{assemble, instructions, tokens};
use crate::provider::{ModelRequest, ModelResponse, ProviderError, ProviderEvent};
use crate::types::message::ContentBlock;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactReport {
    pub trigger: Trigger,
    /// Estimated tokens of a request before and after.
    pub pre_tokens: u64,
    pub post_tokens: u64,
    /// The hand-off that now opens the conversation.
    pub handoff: String,
    /// Exchanges left out of the summary request to make it fit.
    pub omitted_exchanges: usize,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompactError {
    #[error("there is nothing to compact yet")]
    Empty,
    #[error("compaction was cancelled by a PreCompact hook")]
    Blocked,
    #[error("{0}")]
    Breaker(String),
    #[error("the summary request failed: {0}")]
    Request(String),
    #[error("the summary came back empty")]
    EmptySummary,
    #[error("{0}")]
    TooLarge(String),
    #[error("compaction was interrupted")]
    Cancelled,
}

impl Engine {
    /// The view of the history for the next request.
    pub fn current_view(&mut self) -> RequestView {
        let store = self.session.history_handle();
        self.compactor.follow(self.session.history_revision());
        self.compactor.view(&store, &self.session.services.session_dir)
    }

    /// The next model request. When the context is nearly full, the view tiers are squeezed
    /// and, if that is not enough, the conversation is compacted first. `None`: cancelled.
    pub(super) async fn next_request(&mut self, cancel: &CancellationToken) -> Option<ModelRequest> {
        // Tools added or activated since the last request (MCP servers, ToolSearch) count too.
        let generation = self.registry.generation();
        if generation != self.tools_generation {
            self.tools_generation = generation;
            self.compactor.kinds = KindTable::of(&self.registry);
            self.compactor
                .set_fixed_tokens(tokens::system(&self.config.system) + tokens::tool_set(&self.registry.tool_set()));
        }
        let mut view = self.current_view();
        // Past the threshold, or past the window itself once the estimate's shortfall against
        // the server's count is allowed for (a request the server would refuse).
        let too_big = |c: &crate::compact::Compactor, v: &RequestView| v.tokens >= c.threshold() || c.may_overflow();
        if self.compactor.settings.auto && too_big(&self.compactor, &view) {
            let store = self.session.history_handle();
            self.compactor.follow(self.session.history_revision());
            view = self.compactor.squeeze(&store, &self.session.services.session_dir);
            if too_big(&self.compactor, &view) && !self.compactor.breaker.is_open() {
                match self.compact(None, Trigger::Auto, cancel).await {
                    Err(CompactError::Cancelled) => return None,
                    Err(e) => self
                        .events
                        .notice(NoticeLevel::Warning, format!("automatic compaction did not run: {e}")),
                    Ok(_) => {}
                }
                view = self.current_view();
            }
        }
        let sending = self.compactor.sending(&view);
        let plan = assemble::CachePlan {
            anchors: view.anchors,
            moved: sending.moved,
        };
        // A loaded skill's `model` applies for the rest of the turn.
        let model = self
            .session
            .services
            .skills
            .model()
            .unwrap_or_else(|| self.config.model.clone());
        let mut request = assemble::request_with(
            &model,
            self.compactor.request_max_tokens(self.config.max_tokens),
            &self.config.system,
            &self.registry.tool_set(),
            view.messages,
            plan,
        );
        request.reasoning = self.config.reasoning.clone();
        request.reasoning.task_budget = self.task_budget_left();
        request.unchanged = Some(sending.unchanged);
        Some(request)
    }

    /// Notes what a round of tool calls did: each outcome goes to keel's tool record; paths the
    /// calls touched may bring nested instruction files, returned as a reminder block to send
    /// with the results.
    pub(super) fn note_tool_round(&mut self, records: &[CallRecord]) -> Vec<ContentBlock> {
        let timer = crate::compact::compactor::Timer::start();
        let blocks = self.note_tool_round_inner(records);
        timer.stop(&mut self.compactor.stats);
        blocks
    }

    fn note_tool_round_inner(&mut self, records: &[CallRecord]) -> Vec<ContentBlock> {
        let step = self.session.totals.requests;
        let cwd = self.session.services.cwd.clone();
        let session_dir = self.session.services.session_dir.clone();
        let mut found = Vec::new();
        for r in records {
            let facts = CallFacts {
                step,
                id: &r.call.id,
                tool: &r.call.name,
                input: &r.call.input,
                content: &r.output.content,
                is_error: r.output.is_error,
                structured: &r.output.structured,
                declared: self.compactor.kinds.get(&r.call.name),
            };
            self.session
                .tool_log
                .record(record::outcome(&facts, &cwd, &session_dir));
            for path in calls::input_paths(&r.call.input, &cwd) {
                found.extend(self.project.instructions.touch(&path));
            }
        }
        if let Some(e) = self.session.tool_log.write_error.take() {
            self.events.notice(NoticeLevel::Warning, e);
        }
        self.session.services.evidence.flush();
        if found.is_empty() {
            return Vec::new();
        }
        self.session.log_event(
            "instructions_loaded",
            json!({"files": found.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>()}),
        );
        vec![ContentBlock::text(instructions::render_reminder(&found))]
    }

    /// The PreCompact point: runs before every compaction; PreCompact hooks may cancel it
    /// (exit 2 or `decision: "block"`), which returns `false`.
    pub async fn before_compact(&mut self, trigger: Trigger, custom_instructions: Option<&str>) -> bool {
        if self.hooks.has(HookEvent::PreCompact) {
            let agg = self
                .hooks
                .fire(
                    HookEvent::PreCompact,
                    Some(trigger.as_str()),
                    self.session.services.mode(),
                    fields([
                        ("trigger", trigger.as_str().into()),
                        ("custom_instructions", custom_instructions.unwrap_or("").into()),
                    ]),
                    &self.events,
                )
                .await;
            if agg.blocked() {
                self.events.notice(
                    NoticeLevel::Warning,
                    format!("a PreCompact hook cancelled the compaction: {}", agg.block_reason()),
                );
                return false;
            }
        }
        self.session.log_event(
            "pre_compact",
            json!({"trigger": trigger.as_str(), "custom_instructions": custom_instructions}),
        );
        self.events.emit(EngineEvent::CompactStarted {
            trigger,
            custom_instructions: custom_instructions.map(str::to_string),
        });
        true
    }

    /// The PostCompact point: runs after every successful compaction with its report; then the
    /// session starts again from the hand-off (SessionStart with source `compact`).
    pub async fn after_compact(&mut self, report: &CompactReport) {
        if self.hooks.has(HookEvent::PostCompact) {
            self.hooks
                .fire(
                    HookEvent::PostCompact,
                    Some(report.trigger.as_str()),
                    self.session.services.mode(),
                    fields([
                        ("trigger", report.trigger.as_str().into()),
                        ("compact_summary", report.handoff.clone().into()),
                    ]),
                    &self.events,
                )
                .await;
        }
        self.session_start("compact").await;
        self.session.log_event(
            "post_compact",
            json!({"trigger": report.trigger.as_str(), "pre_tokens": report.pre_tokens, "post_tokens": report.post_tokens}),
        );
        self.events.emit(EngineEvent::Compacted {
            trigger: report.trigger,
            pre_tokens: report.pre_tokens,
            post_tokens: report.post_tokens,
        });
    }

    /// Compacts the conversation now: the manual `/compact [instructions]` and the automatic
    /// path alike.
    #[tracing::instrument(name = "compaction", level = "info", skip_all, fields(trigger = trigger.as_str()))]
    pub async fn compact(
        &mut self,
        custom_instructions: Option<&str>,
        trigger: Trigger,
        cancel: &CancellationToken,
    ) -> Result<CompactReport, CompactError> {
        let request_no = self.session.totals.requests;
        if trigger == Trigger::Auto {
            if let Some(why) = self.compactor.breaker.open_reason() {
                return Err(CompactError::Breaker(why.to_string()));
            }
            self.compactor.breaker.begin(request_no);
        }
        let result = self.compact_inner(custom_instructions, trigger, cancel).await;
        match trigger {
            Trigger::Auto if result != Err(CompactError::Cancelled) && result != Err(CompactError::Blocked) => {
                let verdict = match &result {
                    Ok(r) if r.post_tokens >= self.compactor.threshold() => Err(format!(
                        "the compacted context still needs about {} tokens, above the threshold of {}",
                        r.post_tokens,
                        self.compactor.threshold()
                    )),
                    Ok(_) => Ok(()),
                    Err(e) => Err(e.to_string()),
                };
                if let Some(message) = self.compactor.breaker.finish(request_no, verdict) {
                    self.events.notice(NoticeLevel::Warning, message);
                }
            }
            Trigger::Manual if result.is_ok() => self.compactor.breaker.reset(),
            _ => {}
        }
        result
    }

    async fn compact_inner(
        &mut self,
        custom_instructions: Option<&str>,
        trigger: Trigger,
        cancel: &CancellationToken,
    ) -> Result<CompactReport, CompactError> {
        let store = self.session.history_handle();
        if store.is_empty() {
            return Err(CompactError::Empty);
        }
        if !self.before_compact(trigger, custom_instructions).await {
            return Err(CompactError::Blocked);
        }
        let view = self.current_view();
        let pre_tokens = view.tokens;
        let window = self.compactor.window;
        let instruction = summary::instruction(custom_instructions);
        // The summary request is estimated like any other: allow for the estimate's usual
        // shortfall against the server's count, so the request that is to make room fits itself.
        let budget = window.total.saturating_sub(window.output_reserve) * 95 / 100;
        let budget = (budget as f64 / self.compactor.counter.scale()) as u64;
        let (messages, omitted) =
            summary::request_messages(&view.messages, &instruction, self.compactor.fixed_tokens(), budget)
                .map_err(CompactError::TooLarge)?;
        let request = assemble::request(
            &self.config.model,
            window.output_reserve.clamp(1, u32::MAX as u64) as u32,
            &self.config.system,
            &self.registry.tool_set(),
            std::sync::Arc::new(messages),
        );
        let response = self.stream_quietly(request, cancel).await?;
        let summary_text: String = response.content.iter().filter_map(text_of).collect();
        let summary = summary::parse(&summary_text);
        if summary.is_empty() {
            return Err(CompactError::EmptySummary);
        }

        let requests = handoff::user_requests(&store);
        let failures = self.session.tool_log.open_failures();
        let files = self.session.tool_log.files_changed();
        let other_changes = self
            .session
            .tool_log
            .entries()
            .iter()
            .filter(|e| !e.not_run && e.edited.is_none())
            .filter(|e| {
                let effects = self.compactor.kinds.get(&e.tool).effects;
                !effects.read_only && !effects.edits_files
            })
            .count();
        let input_bytes = (window.input_budget() * tokens::BYTES_PER_TOKEN) as usize;
        let transcript_path = self.session.transcript.path();
        let verification = self.session.services.evidence.handoff_section();
        let text = handoff::render(&handoff::Handoff {
            trigger,
            pre_tokens,
            transcript: &transcript_path,
            session_dir: &self.session.services.session_dir,
            requests: &requests,
            requests_budget: input_bytes / 10,
            summary: &summary,
            failures: &failures,
            files: &files,
            other_changes,
            verification: &verification,
        });
        self.session.services.files().mark_all_partial();
        let plan = remount::latest_plan(&store);
        let hot = remount::hot_state(
            &files,
            plan.as_deref(),
            input_bytes / 5,
            &self.session.services.todos(),
            &self.session.services.files,
        );
        if self.project.reload_instructions() {
            self.config.system = self.project.system_blocks();
            self.compactor
                .set_fixed_tokens(tokens::system(&self.config.system) + tokens::tool_set(&self.registry.tool_set()));
        }
        let mut blocks = vec![ContentBlock::text(text.clone())];
        blocks.extend(hot.map(ContentBlock::text));
        // Skills loaded earlier keep applying: their latest text is mounted again.
        blocks.extend(self.session.services.skills.remount_text().map(ContentBlock::text));
        let new_history = autocompact::new_history(&store, blocks);
        self.session.compact_history(new_history, trigger.as_str(), pre_tokens);
        self.compactor.reset();
        let post_tokens = self.current_view().tokens;
        let report = CompactReport {
            trigger,
            pre_tokens,
            post_tokens,
            handoff: text,
            omitted_exchanges: omitted,
        };
        self.after_compact(&report).await;
        Ok(report)
    }

    /// Runs a summary request without showing its text as the assistant's; counts its usage.
    async fn stream_quietly(
        &mut self,
        request: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, CompactError> {
        let started = Instant::now();
        let mut stream = self.provider.stream(request, cancel.clone());
        let mut response = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(ProviderEvent::Completed(r)) => {
                    response = Some(r);
                    break;
                }
                Ok(ProviderEvent::Retry {
                    attempt,
                    max_retries,
                    delay_ms,
                    status,
                    error,
                    waited_ms,
                }) => self.events.emit(EngineEvent::Retry {
                    attempt,
                    max_retries,
                    delay_ms,
                    status,
                    error,
                    waited_ms,
                }),
                Ok(_) => {}
                Err(ProviderError::Cancelled) => return Err(CompactError::Cancelled),
                Err(e) => return Err(CompactError::Request(e.to_string())),
            }
        }
        let response = response.ok_or_else(|| CompactError::Request("the provider ended without a response".into()))?;
        let model = if response.model.is_empty() {
            self.config.model.clone()
        } else {
            response.model.clone()
        };
        self.session.totals.record(&model, &response.usage);
        self.session.totals.api_ms += started.elapsed().as_millis() as u64;
        self.session.log_event(
            crate::transcript::USAGE_EVENT,
            serde_json::json!({"model": model, "usage": response.usage, "for": "compaction"}),
        );
        Ok(response)
    }

    /// `/compact [instructions]` as a turn of its own (headless and the TUI): compacts and
    /// reports the outcome like a turn.
    pub async fn compact_turn(&mut self, custom_instructions: Option<&str>, cancel: &CancellationToken) -> TurnOutcome {
        let started = Instant::now();
        let result = self.compact(custom_instructions, Trigger::Manual, cancel).await;
        let (subtype, is_error, text) = match &result {
            Ok(r) => (
                ResultSubtype::Success,
                false,
                format!(
                    "Compacted the conversation: about {} tokens before, {} after.",
                    r.pre_tokens, r.post_tokens
                ),
            ),
            Err(e) => (
                ResultSubtype::ErrorDuringExecution,
                true,
                format!("compaction failed: {e}"),
            ),
        };
        let outcome = TurnOutcome {
            subtype,
            is_error,
            result: text.clone(),
            errors: if is_error { vec![text] } else { Vec::new() },
            stop_reason: None,
            num_turns: 0,
            duration_ms: started.elapsed().as_millis() as u64,
            duration_api_ms: 0,
            interrupted: result == Err(CompactError::Cancelled),
            api_error_status: None,
            ..TurnOutcome::default()
        };
        self.events.emit(EngineEvent::TurnFinished(outcome.clone()));
        outcome
    }

    /// Whether a failed request failed because the prompt no longer fits the model's window.
    pub(super) fn is_context_overflow(e: &ProviderError) -> bool {
        match e {
            ProviderError::Rejected { status, message } => {
                let m = message.to_ascii_lowercase();
                (*status == 400 || *status == 413)
                    && (m.contains("prompt is too long")
                        || m.contains("context window")
                        || m.contains("too many tokens"))
            }
            _ => false,
        }
    }
}

fn text_of(b: &ContentBlock) -> Option<&str> {
    match b {
        ContentBlock::Text { text, .. } => Some(text.as_str()),
        _ => None,
    }
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
