//! What the printer measures while a turn runs, for its result object and its stream lines:
//! timings to the first request and the first token, the messages begun, how each call's
//! permission was decided, sub-agent counts, refusals, and thinking and search use per model.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::types::message::{ContentBlock, Message};

/// `tool_result_meta` of one call: how its permission was decided.
#[derive(Debug, Clone)]
pub struct CallMeta {
    pub decision: &'static str,
    pub source: &'static str,
    pub reason_type: Option<&'static str>,
}

impl CallMeta {
    pub fn to_json(&self, id: &str) -> Value {
        let mut decision = Map::new();
        decision.insert("decision".into(), self.decision.into());
        decision.insert("source".into(), self.source.into());
        if let Some(r) = self.reason_type {
            decision.insert("reason_type".into(), r.into());
        }
        let mut m = Map::new();
        m.insert("id".into(), id.into());
        if self.decision == "reject" {
            // The call did not run because permission was refused.
            m.insert("non_execution_kind".into(), "user-rejected".into());
        }
        m.insert("permission_decision".into(), Value::Object(decision));
        Value::Object(m)
    }
}

#[derive(Debug, Default, Clone)]
pub struct SubagentStats {
    pub spawned: u64,
    pub background: u64,
    pub foreground: u64,
    pub unset: u64,
    pub started_in_background: u64,
    pub max_depth: u64,
    pub spawned_by_subagents: u64,
    pub completed: u64,
    pub failed: u64,
    pub killed_user: u64,
    pub by_type: BTreeMap<String, u64>,
}

impl SubagentStats {
    pub fn to_json(&self) -> Value {
        json!({
            "spawned": self.spawned,
            "requested": {"background": self.background, "foreground": self.foreground, "unset": self.unset},
            "started_in_background": self.started_in_background,
            "max_depth": self.max_depth,
            "spawned_by_subagents": self.spawned_by_subagents,
            "completed": self.completed,
            "failed": self.failed,
            // keel stops sub-agents only when the user interrupts the turn; it refuses none
            // for depth, concurrency or budget (a sub-agent cannot start another).
            "killed": {"parent": 0, "user": self.killed_user, "system": 0},
            "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0},
            "by_type": self.by_type,
        })
    }
}

/// Per model: thinking text written in this turn (searches are in the usage the API reports).
#[derive(Debug, Default, Clone, Copy)]
pub struct ModelExtras {
    pub thinking_chars: u64,
}

impl ModelExtras {
    /// The API reports no separate count of thinking tokens: estimated at 4 characters a token.
    pub fn thinking_tokens(&self) -> u64 {
        self.thinking_chars.div_ceil(4)
    }
}

#[derive(Debug)]
pub struct TurnStats {
    started: Instant,
    first_request: Option<Instant>,
    first_stream: Option<Instant>,
    first_token: Option<Instant>,
    first_content: Option<Instant>,
    /// The latest request's send time and the message it is answered with.
    request_sent: Option<Instant>,
    pub api_message_id: Option<String>,
    pub begun_message_ids: Vec<String>,
    /// The same ids, to ask about one without scanning the list (it grows with the session).
    begun: HashSet<String>,
    pub safety_stops: u64,
    /// The main agent's last stop reason (a turn cut by `--max-turns` ends on `tool_use`).
    pub last_stop_reason: Option<String>,
    pub subagents: SubagentStats,
    pub by_model: BTreeMap<String, ModelExtras>,
    /// The same for the whole session (for `modelUsage`).
    pub session_by_model: BTreeMap<String, ModelExtras>,
    pub calls: HashMap<String, CallMeta>,
    /// Agent calls in flight: id → ran in the background.
    agent_calls: HashMap<String, bool>,
}

impl Default for TurnStats {
    fn default() -> Self {
        TurnStats::new()
    }
}

fn ms_since(start: Instant, at: Option<Instant>) -> Option<u64> {
    at.map(|t| t.saturating_duration_since(start).as_millis() as u64)
}

impl TurnStats {
    pub fn new() -> Self {
        TurnStats {
            started: Instant::now(),
            first_request: None,
            first_stream: None,
            first_token: None,
            first_content: None,
            request_sent: None,
            api_message_id: None,
            begun_message_ids: Vec::new(),
            begun: HashSet::new(),
            safety_stops: 0,
            last_stop_reason: None,
            subagents: SubagentStats::default(),
            by_model: BTreeMap::new(),
            session_by_model: BTreeMap::new(),
            calls: HashMap::new(),
            agent_calls: HashMap::new(),
        }
    }

    /// Starts the next turn's measurements; the session's per-model counts stay.
    pub fn next_turn(&mut self) {
        let session = std::mem::take(&mut self.session_by_model);
        *self = TurnStats::new();
        self.session_by_model = session;
    }

    pub fn request_started(&mut self) {
        let now = Instant::now();
        self.first_request.get_or_insert(now);
        self.request_sent = Some(now);
    }

    /// A raw stream event; on `message_start`, the milliseconds since its request was sent.
    pub fn stream_event(&mut self, event: &Value) -> Option<u64> {
        let now = Instant::now();
        self.first_stream.get_or_insert(now);
        if event.get("type").and_then(Value::as_str) != Some("message_start") {
            return None;
        }
        if let Some(id) = event.pointer("/message/id").and_then(Value::as_str) {
            self.api_message_id = Some(id.to_string());
            self.begin(id);
        }
        self.request_sent
            .map(|sent| now.saturating_duration_since(sent).as_millis() as u64)
    }

    /// A token arrived; `content`: text or thinking the user sees (not a tool call's start).
    pub fn token(&mut self, content: bool) {
        let now = Instant::now();
        self.first_stream.get_or_insert(now);
        self.first_token.get_or_insert(now);
        if content {
            self.first_content.get_or_insert(now);
        }
    }

    fn begin(&mut self, id: &str) {
        if self.begun.insert(id.to_string()) {
            self.begun_message_ids.push(id.to_string());
        }
    }

    /// A complete assistant message, of the main agent (`depth` 0) or a sub-agent.
    pub fn assistant(&mut self, id: &str, model: &str, message: &Message, stop_reason: &str, depth: u64) {
        if depth == 0 {
            self.begin(id);
            self.last_stop_reason = Some(stop_reason.to_string());
        }
        if stop_reason == "refusal" {
            self.safety_stops += 1;
        }
        let mut seen = ModelExtras::default();
        for block in &message.content {
            if let ContentBlock::Thinking { thinking, .. } = block {
                seen.thinking_chars += thinking.chars().count() as u64;
            }
        }
        for map in [&mut self.by_model, &mut self.session_by_model] {
            let e = map.entry(model.to_string()).or_default();
            e.thinking_chars += seen.thinking_chars;
        }
        for block in &message.content {
            if let ContentBlock::ToolUse { id, name, input, .. } = block
                && (name == "Agent" || name == "Task")
            {
                self.agent_started(id, input, depth);
            }
        }
    }

    fn agent_started(&mut self, id: &str, input: &Value, depth: u64) {
        let s = &mut self.subagents;
        s.spawned += 1;
        let background = input.get("run_in_background").and_then(Value::as_bool);
        match background {
            Some(true) => s.background += 1,
            Some(false) => s.foreground += 1,
            None => s.unset += 1,
        }
        if background == Some(true) {
            s.started_in_background += 1;
        }
        if depth > 0 {
            s.spawned_by_subagents += 1;
        }
        s.max_depth = s.max_depth.max(depth + 1);
        let kind = input
            .get("subagent_type")
            .and_then(Value::as_str)
            .unwrap_or("general-purpose");
        *s.by_type.entry(kind.to_string()).or_default() += 1;
        self.agent_calls.insert(id.to_string(), background == Some(true));
    }

    /// A tool call finished; an Agent call's outcome counts for the sub-agent statistics.
    pub fn tool_finished(&mut self, id: &str, is_error: bool, interrupted: bool) {
        let Some(background) = self.agent_calls.remove(id) else {
            return;
        };
        let s = &mut self.subagents;
        if interrupted {
            s.killed_user += 1;
        } else if is_error {
            s.failed += 1;
        } else if !background {
            // A background launch returns at once; its end is not part of this turn.
            s.completed += 1;
        }
    }

    /// The timing fields of the result object (absent when no request was sent).
    pub fn timing_fields(&self, m: &mut Map<String, Value>) {
        let fields = [
            ("ttft_ms", self.first_token),
            ("ttft_stream_ms", self.first_stream),
            ("time_to_request_ms", self.first_request),
            ("first_content_frame_ms", self.first_content),
        ];
        for (key, at) in fields {
            if let Some(ms) = ms_since(self.started, at) {
                m.insert(key.into(), ms.into());
            }
        }
    }
}
