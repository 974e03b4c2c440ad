//! The approval dialog, drawn at the bottom of the transcript area (never over the prompt
//! box, which keeps whatever is typed meanwhile). It shows the engine's preview as given: the
//! whole command with its description, a new file with line numbers, the diff of the file as
//! it will be; long previews scroll.

use std::path::Path;

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};

use super::wrap::{self, Mode, sanitize};
use super::{diff, highlight, markdown, theme};
use crate::tui::app::Approval;
use crate::types::permission::Body;

/// The lines above the preview: the tool, what it touches, what the reader must know.
fn heading(a: &Approval, width: usize, cwd: &Path) -> Vec<Line<'static>> {
    let rel = |p: &Path| sanitize(&p.strip_prefix(cwd).unwrap_or(p).display().to_string()).into_owned();
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut head = vec![Span::styled(a.prompt.tool_name.clone(), bold)];
    let mut extra: Vec<Line<'static>> = Vec::new();
    match &a.prompt.preview.body {
        Body::Command { description, .. } => {
            if let Some(d) = description {
                head.push(Span::styled(format!(" · {}", sanitize(d)), theme::dim()));
            }
        }
        Body::NewFile { path, content } => {
            head.push(Span::styled(format!(" {}", rel(path)), theme::accent()));
            head.push(Span::styled(
                format!(" · new file · {} lines", content.lines().count()),
                theme::dim(),
            ));
        }
        Body::Diff { path, note, .. } => {
            let (added, removed) = a.prompt.preview.body.stats();
            head.push(Span::styled(format!(" {}", rel(path)), theme::accent()));
            head.push(Span::raw(" "));
            head.push(Span::styled(format!("+{added}"), theme::diff_add()));
            head.push(Span::raw(" "));
            head.push(Span::styled(format!("-{removed}"), theme::diff_remove()));
            if let Some(n) = note {
                extra.extend(wrap::wrap_text(n, theme::warning(), width, &[], &[]));
            }
        }
        Body::Plan(_) => {}
        Body::Detail => {
            let summary = crate::tools::summarize_input(&a.prompt.input);
            let prefix = format!("{}/", cwd.display());
            let summary = summary.strip_prefix(&prefix).map(str::to_string).unwrap_or(summary);
            if !summary.is_empty() {
                head.push(Span::styled(format!("({})", sanitize(&summary)), theme::accent()));
            }
        }
    }
    let mut out = wrap::wrap(&head, width, &[], &[Span::raw("  ")], Mode::Words);
    let reason = a.prompt.preview.reason.trim();
    if !reason.is_empty() {
        out.extend(wrap::wrap_text(
            &format!("Asked because {}", sanitize(reason)),
            theme::dim(),
            width,
            &[],
            &[],
        ));
    }
    out.extend(extra);
    out
}

/// The preview laid out at `width` (what scrolls).
fn preview_lines(a: &Approval, width: usize) -> Vec<Line<'static>> {
    match &a.prompt.preview.body {
        Body::Command { command, .. } => {
            let bold = Style::new().add_modifier(Modifier::BOLD);
            let mut out = Vec::new();
            for (i, l) in sanitize(command).lines().enumerate() {
                let first = if i == 0 { "$ " } else { "  " };
                out.extend(wrap::wrap(
                    &[Span::styled(l.to_string(), bold)],
                    width,
                    &[Span::styled(first, theme::dim())],
                    &[Span::raw("  ")],
                    Mode::Chars,
                ));
            }
            out
        }
        Body::NewFile { path, content } => numbered(content, path, width),
        Body::Diff { .. } => diff::from_preview(&a.prompt.preview.body)
            .map(|d| diff::render(&d, width, "", None))
            .unwrap_or_default(),
        Body::Plan(plan) => markdown::render(plan, width),
        Body::Detail => detail_lines(&a.prompt.detail, width),
    }
}

/// A file's content with its line numbers, coloured by its extension.
fn numbered(content: &str, path: &Path, width: usize) -> Vec<Line<'static>> {
    let text = sanitize(content).into_owned();
    let lang = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let lines = highlight::highlight(&text, lang);
    let digits = lines.len().max(1).to_string().len();
    let mut out = Vec::new();
    for (i, spans) in lines.iter().enumerate() {
        let first = [Span::styled(format!("{:>digits$} │ ", i + 1), theme::dim())];
        let rest = [Span::styled(format!("{:>digits$} │ ", ""), theme::dim())];
        out.extend(wrap::wrap(spans, width, &first, &rest, Mode::Chars));
    }
    out
}

/// What a prompt without a specific preview shows: its detail text (a diff when it is one).
fn detail_lines(detail: &str, width: usize) -> Vec<Line<'static>> {
    if let Some(d) = diff::parse_unified(detail) {
        return diff::render(&d, width, "", None);
    }
    let mut out = Vec::new();
    let style = Style::new().add_modifier(Modifier::BOLD);
    for l in sanitize(detail).lines() {
        out.extend(wrap::wrap(
            &[Span::styled(l.to_string(), style)],
            width,
            &[],
            &[],
            Mode::Chars,
        ));
    }
    out
}

fn option_lines(a: &Approval, width: usize) -> Vec<Line<'static>> {
    let labels = if a.prompt.tool_name == "ExitPlanMode" {
        // Approving a plan chooses the mode the work continues in.
        [
            "Yes, approve the plan and ask before each change".to_string(),
            "Yes, approve the plan and accept edits automatically".to_string(),
            "No, keep planning (Tab: say what to change)".to_string(),
        ]
    } else {
        let always = match &a.prompt.suggested_rule {
            Some(rule) => format!("Yes, and always allow {rule}"),
            None => format!("Yes, and don't ask again for {} this session", a.prompt.tool_name),
        };
        [
            "Yes".to_string(),
            always,
            "No, and tell keel what to do instead (Tab)".to_string(),
        ]
    };
    let armed = a.is_armed();
    let mut out = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        let selected = i == a.selected;
        let marker = if selected { "› " } else { "  " };
        let style = match (armed, selected) {
            (false, _) => theme::dim(),
            (true, true) => theme::accent().add_modifier(Modifier::BOLD),
            (true, false) => Style::new(),
        };
        out.extend(wrap::wrap(
            &[Span::styled(format!("{}. {label}", i + 1), style)],
            width,
            &[Span::styled(marker, style)],
            &[Span::raw("     ")],
            Mode::Words,
        ));
    }
    out
}

/// Draws the dialog at the bottom of `area`; returns where the cursor goes while feedback is
/// typed (otherwise the cursor stays in the prompt box, where typing goes).
pub fn draw(frame: &mut Frame, area: Rect, a: &mut Approval, cwd: &Path) -> Option<Position> {
    if area.height < 3 || area.width < 10 {
        return None;
    }
    let inner_width = area.width.saturating_sub(4) as usize;

    let top = heading(a, inner_width, cwd);

    let mut bottom = option_lines(a, inner_width);
    let mut feedback_row = None;
    if let Some(fb) = &a.feedback {
        feedback_row = Some(bottom.len());
        bottom.push(Line::from(vec![
            Span::styled("   Feedback: ", theme::dim()),
            Span::raw(fb.clone()),
        ]));
    }
    let hint = if a.feedback.is_some() {
        "   Enter to send and deny · Esc to go back"
    } else if a.is_armed() {
        "   Enter to choose · 1 2 3 · Esc to deny"
    } else {
        "   Keys go to the prompt box until you pause typing"
    };
    bottom.push(Line::from(Span::styled(hint, theme::dim())));

    if a.cache.as_ref().is_none_or(|(w, _)| *w != inner_width) {
        a.cache = Some((inner_width, preview_lines(a, inner_width)));
    }
    let total = a.cache.as_ref().map_or(0, |(_, l)| l.len());

    // Rows: borders, top, blank, preview (+ position line when it scrolls), blank, bottom.
    let max_inner = area.height.saturating_sub(2) as usize;
    let fixed = top.len() + bottom.len() + 2;
    let room = max_inner.saturating_sub(fixed);
    let (rows, scrolls) = if total <= room {
        (total, false)
    } else {
        (room.saturating_sub(1), true)
    };
    a.view_rows = rows;
    a.total_lines = total;
    a.scroll_by(0);

    let mut lines: Vec<Line<'static>> = Vec::new();
    lines.extend(top);
    lines.push(Line::default());
    if let Some((_, preview)) = &a.cache {
        lines.extend(preview.iter().skip(a.scroll).take(rows).cloned());
    }
    if scrolls {
        let last = (a.scroll + rows).min(total);
        lines.push(Line::from(Span::styled(
            format!(
                "── lines {}–{last} of {total} · PgUp/PgDn, Shift+↑↓, wheel to scroll ──",
                a.scroll + 1
            ),
            theme::dim(),
        )));
    }
    lines.push(Line::default());
    let options_top = lines.len();
    lines.extend(bottom);
    // Too little room even for the choices: the top goes first, the choices stay.
    let overflow = lines.len().saturating_sub(max_inner);
    let lines: Vec<Line<'static>> = lines.into_iter().skip(overflow).collect();

    let height = (lines.len() + 2) as u16;
    let rect = Rect::new(
        area.x,
        area.bottom() - height.min(area.height),
        area.width,
        height.min(area.height),
    );
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::warning())
        .title(Span::styled(
            " Permission needed ",
            theme::warning().add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let inner = Rect::new(inner.x + 1, inner.y, inner.width.saturating_sub(2), inner.height);
    frame.render_widget(Paragraph::new(lines), inner);
    let row = feedback_row
        .map(|r| options_top + r)
        .and_then(|r| r.checked_sub(overflow))?;
    let fb = a.feedback.as_deref().unwrap_or("");
    let x = inner.x + 13 + unicode_width::UnicodeWidthStr::width(fb) as u16;
    Some(Position::new(
        x.min(inner.right().saturating_sub(1)),
        inner.y + row as u16,
    ))
}
