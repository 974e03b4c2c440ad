//! Session transcripts: append-only JSONL, flushed line by line, and resume.
//!
//! Line types: `meta` (session header), `user` and `assistant` (conversation messages, enough
//! to rebuild the history), `compact_boundary` (the history was compacted: the messages after
//! it replace those before), `event` (retries, hook runs, denials, notices: for audit; the task
//! list and the usage of requests without an answer line are read again on resume).
//!
//! Credentials in a line (API keys, tokens, private keys, `Authorization` headers) are
//! redacted before it is written (`crate::redact`), and the line carries a `redacted` field
//! saying how many and of which kinds; a resumed session sends the redacted text.
//!
//! Nothing is lost silently: a line that cannot be written (disk full) is kept in memory and
//! retried, in order, before the next one, so the file is always a prefix of the session; what
//! is still unwritten is recorded in a small preallocated side file (`unsaved.rs`) that resume
//! reads to say what was lost. A cut last line (a crash mid-write) is terminated before the
//! next append, so it never swallows the following line.

mod load;
pub mod lock;
mod repair;
mod unsaved;

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use load::{Loaded, REWIND_BOUNDARY, load, load_until, parse_line, rewind_recorded};
pub use repair::{Repairs, interrupted_result, repair};
pub use unsaved::{Unsaved, UnsavedRecord};

use crate::types::message::{Message, Role};

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("cannot open transcript {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write transcript {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no session {0} found (looked under {1})")]
    NotFound(String, PathBuf),
    #[error("no earlier session in this directory to continue (looked in {0})")]
    NoneToContinue(PathBuf),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionMeta {
    pub session_id: String,
    pub cwd: PathBuf,
    pub model: String,
    pub version: String,
    /// The git branch checked out when the session started (session pickers show it).
    #[serde(default, rename = "gitBranch", skip_serializing_if = "Option::is_none")]
    pub git_branch: Option<String>,
}

/// Where transcript lines go: a file, or a test's faulty writer.
pub trait Sink: Send {
    /// Appends one whole line; on failure nothing of it may remain (or the sink must
    /// terminate the fragment before its next append).
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()>;
}

/// An append-only file that undoes a partial write (truncating back to the last whole line)
/// and, when even that fails, starts its next append on a fresh line.
struct FileSink {
    file: File,
    len: u64,
    cut: bool,
}

impl FileSink {
    fn open(path: &Path) -> std::io::Result<FileSink> {
        let mut file = OpenOptions::new().create(true).read(true).append(true).open(path)?;
        let len = file.metadata()?.len();
        let mut cut = false;
        if len > 0 {
            // A line cut by a crash or a full disk must not swallow the next session's first line.
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            cut = last[0] != b'\n';
        }
        Ok(FileSink { file, len, cut })
    }
}

impl Sink for FileSink {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.cut {
            self.file.write_all(b"\n")?;
            self.len += 1;
            self.cut = false;
        }
        match self.file.write_all(bytes).and_then(|_| self.file.flush()) {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                if self.file.set_len(self.len).is_err() {
                    self.cut = true;
                }
                Err(e)
            }
        }
    }
}

/// Most bytes of unwritten lines kept in memory for a later retry; beyond it lines are counted
/// as lost and only the count is kept.
const PENDING_CAP: usize = 64 * 1024 * 1024;

struct Pending {
    bytes: Vec<u8>,
    message: bool,
}

/// An open transcript. Every write is flushed: a crash loses at most the line in flight.
pub struct Transcript {
    path: PathBuf,
    sink: Option<Box<dyn Sink>>,
    unsaved: Option<Unsaved>,
    pending: VecDeque<Pending>,
    pending_bytes: usize,
    /// Lines dropped because the pending queue was full (messages among them).
    dropped: (u64, u64),
    last_error: Option<String>,
    /// `sessionId` and `cwd` of every conversation line (the reference's transcript fields).
    context: Option<(String, PathBuf)>,
    /// The previous conversation line, for `parentUuid`.
    last_uuid: Option<String>,
}

impl Transcript {
    pub fn create(path: &Path) -> Result<Self, TranscriptError> {
        let open_err = |source| TranscriptError::Open {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(open_err)?;
        }
        let sink = FileSink::open(path).map_err(open_err)?;
        Ok(Transcript::with_sink(path, Box::new(sink), Some(Unsaved::open(path))))
    }

    /// A transcript writing into `sink` (fault injection in tests), with an optional record of
    /// unsaved lines.
    pub fn with_sink(path: &Path, sink: Box<dyn Sink>, unsaved: Option<Unsaved>) -> Self {
        Transcript {
            path: path.to_path_buf(),
            sink: Some(sink),
            unsaved,
            pending: VecDeque::new(),
            pending_bytes: 0,
            dropped: (0, 0),
            last_error: None,
            context: None,
            last_uuid: None,
        }
    }

    /// A transcript that records nothing (`--no-session-persistence`).
    pub fn disabled(path: PathBuf) -> Self {
        Transcript {
            path,
            sink: None,
            unsaved: None,
            pending: VecDeque::new(),
            pending_bytes: 0,
            dropped: (0, 0),
            last_error: None,
            context: None,
            last_uuid: None,
        }
    }

    /// Names the session and working directory every conversation line carries.
    pub fn set_context(&mut self, session_id: String, cwd: PathBuf) {
        self.context = Some((session_id, cwd));
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write_line(&mut self, line: Value) -> Result<(), TranscriptError> {
        self.write_kind(line, false)
    }

    fn write_kind(&mut self, mut line: Value, message: bool) -> Result<(), TranscriptError> {
        if self.sink.is_none() {
            return Ok(());
        }
        // Credentials never reach the file; the line says what was taken out.
        let redacted = crate::redact::redact_value(&mut line);
        if let Value::Object(m) = &mut line {
            m.insert("timestamp".into(), Value::String(chrono::Utc::now().to_rfc3339()));
            if !redacted.is_empty() {
                m.insert(REDACTED_FIELD.into(), redaction_note(&redacted));
            }
        }
        let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
        bytes.push(b'\n');
        self.pending_bytes += bytes.len();
        self.pending.push_back(Pending { bytes, message });
        while self.pending_bytes > PENDING_CAP
            && let Some(p) = self.pending.pop_front()
        {
            self.pending_bytes -= p.bytes.len();
            self.dropped.0 += 1;
            self.dropped.1 += u64::from(p.message);
        }
        self.flush_pending()
    }

    /// Writes what is pending, oldest first; stops at the first failure (order is kept).
    fn flush_pending(&mut self) -> Result<(), TranscriptError> {
        let Some(sink) = self.sink.as_mut() else {
            return Ok(());
        };
        let recovering = self.last_error.is_some();
        while let Some(p) = self.pending.front() {
            if let Err(source) = sink.append(&p.bytes) {
                self.last_error = Some(source.to_string());
                self.record_unsaved();
                return Err(TranscriptError::Write {
                    path: self.path.clone(),
                    source,
                });
            }
            self.pending_bytes -= p.bytes.len();
            self.pending.pop_front();
        }
        if recovering {
            if self.dropped.0 == 0 {
                // Everything held back reached the file after all.
                self.last_error = None;
                if let Some(u) = self.unsaved.as_mut() {
                    u.clear();
                }
            } else {
                self.record_unsaved();
            }
        }
        Ok(())
    }

    /// Lines (and messages among them) not in the file now.
    pub fn unsaved_counts(&self) -> (u64, u64) {
        let lines = self.pending.len() as u64 + self.dropped.0;
        let messages = self.pending.iter().filter(|p| p.message).count() as u64 + self.dropped.1;
        (lines, messages)
    }

    fn record_unsaved(&mut self) {
        let (lines, messages) = self.unsaved_counts();
        let error = self.last_error.clone().unwrap_or_default();
        if let Some(u) = self.unsaved.as_mut() {
            u.record(lines, messages, &error);
        }
    }

    /// A sentence for the user when lines are still unwritten: how many, why, and what it
    /// means for resuming.
    pub fn health(&self) -> Option<String> {
        let (lines, messages) = self.unsaved_counts();
        if lines == 0 {
            return None;
        }
        Some(format!(
            "the session transcript {} is incomplete: {lines} line(s), {messages} of them conversation \
             messages, could not be written ({}); resuming this session will lack them. Free space where \
             keel keeps its data (KEEL_HOME) to keep the record whole.",
            self.path.display(),
            self.last_error.as_deref().unwrap_or("unknown error")
        ))
    }

    pub fn meta(&mut self, meta: &SessionMeta) -> Result<(), TranscriptError> {
        let mut v = serde_json::to_value(meta).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("type".into(), "meta".into());
        }
        self.write_line(v)
    }

    pub fn message(&mut self, message: &Message) -> Result<(), TranscriptError> {
        let body = serde_json::to_value(message).unwrap_or(Value::Null);
        self.conversation_line(message.role, body)
    }

    /// An assistant message with the API's message id, model and usage, as the reference
    /// records them.
    pub fn assistant(
        &mut self,
        message: &Message,
        id: &str,
        model: &str,
        usage: &crate::types::message::Usage,
    ) -> Result<(), TranscriptError> {
        let body = json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": message.content,
            "usage": usage,
        });
        self.conversation_line(Role::Assistant, body)
    }

    fn conversation_line(&mut self, role: Role, body: Value) -> Result<(), TranscriptError> {
        let kind = match role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut line = json!({
            "type": kind,
            "uuid": uuid,
            "parentUuid": self.last_uuid,
        });
        if let (Some((session, cwd)), Value::Object(m)) = (&self.context, &mut line) {
            m.insert("sessionId".into(), session.clone().into());
            m.insert("cwd".into(), cwd.display().to_string().into());
            m.insert("version".into(), env!("CARGO_PKG_VERSION").into());
        }
        if let Value::Object(m) = &mut line {
            m.insert("message".into(), body);
        }
        self.last_uuid = Some(uuid);
        self.write_kind(line, true)
    }

    pub fn event(&mut self, name: &str, data: Value) -> Result<(), TranscriptError> {
        self.write_line(json!({"type": "event", "event": name, "data": data}))
    }
}

impl Drop for Transcript {
    fn drop(&mut self) {
        // A last chance for lines held back by a full disk.
        if !self.pending.is_empty() {
            let _ = self.flush_pending();
        }
    }
}

/// The field of a line whose credentials were redacted: how many, and of which kinds.
pub const REDACTED_FIELD: &str = "redacted";

fn redaction_note(kinds: &[&str]) -> Value {
    let mut distinct: Vec<&str> = kinds.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    json!({"count": kinds.len(), "kinds": distinct})
}

/// The event that records the task list after TodoWrite changed it; the last one wins on resume.
pub const TODOS_EVENT: &str = "todos";

/// The event that records the usage of a request whose answer is no conversation line (a
/// compaction summary, a finished sub-agent's requests), so a resumed session's totals are whole.
pub const USAGE_EVENT: &str = "usage";

/// The first line of a sub-agent's transcript: its id and type, and the Agent call of the
/// parent it works for (`parent_tool_use_id`).
pub const SUBAGENT_EVENT: &str = "subagent";

/// The event a resumed session logs when the previous run could not save all its lines.
pub const LOSS_EVENT: &str = "transcript_loss";

/// A transcript shared by the session and the components that log into it (hooks).
#[derive(Clone)]
pub struct SharedTranscript(std::sync::Arc<std::sync::Mutex<Transcript>>);

impl SharedTranscript {
    pub fn new(t: Transcript) -> Self {
        SharedTranscript(std::sync::Arc::new(std::sync::Mutex::new(t)))
    }

    fn with<R>(&self, f: impl FnOnce(&mut Transcript) -> R) -> R {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    pub fn path(&self) -> PathBuf {
        self.with(|t| t.path().to_path_buf())
    }

    /// Whether the session is kept on disk (not `--no-session-persistence`).
    pub fn is_recording(&self) -> bool {
        self.with(|t| t.sink.is_some())
    }

    pub fn meta(&self, meta: &SessionMeta) -> Result<(), TranscriptError> {
        self.with(|t| t.meta(meta))
    }

    pub fn message(&self, message: &Message) -> Result<(), TranscriptError> {
        self.with(|t| t.message(message))
    }

    pub fn assistant(
        &self,
        message: &Message,
        id: &str,
        model: &str,
        usage: &crate::types::message::Usage,
    ) -> Result<(), TranscriptError> {
        self.with(|t| t.assistant(message, id, model, usage))
    }

    pub fn event(&self, name: &str, data: Value) -> Result<(), TranscriptError> {
        self.with(|t| t.event(name, data))
    }

    pub fn write_line(&self, line: Value) -> Result<(), TranscriptError> {
        self.with(|t| t.write_line(line))
    }

    /// See [`Transcript::health`].
    pub fn health(&self) -> Option<String> {
        self.with(|t| t.health())
    }

    /// Retries lines held back by an earlier failure.
    pub fn retry_pending(&self) -> Result<(), TranscriptError> {
        self.with(|t| t.flush_pending())
    }
}

/// The newest transcript in a project directory.
pub fn latest_in(project_dir: &Path) -> Result<PathBuf, TranscriptError> {
    let entries =
        std::fs::read_dir(project_dir).map_err(|_| TranscriptError::NoneToContinue(project_dir.to_path_buf()))?;
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| TranscriptError::NoneToContinue(project_dir.to_path_buf()))
}

/// Finds `<id>.jsonl` in this project first, then in any project.
pub fn find_session(home: &Path, project_dir: &Path, id: &str) -> Result<PathBuf, TranscriptError> {
    let file = format!("{id}.jsonl");
    let local = project_dir.join(&file);
    if local.is_file() {
        return Ok(local);
    }
    let projects = home.join("projects");
    if let Ok(entries) = std::fs::read_dir(&projects) {
        for e in entries.flatten() {
            let candidate = e.path().join(&file);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(TranscriptError::NotFound(id.to_string(), projects))
}

#[cfg(test)]
mod tests;
