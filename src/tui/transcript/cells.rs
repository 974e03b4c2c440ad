//! The transcript's cells and how each one is drawn at a given width.

use std::path::Path;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::engine::NoticeLevel;
use crate::tui::render::diff::{self, DiffLine};
use crate::tui::render::wrap::{self, Mode, sanitize, wrap_text};
use crate::tui::render::{markdown, theme};

/// Output lines a collapsed tool cell shows.
const COLLAPSED_OUTPUT_LINES: usize = 3;
/// Output lines a collapsed error shows (errors say what to do; they deserve more room).
const COLLAPSED_ERROR_LINES: usize = 6;
const COLLAPSED_DIFF_LINES: usize = 16;
const COLLAPSED_SHELL_LINES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// The model is still writing the call.
    Streaming,
    /// An approval dialog asks about this call.
    Waiting,
    Running,
    Ok,
    Error,
    Denied,
    Interrupted,
}

#[derive(Debug, Clone)]
pub struct ToolCell {
    pub id: String,
    pub name: String,
    /// The key argument, shortened for display.
    pub summary: String,
    pub input: Value,
    pub status: ToolStatus,
    pub duration_ms: Option<u64>,
    pub output: String,
    pub structured: Value,
    pub expanded: bool,
    /// How the user answered an approval dialog for this call.
    pub approval: Option<String>,
    /// Time spent waiting for that answer (left out of the duration shown).
    pub wait_ms: u64,
    /// The diff the user approved (file line numbers), shown instead of the edit's strings.
    pub approved_preview: Option<crate::types::permission::Body>,
    /// A command's output while it runs.
    pub live: Option<super::live::LiveOutput>,
    /// When the call started running (after any approval), for the live elapsed time.
    pub run_started: Option<std::time::Instant>,
}

impl ToolCell {
    pub fn new(id: &str, name: &str, input: Value, cwd: &Path) -> Self {
        let mut cell = ToolCell {
            id: id.to_string(),
            name: name.to_string(),
            summary: String::new(),
            input: Value::Null,
            status: ToolStatus::Streaming,
            duration_ms: None,
            output: String::new(),
            structured: Value::Null,
            expanded: false,
            approval: None,
            wait_ms: 0,
            approved_preview: None,
            live: None,
            run_started: None,
        };
        cell.set_input(input, cwd);
        cell
    }

    pub fn set_input(&mut self, input: Value, cwd: &Path) {
        let summary = match input.get("todos").and_then(Value::as_array) {
            // A task list is drawn as a checklist; its JSON would only repeat it.
            Some(items) if self.name == "TodoWrite" => {
                let done = items.iter().filter(|i| i["status"] == "completed").count();
                format!(
                    "{} item{}, {done} done",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" }
                )
            }
            _ => crate::tools::summarize_input(&input),
        };
        let prefix = format!("{}/", cwd.display());
        self.summary = summary.strip_prefix(&prefix).map(str::to_string).unwrap_or(summary);
        self.input = input;
    }

    /// The diff this call makes, when it edits a file.
    pub fn diff(&self) -> Option<Vec<DiffLine>> {
        if let Some(body) = &self.approved_preview
            && let Some(lines) = diff::from_preview(body)
        {
            return Some(lines);
        }
        if let Some(patch) = self.structured.get("structuredPatch")
            && let Some(lines) = diff::from_structured_patch(patch)
            && !lines.is_empty()
        {
            return Some(lines);
        }
        let old = self.input.get("old_string").and_then(Value::as_str);
        let new = self.input.get("new_string").and_then(Value::as_str);
        if let (Some(old), Some(new)) = (old, new) {
            return Some(diff::from_strings(old, new));
        }
        if self.name == "Write"
            && let Some(content) = self.input.get("content").and_then(Value::as_str)
            && self.structured.get("type").and_then(Value::as_str) == Some("create")
        {
            return Some(diff::from_strings("", content));
        }
        None
    }
}

#[derive(Debug, Clone)]
pub struct ShellCell {
    pub command: String,
    pub output: String,
    pub exit_code: Option<i32>,
    pub running: bool,
    pub duration_ms: Option<u64>,
    pub expanded: bool,
}

#[derive(Debug, Clone)]
pub enum CellKind {
    User {
        text: String,
    },
    Assistant {
        text: String,
        streaming: bool,
    },
    Thinking {
        text: String,
        streaming: bool,
    },
    Tool(Box<ToolCell>),
    Shell(ShellCell),
    Notice {
        level: NoticeLevel,
        text: String,
    },
    /// Output of a slash command, as markdown.
    Info {
        title: String,
        markdown: String,
    },
    /// Where the conversation was compacted: keel's hand-off document (not something the
    /// user typed), folded until Ctrl+O.
    Handoff {
        text: String,
    },
    /// Pre-drawn lines (e.g. the /context grid), clipped to the width.
    Lines {
        title: String,
        lines: Vec<Line<'static>>,
    },
}

impl CellKind {
    pub fn render(&self, width: usize, expand_all: bool) -> Vec<Line<'static>> {
        let width = width.max(10);
        match self {
            CellKind::User { text } => wrap_text(
                &sanitize(text),
                theme::user_prompt(),
                width,
                &[Span::styled("› ", theme::accent().add_modifier(Modifier::BOLD))],
                &[Span::raw("  ")],
            ),
            CellKind::Assistant { text, .. } => {
                // Empty (a retry voided what had streamed): no lines, no room taken.
                let mut lines = markdown::render(text, width - 2);
                indent(&mut lines, "  ");
                lines
            }
            CellKind::Thinking { text, streaming } => thinking(text, *streaming, width, expand_all),
            CellKind::Tool(t) => tool(t, width, expand_all || t.expanded),
            CellKind::Shell(s) => shell(s, width, expand_all || s.expanded),
            CellKind::Notice { level, text } => {
                let (mark, style) = match level {
                    NoticeLevel::Info => ("· ", theme::dim()),
                    NoticeLevel::Warning => ("! ", theme::warning()),
                    NoticeLevel::Error => ("✗ ", theme::error()),
                };
                wrap_text(
                    &sanitize(text),
                    style,
                    width,
                    &[Span::styled(mark, style)],
                    &[Span::raw("  ")],
                )
            }
            CellKind::Info { title, markdown: md } => {
                let mut lines = vec![Line::from(Span::styled(title.clone(), theme::heading()))];
                let mut body = markdown::render(md, width - 2);
                indent(&mut body, "  ");
                lines.extend(body);
                lines
            }
            CellKind::Handoff { text } => {
                let style = theme::dim().add_modifier(Modifier::ITALIC);
                let mut lines = vec![Line::from(vec![
                    Span::styled("✻ ", theme::accent()),
                    Span::styled(
                        "Conversation compacted: what is above was summarised into a hand-off",
                        style,
                    ),
                ])];
                if expand_all {
                    let mut body = markdown::render(text, width - 4);
                    indent(&mut body, "    ");
                    lines.extend(body);
                } else {
                    lines[0].spans.push(Span::styled(" (Ctrl+O to show it)", theme::dim()));
                }
                lines
            }
            CellKind::Lines { title, lines } => {
                let mut out = vec![Line::from(Span::styled(title.clone(), theme::heading()))];
                out.extend(lines.iter().cloned());
                out
            }
        }
    }
}

fn indent(lines: &mut [Line<'static>], by: &'static str) {
    for l in lines {
        l.spans.insert(0, Span::raw(by));
    }
}

fn thinking(text: &str, streaming: bool, width: usize, expanded: bool) -> Vec<Line<'static>> {
    let style = theme::dim().add_modifier(Modifier::ITALIC);
    let header = if streaming { "✻ Thinking…" } else { "✻ Thought" };
    let mut lines = vec![Line::from(Span::styled(header, style))];
    let text = sanitize(text.trim());
    let body: Vec<Line<'static>> = wrap_text(&text, style, width, &[Span::raw("  ")], &[Span::raw("  ")]);
    if expanded {
        lines.extend(body);
    } else if streaming {
        // The latest thoughts, so the user sees progress without a wall of text.
        let skip = body.len().saturating_sub(2);
        lines.extend(body.into_iter().skip(skip));
    } else if !text.is_empty() {
        lines[0].spans.push(Span::styled(" (Ctrl+O to show)", theme::dim()));
    }
    lines
}

fn status_mark(status: ToolStatus) -> (&'static str, Style) {
    match status {
        ToolStatus::Streaming | ToolStatus::Running => ("○", theme::accent()),
        ToolStatus::Waiting => ("?", theme::warning()),
        ToolStatus::Ok => ("✓", theme::ok()),
        ToolStatus::Error => ("✗", theme::error()),
        ToolStatus::Denied => ("⊘", theme::warning()),
        ToolStatus::Interrupted => ("■", theme::warning()),
    }
}

fn more_lines(n: usize) -> String {
    if n == 1 {
        "1 more line".into()
    } else {
        format!("{n} more lines")
    }
}

pub fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{}m {:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

fn tool(t: &ToolCell, width: usize, expanded: bool) -> Vec<Line<'static>> {
    let (mark, mark_style) = status_mark(t.status);
    let mut header = vec![
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(t.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
    ];
    if !t.summary.is_empty() {
        header.push(Span::styled(format!("({})", sanitize(&t.summary)), theme::accent()));
    }
    let state = match t.status {
        ToolStatus::Streaming => Some("preparing…".to_string()),
        ToolStatus::Running => Some("running…".to_string()),
        ToolStatus::Waiting => Some("waiting for approval".to_string()),
        ToolStatus::Denied => Some("denied".to_string()),
        ToolStatus::Interrupted => Some("interrupted".to_string()),
        _ => None,
    };
    let mut tail = Vec::new();
    if let Some(s) = state {
        tail.push(s);
    }
    if let Some(a) = &t.approval
        && t.status != ToolStatus::Denied
    {
        tail.push(a.clone());
    }
    if let Some(ms) = t.duration_ms {
        tail.push(format_duration(ms));
    }
    if !tail.is_empty() {
        header.push(Span::styled(format!(" · {}", tail.join(" · ")), theme::dim()));
    }
    let mut lines = wrap::wrap(&header, width, &[], &[Span::raw("  ")], Mode::Words);

    let first = [Span::styled("  └ ", theme::dim())];
    let rest = [Span::raw("    ")];
    let body_width = width;
    if t.status == ToolStatus::Running
        && let Some(live) = t
            .live
            .as_ref()
            .filter(|l| l.elapsed_ms >= crate::tui::app::LIVE_AFTER_MS)
    {
        lines.extend(live.render(width));
        return lines;
    }
    if matches!(
        t.status,
        ToolStatus::Streaming | ToolStatus::Running | ToolStatus::Waiting
    ) {
        return lines;
    }
    if t.status == ToolStatus::Ok
        && t.name == "TodoWrite"
        && let Some(list) = super::todos::checklist(&t.input, width)
    {
        lines.extend(list);
        return lines;
    }
    if t.status == ToolStatus::Ok
        && let Some(d) = t.diff()
    {
        let (added, removed) = diff::stats(&d);
        lines.push(Line::from(vec![
            first[0].clone(),
            Span::styled(format!("+{added}"), theme::diff_add()),
            Span::raw(" "),
            Span::styled(format!("-{removed}"), theme::diff_remove()),
        ]));
        let max = (!expanded).then_some(COLLAPSED_DIFF_LINES);
        lines.extend(diff::render(&d, body_width, "    ", max));
        return lines;
    }
    let output = sanitize(strip_error_tags(&t.output)).into_owned();
    let output = output.trim_end();
    let style = match t.status {
        ToolStatus::Error => theme::error(),
        ToolStatus::Denied | ToolStatus::Interrupted => theme::warning(),
        _ => theme::dim(),
    };
    if output.is_empty() {
        lines.push(Line::from(vec![
            first[0].clone(),
            Span::styled("(no output)", theme::dim()),
        ]));
        return lines;
    }
    let total = output.lines().count();
    if !expanded && t.status == ToolStatus::Ok && t.name == "Read" {
        lines.push(Line::from(vec![
            first[0].clone(),
            Span::styled(format!("{total} lines (Ctrl+O to show)"), theme::dim()),
        ]));
        return lines;
    }
    let keep = if expanded {
        total
    } else if t.status == ToolStatus::Ok {
        COLLAPSED_OUTPUT_LINES
    } else {
        COLLAPSED_ERROR_LINES
    };
    // Output is shown as the tool wrote it; messages (errors, denials) wrap between words.
    let mode = if t.status == ToolStatus::Ok {
        Mode::Chars
    } else {
        Mode::Words
    };
    for (i, l) in output.lines().take(keep).enumerate() {
        let p: &[Span<'static>] = if i == 0 { &first } else { &rest };
        lines.extend(wrap::wrap(
            &[Span::styled(l.to_string(), style)],
            body_width,
            p,
            &rest,
            mode,
        ));
    }
    if total > keep {
        lines.push(Line::from(Span::styled(
            format!("    … {} (Ctrl+O to expand)", more_lines(total - keep)),
            theme::dim(),
        )));
    }
    lines
}

fn strip_error_tags(s: &str) -> &str {
    s.trim()
        .strip_prefix("<tool_use_error>")
        .and_then(|r| r.strip_suffix("</tool_use_error>"))
        .unwrap_or(s)
}

fn shell(s: &ShellCell, width: usize, expanded: bool) -> Vec<Line<'static>> {
    let mut header = vec![
        Span::styled("! ", theme::shell().add_modifier(Modifier::BOLD)),
        Span::styled(sanitize(&s.command).into_owned(), theme::shell()),
    ];
    let mut tail = Vec::new();
    if s.running {
        tail.push("running…".to_string());
    }
    match s.exit_code {
        Some(0) | None => {}
        Some(code) => tail.push(format!("exit {code}")),
    }
    if let Some(ms) = s.duration_ms {
        tail.push(format_duration(ms));
    }
    if !tail.is_empty() {
        let style = if s.exit_code.is_some_and(|c| c != 0) {
            theme::error()
        } else {
            theme::dim()
        };
        header.push(Span::styled(format!(" · {}", tail.join(" · ")), style));
    }
    let mut lines = wrap::wrap(&header, width, &[], &[Span::raw("  ")], Mode::Chars);
    let output = sanitize(&s.output).into_owned();
    let output = output.trim_end();
    let first = [Span::styled("  └ ", theme::dim())];
    let rest = [Span::raw("    ")];
    if output.is_empty() {
        if !s.running {
            lines.push(Line::from(vec![
                first[0].clone(),
                Span::styled("(no output)", theme::dim()),
            ]));
        }
        return lines;
    }
    let total = output.lines().count();
    let keep = if expanded { total } else { COLLAPSED_SHELL_LINES };
    for (i, l) in output.lines().take(keep).enumerate() {
        let p: &[Span<'static>] = if i == 0 { &first } else { &rest };
        lines.extend(wrap::wrap(&[Span::raw(l.to_string())], width, p, &rest, Mode::Chars));
    }
    if total > keep {
        lines.push(Line::from(Span::styled(
            format!("    … {} (Ctrl+O to expand)", more_lines(total - keep)),
            theme::dim(),
        )));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_summary_is_relative_to_the_workspace() {
        let t = ToolCell::new("t", "Read", json!({"file_path": "/w/src/a.rs"}), Path::new("/w"));
        assert_eq!(t.summary, "src/a.rs");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(12), "12 ms");
        assert_eq!(format_duration(1520), "1.5 s");
        assert_eq!(format_duration(125_000), "2m 05s");
    }
}
