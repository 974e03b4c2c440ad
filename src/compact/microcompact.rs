//! Tier 3, microcompact: old tool results the model has already answered are replaced in the
//! view by short placeholders that keep the call (tool name and input summary) and the path of
//! the file holding the full output; failed results also keep their decisive lines.
//!
//! It touches only results before the view's frontier, which always leaves the most recent
//! results and the results the model has not answered yet (they come after the last assistant
//! message) untouched. A result whose full output cannot be saved stays as it is.

use super::TierContext;
use super::budget;
use super::record::{last_lines, marker_lines};
use super::view::View;
use crate::types::message::{ContentBlock, ToolResultBlock, ToolResultContent};

/// Results up to this size stay: their placeholder would not be much smaller.
pub const MIN_BYTES: usize = 600;

/// Replaces old results with placeholders; returns how many were replaced.
pub fn apply(view: &mut View, ctx: &TierContext<'_>) -> usize {
    let mut replaced = 0;
    // Results after the last assistant message are unanswered: the model has not seen them.
    let answered = ctx
        .store
        .iter()
        .rposition(|m| m.role == crate::types::message::Role::Assistant)
        .unwrap_or(0);
    for call in &ctx.index.calls {
        let Some((m, _)) = call.result_at else { continue };
        if m < ctx.from || m >= ctx.upto || m > answered {
            continue;
        }
        let Some(v) = view.view_index(m) else { continue };
        let in_view = view.messages[v]
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if *tool_use_id == call.id));
        if !in_view {
            // Snipped by tier 2: nothing to replace, no copy to write.
            continue;
        }
        let known = ctx.memo.borrow().placeholders.get(&call.id).cloned();
        let placeholder = match known {
            Some(p) => p,
            None => {
                let p = call.result(ctx.store).and_then(|stored| {
                    let has_image = matches!(stored, ToolResultContent::Blocks(bs) if bs.iter().any(|b| matches!(b, ToolResultBlock::Image { .. })));
                    if stored.text_len() <= MIN_BYTES && !has_image {
                        return None;
                    }
                    placeholder(ctx, call, stored, has_image)
                });
                ctx.memo.borrow_mut().placeholders.insert(call.id.clone(), p.clone());
                p
            }
        };
        let Some(placeholder) = placeholder else { continue };
        let target = view.messages[v].content.iter_mut().find_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } if *tool_use_id == call.id => Some(content),
            _ => None,
        });
        if let Some(content) = target {
            *content = ToolResultContent::Text(placeholder);
            view.mark_edited(v);
            replaced += 1;
        }
    }
    replaced
}

fn placeholder(
    ctx: &TierContext<'_>,
    call: &super::calls::CallSite,
    stored: &ToolResultContent,
    has_image: bool,
) -> Option<String> {
    if has_image {
        return Some(format!(
            "[Earlier image result of {} cleared from this view; call the tool again to see it.]",
            call.label()
        ));
    }
    let shown = stored.as_text();
    // The spill file keeps the result as the tool gave it (a Read of it is marked again).
    let text = crate::types::untrusted::body(&shown);
    let path = budget::ensure_spilled(ctx.session_dir, &call.id, text).ok()?;
    let size = if budget::is_preview(text) {
        std::fs::metadata(&path).map(|m| m.len() as usize).unwrap_or(text.len())
    } else {
        text.len()
    };
    let mut lines = marker_lines(text);
    if lines.is_empty() && call.is_error {
        lines = last_lines(text, 3);
    }
    let kind = if call.is_error { "failed result" } else { "result" };
    let mut out = format!(
        "[Earlier {kind} of {} cleared from this view ({size} bytes). Full output: {}",
        call.label(),
        path.display()
    );
    if lines.is_empty() {
        out.push_str(" — Read or Grep it if you need it again.]");
    } else {
        // The lines are the tool's output: they keep the envelope the whole result had.
        out.push_str("\nDecisive lines:\n");
        out.push_str(&crate::types::untrusted::wrap(&call.name, &lines.join("\n")));
        out.push(']');
    }
    Some(out)
}
