//! Modals drawn over the transcript: the approval dialog and the session picker.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};

use super::diff;
use super::theme;
use super::wrap::{self, Mode, sanitize};
use crate::tui::app::{Approval, Picker};

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(area.x + (area.width - w) / 2, area.y + (area.height - h) / 2, w, h)
}

/// Lines showing exactly what would happen: a coloured diff, or the command/detail as is.
fn detail_lines(a: &Approval, width: usize) -> Vec<Line<'static>> {
    let detail = &a.prompt.detail;
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

/// Draws the approval dialog; returns where the cursor goes while typing feedback.
pub fn approval(frame: &mut Frame, area: Rect, a: &Approval, cwd: &std::path::Path) -> Option<Position> {
    let width = area.width.saturating_sub(4).clamp(20, 110);
    let inner = width.saturating_sub(4) as usize;
    // A plan is shown whole below; its JSON in the heading would only repeat it.
    let summary = if a.prompt.tool_name == "ExitPlanMode" {
        String::new()
    } else {
        crate::tools::summarize_input(&a.prompt.input)
    };
    let prefix = format!("{}/", cwd.display());
    let summary = summary.strip_prefix(&prefix).map(str::to_string).unwrap_or(summary);
    let mut head = vec![Span::styled(
        a.prompt.tool_name.clone(),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if !summary.is_empty() {
        head.push(Span::styled(format!("({})", sanitize(&summary)), theme::accent()));
    }
    let mut lines = wrap::wrap(&head, inner, &[], &[], Mode::Words);
    lines.push(Line::default());

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
    let mut options: Vec<Line<'static>> = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        let selected = i == a.selected;
        let marker = if selected { "› " } else { "  " };
        let style = if selected {
            theme::accent().add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        options.extend(wrap::wrap(
            &[Span::styled(format!("{}. {label}", i + 1), style)],
            inner,
            &[Span::styled(marker, style)],
            &[Span::raw("     ")],
            Mode::Words,
        ));
    }
    let mut feedback_line = None;
    if let Some(fb) = &a.feedback {
        options.push(Line::from(vec![
            Span::styled("   Feedback: ", theme::dim()),
            Span::raw(fb.clone()),
        ]));
        feedback_line = Some(options.len() - 1);
    }
    options.push(Line::from(Span::styled(
        "   Enter to choose · Esc to deny",
        theme::dim(),
    )));

    let max_height = area.height.saturating_sub(2) as usize;
    let fixed = lines.len() + 1 + options.len() + 2;
    let room = max_height.saturating_sub(fixed).max(1);
    let detail = detail_lines(a, inner);
    let total = detail.len();
    if total > room {
        lines.extend(detail.into_iter().take(room.saturating_sub(1)));
        lines.push(Line::from(Span::styled(
            format!("… {} more lines", total - room.saturating_sub(1)),
            theme::dim(),
        )));
    } else {
        lines.extend(detail);
    }
    lines.push(Line::default());
    let options_top = lines.len();
    lines.extend(options);

    let height = (lines.len() + 2) as u16;
    let rect = centered(area, width, height);
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::warning())
        .title(Span::styled(
            " Permission needed ",
            theme::warning().add_modifier(Modifier::BOLD),
        ));
    let inner_rect = block.inner(rect);
    frame.render_widget(block, rect);
    let inner_rect = Rect::new(
        inner_rect.x + 1,
        inner_rect.y,
        inner_rect.width.saturating_sub(2),
        inner_rect.height,
    );
    frame.render_widget(Paragraph::new(lines), inner_rect);
    feedback_line.map(|l| {
        let fb = a.feedback.as_deref().unwrap_or("");
        let x = inner_rect.x + 13 + unicode_width::UnicodeWidthStr::width(fb) as u16;
        Position::new(
            x.min(inner_rect.right().saturating_sub(1)),
            inner_rect.y + (options_top + l) as u16,
        )
    })
}

pub fn picker(frame: &mut Frame, area: Rect, p: &Picker) {
    let width = area.width.saturating_sub(4).clamp(20, 110);
    let inner = width.saturating_sub(4) as usize;
    let rows = (area.height.saturating_sub(4) as usize).clamp(1, 15);
    let start = p.selected.saturating_sub(rows - 1);
    let mut lines = Vec::new();
    for (i, s) in p.sessions.iter().enumerate().skip(start).take(rows) {
        let when: chrono::DateTime<chrono::Local> = s.modified.into();
        let text = format!("{}  {}", when.format("%Y-%m-%d %H:%M"), s.first_prompt);
        let text: String = text.chars().take(inner.saturating_sub(2)).collect();
        let style = if i == p.selected {
            theme::selected()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(
            format!("{} {text}", if i == p.selected { "›" } else { " " }),
            style,
        )));
    }
    lines.push(Line::from(Span::styled(
        "Enter to resume · Esc to cancel",
        theme::dim(),
    )));
    let rect = centered(area, width, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::accent())
        .title(" Resume a session ");
    let inner_rect = block.inner(rect);
    frame.render_widget(block, rect);
    let inner_rect = Rect::new(
        inner_rect.x + 1,
        inner_rect.y,
        inner_rect.width.saturating_sub(2),
        inner_rect.height,
    );
    frame.render_widget(Paragraph::new(lines), inner_rect);
}
