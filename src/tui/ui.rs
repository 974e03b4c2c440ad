//! The screen layout: transcript, todo panel, queued prompts, input, status line, and the
//! completion menu and modals on top.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Alignment, Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};

use super::app::App;
use super::render::{approval, form, modal, status, theme};
use crate::tools::TodoStatus;

pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;
/// Most rows the input grows to before it scrolls.
const MAX_INPUT_ROWS: usize = 10;
const MAX_TODO_ROWS: usize = 10;
const MAX_QUEUE_ROWS: usize = 3;

/// Draws the screen; returns where the terminal's cursor goes (hidden when `None`).
pub fn draw(frame: &mut Frame, app: &mut App, now: Instant) -> Option<Position> {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "Terminal too small ({}×{}). keel needs at least {MIN_WIDTH}×{MIN_HEIGHT}.",
            area.width, area.height
        );
        let y = area.height / 2;
        let p = Paragraph::new(msg)
            .alignment(Alignment::Center)
            .wrap(Wrap { trim: true });
        frame.render_widget(
            p,
            Rect::new(
                area.x,
                area.y + y.saturating_sub(1),
                area.width,
                area.height - y.saturating_sub(1),
            ),
        );
        return None;
    }

    // Input rows first: the prompt area decides how much the transcript gets.
    let shell_mode = app.editor.text().starts_with('!');
    let text_width = area.width.saturating_sub(4) as usize;
    // Ctrl+R shows the search and its match in the prompt box.
    let searching = app.search_preview().map(|(q, t)| (q.to_string(), t.to_string()));
    let (rows, cursor) = match &searching {
        Some((query, text)) => search_rows(query, text, text_width),
        None => app.editor.layout(text_width, Style::new()),
    };
    let input_rows = rows.len().clamp(1, MAX_INPUT_ROWS);
    let first_row = cursor.0.saturating_sub(input_rows - 1);

    let todos = if app.show_todos { app.shared.todos() } else { Vec::new() };
    let mut todo_h = if app.show_todos {
        todos.len().clamp(1, MAX_TODO_ROWS) as u16 + 2
    } else {
        0
    };
    let queue_h = match app.queue.len() {
        0 => 0,
        n if n <= MAX_QUEUE_ROWS => n as u16,
        _ => MAX_QUEUE_ROWS as u16 + 1,
    };
    let input_h = input_rows as u16 + 2;
    let status_h = 1;
    let mut fixed = input_h + status_h + queue_h + todo_h;
    if area.height < fixed + 3 {
        todo_h = 0;
        fixed = input_h + status_h + queue_h;
    }
    let transcript_h = area.height.saturating_sub(fixed);
    let mut y = area.y;
    let transcript_area = Rect::new(area.x, y, area.width, transcript_h);
    y += transcript_h;
    let todo_area = Rect::new(area.x, y, area.width, todo_h);
    y += todo_h;
    let queue_area = Rect::new(area.x, y, area.width, queue_h);
    y += queue_h;
    let input_area = Rect::new(area.x, y, area.width, input_h);
    y += input_h;
    let status_area = Rect::new(area.x, y, area.width, status_h);

    app.transcript.render(transcript_area, frame.buffer_mut());
    if !app.transcript.is_following() && transcript_h > 0 {
        let hint = Line::from(Span::styled(" ↓ more below · Ctrl+End to follow ", theme::selected()))
            .alignment(Alignment::Right);
        let row = Rect::new(
            transcript_area.x,
            transcript_area.bottom() - 1,
            transcript_area.width,
            1,
        );
        frame.render_widget(hint, row);
    }

    if todo_h > 0 {
        draw_todos(frame, todo_area, &todos);
    }
    if queue_h > 0 {
        let mut lines: Vec<Line> = app
            .queue
            .iter()
            .take(MAX_QUEUE_ROWS)
            .map(|q| {
                let first = q.submission.shown.lines().next().unwrap_or("").to_string();
                Line::from(vec![Span::styled("  ⏎ queued: ", theme::dim()), Span::raw(first)])
            })
            .collect();
        if app.queue.len() > MAX_QUEUE_ROWS {
            lines.push(Line::from(Span::styled(
                format!("  … {} more queued", app.queue.len() - MAX_QUEUE_ROWS),
                theme::dim(),
            )));
        }
        frame.render_widget(Paragraph::new(lines), queue_area);
    }

    // The input box.
    let border = if shell_mode {
        theme::shell()
    } else if app.busy.is_some() {
        theme::dim()
    } else {
        theme::accent()
    };
    let block = Block::new()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(border);
    let inner = block.inner(input_area);
    frame.render_widget(block, input_area);
    let prefix = if shell_mode {
        Span::styled("! ", theme::shell().add_modifier(Modifier::BOLD))
    } else {
        Span::styled("› ", theme::accent().add_modifier(Modifier::BOLD))
    };
    let shown: Vec<Line> = if app.editor.is_empty() && searching.is_none() {
        vec![Line::from(vec![
            prefix,
            Span::styled("Ask keel · / commands · @ files · ! shell", theme::dim()),
        ])]
    } else {
        rows.into_iter()
            .enumerate()
            .skip(first_row)
            .take(input_rows)
            .map(|(i, mut l)| {
                let p = if i == 0 { prefix.clone() } else { Span::raw("  ") };
                l.spans.insert(0, p);
                l
            })
            .collect()
    };
    frame.render_widget(Paragraph::new(shown), inner);
    let mut cursor_pos = Some(Position::new(
        inner.x + 2 + cursor.1 as u16,
        inner.y + (cursor.0 - first_row) as u16,
    ));

    frame.render_widget(status::line(app, now, area.width as usize), status_area);

    if let Some(f) = &app.forms.open {
        form::draw(frame, transcript_area, f);
        cursor_pos = None;
    } else if let Some(a) = app.approval.as_mut() {
        // Over the transcript only: the prompt box stays visible and keeps what is typed.
        if let Some(p) = approval::draw(frame, transcript_area, a, &app.cwd) {
            cursor_pos = Some(p);
        }
    } else if let Some(p) = &app.picker {
        modal::picker(frame, transcript_area, p);
        cursor_pos = None;
    } else if let Some(c) = &app.completion {
        draw_completion(frame, transcript_area, input_area, c);
    }
    if let Some(p) = cursor_pos {
        frame.set_cursor_position(p);
    }
    cursor_pos
}

/// The prompt box while searching the history: the query on the first row (the cursor is
/// there), the matching prompt below it.
fn search_rows(query: &str, text: &str, width: usize) -> (Vec<Line<'static>>, (usize, usize)) {
    let label = "search history: ";
    let mut rows = vec![Line::from(vec![
        Span::styled(label, theme::dim()),
        Span::styled(query.to_string(), theme::accent().add_modifier(Modifier::BOLD)),
    ])];
    let cursor = (
        0,
        (label.len() + unicode_width::UnicodeWidthStr::width(query)).min(width),
    );
    let mut e = super::input::editor::Editor::default();
    e.set_text(text);
    rows.extend(e.layout(width, theme::dim()).0);
    (rows, cursor)
}

fn draw_todos(frame: &mut Frame, area: Rect, todos: &[crate::tools::Todo]) {
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::dim())
        .title(" Todos · Ctrl+T ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines: Vec<Line> = if todos.is_empty() {
        vec![Line::from(Span::styled("No todos yet.", theme::dim()))]
    } else {
        let blocked = crate::types::todo_deps::blocked_flags(todos);
        todos
            .iter()
            .zip(blocked)
            .take(MAX_TODO_ROWS)
            .map(|(t, blocked)| match t.status {
                TodoStatus::Pending if blocked => Line::from(vec![
                    Span::styled("◌ ", theme::dim()),
                    Span::styled(t.content.clone(), theme::dim()),
                    Span::styled(format!(" · blocked by {}", t.blocked_on(todos)), theme::dim()),
                ]),
                TodoStatus::Completed => Line::from(vec![
                    Span::styled("✓ ", theme::ok()),
                    Span::styled(t.content.clone(), theme::dim().add_modifier(Modifier::CROSSED_OUT)),
                ]),
                TodoStatus::InProgress => Line::from(vec![
                    Span::styled("▶ ", theme::warning()),
                    Span::styled(t.active_form.clone(), theme::warning().add_modifier(Modifier::BOLD)),
                ]),
                TodoStatus::Pending => Line::from(vec![Span::styled("○ ", theme::dim()), Span::raw(t.content.clone())]),
            })
            .collect()
    };
    frame.render_widget(Paragraph::new(lines), inner);
}

fn draw_completion(frame: &mut Frame, above: Rect, input: Rect, c: &super::input::completion::Completion) {
    let label_w = c.items.iter().map(|i| i.label.chars().count()).max().unwrap_or(0);
    let width = input.width.min(90);
    let height = (c.items.len() as u16 + 2).min(above.height);
    if height < 3 {
        return;
    }
    let rect = Rect::new(input.x, input.y.saturating_sub(height), width, height);
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::dim());
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let lines: Vec<Line> = c
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let style = if i == c.selected {
                theme::selected()
            } else {
                Style::new()
            };
            let mut spans = vec![Span::styled(format!("{:<label_w$}", item.label), style)];
            if !item.detail.is_empty() {
                spans.push(Span::styled(format!("  {}", item.detail), theme::dim()));
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
