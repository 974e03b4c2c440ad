//! A readable rendering of the model-visible request layout: which messages and blocks are
//! sent, how big they are and where the cache breakpoints sit. Used by the snapshot tests of
//! the tiers and by diagnostics.

use std::fmt::Write;

use crate::provider::ModelRequest;
use crate::types::message::{ContentBlock, Message, ToolResultContent};

/// Texts up to this length are shown whole (placeholders and traces are what tests look at).
const SHOW_WHOLE: usize = 1_000;

/// The messages, one header line per message and one line per block. `replace` swaps
/// machine-specific strings (temporary directories) for stable names.
pub fn messages(ms: &[Message], replace: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, m) in ms.iter().enumerate() {
        render_message(&mut out, i, m, &[], replace);
    }
    out
}

/// The whole request: system blocks, tools, messages, with `[cache]` on breakpoints.
pub fn request(req: &ModelRequest, replace: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, b) in req.system.iter().enumerate() {
        let first = b.text.lines().next().unwrap_or("");
        let _ = writeln!(
            out,
            "system[{i}] {} bytes{} {:?}",
            b.text.len(),
            if b.cache_control.is_some() { " [cache]" } else { "" },
            clean(first, replace)
        );
    }
    let names: Vec<&str> = req.tools.as_slice().iter().map(|t| t.name.as_str()).collect();
    let _ = writeln!(out, "tools: {}", names.join(", "));
    for (i, m) in req.messages.iter().enumerate() {
        render_message(&mut out, i, m, &req.cache_breakpoints, replace);
    }
    out
}

fn render_message(out: &mut String, i: usize, m: &Message, breakpoints: &[usize], replace: &[(&str, &str)]) {
    let role = match m.role {
        crate::types::message::Role::User => "user",
        crate::types::message::Role::Assistant => "assistant",
    };
    let mark = if breakpoints.contains(&i) { " [cache]" } else { "" };
    let _ = writeln!(out, "#{i} {role}{mark}");
    for b in &m.content {
        let line = match b {
            ContentBlock::Text { text, .. } => format!("text {}", shown(text, replace)),
            ContentBlock::Image { source } => format!("image {}", source.media_type),
            ContentBlock::ToolUse { id, name, input } => {
                format!(
                    "tool_use {id} {}",
                    clean(&crate::compact::calls::label(name, input), replace)
                )
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                let body = match content {
                    ToolResultContent::Text(t) => shown(t, replace),
                    ToolResultContent::Blocks(_) => shown(&content.as_text(), replace),
                };
                format!(
                    "tool_result {tool_use_id}{} {body}",
                    if *is_error { " error" } else { "" }
                )
            }
            ContentBlock::Thinking { thinking, .. } => format!("thinking ({} bytes)", thinking.len()),
            ContentBlock::RedactedThinking { .. } => "redacted_thinking".into(),
            ContentBlock::ServerToolUse { id, name, .. } => format!("server_tool_use {id} {name}"),
            ContentBlock::WebSearchToolResult { tool_use_id, .. } => format!("web_search_tool_result {tool_use_id}"),
        };
        let _ = writeln!(out, "    {line}");
    }
}

fn clean(s: &str, replace: &[(&str, &str)]) -> String {
    let mut s = s.to_string();
    for (from, to) in replace {
        if !from.is_empty() {
            s = s.replace(from, to);
        }
    }
    s
}

fn shown(text: &str, replace: &[(&str, &str)]) -> String {
    let t = clean(text, replace);
    if t.len() <= SHOW_WHOLE {
        return format!("{:?}", t);
    }
    // Both ends: where a preview keeps its head and its tail.
    let n = t.chars().count();
    let head: String = t.chars().take(160).collect();
    let tail: String = t.chars().skip(n - 160).collect();
    format!("({} bytes) {:?} … {:?}", t.len(), head, tail)
}
