//! The tool pipeline: lookup → schema validation → PreToolUse hooks → authorization (with the
//! tool's precheck before any question) → execution → result budget → PostToolUse hooks.
//!
//! Read-only calls of one assistant message run concurrently; a mutating call runs alone;
//! results come back in the model's order, one per call, whatever happens.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::EventSink;
use super::authorize::Refusal;
use super::events::EngineEvent;
use crate::compact::budget;
use crate::engine::SessionServices;
use crate::hooks::Hooks;
use crate::permissions::Authorizer;
use crate::provider::{BrokenReason, BrokenToolCall};
use crate::tools::registry::ToolRegistry;
use crate::tools::{Grants, ToolContext, ToolError, ToolOutput};
use crate::types::message::{ContentBlock, ToolResultBlock, ToolResultContent};

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
    /// A hook asked to stop the agent after this call (`continue: false`).
    pub stop: Option<String>,
    /// The usage of model requests the call made on the side, by model.
    pub side_requests: Vec<(String, crate::types::message::Usage)>,
}

impl CallRecord {
    pub fn to_block(&self) -> ContentBlock {
        ContentBlock::tool_result(&self.call.id, self.output.content.clone(), self.output.is_error)
    }

    /// The result as the model sees it: text from outside the session (a file, a command, a
    /// server, the web) inside the untrusted envelope, labelled with the tool's name. Front
    /// ends, hooks and programs get [`CallRecord::to_block`], the raw result.
    pub fn to_model_block(&self, kinds: &crate::tools::kinds::KindTable) -> ContentBlock {
        if self.denied {
            return self.to_block();
        }
        if !kinds.brings_outside_text(&self.call.name, self.output.is_error) {
            // An edit's own words stay as they are; the diagnostics it carries are outside text.
            return match crate::tools::lsp::model_view(&self.output) {
                Some(content) => ContentBlock::tool_result(&self.call.id, content, self.output.is_error),
                None => self.to_block(),
            };
        }
        let wrap = |text: &str| crate::types::untrusted::wrap(&self.call.name, text);
        let content = match &self.output.content {
            ToolResultContent::Text(t) => ToolResultContent::Text(wrap(t)),
            ToolResultContent::Blocks(blocks) => ToolResultContent::Blocks(
                blocks
                    .iter()
                    .map(|b| match b {
                        ToolResultBlock::Text { text } => ToolResultBlock::Text { text: wrap(text) },
                        other => other.clone(),
                    })
                    .collect(),
            ),
        };
        ContentBlock::tool_result(&self.call.id, content, self.output.is_error)
    }
}

pub struct Pipeline<'a> {
    pub registry: &'a ToolRegistry,
    pub services: &'a Arc<SessionServices>,
    /// What the engine can give tool calls; each call gets the part its tool declares.
    pub grants: Grants,
    pub events: &'a EventSink,
    pub authorizer: &'a Authorizer,
    pub hooks: &'a Hooks,
    /// Whether a front end can answer permission questions (false in headless mode).
    pub interactive: bool,
    /// The sub-agent whose calls these are (`agent_id` / `agent_type` in the hooks' payloads).
    pub agent: Option<&'a super::subagent::SubagentInfo>,
}

impl Pipeline<'_> {
    pub async fn run_all(
        &self,
        calls: Vec<ToolCall>,
        broken: &[BrokenToolCall],
        cancel: &CancellationToken,
    ) -> Vec<CallRecord> {
        // Spawn budgets are reserved in the order the model issued its Agent calls, before any
        // runs; places the calls did not use (refused, invalid) are given back afterwards.
        let agent_calls: Vec<String> = calls
            .iter()
            .filter(|c| self.declared(&c.name).effects.spawns_agent && !broken.iter().any(|b| b.id == c.id))
            .map(|c| c.id.clone())
            .collect();
        let runner = self.grants.agents.clone().filter(|_| !agent_calls.is_empty());
        if let Some(r) = &runner {
            r.reserve(&agent_calls);
        }
        let mut records = Vec::with_capacity(calls.len());
        let mut batch: Vec<ToolCall> = Vec::new();
        for call in calls {
            if self.runs_concurrently(&call, broken) {
                batch.push(call);
                continue;
            }
            records.extend(self.run_batch(std::mem::take(&mut batch), broken, cancel).await);
            records.push(self.run_one(call, broken, cancel).await);
        }
        records.extend(self.run_batch(batch, broken, cancel).await);
        if let Some(r) = &runner {
            r.release(&agent_calls);
        }
        records
    }

    /// What the tool of that name declares (nothing, for a name the registry does not hold).
    fn declared(&self, name: &str) -> crate::tools::Declared {
        self.registry.get(name).map(|t| t.tool.declared()).unwrap_or_default()
    }

    /// Read-only calls (and calls that will not run at all) may share a batch.
    fn runs_concurrently(&self, call: &ToolCall, broken: &[BrokenToolCall]) -> bool {
        if broken.iter().any(|b| b.id == call.id) {
            return true;
        }
        match self.registry.get(&call.name) {
            Some(t) => t.tool.runs_concurrently(&call.input),
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

    #[tracing::instrument(name = "tool", level = "info", skip_all, fields(name = %call.name, id = %call.id))]
    async fn run_one(&self, call: ToolCall, broken: &[BrokenToolCall], cancel: &CancellationToken) -> CallRecord {
        let started = Instant::now();
        self.events.emit(EngineEvent::ToolStarted {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.clone(),
        });
        let done = self.execute(&call, broken, cancel, started).await;
        let record = CallRecord {
            call,
            output: done.output,
            denied: done.denied,
            duration_ms: started.elapsed().as_millis() as u64,
            stop: done.stop,
            side_requests: done.side_requests,
        };
        tracing::debug!(
            is_error = record.output.is_error,
            denied = record.denied,
            duration_ms = record.duration_ms,
            "tool finished"
        );
        if record.output.is_error {
            // Only formatted when tracing is on: field values are evaluated lazily.
            tracing::debug!(error = %record.output.content.as_text(), "tool error");
        }
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
        started: Instant,
    ) -> Done {
        if cancel.is_cancelled() {
            return Done::plain(interrupted());
        }
        if let Some(b) = broken.iter().find(|b| b.id == call.id) {
            return Done::plain(broken_output(b));
        }
        let Some(registered) = self.registry.get(&call.name) else {
            return Done::plain(ToolOutput::error(self.registry.unknown_tool_message(&call.name)));
        };
        if let Err(problems) = registered.validate(&call.input) {
            return Done::plain(ToolOutput::error(format!(
                "{} was not run: its input does not match the tool's schema.\n- {}\nFix these fields and call it again.",
                call.name,
                problems.join("\n- ")
            )));
        }
        let pre = match self.pre_tool_hooks(call, &registered).await {
            Ok(p) => p,
            Err(refusal) => return self.refused(call, refusal),
        };
        // Not `..call.clone()`: that would deep-copy the input only to drop it.
        let effective = ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            input: pre.input,
        };
        let approved = match self
            .authorize(&effective, registered.tool.as_ref(), pre.decision, cancel)
            .await
        {
            Ok(a) => a,
            Err(refusal) if refusal.failed_check => {
                // The call failed as it would have when run, only before anyone was asked.
                let mut output = refusal.output;
                let elapsed = started.elapsed().as_millis() as u64;
                let post_stop = self
                    .post_tool_hooks(&effective, &effective.input, &mut output, elapsed, false, pre.context)
                    .await;
                return Done {
                    output,
                    denied: false,
                    stop: pre.stop.or(post_stop),
                    side_requests: Vec::new(),
                };
            }
            Err(refusal) => return self.refused(call, refusal),
        };
        let confinement = approved.confinement;
        let (effective, resolved, plan) = match approved.updated_input {
            None => (effective, approved.resolved, approved.plan),
            Some(updated) => {
                if let Err(problems) = registered.validate(&updated) {
                    return Done::plain(ToolOutput::error(format!(
                        "The approver rewrote the input of this {} call into one that does not match the tool's \
                         schema, so it was not run:\n- {}",
                        call.name,
                        problems.join("\n- ")
                    )));
                }
                // Deny rules hold whoever approves: the rewritten input is checked against them,
                // and its path is resolved anew (the tool opens what the check saw).
                let grants = self.services.skills.grants();
                let facts = crate::permissions::authorizer::Call::of(
                    registered.tool.as_ref(),
                    &call.name,
                    &updated,
                    &self.services.cwd,
                )
                .in_session(&self.services.session_dir);
                let decision = self.authorizer.decide_call(
                    &facts,
                    self.services.mode(),
                    &self.services.cwd,
                    Some(crate::permissions::HookDecision::Allow),
                    &grants,
                );
                if let crate::permissions::Verdict::Deny(reason) = decision.verdict {
                    let output = ToolOutput::error(format!(
                        "Permission denied: {reason}. The approver rewrote this {} call into one a deny rule \
                         forbids, so it was not run.",
                        call.name
                    ));
                    return self.refused(
                        call,
                        Refusal {
                            output,
                            denied: true,
                            failed_check: false,
                        },
                    );
                }
                let plan = facts.plan;
                (
                    ToolCall {
                        input: updated,
                        ..effective
                    },
                    decision.resolved,
                    plan,
                )
            }
        };

        let tool = registered.tool.clone();
        let mut ctx = ToolContext::new(self.services.workspace.clone(), cancel.child_token(), call.id.clone())
            .with_grants(self.grants.only(tool.capabilities()));
        ctx.resolved = resolved;
        ctx.confinement = confinement;
        let observed = super::observers::before(
            self.services,
            &call.name,
            tool.declared().effects,
            &effective.input,
            plan,
            ctx.confinement,
        )
        .await;
        let result = if tool.handles_cancellation() {
            tool.call(effective.input.clone(), &ctx).await
        } else {
            tokio::select! {
                _ = cancel.cancelled() => Err(ToolError::Cancelled),
                r = tool.call(effective.input.clone(), &ctx) => r,
            }
        };
        let was_interrupted = matches!(result, Err(ToolError::Cancelled));
        let output = match result {
            Ok(out) => out,
            Err(ToolError::Cancelled) => interrupted(),
            Err(e) => ToolOutput::error(e.to_string()),
        };
        let mut output = budget::apply(output, tool.result_budget(), &self.services.session_dir, &call.id);
        let known = |p: &std::path::Path| {
            self.services
                .files()
                .get(p)
                .and_then(|v| v.snapshot.as_deref().map(str::to_string))
        };
        super::observers::after(self.services, observed, &mut output, &known).await;
        let post_stop = self
            .post_tool_hooks(
                &effective,
                &effective.input,
                &mut output,
                started.elapsed().as_millis() as u64,
                was_interrupted,
                pre.context,
            )
            .await;
        Done {
            output,
            denied: false,
            stop: pre.stop.or(post_stop),
            side_requests: ctx.side_requests.take(),
        }
    }

    fn refused(&self, call: &ToolCall, refusal: Refusal) -> Done {
        if refusal.denied {
            self.events.emit(EngineEvent::PermissionDenied {
                tool_name: call.name.clone(),
                tool_use_id: call.id.clone(),
                tool_input: call.input.clone(),
                message: refusal.output.content.as_text(),
            });
        }
        Done {
            output: refusal.output,
            denied: refusal.denied,
            stop: None,
            side_requests: Vec::new(),
        }
    }
}

/// How one call ended inside the pipeline.
struct Done {
    output: ToolOutput,
    denied: bool,
    stop: Option<String>,
    side_requests: Vec<(String, crate::types::message::Usage)>,
}

impl Done {
    fn plain(output: ToolOutput) -> Self {
        Done {
            output,
            denied: false,
            stop: None,
            side_requests: Vec::new(),
        }
    }
}

fn interrupted() -> ToolOutput {
    ToolOutput::error("The user interrupted this call before it finished; its effects, if any, are unknown.")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use async_trait::async_trait;
    use serde_json::json;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Read-only tool that only returns once `parties` calls are inside it at the same time.
    struct Rendezvous(Arc<tokio::sync::Barrier>, Arc<Mutex<Vec<String>>>);

    #[async_trait]
    impl Tool for Rendezvous {
        fn name(&self) -> &'static str {
            "Meet"
        }
        fn description(&self) -> &'static str {
            "test"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object", "properties": {"tag": {"type": "string"}}})
        }
        fn is_read_only(&self, _: &Value) -> bool {
            true
        }
        async fn call(&self, input: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            self.0.wait().await;
            let tag = input["tag"].as_str().unwrap_or("").to_string();
            self.1.lock().unwrap().push(tag.clone());
            Ok(ToolOutput::text(tag))
        }
    }

    /// Mutating tool that records when it ran.
    struct Mutate(Arc<Mutex<Vec<String>>>);

    #[async_trait]
    impl Tool for Mutate {
        fn name(&self) -> &'static str {
            "Mutate"
        }
        fn description(&self) -> &'static str {
            "test"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            self.0.lock().unwrap().push("mutate".into());
            Ok(ToolOutput::text("mutated"))
        }
    }

    fn call(id: &str, name: &str, input: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            input,
        }
    }

    /// What a pipeline borrows, for tests: bypass mode (these tests are not about permissions),
    /// no hooks, events dropped.
    struct Fixture {
        _dir: tempfile::TempDir,
        shared: Arc<SessionServices>,
        sink: EventSink,
        authorizer: Authorizer,
        hooks: Hooks,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let shared = SessionServices::builder(dir.path().into(), dir.path().into()).build();
            shared.set_mode(crate::permissions::Mode::BypassPermissions);
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let transcript = crate::transcript::Transcript::disabled(dir.path().join("t"));
            Fixture {
                authorizer: Authorizer::new(Vec::new(), vec![dir.path().into()], None, None),
                hooks: Hooks::none(
                    dir.path().into(),
                    "test".into(),
                    crate::transcript::SharedTranscript::new(transcript),
                ),
                sink: EventSink::new(tx),
                shared,
                _dir: dir,
            }
        }

        fn pipeline<'a>(&'a self, registry: &'a ToolRegistry) -> Pipeline<'a> {
            Pipeline {
                registry,
                services: &self.shared,
                grants: self.shared.grants(),
                events: &self.sink,
                authorizer: &self.authorizer,
                hooks: &self.hooks,
                interactive: false,
                agent: None,
            }
        }
    }

    #[tokio::test]
    async fn read_only_calls_run_concurrently_and_mutations_run_alone() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let registry = ToolRegistry::new(vec![
            Arc::new(Rendezvous(barrier, log.clone())),
            Arc::new(Mutate(log.clone())),
        ])
        .unwrap();
        let f = Fixture::new();
        let pipeline = f.pipeline(&registry);
        let calls = vec![
            call("a", "Meet", json!({"tag": "a"})),
            call("b", "Meet", json!({"tag": "b"})),
            call("m", "Mutate", json!({})),
            call("c", "Meet", json!({"tag": "c"})),
            call("d", "Meet", json!({"tag": "d"})),
        ];
        // Sequential execution would deadlock at the two-party barrier.
        let records = tokio::time::timeout(
            Duration::from_secs(10),
            pipeline.run_all(calls, &[], &CancellationToken::new()),
        )
        .await
        .expect("read-only calls must run concurrently");
        let ids: Vec<&str> = records.iter().map(|r| r.call.id.as_str()).collect();
        assert_eq!(ids, vec!["a", "b", "m", "c", "d"]);
        let log = log.lock().unwrap().clone();
        // The mutation ran after both calls before it and before both after it.
        let m = log.iter().position(|x| x == "mutate").unwrap();
        assert_eq!(m, 2, "{log:?}");
    }

    #[tokio::test]
    async fn cancelled_calls_still_get_one_result_each() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let registry = ToolRegistry::new(vec![Arc::new(Mutate(log.clone()))]).unwrap();
        let f = Fixture::new();
        let pipeline = f.pipeline(&registry);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let records = pipeline
            .run_all(
                vec![call("x", "Mutate", json!({})), call("y", "Mutate", json!({}))],
                &[],
                &cancel,
            )
            .await;
        assert_eq!(records.len(), 2);
        assert!(records.iter().all(|r| r.output.is_error));
        assert!(log.lock().unwrap().is_empty(), "nothing runs after cancellation");
    }
}
