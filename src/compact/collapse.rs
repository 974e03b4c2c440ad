//! Tier 4, context collapse: runs of secondary exchanges are folded in the view into one trace
//! appended to the user message before them. The store is untouched; the fold's origin records
//! exactly which stored messages it stands for ([`super::view::Origin`]).
//!
//! An exchange (an assistant message and the user message answering its calls) is secondary
//! when it only observed: every call is an observation tool (Read, Glob, Grep, ...) that
//! succeeded, or a call tier 2 snipped as superseded; the assistant said little besides the
//! calls, and the user message holds nothing but those results — no user words, no
//! instruction-file reminders, no failures. Edits,
//! commands and errors are never folded: they are the record of what changed and what broke.

use std::fmt::Write;

use super::TierContext;
use super::budget;
use super::view::{Origin, OriginKind, View};
use crate::types::message::{ContentBlock, Message, Role};

/// Shortest run of secondary exchanges worth folding.
pub const MIN_RUN: usize = 2;
/// Assistant text beyond this many bytes makes an exchange primary (it may hold decisions).
const MAX_ASSISTANT_TEXT: usize = 300;
/// Results up to this size are quoted in the trace instead of pointed at.
const INLINE_RESULT: usize = 160;

/// Folds secondary runs before the frontier; returns how many exchanges were folded.
pub fn apply(view: &mut View, ctx: &TierContext<'_>) -> usize {
    let old = std::mem::take(view);
    let n = old.messages.len();
    let secondary: Vec<bool> = (0..n).map(|i| is_secondary_start(&old, i, ctx)).collect();
    let mut messages: Vec<Message> = Vec::with_capacity(n);
    let mut origins: Vec<Origin> = Vec::with_capacity(n);
    let mut folded = 0;
    let mut i = 0;
    while i < n {
        let run = run_length(&secondary, i);
        if run >= MIN_RUN && i > 0 && messages.last().is_some_and(|m| m.role == Role::User) {
            let end = i + 2 * run; // exclusive view index
            let trace = trace(&old.messages[i..end], ctx);
            if let (Some(m), Some(o)) = (messages.last_mut(), origins.last_mut()) {
                m.content.push(ContentBlock::text(trace));
                o.store.end = old.origins[end - 1].store.end;
                o.kind = OriginKind::Folded;
            }
            folded += run;
            i = end;
            continue;
        }
        messages.push(old.messages[i].clone());
        origins.push(old.origins[i].clone());
        i += 1;
    }
    *view = View { messages, origins };
    folded
}

/// Consecutive secondary exchanges starting at view index `i` (each is two messages).
fn run_length(secondary: &[bool], mut i: usize) -> usize {
    let mut run = 0;
    while i < secondary.len() && secondary[i] {
        run += 1;
        i += 2;
    }
    run
}

/// Whether view messages `i` (assistant) and `i + 1` (user) form a secondary exchange before
/// the frontier.
fn is_secondary_start(view: &View, i: usize, ctx: &TierContext<'_>) -> bool {
    let (Some(a), Some(u)) = (view.messages.get(i), view.messages.get(i + 1)) else {
        return false;
    };
    let (Some(ua), Some(uu)) = (view.origins.get(i), view.origins.get(i + 1)) else {
        return false;
    };
    if a.role != Role::Assistant || u.role != Role::User || uu.store.end > ctx.upto || ua.store.len() != 1 {
        return false;
    }
    let mut ids = Vec::new();
    let mut traces = 0;
    let mut text = 0;
    for b in &a.content {
        match b {
            ContentBlock::ToolUse { id, name, .. } if ctx.kinds.observes(name) => ids.push(id.as_str()),
            ContentBlock::ToolUse { .. } => return false,
            // A call tier 2 already snipped: superseded, so secondary whatever it was.
            ContentBlock::Text { text: t, .. } if t.starts_with("[Snipped ") => traces += 1,
            ContentBlock::Text { text: t, .. } => text += t.len(),
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
            ContentBlock::Image { .. }
            | ContentBlock::ToolResult { .. }
            | ContentBlock::ServerToolUse { .. }
            | ContentBlock::WebSearchToolResult { .. } => return false,
        }
    }
    if (ids.is_empty() && traces == 0) || text > MAX_ASSISTANT_TEXT {
        return false;
    }
    u.content.iter().all(|b| match b {
        ContentBlock::ToolResult {
            tool_use_id, is_error, ..
        } => !is_error && ids.contains(&tool_use_id.as_str()),
        ContentBlock::Text { text, .. } => text == "[Results snipped]",
        _ => false,
    })
}

/// One line per folded call, pointing at the file with its full output.
fn trace(segment: &[Message], ctx: &TierContext<'_>) -> String {
    let exchanges = segment.len() / 2;
    let mut lines = String::new();
    for m in segment.iter().filter(|m| m.role == Role::Assistant) {
        for b in &m.content {
            match b {
                ContentBlock::ToolUse { id, .. } => {
                    let _ = write!(lines, "\n- {}", call_line(id, ctx));
                }
                ContentBlock::Text { text, .. } if text.starts_with("[Snipped ") => {
                    let _ = write!(lines, "\n- {text}");
                }
                _ => {}
            }
        }
    }
    format!(
        "[Collapsed from this view: {exchanges} earlier exploration steps; their calls and their outputs (files \
         in {}):{lines}]",
        ctx.session_dir.join("tool-results").display()
    )
}

fn call_line(id: &str, ctx: &TierContext<'_>) -> String {
    if let Some(line) = ctx.memo.borrow().trace_lines.get(id) {
        return line.clone();
    }
    let line = new_call_line(id, ctx);
    ctx.memo.borrow_mut().trace_lines.insert(id.to_string(), line.clone());
    line
}

fn new_call_line(id: &str, ctx: &TierContext<'_>) -> String {
    let Some(call) = ctx.index.get(id) else {
        return id.to_string();
    };
    let label = call.label();
    let Some(stored) = call.result(ctx.store) else {
        return format!("{label} (no result)");
    };
    let text = stored.as_text();
    if text.len() <= INLINE_RESULT && !text.contains('\n') && !budget::is_preview(&text) {
        return format!("{label} → {text:?}");
    }
    match budget::ensure_spilled(ctx.session_dir, id, crate::types::untrusted::body(&text)) {
        Ok(path) => format!(
            "{label} → {}",
            path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
        ),
        Err(_) => format!("{label} (output only in the transcript)"),
    }
}
