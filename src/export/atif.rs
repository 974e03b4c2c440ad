//! A session as an ATIF trajectory (Agent Trajectory Interchange Format, as Harbor's
//! `harbor.models.trajectories` defines it).
//!
//! Every conversation line becomes a step: a user prompt a `user` step; a model answer an
//! `agent` step with its text, thinking, tool calls, the observations (the calls' results, from
//! the next user message) and its metrics (tokens and cost of that request); text keel adds to
//! the conversation (tool-round reminders, the stop gate's note, the interruption marker) a
//! `system` step. Messages a compaction or rewind wrote again after its boundary are marked
//! `is_copied_context`. Each sub-agent's transcript becomes an embedded trajectory, referenced
//! from the observation of the Agent call it answered. The root's `extra.verification` is the
//! evidence ledger's report, the same object `keel -p --output-format json` returns.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{ExportError, read_lines, subagent_files};
use crate::config::models;
use crate::types::message::{ContentBlock, Message, Usage};

/// The ATIF version these documents claim: embedded sub-agent trajectories are addressed by
/// `trajectory_id` (1.7); nothing of 1.8 (audio) is used.
pub const SCHEMA_VERSION: &str = "ATIF-v1.7";

/// Sub-agents nest at most this deep in an export (keel's own limit is lower).
const MAX_NESTING: usize = 16;

/// How keel marks a turn the user interrupted (see `engine/turn.rs`).
const INTERRUPTED: &str = "[Request interrupted by user]";

#[derive(Debug, Serialize)]
pub struct Trajectory {
    pub schema_version: &'static str,
    pub session_id: String,
    pub trajectory_id: String,
    pub agent: Agent,
    pub steps: Vec<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    pub final_metrics: FinalMetrics,
    pub extra: Map<String, Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagent_trajectories: Vec<Trajectory>,
}

#[derive(Debug, Serialize)]
pub struct Agent {
    pub name: &'static str,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Step {
    pub step_id: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_copied_context: Option<bool>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Serialize)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub function_name: String,
    pub arguments: Value,
}

#[derive(Debug, Serialize)]
pub struct Observation {
    pub results: Vec<ObservationResult>,
}

#[derive(Debug, Serialize)]
pub struct ObservationResult {
    pub source_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_trajectory_ref: Option<Vec<SubagentRef>>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Serialize)]
pub struct SubagentRef {
    pub trajectory_id: String,
    pub session_id: String,
    pub extra: Map<String, Value>,
}

#[derive(Debug, Serialize)]
pub struct Metrics {
    /// Every input token, cached or not.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// `None` when keel knows no price for the model (unknown is not zero).
    pub cost_usd: Option<f64>,
    pub extra: Map<String, Value>,
}

#[derive(Debug, Serialize)]
pub struct FinalMetrics {
    pub total_prompt_tokens: u64,
    pub total_completion_tokens: u64,
    pub total_cached_tokens: u64,
    /// This trajectory's requests, its sub-agents' and its compaction summaries'.
    pub total_cost_usd: Option<f64>,
    pub total_steps: usize,
    pub extra: Map<String, Value>,
}

/// The ATIF document of the session whose transcript is `path` (its folder beside it).
pub fn export(path: &Path) -> Result<Value, ExportError> {
    let trajectory = build(path, &path.with_extension(""), 0)?;
    Ok(serde_json::to_value(trajectory).unwrap_or(Value::Null))
}

/// Token and cost sums: of steps, and of requests with no step of their own.
#[derive(Default)]
struct Sums {
    usage: Usage,
    cost: f64,
    unpriced: bool,
}

impl Sums {
    fn add(&mut self, model: &str, usage: &Usage) -> Option<f64> {
        self.usage.add(usage);
        match models::info(model).pricing {
            Some(p) => {
                let c = p.cost(usage);
                self.cost += c;
                Some(c)
            }
            None => {
                self.unpriced = true;
                None
            }
        }
    }

    fn cost(&self) -> Option<f64> {
        (!self.unpriced).then_some(round6(self.cost))
    }
}

/// One transcript read into steps.
struct Builder {
    steps: Vec<Step>,
    /// Each call's step, by tool use id.
    calls: HashMap<String, usize>,
    /// The lines after a compaction's or rewind's boundary repeat earlier messages until the
    /// session goes on (an event, or an answer with usage).
    copied: bool,
    steps_sum: Sums,
    /// Compaction summaries and sub-agents: usage the transcript logs as `usage` events.
    other: BTreeMap<String, Sums>,
    turns: Vec<Value>,
    first_model: Option<String>,
}

fn build(path: &Path, session_dir: &Path, depth: usize) -> Result<Trajectory, ExportError> {
    let lines = read_lines(path)?;
    let mut b = Builder {
        steps: Vec::new(),
        calls: HashMap::new(),
        copied: false,
        steps_sum: Sums::default(),
        other: BTreeMap::new(),
        turns: Vec::new(),
        first_model: None,
    };
    let mut meta: Option<&Value> = None;
    let mut subagent: Option<&Value> = None;
    let mut session_id: Option<String> = None;
    let mut unreadable = lines.bad.clone();
    for (n, v) in lines.values.iter().enumerate() {
        match v["type"].as_str() {
            Some("meta") => meta = meta.or(Some(v)),
            Some("compact_boundary") | Some(crate::transcript::REWIND_BOUNDARY) => b.copied = true,
            Some("event") => {
                b.copied = false;
                b.event(v, &mut subagent);
            }
            Some(kind @ ("user" | "assistant")) => {
                if session_id.is_none() {
                    session_id = v["sessionId"].as_str().map(str::to_string);
                }
                match Message::deserialize(&v["message"]) {
                    Ok(m) if kind == "user" => b.user(&m, v),
                    Ok(m) => b.assistant(&m, v),
                    Err(_) => unreadable.push(n + 1),
                }
            }
            _ => {}
        }
    }
    if b.steps.is_empty() {
        return Err(ExportError::Empty(path.to_path_buf()));
    }
    let session_id = meta
        .and_then(|m| m["session_id"].as_str().map(str::to_string))
        .or(session_id)
        .or_else(|| path.file_stem().and_then(|s| s.to_str()).map(str::to_string))
        .unwrap_or_default();
    let mut notes = Vec::new();
    if !unreadable.is_empty() {
        notes.push(format!(
            "{} transcript line(s) could not be read and are left out",
            unreadable.len()
        ));
    }
    let subagent_trajectories = if depth < MAX_NESTING {
        b.subagents(session_dir, depth, &session_id, &mut notes)
    } else {
        notes.push("sub-agents nested deeper than the export follows are left out".into());
        Vec::new()
    };
    let mut extra = Map::new();
    let version = meta
        .and_then(|m| m["version"].as_str())
        .unwrap_or(env!("CARGO_PKG_VERSION"))
        .to_string();
    match subagent {
        // A sub-agent's evidence is handed up to its parent's ledger: the root's report covers it.
        Some(s) => {
            extra.insert("agent_type".into(), s["data"]["agent_type"].clone());
            extra.insert("parent_tool_use_id".into(), s["data"]["parent_tool_use_id"].clone());
            extra.insert("description".into(), s["data"]["description"].clone());
        }
        None => {
            extra.insert("verification".into(), verification(session_dir));
            if let Some(m) = meta {
                extra.insert("cwd".into(), m["cwd"].clone());
                if let Some(branch) = m.get("gitBranch") {
                    extra.insert("git_branch".into(), branch.clone());
                }
            }
        }
    }
    extra.insert("transcript".into(), path.display().to_string().into());
    extra.insert("turns".into(), Value::Array(std::mem::take(&mut b.turns)));
    let final_metrics = b.final_metrics(&subagent_trajectories);
    let model_name = meta
        .and_then(|m| m["model"].as_str().map(str::to_string))
        .or(b.first_model.clone());
    Ok(Trajectory {
        schema_version: SCHEMA_VERSION,
        trajectory_id: session_id.clone(),
        session_id,
        agent: Agent {
            name: "keel",
            version,
            model_name,
        },
        steps: b.steps,
        notes: (!notes.is_empty()).then(|| notes.join("; ")),
        final_metrics,
        extra,
        subagent_trajectories,
    })
}

/// The evidence ledger's report, as the headless result gives it (the ledger as saved:
/// `evidence.json` continued by its journal). A session that never changed its ledger has no
/// `evidence.json`: its report is the empty ledger's.
fn verification(session_dir: &Path) -> Value {
    crate::evidence::report::json(&crate::evidence::load_ledger(session_dir))
}

impl Builder {
    fn push(&mut self, mut step: Step) -> usize {
        step.step_id = self.steps.len() + 1;
        if self.copied {
            step.is_copied_context = Some(true);
        }
        self.steps.push(step);
        self.steps.len() - 1
    }

    fn event<'a>(&mut self, v: &'a Value, subagent: &mut Option<&'a Value>) {
        let data = &v["data"];
        match v["event"].as_str() {
            Some(crate::transcript::USAGE_EVENT) => {
                let Ok(usage) = Usage::deserialize(&data["usage"]) else {
                    return;
                };
                let model = data["model"].as_str().unwrap_or_default();
                let what = data["for"].as_str().unwrap_or("other").to_string();
                self.other.entry(what).or_default().add(model, &usage);
            }
            Some(crate::transcript::SUBAGENT_EVENT) => *subagent = subagent.or(Some(v)),
            Some("turn_finished") => self.turns.push(data.clone()),
            _ => {}
        }
    }

    /// A user message: tool results become the observations of the calls they answer; any
    /// other content is a step of its own.
    fn user(&mut self, m: &Message, line: &Value) {
        let mut text = Vec::new();
        let mut answered_calls = false;
        for block in &m.content {
            match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => {
                    answered_calls = true;
                    let mut extra = Map::new();
                    if *is_error {
                        extra.insert("is_error".into(), true.into());
                    }
                    let result = ObservationResult {
                        source_call_id: tool_use_id.clone(),
                        content: Some(content.as_text()),
                        subagent_trajectory_ref: None,
                        extra,
                    };
                    match self.calls.get(tool_use_id).copied() {
                        Some(i) => self.steps[i]
                            .observation
                            .get_or_insert_with(|| Observation { results: Vec::new() })
                            .results
                            .push(result),
                        // A result without its call (a repaired history): kept as text.
                        None => text.push(format!("[result of tool call {tool_use_id}]\n{}", content.as_text())),
                    }
                }
                other => text.extend(block_text(other)),
            }
        }
        if text.is_empty() {
            return;
        }
        let message = text.join("\n\n");
        let source =
            if answered_calls || message.starts_with(crate::evidence::gate::LEAD) || message.starts_with(INTERRUPTED) {
                "system"
            } else {
                "user"
            };
        self.push(Step {
            source,
            message,
            ..plain_step(line)
        });
    }

    fn assistant(&mut self, m: &Message, line: &Value) {
        let body = &line["message"];
        let usage = Usage::deserialize(&body["usage"])
            .ok()
            .filter(|_| body.get("usage").is_some());
        if usage.is_some() {
            // A new answer: the repeated part after a boundary is over.
            self.copied = false;
        }
        let model = body["model"].as_str().map(str::to_string);
        if self.first_model.is_none() {
            self.first_model = model.clone();
        }
        let mut text = Vec::new();
        let mut reasoning = Vec::new();
        let mut calls = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::ToolUse { id, name, input } => calls.push(ToolCall {
                    tool_call_id: id.clone(),
                    function_name: name.clone(),
                    // ATIF wants an object; keel's tools all take one, a broken call may not.
                    arguments: match input {
                        Value::Object(_) => input.clone(),
                        other => json!({ "input": other }),
                    },
                }),
                ContentBlock::Thinking { thinking, .. } => reasoning.push(thinking.clone()),
                ContentBlock::RedactedThinking { .. } => reasoning.push("[redacted thinking]".into()),
                other => text.extend(block_text(other)),
            }
        }
        let metrics = usage.map(|u| {
            let cost = self.steps_sum.add(model.as_deref().unwrap_or_default(), &u);
            let mut extra = Map::new();
            extra.insert("input_tokens".into(), u.input_tokens.into());
            extra.insert(
                "cache_creation_input_tokens".into(),
                u.cache_creation_input_tokens.into(),
            );
            Metrics {
                prompt_tokens: u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens,
                completion_tokens: u.output_tokens,
                cached_tokens: u.cache_read_input_tokens,
                cost_usd: cost.map(round6),
                extra,
            }
        });
        let mut extra = Map::new();
        if let Some(id) = body["id"].as_str() {
            extra.insert("message_id".into(), id.into());
        }
        let ids: Vec<String> = calls.iter().map(|c| c.tool_call_id.clone()).collect();
        let i = self.push(Step {
            source: "agent",
            model_name: model,
            message: text.join("\n\n"),
            reasoning_content: (!reasoning.is_empty()).then(|| reasoning.join("\n\n")),
            tool_calls: (!calls.is_empty()).then_some(calls),
            metrics,
            extra,
            ..plain_step(line)
        });
        for id in ids {
            self.calls.insert(id, i);
        }
    }

    /// The sub-agents of this session as embedded trajectories, each referenced from the
    /// observation of the Agent call it answered.
    fn subagents(
        &mut self,
        session_dir: &Path,
        depth: usize,
        parent: &str,
        notes: &mut Vec<String>,
    ) -> Vec<Trajectory> {
        let mut out = Vec::new();
        for file in subagent_files(session_dir) {
            let sub = match build(&file.path, &file.dir, depth + 1) {
                Ok(t) => t,
                Err(e) => {
                    notes.push(format!("sub-agent {} is left out: {e}", file.agent_id));
                    continue;
                }
            };
            let call = sub
                .extra
                .get("parent_tool_use_id")
                .and_then(Value::as_str)
                .map(str::to_string);
            let reference = SubagentRef {
                trajectory_id: sub.trajectory_id.clone(),
                session_id: sub.session_id.clone(),
                extra: ["agent_type", "description"]
                    .iter()
                    .filter_map(|k| Some((k.to_string(), sub.extra.get(*k)?.clone())))
                    .collect(),
            };
            match call.and_then(|c| self.calls.get(&c).map(|i| (c, *i))) {
                Some((call, i)) => {
                    let results = &mut self.steps[i]
                        .observation
                        .get_or_insert_with(|| Observation { results: Vec::new() })
                        .results;
                    // A call still running (or cut off) has no result yet: the reference alone.
                    match results.iter_mut().find(|r| r.source_call_id == call) {
                        Some(r) => r.subagent_trajectory_ref.get_or_insert_with(Vec::new).push(reference),
                        None => results.push(ObservationResult {
                            source_call_id: call,
                            content: None,
                            subagent_trajectory_ref: Some(vec![reference]),
                            extra: Map::new(),
                        }),
                    }
                }
                None => notes.push(format!(
                    "sub-agent {} names no Agent call of session {parent}",
                    file.agent_id
                )),
            }
            out.push(sub);
        }
        out
    }

    fn final_metrics(&self, subagents: &[Trajectory]) -> FinalMetrics {
        let u = &self.steps_sum.usage;
        let mut unpriced = self.steps_sum.unpriced;
        let mut cost = self.steps_sum.cost;
        let mut extra = Map::new();
        for (what, sums) in &self.other {
            // A finished sub-agent's requests are logged here as well; they are counted from
            // its own trajectory below, which a sub-agent that never finished has too.
            if what != "subagent" {
                unpriced |= sums.unpriced;
                cost += sums.cost;
            }
            extra.insert(
                format!("{what}_usage"),
                json!({"usage": sums.usage, "cost_usd": sums.cost()}),
            );
        }
        for s in subagents {
            match s.final_metrics.total_cost_usd {
                Some(c) => cost += c,
                None => unpriced = true,
            }
        }
        FinalMetrics {
            total_prompt_tokens: u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens,
            total_completion_tokens: u.output_tokens,
            total_cached_tokens: u.cache_read_input_tokens,
            total_cost_usd: (!unpriced).then_some(round6(cost)),
            total_steps: self.steps.len(),
            extra,
        }
    }
}

/// A step with nothing but the line's timestamp.
fn plain_step(line: &Value) -> Step {
    Step {
        step_id: 0,
        timestamp: line["timestamp"].as_str().map(str::to_string),
        source: "user",
        model_name: None,
        message: String::new(),
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
        is_copied_context: None,
        extra: Map::new(),
    }
}

/// What a text or image block says in a step's message (images are not kept as files).
fn block_text(block: &ContentBlock) -> Option<String> {
    match block {
        ContentBlock::Text { text, .. } => Some(text.clone()),
        ContentBlock::Image { source } => Some(format!("[image {}]", source.media_type)),
        _ => None,
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
#[path = "atif_tests.rs"]
mod tests;
