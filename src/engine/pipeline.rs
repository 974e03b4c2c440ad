//! The tool pipeline: lookup → schema validation → authorization → execution → result budget.
//!
//! Read-only calls of one assistant message run concurrently; a mutating call runs alone;
//! results come back in the model's order, one per call, whatever happens.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::EventSink;
use super::events::EngineEvent;
use crate::compact::budget;
use crate::message::ContentBlock;
use crate::provider::{BrokenReason, BrokenToolCall};
use crate::tools::registry::ToolRegistry;
use crate::tools::{SessionShared, ToolContext, ToolError, ToolOutput};

/// Most read-only calls run at once.
pub const MAX_PARALLEL: usize = 10;

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// What happened to one call.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub call: ToolCall,
    pub output: ToolOutput,
    pub denied: bool,
    pub duration_ms: u64,
}

impl CallRecord {
    pub fn to_block(&self) -> ContentBlock {
        ContentBlock::tool_result(
            &self.call.id,
            self.output.content.clone(),
            self.output.is_error,
        )
    }
}

pub struct Pipeline<'a> {
    pub registry: &'a ToolRegistry,
    pub shared: &'a Arc<SessionShared>,
    pub events: &'a EventSink,
}

impl Pipeline<'_> {
    pub async fn run_all(
        &self,
        calls: Vec<ToolCall>,
        broken: &[BrokenToolCall],
        cancel: &CancellationToken,
    ) -> Vec<CallRecord> {
        let mut records = Vec::with_capacity(calls.len());
        let mut batch: Vec<ToolCall> = Vec::new();
        for call in calls {
            if self.runs_concurrently(&call, broken) {
                batch.push(call);
                continue;
            }
            records.extend(
                self.run_batch(std::mem::take(&mut batch), broken, cancel)
                    .await,
            );
            records.push(self.run_one(call, broken, cancel).await);
        }
        records.extend(self.run_batch(batch, broken, cancel).await);
        records
    }

    /// Read-only calls (and calls that will not run at all) may share a batch.
    fn runs_concurrently(&self, call: &ToolCall, broken: &[BrokenToolCall]) -> bool {
        if broken.iter().any(|b| b.id == call.id) {
            return true;
        }
        match self.registry.get(&call.name) {
            Some(t) => t.tool.is_read_only(&call.input),
            None => true,
        }
    }

    async fn run_batch(
        &self,
        batch: Vec<ToolCall>,
        broken: &[BrokenToolCall],
        cancel: &CancellationToken,
    ) -> Vec<CallRecord> {
        if batch.is_empty() {
            return Vec::new();
        }
        futures_util::stream::iter(batch)
            .map(|c| self.run_one(c, broken, cancel))
            .buffered(MAX_PARALLEL)
            .collect()
            .await
    }

    async fn run_one(
        &self,
        call: ToolCall,
        broken: &[BrokenToolCall],
        cancel: &CancellationToken,
    ) -> CallRecord {
        let started = Instant::now();
        self.events.emit(EngineEvent::ToolStarted {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.clone(),
        });
        let (output, denied) = self.execute(&call, broken, cancel).await;
        let record = CallRecord {
            call,
            output,
            denied,
            duration_ms: started.elapsed().as_millis() as u64,
        };
        self.events.emit(EngineEvent::ToolFinished {
            id: record.call.id.clone(),
            name: record.call.name.clone(),
            content: record.output.content.clone(),
            is_error: record.output.is_error,
            structured: record.output.structured.clone(),
            duration_ms: record.duration_ms,
        });
        record
    }

    async fn execute(
        &self,
        call: &ToolCall,
        broken: &[BrokenToolCall],
        cancel: &CancellationToken,
    ) -> (ToolOutput, bool) {
        if cancel.is_cancelled() {
            return (interrupted(), false);
        }
        if let Some(b) = broken.iter().find(|b| b.id == call.id) {
            return (broken_output(b), false);
        }
        let Some(registered) = self.registry.get(&call.name) else {
            return (
                ToolOutput::error(self.registry.unknown_tool_message(&call.name)),
                false,
            );
        };
        if let Err(problems) = registered.validate(&call.input) {
            return (
                ToolOutput::error(format!(
                    "{} was not run: its input does not match the tool's schema.\n- {}\nFix these fields and call it again.",
                    call.name,
                    problems.join("\n- ")
                )),
                false,
            );
        }
        // Authorization (permission rules, modes, PreToolUse hooks) plugs in here.

        let ctx = ToolContext {
            shared: self.shared.clone(),
            cancel: cancel.child_token(),
            tool_use_id: call.id.clone(),
        };
        let tool = registered.tool.clone();
        let result = tokio::select! {
            _ = cancel.cancelled() => Err(ToolError::Cancelled),
            r = tool.call(call.input.clone(), &ctx) => r,
        };
        let output = match result {
            Ok(out) => out,
            Err(ToolError::Cancelled) => interrupted(),
            Err(e) => ToolOutput::error(e.to_string()),
        };
        (
            budget::apply(
                output,
                tool.result_budget(),
                &self.shared.session_dir,
                &call.id,
            ),
            false,
        )
    }
}

fn interrupted() -> ToolOutput {
    ToolOutput::error(
        "The user interrupted this call before it finished; its effects, if any, are unknown.",
    )
}

fn broken_output(b: &BrokenToolCall) -> ToolOutput {
    match &b.reason {
        BrokenReason::Malformed { raw, error } => {
            let excerpt: String = raw.chars().take(200).collect();
            ToolOutput::error(format!(
                "{} was not run: its input was not valid JSON ({error}). Input began with: {excerpt}\nSend the call again with a complete JSON object.",
                b.name
            ))
        }
        BrokenReason::Truncated => ToolOutput::error(format!(
            "{} was not run: the response was cut off before the call was complete.",
            b.name
        )),
    }
}
