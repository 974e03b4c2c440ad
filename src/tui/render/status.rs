//! The status line: what keel is doing, and model, mode, context use, tokens and cost.

use std::time::Instant;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme;
use crate::permissions::Mode;
use crate::tui::app::{Activity, App};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn mode_span(mode: Mode) -> Span<'static> {
    let style = match mode {
        Mode::Default => theme::dim(),
        Mode::AcceptEdits => Style::new().fg(Color::Magenta),
        Mode::Plan => Style::new().fg(Color::Cyan),
        Mode::DontAsk => Style::new().fg(Color::Yellow),
        Mode::BypassPermissions => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
    };
    Span::styled(format!("mode {}", mode.as_str()), style)
}

pub fn compact_number(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

fn elapsed(secs: u64) -> String {
    if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m {:02}s", secs / 60, secs % 60)
    }
}

fn activity_text(a: &Activity) -> String {
    match a {
        Activity::Thinking => "Thinking".into(),
        Activity::Responding => "Writing".into(),
        Activity::Tool(name) => format!("Running {name}"),
        Activity::Shell => "Running shell command".into(),
        Activity::Command(c) => format!("Running {c}"),
    }
}

pub fn line(app: &App, now: Instant, width: usize) -> Line<'static> {
    let mut left: Vec<Span<'static>> = Vec::new();
    if app.exit_armed.is_some() {
        left.push(Span::styled("Press Ctrl+C again to exit", theme::warning()));
    } else if app.approval.is_some() {
        left.push(Span::styled("Waiting for your decision", theme::warning()));
    } else if let Some(b) = &app.busy {
        let ms = now.saturating_duration_since(b.since).as_millis() as u64;
        let frame = SPINNER[((ms / 100) % SPINNER.len() as u64) as usize];
        // The job's own time: waits for the user's approval are not counted, as in the cells.
        let ms = b.working(now).as_millis() as u64;
        left.push(Span::styled(format!("{frame} "), theme::accent()));
        left.push(Span::styled(
            activity_text(&b.activity),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        left.push(Span::styled(format!(" · {}", elapsed(ms / 1000)), theme::dim()));
        // Hints that give way first on a narrow terminal.
        let mut optional = vec![Span::styled(" · esc to interrupt", theme::dim())];
        if !app.queue.is_empty() {
            optional.insert(0, Span::styled(format!(" · {} queued", app.queue.len()), theme::dim()));
        }
        let mut used: usize = left.iter().map(Span::width).sum();
        for s in optional {
            if used + s.width() + 20 <= width {
                used += s.width();
                left.push(s);
            }
        }
    } else {
        left.push(Span::styled("/help · Shift+Tab: mode", theme::dim()));
    }

    let totals = app.shown_totals();
    let t = &totals;
    let input = t.usage.input_tokens + t.usage.cache_creation_input_tokens + t.usage.cache_read_input_tokens;
    // Right side, most important first; dropped from the end when space runs out.
    let mut right: Vec<Span<'static>> = vec![mode_span(app.mode())];
    if let Some(label) = app.shared.evidence.status_label() {
        let style = if label == "tests: passed" {
            theme::dim()
        } else {
            theme::warning()
        };
        right.push(Span::styled(label, style));
    }
    right.push(Span::styled(app.status.model.clone(), theme::dim()));
    if let Some(p) = app.context_percent() {
        let style = if p >= 90 {
            theme::error()
        } else if p >= 70 {
            theme::warning()
        } else {
            theme::dim()
        };
        let shown = if p == 0 { "<1".to_string() } else { p.to_string() };
        right.push(Span::styled(format!("ctx {shown}%"), style));
    }
    if t.requests > 0 || app.status.in_flight.is_some() {
        right.push(Span::styled(
            format!(
                "{} in / {} out",
                compact_number(input),
                compact_number(t.usage.output_tokens)
            ),
            theme::dim(),
        ));
        let cost = if t.cost_known() {
            format!("${:.4}", t.cost_usd)
        } else {
            "cost unknown".to_string()
        };
        right.push(Span::styled(cost, theme::dim()));
    }
    let left_width: usize = left.iter().map(Span::width).sum();
    let sep_width = 3;
    while !right.is_empty() {
        let w: usize = right.iter().map(Span::width).sum::<usize>() + sep_width * (right.len() - 1);
        if left_width + 2 + w <= width {
            break;
        }
        right.pop();
    }
    let right_width: usize = right.iter().map(Span::width).sum::<usize>() + sep_width * right.len().saturating_sub(1);
    let mut spans = left;
    let gap = width.saturating_sub(left_width + right_width);
    spans.push(Span::raw(" ".repeat(gap)));
    for (i, s) in right.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme::dim()));
        }
        spans.push(s);
    }
    Line::from(spans)
}
