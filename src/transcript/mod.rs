//! Session transcripts: append-only JSONL, flushed line by line, and resume.
//!
//! Line types: `meta` (session header), `user` and `assistant` (conversation messages, enough
//! to rebuild the history), `compact_boundary` (the history was compacted: the messages after
//! it replace those before), `event` (retries, hook runs, denials, notices: for audit only).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::message::{ContentBlock, Message, Role, ToolResultContent};

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
}

/// An open transcript. Every write is flushed: a crash loses at most the line in flight.
pub struct Transcript {
    path: PathBuf,
    file: Option<File>,
    /// `sessionId` and `cwd` of every conversation line (the reference's transcript fields).
    context: Option<(String, PathBuf)>,
    /// The previous conversation line, for `parentUuid`.
    last_uuid: Option<String>,
}

impl Transcript {
    pub fn create(path: &Path) -> Result<Self, TranscriptError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| TranscriptError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| TranscriptError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Transcript {
            path: path.to_path_buf(),
            file: Some(file),
            context: None,
            last_uuid: None,
        })
    }

    /// A transcript that records nothing (`--no-session-persistence`).
    pub fn disabled(path: PathBuf) -> Self {
        Transcript {
            path,
            file: None,
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

    pub fn write_line(&mut self, mut line: Value) -> Result<(), TranscriptError> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        if let Value::Object(m) = &mut line {
            m.insert("timestamp".into(), Value::String(chrono::Utc::now().to_rfc3339()));
        }
        let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
        bytes.push(b'\n');
        file.write_all(&bytes)
            .and_then(|_| file.flush())
            .map_err(|source| TranscriptError::Write {
                path: self.path.clone(),
                source,
            })
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
        usage: &crate::message::Usage,
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
        self.write_line(line)
    }

    pub fn event(&mut self, name: &str, data: Value) -> Result<(), TranscriptError> {
        self.write_line(json!({"type": "event", "event": name, "data": data}))
    }
}

/// The event that records the task list after TodoWrite changed it; the last one wins on resume.
pub const TODOS_EVENT: &str = "todos";

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
        usage: &crate::message::Usage,
    ) -> Result<(), TranscriptError> {
        self.with(|t| t.assistant(message, id, model, usage))
    }

    pub fn event(&self, name: &str, data: Value) -> Result<(), TranscriptError> {
        self.with(|t| t.event(name, data))
    }

    pub fn write_line(&self, line: Value) -> Result<(), TranscriptError> {
        self.with(|t| t.write_line(line))
    }
}

/// What a transcript file yields when resumed.
#[derive(Debug, Default)]
pub struct Loaded {
    pub meta: Option<SessionMeta>,
    pub history: Vec<Message>,
    /// 1-based numbers of lines that could not be parsed (reported, then skipped).
    pub bad_lines: Vec<usize>,
    /// Tool calls that had no result (a crash mid-turn); synthesized results were added.
    pub repaired_calls: usize,
    /// The session's latest task list.
    pub todos: Vec<crate::tools::Todo>,
}

pub fn load(path: &Path) -> Result<Loaded, TranscriptError> {
    let file = File::open(path).map_err(|source| TranscriptError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Loaded::default();
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let Ok(line) = line else {
            out.bad_lines.push(i + 1);
            continue;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            out.bad_lines.push(i + 1);
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("meta") => out.meta = serde_json::from_value(v).ok(),
            // The conversation was compacted: what follows replaces everything before.
            Some("compact_boundary") => out.history.clear(),
            Some("user") | Some("assistant") => match serde_json::from_value::<Message>(v["message"].clone()) {
                Ok(m) => out.history.push(m),
                Err(_) => out.bad_lines.push(i + 1),
            },
            Some("event") if v["event"] == TODOS_EVENT => match serde_json::from_value(v["data"]["todos"].clone()) {
                Ok(todos) => out.todos = todos,
                Err(_) => out.bad_lines.push(i + 1),
            },
            _ => {}
        }
    }
    out.repaired_calls = repair(&mut out.history);
    Ok(out)
}

/// Makes a history valid for the API again: every tool_use gets a tool_result.
pub fn repair(history: &mut Vec<Message>) -> usize {
    let mut repaired = 0;
    let mut i = 0;
    while i < history.len() {
        if history[i].role == Role::Assistant {
            let ids: Vec<String> = history[i].tool_uses().map(|t| t.id.to_string()).collect();
            if !ids.is_empty() {
                let answered: Vec<String> = history
                    .get(i + 1)
                    .filter(|m| m.role == Role::User)
                    .map(|m| {
                        m.content
                            .iter()
                            .filter_map(|b| match b {
                                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                                _ => None,
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let missing: Vec<ContentBlock> = ids
                    .iter()
                    .filter(|id| !answered.contains(id))
                    .map(|id| interrupted_result(id))
                    .collect();
                if !missing.is_empty() {
                    repaired += missing.len();
                    match history.get_mut(i + 1).filter(|m| m.role == Role::User) {
                        Some(next) => {
                            // tool_result blocks must come first in the message.
                            let rest = std::mem::take(&mut next.content);
                            next.content = missing;
                            next.content.extend(rest);
                        }
                        None => history.insert(
                            i + 1,
                            Message {
                                role: Role::User,
                                content: missing,
                            },
                        ),
                    }
                }
            }
        }
        i += 1;
    }
    repaired
}

pub fn interrupted_result(tool_use_id: &str) -> ContentBlock {
    ContentBlock::tool_result(
        tool_use_id,
        ToolResultContent::Text(
            "<tool_use_error>This call was interrupted before it finished; its effects, if any, are unknown. \
             Check the current state before repeating it.</tool_use_error>"
                .into(),
        ),
        true,
    )
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
mod tests {
    use super::*;

    #[test]
    fn corrupt_lines_are_skipped_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut t = Transcript::create(&p).unwrap();
        t.message(&Message::user_text("hello")).unwrap();
        drop(t);
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"type\":\"assistant\",\"message\":{\"role\":\"assis")
            .unwrap();
        let loaded = load(&p).unwrap();
        assert_eq!(loaded.history.len(), 1);
        assert_eq!(loaded.bad_lines, vec![2]);
    }

    #[test]
    fn a_compact_boundary_starts_the_history_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut t = Transcript::create(&p).unwrap();
        t.message(&Message::user_text("old")).unwrap();
        t.message(&Message::assistant(vec![ContentBlock::text("old answer")]))
            .unwrap();
        t.write_line(json!({"type": "compact_boundary", "compactMetadata": {"trigger": "manual"}}))
            .unwrap();
        t.message(&Message::user_text("hand-off")).unwrap();
        drop(t);
        let loaded = load(&p).unwrap();
        assert_eq!(loaded.history, vec![Message::user_text("hand-off")]);
    }

    #[test]
    fn dangling_tool_use_gets_a_result() {
        let mut h = vec![
            Message::user_text("go"),
            Message::assistant(vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: json!({}),
            }]),
        ];
        assert_eq!(repair(&mut h), 1);
        assert_eq!(h.len(), 3);
        assert!(
            matches!(&h[2].content[0], ContentBlock::ToolResult { tool_use_id, is_error: true, .. } if tool_use_id == "t1")
        );
    }
}
