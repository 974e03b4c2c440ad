//! Tier 2, history snip: exchanges a later call made redundant leave the view, each with a
//! one-line trace in place of its call.
//!
//! A call is superseded when a later call
//! - repeated it with the same input and got the same result;
//! - read in full the same file whose earlier (partial or complete) read it contains verbatim,
//!   so the file did not change in between;
//! - of the same tool on the same target succeeded after it had failed (for a call that never
//!   ran, any later successful call of that tool).
//!
//! Only calls before the view's frontier are snipped; the evidence may come from anywhere later.

use std::collections::HashMap;

use super::TierContext;
use super::calls::{CallSite, is_not_run, named_target};
use super::view::View;
use crate::types::message::{ContentBlock, ToolResultContent};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Repeated,
    CoveredByFullRead,
    FixedLater,
    RetriedAfterInvalidCall,
}

impl Reason {
    fn text(self) -> &'static str {
        match self {
            Reason::Repeated => "repeated later with the same result",
            Reason::CoveredByFullRead => "a later full read of the unchanged file covers it",
            Reason::FixedLater => "failed, then succeeded when run again",
            Reason::RetriedAfterInvalidCall => "invalid call, retried successfully",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snip {
    pub id: String,
    /// The later call that made this one redundant.
    pub by: String,
    pub reason: Reason,
}

const PARTIAL_NOTE: &str = "\n[Partial view:";

/// The calls before the frontier that later calls superseded.
///
/// Only a later successful call of the same tool can supersede, and for every reason but a
/// retried invalid call it works on the same target (equal inputs, or the same file read in
/// full), so each call is compared with the later calls of its tool and named target only
/// (calls whose input names no target share one list per tool: equal inputs may differ in key
/// order): a rebuild over a long history costs about the calls, not their square.
pub fn superseded(ctx: &TierContext<'_>) -> Vec<Snip> {
    let calls = &ctx.index.calls;
    // Later successful calls with a result, in order: per tool, and per tool and target.
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_target: HashMap<(&str, Option<String>), Vec<usize>> = HashMap::new();
    for (j, l) in calls.iter().enumerate() {
        if l.result_at.is_some() && !l.is_error {
            by_name.entry(l.name.as_str()).or_default().push(j);
            by_target
                .entry((l.name.as_str(), named_target(&l.input)))
                .or_default()
                .push(j);
        }
    }
    let mut out = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        if c.use_at.0 < ctx.from || c.use_at.0 >= ctx.upto || c.result_at.is_none_or(|r| r.0 >= ctx.upto) {
            continue;
        }
        let Some(result) = c.result(ctx.store) else { continue };
        let candidates = if c.is_error && is_not_run(&result.as_text()) {
            after(by_name.get(c.name.as_str()), i)
        } else {
            after(by_target.get(&(c.name.as_str(), named_target(&c.input))), i)
        };
        for l in candidates.iter().map(|&j| &calls[j]) {
            if let Some(reason) = supersedes(ctx, c, result, l) {
                out.push(Snip {
                    id: c.id.clone(),
                    by: l.id.clone(),
                    reason,
                });
                break;
            }
        }
    }
    out
}

/// The calls of `list` after call `i`.
fn after(list: Option<&Vec<usize>>, i: usize) -> &[usize] {
    list.map_or(&[], |v| &v[v.partition_point(|&j| j <= i)..])
}

fn supersedes(ctx: &TierContext<'_>, c: &CallSite, result: &ToolResultContent, l: &CallSite) -> Option<Reason> {
    if l.name != c.name || l.is_error {
        return None;
    }
    let later = l.result(ctx.store)?;
    if c.is_error {
        if is_not_run(&result.as_text()) {
            return Some(Reason::RetriedAfterInvalidCall);
        }
        let clean = ctx.kinds.observes(&l.name) || super::record::marker_lines(&later.as_text()).is_empty();
        return (l.target() == c.target() && clean).then_some(Reason::FixedLater);
    }
    if l.input == c.input && later == result {
        return Some(Reason::Repeated);
    }
    if c.name == "Read" && covered_by_full_read(c, result, l, later) {
        return Some(Reason::CoveredByFullRead);
    }
    None
}

fn covered_by_full_read(c: &CallSite, result: &ToolResultContent, l: &CallSite, later: &ToolResultContent) -> bool {
    let (ToolResultContent::Text(earlier), ToolResultContent::Text(full)) = (result, later) else {
        return false;
    };
    let path = |s: &CallSite| s.input.get("file_path").and_then(|v| v.as_str()).map(str::to_string);
    let ranged = l.input.get("offset").is_some() || l.input.get("limit").is_some();
    if path(c).is_none() || path(c) != path(l) || ranged || full.contains(PARTIAL_NOTE) {
        return false;
    }
    let body = earlier.split(PARTIAL_NOTE).next().unwrap_or(earlier);
    !body.trim().is_empty() && full.contains(body)
}

/// Applies the snips: each superseded `tool_use` becomes a one-line trace, its result leaves
/// the view (a message left empty gets a short note, the API refuses empty messages).
pub fn apply(view: &mut View, ctx: &TierContext<'_>, snips: &[Snip]) {
    for s in snips {
        let Some(call) = ctx.index.get(&s.id) else { continue };
        let Some(result_at) = call.result_at else { continue };
        let label = call.label();
        let by = ctx.index.get(&s.by).map(|b| b.label()).filter(|b| *b != label);
        let trace = match by {
            Some(by) => format!("[Snipped {label}: {} by {by}]", s.reason.text()),
            None => format!("[Snipped {label}: {}]", s.reason.text()),
        };
        if let Some(v) = view.view_index(call.use_at.0) {
            let m = &mut view.messages[v];
            if let Some(b) = m
                .content
                .iter_mut()
                .find(|b| matches!(b, ContentBlock::ToolUse { id, .. } if *id == s.id))
            {
                *b = ContentBlock::text(trace);
            }
            view.mark_edited(v);
        }
        if let Some(v) = view.view_index(result_at.0) {
            let m = &mut view.messages[v];
            m.content
                .retain(|b| !matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if *tool_use_id == s.id));
            if m.content.is_empty() {
                m.content.push(ContentBlock::text("[Results snipped]"));
            }
            view.mark_edited(v);
        }
    }
}
