//! TodoWrite calls drawn as the checklist they set, not as their JSON.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::tui::render::theme;
use crate::tui::render::wrap::{self, sanitize};

/// The checklist of a TodoWrite input; `None` when the input has no list.
pub fn checklist(input: &Value, width: usize) -> Option<Vec<Line<'static>>> {
    let items = input.get("todos")?.as_array()?;
    let mut out = Vec::new();
    if items.is_empty() {
        out.push(Line::from(vec![
            Span::styled("  └ ", theme::dim()),
            Span::styled("(the list is empty)", theme::dim()),
        ]));
    }
    for (i, item) in items.iter().enumerate() {
        let text = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let lead = if i == 0 { "  └ " } else { "    " };
        let (mark, mark_style, body, style) = match item.get("status").and_then(Value::as_str) {
            Some("completed") => (
                "✓ ",
                theme::ok(),
                text("content"),
                theme::dim().add_modifier(Modifier::CROSSED_OUT),
            ),
            Some("in_progress") => {
                let active = text("activeForm");
                let body = if active.is_empty() { text("content") } else { active };
                (
                    "▶ ",
                    theme::warning(),
                    body,
                    theme::warning().add_modifier(Modifier::BOLD),
                )
            }
            _ => ("○ ", theme::dim(), text("content"), ratatui::style::Style::new()),
        };
        out.extend(wrap::wrap(
            &[Span::styled(sanitize(&body).into_owned(), style)],
            width,
            &[Span::styled(lead, theme::dim()), Span::styled(mark, mark_style)],
            &[Span::raw("      ")],
            wrap::Mode::Words,
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_status_has_its_mark_and_the_active_item_its_progressive_form() {
        let input = json!({"todos": [
            {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
            {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"}
        ]});
        let text: Vec<String> = checklist(&input, 60).unwrap().iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text,
            vec!["  └ ✓ Read the code", "    ▶ Fixing the bug", "    ○ Run the tests"]
        );
        assert!(checklist(&json!({}), 60).is_none());
    }
}
