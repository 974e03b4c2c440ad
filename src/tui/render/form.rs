//! The form of an MCP server's elicitation request (state and keys in [`crate::tui::elicit`]).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};

use super::theme;
use super::wrap::sanitize;
use crate::tui::elicit::{Form, Kind};

pub fn draw(frame: &mut Frame, area: Rect, form: &Form) {
    let width = area.width.saturating_sub(4).clamp(20, 100);
    // The server's words are shown as text, never as terminal control sequences.
    let mut lines = vec![
        Line::from(Span::raw(sanitize(&form.message).into_owned())),
        Line::from(""),
    ];
    if let Some(url) = &form.url {
        lines.push(Line::from(vec![
            Span::styled("Visit: ", theme::dim()),
            Span::styled(sanitize(url).into_owned(), theme::accent()),
        ]));
    }
    for (i, f) in form.fields.iter().enumerate() {
        let focused = i == form.focus;
        let marker = if focused { "› " } else { "  " };
        let star = if f.required { "*" } else { "" };
        let hint = match &f.kind {
            Kind::Boolean => " (Space toggles)".to_string(),
            Kind::Choice(o) => format!(" (←/→: {})", o.join(", ")),
            Kind::Integer => " (whole number)".to_string(),
            Kind::Number => " (number)".to_string(),
            Kind::Text => String::new(),
        };
        let style = if focused {
            theme::selected()
        } else {
            ratatui::style::Style::new()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{marker}{}{star}: ", sanitize(&f.title)), style),
            Span::raw(sanitize(&f.value).into_owned()),
            Span::styled(if focused { "▏" } else { "" }, theme::accent()),
            Span::styled(hint, theme::dim()),
        ]));
        if focused && !f.description.is_empty() {
            lines.push(Line::from(Span::styled(
                format!("    {}", sanitize(&f.description)),
                theme::dim(),
            )));
        }
    }
    if let Some(e) = &form.error {
        lines.push(Line::from(Span::styled(e.clone(), theme::error())));
    }
    lines.push(Line::from(""));
    let keys = if form.url.is_some() {
        "Enter: accept · Esc: decline · Ctrl+C: cancel"
    } else {
        "Tab/↑/↓: field · Enter: send · Esc: decline · Ctrl+C: cancel"
    };
    lines.push(Line::from(Span::styled(keys, theme::dim())));
    let rect = super::modal::centered(area, width, lines.len() as u16 + 4);
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::accent())
        .title(format!(" MCP server `{}` asks ", sanitize(&form.server)));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let inner = Rect::new(inner.x + 1, inner.y, inner.width.saturating_sub(2), inner.height);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
