//! The session: long-lived state that outlives single turns.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::services::SessionServices;
use crate::compact::record::ToolLog;
use crate::config::models;
use crate::transcript::lock::SessionLock;
use crate::transcript::{SessionMeta, SharedTranscript, Transcript, TranscriptError};
use crate::types::message::{ContentBlock, Message, Role, Usage};
use crate::types::tool::Todo;

/// Token and cost totals for one model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelTotals {
    pub usage: Usage,
    pub cost_usd: f64,
    /// keel has no price for this model: its cost is unknown, not zero.
    pub unpriced: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub usage: Usage,
    /// The cost of the priced models (see [`Totals::cost_known`]).
    pub cost_usd: f64,
    pub api_ms: u64,
    pub requests: u32,
    pub by_model: BTreeMap<String, ModelTotals>,
}

impl Totals {
    pub fn record(&mut self, model: &str, usage: &Usage) {
        let pricing = models::info(model).pricing;
        let cost = pricing.map(|p| p.cost(usage)).unwrap_or(0.0);
        self.usage.add(usage);
        self.cost_usd += cost;
        self.requests += 1;
        let entry = self.by_model.entry(model.to_string()).or_default();
        entry.usage.add(usage);
        entry.cost_usd += cost;
        entry.unpriced |= pricing.is_none();
    }

    /// Whether every model used has a price (otherwise the total is unknown).
    pub fn cost_known(&self) -> bool {
        self.by_model.values().all(|m| !m.unpriced)
    }

    /// The models keel has no price for.
    pub fn unpriced_models(&self) -> Vec<&str> {
        self.by_model
            .iter()
            .filter(|(_, m)| m.unpriced)
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

pub use crate::tools::agent::Denial;

pub struct Session {
    pub id: String,
    /// Shared with in-flight requests so building one costs no copy of the conversation.
    history: Arc<Vec<Message>>,
    pub services: Arc<SessionServices>,
    pub totals: Totals,
    pub denials: Vec<Denial>,
    /// keel's own record of tool outcomes (failed checks, edits) for compaction.
    pub tool_log: ToolLog,
    pub transcript: SharedTranscript,
    /// Transcript writes that failed; reported once, never fatal to the turn.
    pub transcript_errors: Vec<String>,
    /// The task list as last written to the transcript.
    logged_todos: Vec<Todo>,
    /// This process is the session's one writer while it holds this.
    lock: Option<SessionLock>,
    /// Counts replacements of the history (appends leave it): what was built from the old
    /// history is stale once it moves.
    history_revision: u64,
}

impl Session {
    /// A session with default services (no sandbox, in-memory ledger): for embedding and tests.
    pub fn new(id: String, cwd: PathBuf, session_dir: PathBuf, transcript: Transcript) -> Self {
        Session::with_services(id, transcript, SessionServices::builder(cwd, session_dir).build())
    }

    pub fn with_services(id: String, transcript: Transcript, services: Arc<SessionServices>) -> Self {
        let mut transcript = transcript;
        transcript.set_context(id.clone(), services.cwd.clone());
        // A sub-agent's commands keep the session's id (set by `child_services`).
        if services.shell.session_id().is_none() {
            services.shell.set_session_id(Some(id.clone()));
        }
        Session {
            id,
            history: Arc::new(Vec::new()),
            services,
            totals: Totals::default(),
            denials: Vec::new(),
            tool_log: ToolLog::in_memory(),
            transcript: SharedTranscript::new(transcript),
            transcript_errors: Vec::new(),
            logged_todos: Vec::new(),
            lock: None,
            history_revision: 0,
        }
    }

    /// Keeps the session's lock for as long as the session lives.
    pub fn hold(&mut self, lock: SessionLock) {
        self.lock = Some(lock);
    }

    /// Restores the task list of a resumed session (without logging it again).
    pub fn restore_todos(&mut self, todos: Vec<Todo>) {
        self.services.task_list.replace(todos.clone());
        self.logged_todos = todos;
    }

    /// Records the task list in the transcript when TodoWrite changed it, so resume restores it.
    pub fn sync_todos(&mut self) {
        let todos = self.services.todos();
        if todos != self.logged_todos {
            self.log_event(crate::transcript::TODOS_EVENT, serde_json::json!({ "todos": todos }));
            self.logged_todos = todos;
        }
    }

    pub fn write_meta(&mut self, model: &str) {
        let meta = SessionMeta {
            session_id: self.id.clone(),
            cwd: self.services.cwd.clone(),
            model: model.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_branch: crate::context::git::head_branch(&self.services.cwd),
        };
        let r = self.transcript.meta(&meta);
        self.note_transcript(r);
    }

    /// Appends user content, merging into a trailing user message (the API wants alternation).
    pub fn push_user(&mut self, content: Vec<ContentBlock>) {
        let message = Message {
            role: Role::User,
            content,
        };
        let r = self.transcript.message(&message);
        self.note_transcript(r);
        let history = Arc::make_mut(&mut self.history);
        match history.last_mut() {
            Some(last) if last.role == Role::User => last.content.extend(message.content),
            _ => history.push(message),
        }
    }

    pub fn push_assistant(&mut self, message: Message) {
        let r = self.transcript.message(&message);
        self.note_transcript(r);
        Arc::make_mut(&mut self.history).push(message);
    }

    /// Appends a model answer; the transcript keeps its message id, model and usage.
    pub fn push_assistant_with(&mut self, message: Message, id: &str, model: &str, usage: &Usage) {
        let r = self.transcript.assistant(&message, id, model, usage);
        self.note_transcript(r);
        Arc::make_mut(&mut self.history).push(message);
    }

    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// A cheap handle on the conversation for a request.
    pub fn history_handle(&self) -> Arc<Vec<Message>> {
        self.history.clone()
    }

    /// Replaces the conversation (resume, compaction).
    pub fn set_history(&mut self, history: Vec<Message>) {
        self.history = Arc::new(history);
        self.history_revision += 1;
    }

    /// Changes whenever the history is replaced rather than appended to.
    pub fn history_revision(&self) -> u64 {
        self.history_revision
    }

    /// Replaces the conversation after compaction. The transcript keeps everything before and
    /// records a `compact_boundary` line, then the new messages, so a resumed session starts
    /// from the compacted history.
    pub fn compact_history(&mut self, history: Vec<Message>, trigger: &str, pre_tokens: u64) {
        let r = self.transcript.write_line(serde_json::json!({
            "type": "compact_boundary",
            "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},
        }));
        self.note_transcript(r);
        for m in &history {
            let r = self.transcript.message(m);
            self.note_transcript(r);
        }
        self.history = Arc::new(history);
        self.history_revision += 1;
    }

    /// Replaces the conversation after a rewind to before point `to`: the transcript gets a
    /// `rewind_boundary` line and the kept messages, so a resumed session continues from here.
    pub fn rewind_history(&mut self, history: Vec<Message>, to: u32) {
        let r = self.transcript.write_line(serde_json::json!({
            "type": crate::transcript::REWIND_BOUNDARY,
            "toPoint": to,
        }));
        self.note_transcript(r);
        crate::fsutil::crash::point("rewind-boundary");
        for m in &history {
            let r = self.transcript.message(m);
            self.note_transcript(r);
        }
        self.history = Arc::new(history);
        self.history_revision += 1;
    }

    pub fn log_event(&mut self, name: &str, data: Value) {
        let r = self.transcript.event(name, data);
        self.note_transcript(r);
    }

    /// Records in the resumed transcript what the previous run could not save, so the loss
    /// stays on file after its record beside the transcript is reset.
    pub fn log_loss(&mut self, unsaved: Option<&crate::transcript::UnsavedRecord>) {
        if let Some(u) = unsaved {
            self.log_event(
                crate::transcript::LOSS_EVENT,
                serde_json::json!({"lines": u.lines, "messages": u.messages, "error": u.error, "since": u.since}),
            );
        }
    }

    /// A failed write is reported once per distinct error (a full disk fails every line).
    fn note_transcript(&mut self, r: Result<(), TranscriptError>) {
        if let Err(e) = r {
            let e = e.to_string();
            if !self.transcript_errors.contains(&e) {
                self.transcript_errors.push(e);
            }
        }
    }

    /// The text of the newest assistant message.
    pub fn last_assistant_text(&self) -> String {
        self.history
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(Message::text)
            .unwrap_or_default()
    }
}
