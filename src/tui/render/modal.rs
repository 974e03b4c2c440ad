//! Pickers drawn over the transcript (the approval dialog is in [`super::approval`]).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};

use super::theme;
use crate::tui::app::Picker;

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(area.x + (area.width - w) / 2, area.y + (area.height - h) / 2, w, h)
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
