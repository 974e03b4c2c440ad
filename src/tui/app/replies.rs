//! Replies of the engine task: a job finished.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::{App, Picker, PickerKind, picker};
use crate::config::models;
use crate::engine::NoticeLevel;
use crate::engine::session::Totals;
use crate::tui::integration::{ContextReport, HookEntry, PermissionsReport};
use crate::tui::render::theme;
use crate::tui::transcript::{CellKind, history};
use crate::tui::worker::Reply;

impl App {
    pub fn on_reply(&mut self, reply: Reply) {
        match reply {
            // Not a job's end: the figures that come before it.
            Reply::Totals(t) => {
                self.status.totals = t;
                self.dirty = true;
                return;
            }
            // Nor is a server's form, which arrives while a tool call waits for it.
            Reply::Elicitation(prompt) => {
                self.forms.push(prompt, std::time::Instant::now());
                self.completion = None;
                self.dirty = true;
                return;
            }
            Reply::TurnDone => {}
            Reply::ShellDone(r) => {
                let i = (0..self.transcript.len())
                    .rev()
                    .find(|&i| matches!(self.transcript.get(i), Some(CellKind::Shell(s)) if s.running));
                if let Some(i) = i
                    && let Some(CellKind::Shell(s)) = self.transcript.get_mut(i)
                {
                    s.running = false;
                    s.output = match &r.spawn_error {
                        Some(e) => e.clone(),
                        None => r.output.clone(),
                    };
                    if r.dropped > 0 {
                        s.output.push_str(&format!("\n[… {} more bytes not shown]", r.dropped));
                    }
                    s.exit_code = r.exit_code;
                    s.duration_ms = Some(r.duration_ms);
                }
                if r.interrupted {
                    self.notice(
                        NoticeLevel::Warning,
                        "Command interrupted; its output so far was added to the conversation.",
                    );
                }
            }
            Reply::Session(s) => {
                self.transcript.clear();
                self.shared = s.shared;
                self.status.session_id = s.id.clone();
                self.status.totals = Totals::default();
                self.status.cut = Totals::default();
                self.status.in_flight = None;
                self.restore_figures(s.figures);
                history::fill(&mut self.transcript, &s.history, &self.cwd);
                for w in s.warnings {
                    self.notice(NoticeLevel::Warning, w);
                }
                let what = if s.history.is_empty() {
                    format!("New conversation (session {}).", s.id)
                } else {
                    format!("Resumed session {}.", s.id)
                };
                self.notice(NoticeLevel::Info, what);
            }
            Reply::ModelSet { model, notes } => {
                let info = models::info(&model);
                self.status.context_window = info.context_window;
                self.notice(
                    NoticeLevel::Info,
                    format!("Model set to {model} (context window {} tokens).", info.context_window),
                );
                for n in notes {
                    self.notice(NoticeLevel::Info, n);
                }
                if !self.status.model_choices.contains(&model) {
                    self.status.model_choices.push(model.clone());
                }
                self.status.model = model;
            }
            Reply::Compacted(r) => match r {
                // One notice: the engine's (with the sizes) gets the rest of the report.
                Ok(report) => match self.compact_notice.take() {
                    Some(i) => {
                        if let Some(CellKind::Notice { text, .. }) = self.transcript.get_mut(i) {
                            text.push(' ');
                            text.push_str(&report.note);
                        }
                    }
                    None => {
                        let sizes = match (report.tokens_before, report.tokens_after) {
                            (Some(b), Some(a)) => format!(" ({b} → {a} tokens)"),
                            _ => String::new(),
                        };
                        self.notice(
                            NoticeLevel::Info,
                            format!("Conversation compacted{sizes}. {}", report.note),
                        );
                    }
                },
                Err(e) => self.notice(NoticeLevel::Error, format!("/compact: {e}")),
            },
            Reply::Context(r) => self.show_context(r),
            Reply::Permissions(r) => self.show_permissions(r),
            Reply::Hooks(r) => self.show_hooks(r),
            Reply::Rewound(Ok(r)) => match r.points {
                Some(points) if !points.is_empty() => {
                    let order: Vec<u32> = points.iter().rev().map(|p| p.point).collect();
                    self.open_picker(Picker::new(
                        " Rewind to before a prompt ",
                        picker::point_items(&points),
                        PickerKind::RewindPoint(order),
                        "Enter to choose · type to filter · Esc to cancel",
                    ));
                }
                _ => {
                    if let Some(h) = &r.history {
                        self.transcript.clear();
                        history::fill(&mut self.transcript, h, &self.cwd);
                    }
                    self.notice(NoticeLevel::Info, r.text);
                    // The prompt rewound past comes back to be edited and sent again.
                    if let Some(p) = r.prompt
                        && self.editor.is_empty()
                    {
                        self.editor.set_text(&p);
                    }
                }
            },
            Reply::Sessions(sessions) => {
                if sessions.is_empty() {
                    self.notice(NoticeLevel::Info, "No earlier sessions in this directory.");
                } else {
                    let paths = sessions.iter().map(|s| s.path.clone()).collect();
                    self.open_picker(Picker::new(
                        " Resume a session ",
                        picker::session_items(&sessions),
                        PickerKind::Resume(paths),
                        "Enter to resume · type to search · Esc to cancel",
                    ));
                }
            }
            Reply::Rewound(Err(e)) => self.notice(NoticeLevel::Error, format!("/rewind: {e}")),
            Reply::Mcp(md) => self.info("MCP servers", md),
            Reply::Notice(level, text) => self.notice(level, text),
            Reply::Failed(e) => self.notice(NoticeLevel::Error, e),
        }
        self.job_finished();
    }

    fn show_context(&mut self, report: Result<ContextReport, String>) {
        let used = self.status.context_tokens;
        let window = self.status.context_window;
        let mut lines = vec![Line::from(format!(
            "  Last request: {used} of {window} tokens ({}%).",
            (used * 100).checked_div(window).unwrap_or(0)
        ))];
        match report {
            Ok(r) => {
                lines.extend(context_grid(&r));
            }
            Err(e) => lines.push(Line::from(Span::styled(format!("  By category: {e}."), theme::dim()))),
        }
        self.transcript.push(CellKind::Lines {
            title: "Context".into(),
            lines,
        });
        self.dirty = true;
    }

    fn show_permissions(&mut self, report: Result<PermissionsReport, String>) {
        let mut md = format!(
            "Mode: **{}** (Shift+Tab cycles default → acceptEdits → plan{}).\n\n",
            self.mode().as_str(),
            if self.bypass_available {
                " → bypassPermissions"
            } else {
                ""
            }
        );
        match report {
            Ok(r) => {
                if r.rule_sets
                    .iter()
                    .all(|s| s.allow.is_empty() && s.ask.is_empty() && s.deny.is_empty())
                {
                    md.push_str("No permission rules are configured.\n");
                }
                for set in &r.rule_sets {
                    md.push_str(&format!("**{}**\n\n", set.source));
                    for (kind, rules) in [("allow", &set.allow), ("ask", &set.ask), ("deny", &set.deny)] {
                        for rule in rules {
                            md.push_str(&format!("- {kind}: `{rule}`\n"));
                        }
                    }
                    md.push('\n');
                }
                for d in &r.additional_directories {
                    md.push_str(&format!("- additional directory: `{}`\n", d.display()));
                }
            }
            Err(e) => md.push_str(&format!("Rules: {e}.\n")),
        }
        self.info("Permissions", md);
    }

    fn show_hooks(&mut self, report: Result<Vec<HookEntry>, String>) {
        let md = match report {
            Ok(hooks) if hooks.is_empty() => "No hooks are configured.".to_string(),
            Ok(hooks) => {
                let mut md = String::from("| event | matcher | command | source |\n|---|---|---|---|\n");
                for h in hooks {
                    md.push_str(&format!(
                        "| {} | {} | `{}` | {} |\n",
                        h.event,
                        h.matcher.as_deref().unwrap_or("*"),
                        h.command.replace('|', "\\|"),
                        h.source
                    ));
                }
                md
            }
            Err(e) => format!("{e}."),
        };
        self.info("Hooks", md);
    }
}

/// A bar per category, proportional to its share of the window.
pub fn context_grid(r: &ContextReport) -> Vec<Line<'static>> {
    const BAR: usize = 40;
    let colours = [
        ratatui::style::Color::Cyan,
        ratatui::style::Color::Magenta,
        ratatui::style::Color::Yellow,
        ratatui::style::Color::Green,
        ratatui::style::Color::Blue,
        ratatui::style::Color::Red,
    ];
    let name_width = r.categories.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut lines = Vec::new();
    for (i, c) in r.categories.iter().enumerate() {
        let share = if r.window > 0 {
            c.tokens as f64 / r.window as f64
        } else {
            0.0
        };
        let filled = ((share * BAR as f64).round() as usize).min(BAR);
        let style = Style::new().fg(colours[i % colours.len()]);
        lines.push(Line::from(vec![
            Span::raw(format!("  {:<name_width$} ", c.name)),
            Span::styled("█".repeat(filled), style),
            Span::styled("░".repeat(BAR - filled), theme::dim()),
            Span::raw(format!(" {:>7} tokens {:>5.1}%", c.tokens, share * 100.0)),
        ]));
    }
    for (path, tokens) in &r.files {
        lines.push(Line::from(Span::styled(
            format!("    {} · {tokens} tokens", path.display()),
            theme::dim(),
        )));
    }
    lines
}
