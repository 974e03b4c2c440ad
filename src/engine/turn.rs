//! The turn driver: one user prompt, as many model requests and tool rounds as it takes.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Engine;
use super::events::{ApiErrorKind, EngineEvent, NoticeLevel, ResultSubtype, TerminalReason, TurnOutcome};
use super::lifecycle::{MAX_STOP_BLOCKS, PromptVerdict, StopVerdict};
use super::pipeline::{Pipeline, ToolCall};
use super::session::Denial;
use crate::provider::{BrokenReason, ModelRequest, ModelResponse, Provider, ProviderError, ProviderEvent};
use crate::types::message::{ContentBlock, Message, StopReason};

/// How often a response cut by the output limit is continued before giving up.
const MAX_CONTINUATIONS: u32 = 3;
/// How often the model is reminded to give its structured answer before the turn fails.
const MAX_STRUCTURED_NUDGES: u32 = 3;

struct TurnStats {
    started: Instant,
    api_ms: u64,
    requests: u32,
}

impl Engine {
    /// Runs one user turn to its end and returns (and emits) its outcome.
    #[tracing::instrument(name = "turn", level = "info", skip_all, fields(requests = tracing::field::Empty))]
    pub async fn run_turn(&mut self, content: Vec<ContentBlock>, cancel: CancellationToken) -> TurnOutcome {
        let mut stats = TurnStats {
            started: Instant::now(),
            api_ms: 0,
            requests: 0,
        };
        let mut content = content;
        self.task_spend = super::task_budget::TaskSpend::start(self.session.totals.usage.output_tokens);
        self.begin_verification_turn();
        self.hooks.set_prompt_id(uuid::Uuid::new_v4().to_string());
        if let Some(slot) = &self.structured {
            slot.take();
        }
        content.extend(self.background_notes());
        self.config_changes().await;
        let outcome = match self.submit_prompt(&mut content).await {
            PromptVerdict::Reject(reason) => {
                let mut o = failure(
                    ResultSubtype::ErrorDuringExecution,
                    format!("the prompt was blocked by a UserPromptSubmit hook: {reason}"),
                    None,
                );
                o.stop_reason = Some("hook_blocked".into());
                o.terminal_reason = TerminalReason::HookStopped;
                o
            }
            PromptVerdict::Accept => {
                self.begin_prompt_point(&content);
                content.extend(self.late_git_note());
                self.session.push_user(content);
                self.drive(&mut stats, &cancel).await
            }
        };
        self.stop_failure(&outcome).await;
        // A skill's allowed tools, model and hooks last for the turn that loaded it.
        self.session.services.skills.end_turn();
        for owner in self.session.services.skills.take_hook_owners() {
            self.hooks.remove_scoped(&owner);
        }
        self.absorb_subagents();
        tracing::Span::current().record("requests", stats.requests);
        tracing::info!(
            subtype = outcome.subtype.as_str(),
            is_error = outcome.is_error,
            "turn finished"
        );
        if outcome.is_error {
            tracing::warn!(error = %outcome.result, "turn failed");
        }
        let outcome = TurnOutcome {
            num_turns: stats.requests,
            duration_ms: stats.started.elapsed().as_millis() as u64,
            duration_api_ms: stats.api_ms,
            ..outcome
        };
        let write_errors = std::mem::take(&mut self.session.transcript_errors);
        match self.session.transcript.health() {
            Some(unsaved) if !write_errors.is_empty() => self.events.notice(NoticeLevel::Warning, unsaved),
            _ => write_errors
                .into_iter()
                .for_each(|e| self.events.notice(NoticeLevel::Warning, e)),
        }
        for gap in self.session.services.checkpoints.new_gap_notices() {
            self.events.notice(NoticeLevel::Warning, gap);
        }
        self.session.log_event(
            "turn_finished",
            json!({"subtype": outcome.subtype.as_str(), "is_error": outcome.is_error, "num_turns": outcome.num_turns}),
        );
        self.events.emit(EngineEvent::TurnFinished(outcome.clone()));
        outcome
    }

    async fn drive(&mut self, stats: &mut TurnStats, cancel: &CancellationToken) -> TurnOutcome {
        let mut continuations = 0;
        let mut stop_blocks = 0u32;
        let mut structured_nudges = 0u32;
        let mut overflow_compacted = false;
        loop {
            if let Some(max) = self.config.max_turns
                && stats.requests >= max
            {
                let mut o = failure(
                    ResultSubtype::ErrorMaxTurns,
                    format!("reached the limit of {max} model turns before the task was finished"),
                    None,
                );
                o.terminal_reason = TerminalReason::MaxTurns;
                return o;
            }
            if let Some(o) = self.over_budget(false) {
                return o;
            }
            stats.requests += 1;
            self.events.emit(EngineEvent::RequestStarted {
                request: stats.requests,
            });
            let Some(mut request) = self.next_request(cancel).await else {
                return self.interrupted(TerminalReason::AbortedStreaming);
            };
            let provider = match self.provider_for(&mut request) {
                Ok(p) => p,
                Err(why) => return failure(ResultSubtype::ErrorDuringExecution, why, None),
            };
            let api_started = Instant::now();
            let response = self.stream_response(&provider, request, cancel).await;
            stats.api_ms += api_started.elapsed().as_millis() as u64;
            let response = match response {
                Ok(r) => r,
                Err(ProviderError::Cancelled) => return self.interrupted(TerminalReason::AbortedStreaming),
                // The prompt outgrew the model's window after all: compact once and retry.
                Err(e) if !overflow_compacted && self.compactor.settings.auto && Self::is_context_overflow(&e) => {
                    overflow_compacted = true;
                    match self
                        .compact(None, crate::compact::autocompact::Trigger::Auto, cancel)
                        .await
                    {
                        Ok(_) => continue,
                        Err(super::CompactError::Cancelled) => {
                            return self.interrupted(TerminalReason::AbortedStreaming);
                        }
                        Err(_) => {
                            let mut o = failure(ResultSubtype::ErrorDuringExecution, e.to_string(), e.status());
                            o.terminal_reason = TerminalReason::PromptTooLong;
                            o.api_error_kind = Some(ApiErrorKind::ContextWindow);
                            return o;
                        }
                    }
                }
                Err(e) => {
                    let status = e.status();
                    let mut o = failure(ResultSubtype::ErrorDuringExecution, e.to_string(), status);
                    if Self::is_context_overflow(&e) {
                        o.terminal_reason = TerminalReason::PromptTooLong;
                        o.api_error_kind = Some(ApiErrorKind::ContextWindow);
                    } else {
                        o.terminal_reason = TerminalReason::ApiError;
                        o.api_error_kind = e.kind();
                    }
                    return o;
                }
            };
            self.session
                .totals
                .record(&response.model_or(&self.config.model), &response.usage);
            self.compactor.counter.observed(&response.usage);
            self.task_spend.observe(&response.usage);
            self.session.totals.api_ms += api_started.elapsed().as_millis() as u64;

            let mut content = response.content.clone();
            if content.is_empty() {
                // The API rejects empty assistant messages in the history; say what left it
                // empty rather than pretend the model said nothing.
                content.push(ContentBlock::text(empty_placeholder(&response)));
            }
            let message = Message::assistant(content);
            self.session.push_assistant_with(
                message.clone(),
                &response.id,
                &response.model_or(&self.config.model),
                &response.usage,
            );
            self.events.emit(EngineEvent::Assistant {
                id: response.id.clone(),
                model: response.model_or(&self.config.model),
                message: message.clone(),
                stop_reason: response.stop_reason.as_str().to_string(),
                usage: response.usage,
            });

            let calls: Vec<ToolCall> = message
                .tool_uses()
                .map(|t| ToolCall {
                    id: t.id.to_string(),
                    name: t.name.to_string(),
                    input: t.input.clone(),
                })
                .collect();
            if !calls.is_empty() {
                self.publish_verifier_facts(&calls);
                let before = self.before_round();
                let records = Pipeline {
                    registry: &self.registry,
                    services: &self.session.services,
                    grants: self.grants(),
                    events: &self.events,
                    authorizer: &self.authorizer,
                    hooks: &self.hooks,
                    interactive: self.config.interactive,
                    agent: self.subagent.as_ref(),
                }
                .run_all(calls, &response.broken_tool_calls, cancel)
                .await;
                self.session.sync_todos();
                self.absorb_subagents();
                self.absorb_side_requests(&records);
                for r in records.iter().filter(|r| r.denied) {
                    self.session.denials.push(Denial {
                        tool_name: r.call.name.clone(),
                        tool_use_id: r.call.id.clone(),
                        tool_input: r.call.input.clone(),
                    });
                }
                self.config_changes().await;
                let round = self.after_round(before, &records).await;
                // Front ends get the raw results; the history (the model's view) the enveloped.
                let raw: Vec<ContentBlock> = records.iter().map(|r| r.to_block()).collect();
                let mut content: Vec<ContentBlock> = records
                    .iter()
                    .map(|r| r.to_model_block(&self.compactor.kinds))
                    .collect();
                let mut rest: Vec<ContentBlock> = round
                    .notes
                    .iter()
                    .map(|n| ContentBlock::text(format!("<system-reminder>\n{n}\n</system-reminder>")))
                    .collect();
                let nested_before = self.project.instructions.nested.len();
                rest.extend(self.note_tool_round(&records));
                self.nested_instructions_loaded(nested_before).await;
                rest.extend(self.loaded_skills(&records));
                rest.extend(self.background_notes());
                rest.extend(self.late_git_note());
                // Calls cut by the output limit never ran: the model must hear it and go on.
                if response
                    .broken_tool_calls
                    .iter()
                    .any(|b| b.reason == BrokenReason::Truncated)
                {
                    rest.push(ContentBlock::text(continuation_note(&response)));
                }
                content.extend(rest.iter().cloned());
                self.session.push_user(content);
                let results = Message {
                    role: crate::types::message::Role::User,
                    content: raw.into_iter().chain(rest).collect(),
                };
                self.events.emit(EngineEvent::ToolResults(results));
                if cancel.is_cancelled() {
                    return self.interrupted(TerminalReason::AbortedTools);
                }
                if let Some(reason) = records.iter().find_map(|r| r.stop.clone()).or(round.stop) {
                    return self.halted(reason, TerminalReason::HookStopped);
                }
                if let Some(value) = self.structured.as_ref().and_then(|s| s.take()) {
                    if let Some(o) = self.over_budget(true) {
                        return o;
                    }
                    return TurnOutcome {
                        result: value.to_string(),
                        structured_output: Some(value),
                        stop_reason: Some(response.stop_reason.as_str().to_string()),
                        ..TurnOutcome::default()
                    };
                }
                continue;
            }

            if response.stop_reason == StopReason::MaxTokens {
                if continuations >= MAX_CONTINUATIONS {
                    return failure(
                        ResultSubtype::ErrorDuringExecution,
                        format!("the model hit its output limit {MAX_CONTINUATIONS} times in a row without finishing"),
                        None,
                    );
                }
                continuations += 1;
                self.session
                    .push_user(vec![ContentBlock::text(continuation_note(&response))]);
                continue;
            }

            // Headless runs and sub-agents have no later turn: background sub-agents still
            // running are waited for, and their reports continue this turn.
            if let Some(notes) = self.await_background(cancel).await {
                self.session.push_user(notes);
                continue;
            }
            if self.structured.is_some() {
                if structured_nudges >= MAX_STRUCTURED_NUDGES {
                    let mut o = failure(
                        ResultSubtype::ErrorMaxStructuredOutputRetries,
                        format!(
                            "the model ended its turn {} times without a valid {} call",
                            MAX_STRUCTURED_NUDGES + 1,
                            crate::tools::structured::NAME
                        ),
                        None,
                    );
                    o.terminal_reason = TerminalReason::StructuredOutputRetryExhausted;
                    return o;
                }
                structured_nudges += 1;
                self.session.push_user(vec![ContentBlock::text(format!(
                    "Your answer must be given through the {} tool, in the required format. Call it now.",
                    crate::tools::structured::NAME
                ))]);
                continue;
            }
            // The verification gate decides first, so Stop (and SubagentStop) hooks fire only for
            // a stop that happens. Its send-backs count under the same loop guard as a hook's
            // block, and make `stop_hook_active` true for the hooks at the next stop.
            if stop_blocks < MAX_STOP_BLOCKS
                && let Some(note) = self.verification_gate()
            {
                stop_blocks += 1;
                self.session.push_user(vec![ContentBlock::text(note)]);
                continue;
            }
            match self.stop_check(stop_blocks > 0, stop_blocks).await {
                StopVerdict::Stop => {}
                StopVerdict::Halt(reason) => return self.halted(reason, TerminalReason::StopHookPrevented),
                StopVerdict::Continue(feedback) => {
                    stop_blocks += 1;
                    self.session.push_user(vec![ContentBlock::text(feedback)]);
                    continue;
                }
            }
            // The limit is checked after each model call, so the last one may have gone past
            // it: an answer that cost more than allowed is still a budget failure.
            if let Some(o) = self.over_budget(true) {
                return o;
            }
            return TurnOutcome {
                result: message.text(),
                stop_reason: Some(response.stop_reason.as_str().to_string()),
                ..TurnOutcome::default()
            };
        }
    }

    /// `--max-budget-usd` reached: the failure to end the turn with. `finished`: the model had
    /// finished the task with the call that went past the limit.
    fn over_budget(&self, finished: bool) -> Option<TurnOutcome> {
        if let Some(o) = self.over_task_budget(finished) {
            return Some(o);
        }
        let max = self.config.max_budget_usd?;
        let spent = self.session.totals.cost_usd;
        if spent < max {
            return None;
        }
        let message = if finished {
            format!(
                "spent ${spent:.4}, over the spending limit of ${max}: the model call that finished the task went \
                 past it (the limit is checked after each call)"
            )
        } else {
            format!("reached the spending limit of ${max} (spent ${spent:.4}) before the task was finished")
        };
        let mut o = failure(ResultSubtype::ErrorMaxBudgetUsd, message, None);
        o.terminal_reason = TerminalReason::BudgetExhausted;
        Some(o)
    }

    /// `--task-budget` spent: the failure to end the run with.
    fn over_task_budget(&self, finished: bool) -> Option<TurnOutcome> {
        let total = self.config.reasoning.task_budget?.total;
        let spent = self.task_spend.spent(self.session.totals.usage.output_tokens);
        if spent < total {
            return None;
        }
        let message = if finished {
            format!(
                "spent {spent} tokens, over the task budget of {total} (--task-budget): the model call that finished \
                 the task went past it"
            )
        } else {
            format!(
                "the task budget of {total} tokens (--task-budget) is spent ({spent} tokens) before the task was finished"
            )
        };
        let mut o = failure(ResultSubtype::ErrorMaxTaskBudget, message, None);
        o.terminal_reason = TerminalReason::BudgetExhausted;
        Some(o)
    }

    /// What is left of `--task-budget`, for the next request.
    pub(super) fn task_budget_left(&self) -> Option<crate::provider::TaskBudget> {
        let total = self.config.reasoning.task_budget?.total;
        let spent = self.task_spend.spent(self.session.totals.usage.output_tokens);
        Some(crate::provider::TaskBudget {
            total,
            remaining: total.saturating_sub(spent),
        })
    }

    /// Streams one request, forwarding deltas as events.
    async fn stream_response(
        &mut self,
        provider: &Arc<dyn Provider>,
        request: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ProviderError> {
        let mut stream = provider.stream(request, cancel.clone());
        while let Some(item) = stream.next().await {
            match item? {
                ProviderEvent::Completed(resp) => return Ok(resp),
                ProviderEvent::TextDelta { text } => self.events.emit(EngineEvent::TextDelta(text)),
                ProviderEvent::ThinkingDelta { text } => self.events.emit(EngineEvent::ThinkingDelta(text)),
                ProviderEvent::ToolUseStarted { id, name } => {
                    self.events.emit(EngineEvent::ToolCallStreaming { id, name })
                }
                ProviderEvent::Raw(v) => self.events.emit(EngineEvent::RawStream(v)),
                ProviderEvent::Notice(message) => self.events.notice(NoticeLevel::Warning, message),
                ProviderEvent::Retry {
                    attempt,
                    max_retries,
                    delay_ms,
                    status,
                    error,
                    waited_ms,
                } => {
                    self.session.log_event(
                        "api_retry",
                        json!({"attempt": attempt, "max_retries": max_retries, "retry_delay_ms": delay_ms, "error_status": status, "error": error}),
                    );
                    self.events.emit(EngineEvent::Retry {
                        attempt,
                        max_retries,
                        delay_ms,
                        status,
                        error,
                        waited_ms,
                    });
                }
            }
        }
        Err(ProviderError::Stream("the provider ended without a response".into()))
    }

    /// A hook said `continue: false`: the turn ends here, successfully, with its reason.
    fn halted(&mut self, reason: String, terminal_reason: TerminalReason) -> TurnOutcome {
        self.events
            .notice(NoticeLevel::Warning, format!("a hook stopped the agent: {reason}"));
        TurnOutcome {
            result: self.session.last_assistant_text(),
            stop_reason: Some("hook_stopped".into()),
            terminal_reason,
            ..TurnOutcome::default()
        }
    }

    /// Records the interruption so the next turn's model knows, and reports it (naming the
    /// signal when one other than Ctrl+C stopped the turn).
    fn interrupted(&mut self, terminal_reason: TerminalReason) -> TurnOutcome {
        self.session
            .push_user(vec![ContentBlock::text("[Request interrupted by user]")]);
        let why = match crate::shutdown::stopped_by() {
            Some(signal) => format!("stopped by {signal}"),
            None => "interrupted by the user".into(),
        };
        TurnOutcome {
            subtype: ResultSubtype::ErrorDuringExecution,
            is_error: true,
            result: why.clone(),
            errors: vec![why],
            interrupted: true,
            terminal_reason,
            ..TurnOutcome::default()
        }
    }
}

fn failure(subtype: ResultSubtype, message: String, status: Option<u16>) -> TurnOutcome {
    TurnOutcome {
        subtype,
        is_error: true,
        result: message.clone(),
        errors: vec![message],
        api_error_status: status,
        terminal_reason: TerminalReason::ApiError,
        ..TurnOutcome::default()
    }
}

/// What an assistant message with no content stands for in the history.
fn empty_placeholder(response: &ModelResponse) -> String {
    let cut: Vec<&str> = response
        .broken_tool_calls
        .iter()
        .filter(|b| b.reason == BrokenReason::Truncated)
        .map(|b| b.name.as_str())
        .collect();
    if cut.is_empty() {
        "(no output)".into()
    } else {
        format!(
            "(the output token limit cut this response off while a call to {} was being written)",
            cut.join(", ")
        )
    }
}

fn continuation_note(response: &ModelResponse) -> String {
    let cut: Vec<&str> = response
        .broken_tool_calls
        .iter()
        .filter(|b| b.reason == BrokenReason::Truncated)
        .map(|b| b.name.as_str())
        .collect();
    if cut.is_empty() {
        "Your response was cut off by the output token limit. Continue exactly where you stopped.".into()
    } else {
        format!(
            "Your response was cut off by the output token limit while you were writing a call to {}; that \
             call was incomplete and was NOT run. Continue, and keep each tool input smaller (for example, \
             write a large file in several steps).",
            cut.join(", ")
        )
    }
}
