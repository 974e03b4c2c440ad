//! Pickers drawn over the transcript (the approval dialog is in [`super::approval`]).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};

use super::theme;
use super::wrap::sanitize;
use crate::tui::app::{Picker, PickerKind};

pub(super) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(area.x + (area.width - w) / 2, area.y + (area.height - h) / 2, w, h)
}

pub fn picker(frame: &mut Frame, area: Rect, p: &Picker) {
    let width = area.width.saturating_sub(4).clamp(20, 110);
    let inner = width.saturating_sub(4) as usize;
    let rows = (area.height.saturating_sub(6) as usize).clamp(1, 15);
    let start = p.selected.saturating_sub(rows - 1);
    let mut lines = vec![Line::from(vec![
        Span::styled("Search: ", theme::dim()),
        Span::raw(sanitize(&p.query).into_owned()),
        Span::styled("▏", theme::accent()),
    ])];
    if p.shown.is_empty() {
        let none = match p.kind {
            PickerKind::Model(_) if !p.query.trim().is_empty() => "No such model listed; Enter uses the name as typed.",
            _ => "Nothing matches.",
        };
        lines.push(Line::from(Span::styled(none, theme::dim())));
    }
    for (row, &i) in p.shown.iter().enumerate().skip(start).take(rows) {
        let item = &p.items[i];
        let selected = row == p.selected;
        let style = if selected { theme::selected() } else { Style::new() };
        let marker = if selected { "› " } else { "  " };
        let label: String = sanitize(&item.label).chars().take(inner.saturating_sub(2)).collect();
        let mut spans = vec![Span::styled(format!("{marker}{label}"), style)];
        let used: usize = spans.iter().map(Span::width).sum();
        if !item.detail.is_empty() && used + 3 < inner {
            let room = inner - used - 2;
            let detail: String = item.detail.chars().take(room).collect();
            spans.push(Span::styled(format!("  {detail}"), theme::dim()));
        }
        lines.push(Line::from(spans));
    }
    if p.shown.len() > rows {
        lines.push(Line::from(Span::styled(
            format!("{} of {}", p.selected + 1, p.shown.len()),
            theme::dim(),
        )));
    }
    lines.push(Line::from(Span::styled(p.hint.clone(), theme::dim())));
    let rect = centered(area, width, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::accent())
        .title(p.title.clone());
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
