//! The engine's side of checkpoints: every user prompt starts a point, and [`rewind`] takes
//! the code, the conversation or both back to the moment before a point — the API behind
//! `keel rewind` and the TUI's `/rewind`.

use std::path::PathBuf;

use serde_json::json;

use super::{Engine, NoticeLevel, Session};
use crate::checkpoint::{Plan, Point, PointKind, Recovery, Restore, RewindError, TRANSCRIPT_EVENT, Unrestorable};
use crate::fsutil::crash;
use crate::types::message::{ContentBlock, Message};

/// What a rewind did.
#[derive(Debug, Clone, PartialEq)]
pub struct RewindReport {
    /// The point the rewind itself became (rewind to it to undo the rewind).
    pub point: u32,
    /// Files put back (or removed, when keel had created them).
    pub files: Vec<PathBuf>,
    /// Messages in the conversation after the rewind (`None`: the conversation was kept).
    pub messages: Option<usize>,
    /// The rewound point's prompt (shortened), e.g. to offer it again for editing.
    pub prompt: Option<String>,
    /// Files changed since that keel could not restore (no earlier content was kept), and why.
    pub not_restorable: Vec<Unrestorable>,
}

/// What opening a session found of a rewind a crash had interrupted.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// One sentence for the user: what was completed or rolled back.
    pub notice: String,
    /// The conversation's record was completed: a history loaded before is out of date.
    pub conversation: bool,
}

impl Engine {
    /// Starts the point of a user prompt (sub-agents record into their parent's points).
    pub(super) fn begin_prompt_point(&mut self, content: &[ContentBlock]) {
        if self.subagent.is_some() {
            return;
        }
        let text: Vec<&str> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        match self
            .session
            .services
            .checkpoints
            .begin(PointKind::Prompt, &text.join("\n"))
        {
            Ok(n) => self
                .session
                .log_event(TRANSCRIPT_EVENT, json!({"point": n, "kind": "prompt"})),
            Err(e) => self.events.notice(
                NoticeLevel::Warning,
                format!("{e}; the changes made for this prompt cannot be rewound"),
            ),
        }
    }

    /// The points this session can be rewound to, oldest first.
    pub fn rewind_points(&self) -> Vec<Point> {
        self.session.services.checkpoints.points()
    }

    /// What rewinding the code to point `to` would restore, and what blocks it.
    pub fn rewind_plan(&self, to: u32) -> Result<Plan, RewindError> {
        self.session.services.checkpoints.plan(to)
    }

    /// Rewinds to the moment before point `to`; see [`rewind`].
    pub fn rewind(&mut self, to: u32, restore: Restore) -> Result<RewindReport, RewindError> {
        let report = rewind(&mut self.session, to, restore)?;
        if report.messages.is_some() {
            self.compactor.reset();
        }
        Ok(report)
    }
}

/// Rewinds `session` to the moment before point `to`: files changed since are restored (all or
/// none; a file changed outside keel since blocks the rewind with a diff), and the conversation
/// is cut back to before that point's prompt. The rewind becomes a point of its own.
pub fn rewind(session: &mut Session, to: u32, restore: Restore) -> Result<RewindReport, RewindError> {
    let store = session.services.checkpoints.clone();
    let points = store.points();
    let newest = points.iter().map(|p| p.point).max().unwrap_or(0);
    let Some(target) = points.iter().find(|p| p.point == to) else {
        return Err(RewindError::NoSuchPoint(to, newest));
    };
    let plan = if restore.code() {
        let plan = store.plan(to)?;
        if !plan.conflicts.is_empty() {
            return Err(RewindError::Conflicts(plan.conflicts));
        }
        if !plan.too_big.is_empty() {
            return Err(RewindError::TooBig(plan.too_big));
        }
        plan
    } else {
        Plan { to, ..Plan::default() }
    };
    let history = if restore.conversation() {
        let path = session.transcript.path();
        let loaded = crate::transcript::load_until(&path, Some(to))
            .map_err(|e| RewindError::NoConversation(to, format!(" ({e})")))?;
        if !loaded.reached {
            return Err(RewindError::NoConversation(
                to,
                " (the session was not recorded, or the point is from a sub-agent)".into(),
            ));
        }
        Some(loaded.history)
    } else {
        None
    };
    let what = match restore {
        Restore::Code => "code",
        Restore::Conversation => "conversation",
        Restore::Both => "code and conversation",
    };
    let label = format!("rewind of the {what} to before point {to}");
    let (point, files) = store.apply(&plan, &label, history.as_ref().map(Vec::len))?;
    let messages = history.as_ref().map(Vec::len);
    record(session, point, to, &files, history);
    store.finish_rewind(point);
    Ok(RewindReport {
        point,
        files,
        not_restorable: plan.not_restorable,
        messages,
        prompt: (target.kind == PointKind::Prompt).then(|| target.text.clone()),
    })
}

/// The transcript's part of a rewind: its point (an undo of the conversation stops there),
/// then the conversation kept.
fn record(session: &mut Session, point: u32, to: u32, files: &[PathBuf], history: Option<Vec<Message>>) {
    session.log_event(
        TRANSCRIPT_EVENT,
        json!({"point": point, "kind": "rewind", "to": to, "files": files}),
    );
    crash::point("rewind-event");
    if let Some(h) = history {
        session.rewind_history(h, to);
    }
}

/// Completes or rolls back a rewind of this session that a crash interrupted (see
/// `checkpoint::journal`), before anything else reads or writes the session: the files, the
/// undo log and the transcript agree again afterwards.
pub fn recover(session: &mut Session) -> Result<Option<Recovered>, RewindError> {
    let store = session.services.checkpoints.clone();
    let recovery = match store.recover()? {
        None => return Ok(None),
        Some(r) => r,
    };
    match recovery {
        Recovery::RolledBack {
            journal,
            put_back,
            left,
        } => {
            let mut notice = format!(
                "keel was stopped in the middle of a rewind to before point {}; it was rolled back ({} file(s) \
                 put back as they were before it), so nothing of it remains: run it again to rewind",
                journal.to,
                put_back.len()
            );
            if !left.is_empty() {
                let names: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
                notice.push_str(&format!("; left as they are, changed since: {}", names.join(", ")));
            }
            Ok(Some(Recovered {
                notice,
                conversation: false,
            }))
        }
        Recovery::Completed(journal) => {
            let point = journal.point.point;
            let path = session.transcript.path();
            let mut conversation = false;
            if session.transcript.is_recording() {
                let (event, kept) = crate::transcript::rewind_recorded(&path, point, journal.to, journal.conversation);
                if !event {
                    session.log_event(
                        TRANSCRIPT_EVENT,
                        json!({"point": point, "kind": "rewind", "to": journal.to, "files": journal.paths()}),
                    );
                }
                if !kept {
                    let loaded = crate::transcript::load_until(&path, Some(journal.to))
                        .map_err(|e| RewindError::NoConversation(journal.to, format!(" ({e})")))?;
                    if loaded.reached {
                        session.rewind_history(loaded.history, journal.to);
                        conversation = true;
                    }
                }
            }
            store.finish_rewind(point);
            Ok(Some(Recovered {
                notice: format!(
                    "keel was stopped in the middle of a rewind to before point {} after it had restored its {} \
                     file(s); its record is now complete (`keel rewind --to {point}` undoes it)",
                    journal.to,
                    journal.files.len()
                ),
                conversation,
            }))
        }
    }
}
