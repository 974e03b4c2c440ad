//! The engine's side of checkpoints: every user prompt starts a point, and [`rewind`] takes
//! the code, the conversation or both back to the moment before a point — the API behind
//! `keel rewind` and the TUI's `/rewind`.

use std::path::PathBuf;

use serde_json::json;

use super::{Engine, NoticeLevel, Session};
use crate::checkpoint::{Plan, Point, PointKind, Restore, RewindError, TRANSCRIPT_EVENT};
use crate::types::message::ContentBlock;

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
    /// Files a shell command changed that keel could not restore (no copy was kept), and why.
    pub not_restorable: Vec<(PathBuf, String)>,
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
    let (point, files) = store.apply(&plan, &format!("rewind of the {what} to before point {to}"))?;
    session.log_event(
        TRANSCRIPT_EVENT,
        json!({"point": point, "kind": "rewind", "to": to, "files": files}),
    );
    let messages = history.map(|h| {
        let n = h.len();
        session.rewind_history(h, to);
        n
    });
    Ok(RewindReport {
        point,
        files,
        not_restorable: plan.not_restorable,
        messages,
        prompt: (target.kind == PointKind::Prompt).then(|| target.text.clone()),
    })
}
