//! Making a loaded history valid for the API again, whatever a crash or a full disk left: no
//! empty messages, roles alternating and starting with the user, every `tool_use` answered by
//! exactly one `tool_result` in the next message, and no result without its call.

use std::collections::HashSet;

use crate::types::message::{ContentBlock, Message, Role, ToolResultContent};

/// What [`repair`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Repairs {
    /// Tool calls that had no result; an interrupted result was added.
    pub unanswered_calls: usize,
    /// Tool results whose call is not in the message before (or that answer it twice): removed.
    pub orphan_results: usize,
    /// Messages merged into the one before because it had the same role.
    pub merged: usize,
    /// Messages without content, removed.
    pub empty: usize,
    /// The history started with the model's message; a note was put before it.
    pub lost_start: bool,
}

impl Repairs {
    pub fn any(&self) -> bool {
        *self != Repairs::default()
    }
}

const LOST_START: &str = "[The start of this conversation was lost from keel's transcript.]";
const LOST_CALLS: &str = "[Results of tool calls whose request was lost from keel's transcript were removed here.]";

pub fn repair(history: &mut Vec<Message>) -> Repairs {
    let mut r = Repairs::default();
    let before = history.len();
    history.retain(|m| !m.content.is_empty());
    r.empty = before - history.len();
    r.merged = merge_same_roles(history);
    r.orphan_results = drop_orphan_results(history);
    r.unanswered_calls = answer_calls(history);
    if history.first().is_some_and(|m| m.role == Role::Assistant) {
        history.insert(0, Message::user_text(LOST_START));
        r.lost_start = true;
    }
    r
}

fn is_result(b: &ContentBlock) -> bool {
    matches!(b, ContentBlock::ToolResult { .. })
}

/// Merges runs of messages with one role; in user messages, tool results go first.
fn merge_same_roles(history: &mut Vec<Message>) -> usize {
    let mut merged = 0;
    let mut out: Vec<Message> = Vec::with_capacity(history.len());
    for m in history.drain(..) {
        match out.last_mut() {
            Some(last) if last.role == m.role => {
                last.content.extend(m.content);
                merged += 1;
            }
            _ => out.push(m),
        }
    }
    for m in out.iter_mut().filter(|m| m.role == Role::User) {
        if m.content.iter().skip_while(|b| is_result(b)).any(is_result) {
            let (results, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut m.content).into_iter().partition(is_result);
            m.content = results;
            m.content.extend(rest);
        }
    }
    *history = out;
    merged
}

/// Removes tool results that do not answer a call of the message right before (or answer one
/// twice). A message left empty says what was removed, so the roles still alternate.
fn drop_orphan_results(history: &mut [Message]) -> usize {
    let mut dropped = 0;
    for i in 0..history.len() {
        if history[i].role != Role::User {
            continue;
        }
        let calls: HashSet<String> = match i.checked_sub(1).map(|p| &history[p]) {
            Some(prev) if prev.role == Role::Assistant => prev.tool_uses().map(|t| t.id.to_string()).collect(),
            _ => HashSet::new(),
        };
        let mut seen = HashSet::new();
        let m = &mut history[i];
        let before = m.content.len();
        m.content.retain(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => {
                calls.contains(tool_use_id) && seen.insert(tool_use_id.clone())
            }
            _ => true,
        });
        if m.content.len() < before {
            dropped += before - m.content.len();
            if m.content.is_empty() {
                m.content.push(ContentBlock::text(LOST_CALLS));
            }
        }
    }
    dropped
}

/// Gives every tool call without a result an interrupted one.
fn answer_calls(history: &mut Vec<Message>) -> usize {
    let mut repaired = 0;
    let mut i = 0;
    while i < history.len() {
        if history[i].role == Role::Assistant {
            let ids: Vec<String> = history[i].tool_uses().map(|t| t.id.to_string()).collect();
            if !ids.is_empty() {
                let answered: HashSet<String> = history
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
                    .filter(|id| !answered.contains(*id))
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
