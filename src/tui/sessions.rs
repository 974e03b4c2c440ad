//! Sessions for `/clear` (a new one) and `/resume` (an earlier one of this directory).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::engine::{Session, SessionServices};
use crate::transcript::lock::{self, LockError, SessionLock};
use crate::transcript::{self, Transcript};
use crate::types::message::{ContentBlock, Message, Role};

/// Sessions offered by the picker.
const PICKER_LIMIT: usize = 50;
/// Lines of a transcript read to find its first prompt.
const PREVIEW_LINES: usize = 200;

#[derive(Debug, Clone)]
pub struct SessionPlace {
    pub cwd: PathBuf,
    pub project_dir: PathBuf,
    pub persist: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub modified: SystemTime,
    pub first_prompt: String,
    /// User and assistant messages in the whole transcript.
    pub messages: usize,
    /// The git branch the session started on, when it was recorded.
    pub branch: Option<String>,
}

/// The sessions of a project directory, newest first, without `exclude` (the current one).
pub fn list(project_dir: &Path, exclude: &str) -> Vec<SessionSummary> {
    let Ok(entries) = std::fs::read_dir(project_dir) else {
        return Vec::new();
    };
    let mut out: Vec<SessionSummary> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| {
            let path = e.path();
            let id = path.file_stem()?.to_str()?.to_string();
            let modified = e.metadata().ok()?.modified().ok()?;
            let (first_prompt, messages, branch) = summarize(&path);
            Some(SessionSummary {
                first_prompt,
                messages,
                branch,
                id,
                path,
                modified,
            })
        })
        .filter(|s| s.id != exclude && !s.first_prompt.is_empty())
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.modified));
    out.truncate(PICKER_LIMIT);
    out
}

/// The first prompt, the number of messages and the branch of a transcript. Lines are
/// counted by their leading `type` (keel writes it first) without parsing each one.
fn summarize(path: &Path) -> (String, usize, Option<String>) {
    let Ok(f) = std::fs::File::open(path) else {
        return (String::new(), 0, None);
    };
    let mut first = String::new();
    let mut messages = 0;
    let mut branch = None;
    for (n, line) in BufReader::new(f).split(b'\n').map_while(Result::ok).enumerate() {
        if line.starts_with(br#"{"type":"user""#) || line.starts_with(br#"{"type":"assistant""#) {
            messages += 1;
        }
        if n == 0 && line.starts_with(br#"{"type":"meta""#) {
            branch = serde_json::from_slice::<Value>(&line)
                .ok()
                .and_then(|v| v.get("gitBranch").and_then(Value::as_str).map(str::to_string));
        }
        if first.is_empty() && n < PREVIEW_LINES && line.starts_with(br#"{"type":"user""#) {
            first = first_prompt(&line);
        }
    }
    (first, messages, branch)
}

fn first_prompt(line: &[u8]) -> String {
    let Some(m) = serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| serde_json::from_value::<Message>(v["message"].clone()).ok())
    else {
        return String::new();
    };
    if m.role != Role::User {
        return String::new();
    }
    let text: String = m
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ");
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(120)
        .collect()
}

fn transcript_for(place: &SessionPlace, path: &Path) -> Result<Transcript, String> {
    if place.persist {
        Transcript::create(path).map_err(|e| e.to_string())
    } else {
        Ok(Transcript::disabled(path.to_path_buf()))
    }
}

/// The services of a session that takes over from `current` (its startup decisions kept).
fn services_after(place: &SessionPlace, id: &str, current: Option<&SessionServices>) -> Arc<SessionServices> {
    let builder = SessionServices::builder(place.cwd.clone(), place.project_dir.join(id));
    match current {
        Some(c) => builder.inherit(c).build(),
        None => builder.build(),
    }
}

/// The lock that makes this process the session's one writer (none when nothing is recorded).
/// A session another process holds is not waited for here: the user is told at once.
fn lock_for(place: &SessionPlace, path: &Path, id: &str) -> Result<Option<SessionLock>, String> {
    if !place.persist {
        return Ok(None);
    }
    lock::acquire(&path.with_extension(""), id, Duration::ZERO)
        .map(Some)
        .map_err(|e| match e {
            LockError::Busy { .. } => format!(
                "{e}; resume it once that process has ended, or continue it as a new session with \
                 `keel --resume {id} --fork-session`"
            ),
            e => e.to_string(),
        })
}

/// A fresh session (for `/clear`), taking over `current`'s startup decisions.
pub fn fresh(place: &SessionPlace, model: &str, current: Option<&SessionServices>) -> Result<Session, String> {
    let id = uuid::Uuid::new_v4().to_string();
    let path = place.project_dir.join(format!("{id}.jsonl"));
    let lock = lock_for(place, &path, &id)?;
    let transcript = transcript_for(place, &path)?;
    let mut session = Session::with_services(id.clone(), transcript, services_after(place, &id, current));
    if let Some(lock) = lock {
        session.hold(lock);
    }
    crate::debug::attach_session(&session.services.session_dir);
    session.write_meta(model);
    Ok(session)
}

/// An earlier session, with warnings about lines that could not be read.
pub fn resume(
    place: &SessionPlace,
    path: &Path,
    model: &str,
    current: Option<&SessionServices>,
) -> Result<(Session, Vec<String>), String> {
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| format!("odd transcript file name {}", path.display()))?
        .to_string();
    let lock = lock_for(place, path, &id)?;
    let mut loaded = transcript::load(path).map_err(|e| e.to_string())?;
    let mut warnings = loaded.warnings(path);
    let transcript = transcript_for(place, path)?;
    let mut session = Session::with_services(id.clone(), transcript, services_after(place, &id, current));
    if let Some(lock) = lock {
        session.hold(lock);
    }
    crate::debug::attach_session(&session.services.session_dir);
    // A rewind a crash interrupted is completed or rolled back first.
    match crate::engine::rewind::recover(&mut session) {
        Ok(None) => {}
        Ok(Some(recovered)) => {
            warnings.push(recovered.notice);
            if recovered.conversation {
                let unsaved = loaded.unsaved.take();
                loaded = transcript::load(path).map_err(|e| e.to_string())?;
                loaded.unsaved = unsaved;
            }
        }
        Err(e) => warnings.push(format!(
            "an interrupted rewind of this session could not be completed or rolled back: {e}"
        )),
    }
    session.set_history(loaded.history);
    session.log_event("resumed", serde_json::json!({"model": model}));
    session.log_loss(loaded.unsaved.as_ref());
    Ok((session, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_sessions_newest_first_with_their_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let place = SessionPlace {
            cwd: dir.path().to_path_buf(),
            project_dir: dir.path().join("p"),
            persist: true,
        };
        let mut a = fresh(&place, "m", None).unwrap();
        a.push_user(vec![ContentBlock::text("first   question\nwith lines")]);
        let a_id = a.id.clone();
        drop(a);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut b = fresh(&place, "m", None).unwrap();
        b.push_user(vec![ContentBlock::text("second")]);
        b.push_assistant_with(
            Message::assistant(vec![ContentBlock::text("answer")]),
            "m1",
            "m",
            &Default::default(),
        );
        let b_id = b.id.clone();
        drop(b);
        let empty = fresh(&place, "m", None).unwrap();
        let listed = list(&place.project_dir, &empty.id);
        let got: Vec<(&str, &str)> = listed
            .iter()
            .map(|s| (s.id.as_str(), s.first_prompt.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![(b_id.as_str(), "second"), (a_id.as_str(), "first question with lines")]
        );
        assert_eq!((listed[0].messages, listed[1].messages), (2, 1));
        assert_eq!(listed[0].branch, None, "not a repository");
        let (resumed, warnings) = resume(&place, &listed[1].path, "m", None).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(resumed.id, a_id);
        assert_eq!(resumed.history().len(), 1);
    }
}
