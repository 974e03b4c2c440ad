//! The approval modal: allow once, allow always, or deny with feedback.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::permissions::{PermissionPrompt, PermissionReply};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Once,
    Always,
    Deny,
}

pub const CHOICES: [Choice; 3] = [Choice::Once, Choice::Always, Choice::Deny];

#[derive(Debug)]
pub struct Approval {
    pub prompt: PermissionPrompt,
    pub selected: usize,
    /// Some while the user types feedback for a denial.
    pub feedback: Option<String>,
}

impl Approval {
    pub fn new(prompt: PermissionPrompt) -> Self {
        Approval {
            prompt,
            selected: 0,
            feedback: None,
        }
    }

    fn answer(self, reply: PermissionReply) {
        // The engine may have stopped waiting (the turn was interrupted); nothing to do then.
        let _ = self.prompt.reply.send(reply);
    }
}

impl App {
    pub(super) fn queue_approval(&mut self, prompt: PermissionPrompt) {
        if self.approval.is_none() {
            self.approval = Some(Approval::new(prompt));
        } else {
            self.pending_approvals.push_back(prompt);
        }
        self.dirty = true;
    }

    fn next_approval(&mut self) {
        self.approval = self.pending_approvals.pop_front().map(Approval::new);
        self.dirty = true;
    }

    /// At exit: open requests are dropped (denials) and queued prompts discarded.
    pub fn drop_pending(&mut self) {
        self.drop_approvals();
        self.queue.clear();
    }

    /// Drops open requests (the turn ended); a dropped reply counts as a denial.
    pub(super) fn drop_approvals(&mut self) {
        self.approval = None;
        self.pending_approvals.clear();
    }

    fn reply(&mut self, choice: Choice) {
        let Some(a) = self.approval.take() else {
            return;
        };
        let reply = match choice {
            Choice::Once => PermissionReply::AllowOnce,
            Choice::Always => PermissionReply::AllowAlways,
            Choice::Deny => PermissionReply::Deny {
                feedback: a.feedback.clone().filter(|f| !f.trim().is_empty()),
            },
        };
        a.answer(reply);
        self.next_approval();
    }

    pub(super) fn approval_key(&mut self, key: KeyEvent) {
        let Some(a) = self.approval.as_mut() else {
            return;
        };
        self.dirty = true;
        if let Some(fb) = a.feedback.as_mut() {
            match key.code {
                KeyCode::Enter => self.reply(Choice::Deny),
                KeyCode::Esc => a.feedback = None,
                KeyCode::Backspace => {
                    fb.pop();
                }
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => a.feedback = None,
                KeyCode::Char(c) => fb.push(c),
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => a.selected = (a.selected + CHOICES.len() - 1) % CHOICES.len(),
            KeyCode::Down | KeyCode::Char('j') => a.selected = (a.selected + 1) % CHOICES.len(),
            KeyCode::Char('1') | KeyCode::Char('y') => self.reply(Choice::Once),
            KeyCode::Char('2') | KeyCode::Char('a') => self.reply(Choice::Always),
            KeyCode::Char('3') | KeyCode::Char('n') | KeyCode::Esc => self.reply(Choice::Deny),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => self.reply(Choice::Deny),
            KeyCode::Tab => {
                a.selected = 2;
                a.feedback = Some(String::new());
            }
            KeyCode::Enter => {
                let choice = CHOICES[a.selected];
                self.reply(choice);
            }
            _ => {}
        }
    }

    pub(super) fn approval_paste(&mut self, text: &str) {
        if let Some(a) = self.approval.as_mut() {
            let fb = a.feedback.get_or_insert_with(String::new);
            fb.push_str(&text.replace(['\n', '\r'], " "));
            a.selected = 2;
            self.dirty = true;
        }
    }
}
