//! Keyboard, mouse and paste input.

use std::time::Instant;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind};

use super::{App, ExitReason};
use crate::tui::transcript::CellKind;

/// Lines one wheel step scrolls.
const WHEEL_LINES: usize = 3;

impl App {
    pub fn on_terminal_event(&mut self, event: Event, now: Instant) {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key, now),
            Event::Paste(text) => self.on_paste(&text, now),
            Event::Mouse(m) => match m.kind {
                MouseEventKind::ScrollUp if self.approval.is_some() => self.approval_wheel(-(WHEEL_LINES as isize)),
                MouseEventKind::ScrollDown if self.approval.is_some() => self.approval_wheel(WHEEL_LINES as isize),
                MouseEventKind::ScrollUp => {
                    self.transcript.scroll_up(WHEEL_LINES);
                    self.dirty = true;
                }
                MouseEventKind::ScrollDown => {
                    self.transcript.scroll_down(WHEEL_LINES);
                    self.dirty = true;
                }
                MouseEventKind::Down(MouseButton::Left) => self.toggle_cell_at(m.row),
                _ => {}
            },
            Event::Resize(_, _) => self.dirty = true,
            _ => {}
        }
    }

    pub fn on_paste(&mut self, text: &str, now: Instant) {
        if self.approval_paste(text, now) {
            return;
        }
        if let Some(p) = self.picker.as_mut() {
            return p.type_text(text);
        }
        self.editor.paste(text);
        self.exit_armed = None;
        self.refresh_completion();
    }

    /// A click on a tool or shell cell expands or collapses its output.
    fn toggle_cell_at(&mut self, row: u16) {
        let Some(i) = self.transcript.cell_at(row) else {
            return;
        };
        match self.transcript.get(i) {
            Some(CellKind::Tool(_)) | Some(CellKind::Shell(_)) => {}
            _ => return,
        }
        match self.transcript.get_mut(i) {
            Some(CellKind::Tool(t)) => t.expanded = !t.expanded,
            Some(CellKind::Shell(s)) => s.expanded = !s.expanded,
            _ => {}
        }
        self.dirty = true;
    }

    pub fn on_key(&mut self, key: KeyEvent, now: Instant) {
        self.dirty = true;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        // The dialogs take only their own keys, and only once armed; the rest is typing.
        if self.forms.key(key, now) || self.approval_scroll_key(key) || self.approval_key(key, now) {
            return;
        }
        if self.picker.is_some() {
            return self.picker_key(key);
        }
        if self.search.is_some() && self.search_key(key) {
            return;
        }
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.exit_armed = None;
        }
        let rewind_armed = self.rewind_armed.take();
        // Keys that work whatever the editor holds.
        match key.code {
            KeyCode::Char('c') if ctrl => return self.ctrl_c(now),
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.exit = Some(ExitReason::User);
                } else {
                    self.editor.delete();
                    self.refresh_completion();
                }
                return;
            }
            KeyCode::Char('t') if ctrl => {
                self.show_todos = !self.show_todos;
                return;
            }
            KeyCode::Char('o') if ctrl => {
                self.transcript.expand_all = !self.transcript.expand_all;
                return;
            }
            KeyCode::Char('l') if ctrl => {
                self.full_redraw = true;
                return;
            }
            KeyCode::Char('r') if ctrl => return self.start_search(),
            KeyCode::Char('g') if ctrl => {
                self.effects
                    .push(super::Effect::EditPrompt(self.editor.text().to_string()));
                return;
            }
            KeyCode::BackTab => return self.cycle_mode(),
            KeyCode::Tab if shift => return self.cycle_mode(),
            KeyCode::PageUp => {
                let page = self.transcript.page();
                self.transcript.scroll_up(page);
                return;
            }
            KeyCode::PageDown => {
                let page = self.transcript.page();
                self.transcript.scroll_down(page);
                return;
            }
            KeyCode::End if ctrl => return self.transcript.scroll_to_bottom(),
            KeyCode::Home if ctrl => {
                self.transcript.scroll_up(usize::MAX / 2);
                return;
            }
            KeyCode::Esc => {
                if self.completion.is_some() {
                    self.dismiss_completion();
                } else if self.busy.is_some() {
                    self.interrupt();
                } else if self.editor.is_empty() {
                    // Esc Esc on an empty prompt: the points to rewind to.
                    match rewind_armed {
                        Some(t) if now.duration_since(t) < super::EXIT_CONFIRM => self.submit_text("/rewind"),
                        _ => self.rewind_armed = Some(now),
                    }
                }
                return;
            }
            _ => {}
        }
        // The completion menu takes navigation keys while it is open.
        if self.completion.is_some() {
            match key.code {
                KeyCode::Up => return self.completion_move(false),
                KeyCode::Down => return self.completion_move(true),
                KeyCode::Tab => {
                    self.accept_completion();
                    return;
                }
                KeyCode::Enter if !alt && !shift => {
                    let was_command = self
                        .completion
                        .as_ref()
                        .is_some_and(|c| c.kind == crate::tui::input::completion::Kind::Command);
                    self.accept_completion();
                    if was_command {
                        self.submit();
                    }
                    return;
                }
                _ => {}
            }
        }
        match key.code {
            KeyCode::Enter if shift || alt => self.editor.insert_char('\n'),
            KeyCode::Char('j') if ctrl => self.editor.insert_char('\n'),
            KeyCode::Enter => {
                // A trailing backslash continues the prompt on a new line.
                if self.editor.text()[..self.editor.cursor()].ends_with('\\') {
                    self.editor.backspace();
                    self.editor.insert_char('\n');
                } else {
                    self.submit();
                    return;
                }
            }
            KeyCode::Up => {
                if self.editor.is_empty() && !self.queue.is_empty() {
                    // The last queued prompt comes back to be edited (Enter queues it again).
                    if let Some(q) = self.queue.pop_back() {
                        self.editor.set_text(&q.submission.text);
                    }
                } else if !self.editor.up() {
                    self.editor.history_prev();
                }
            }
            KeyCode::Down => {
                if !self.editor.down() {
                    self.editor.history_next();
                }
            }
            KeyCode::Left if ctrl || alt => self.editor.word_left(),
            KeyCode::Right if ctrl || alt => self.editor.word_right(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Char('b') if alt => self.editor.word_left(),
            KeyCode::Char('f') if alt => self.editor.word_right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('b') if ctrl => self.editor.left(),
            KeyCode::Char('f') if ctrl => self.editor.right(),
            KeyCode::Char('u') if ctrl => self.editor.kill_to_line_start(),
            KeyCode::Char('k') if ctrl => self.editor.kill_to_line_end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word_back(),
            KeyCode::Char('h') if ctrl => self.editor.backspace(),
            KeyCode::Backspace if alt || ctrl => self.editor.delete_word_back(),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Char(c) if !ctrl => self.editor.insert_char(c),
            _ => return,
        }
        self.refresh_completion();
    }

    fn completion_move(&mut self, down: bool) {
        if let Some(c) = self.completion.as_mut() {
            if down {
                c.next();
            } else {
                c.prev();
            }
        }
    }

    /// Ctrl+C: clear the prompt; else interrupt the work; else, pressed twice, exit.
    fn ctrl_c(&mut self, now: Instant) {
        if !self.editor.is_empty() {
            self.editor.clear();
            self.completion = None;
            return;
        }
        if self.busy.is_some() {
            self.interrupt();
            self.exit_armed = Some(now);
            return;
        }
        match self.exit_armed {
            Some(t) if now.duration_since(t) < super::EXIT_CONFIRM => self.exit = Some(ExitReason::User),
            _ => self.exit_armed = Some(now),
        }
    }
}
