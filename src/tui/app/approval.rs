//! The approval dialog: allow once, allow always, or deny with feedback.
//!
//! Type-ahead never answers it. The dialog is *armed* only after [`GRACE`] without input since
//! it opened; until then every key goes to the prompt box, and a key typed into the prompt
//! box disarms it again. Arming happens on the timer branch of the event loop, which (its
//! `select!` being biased towards terminal input) runs only when no key is waiting to be read:
//! whatever was typed before is in the prompt box by then. Once armed, only deliberate keys
//! answer (Enter on a highlighted option, its number, Esc, Tab for feedback); any other typing
//! goes to the prompt box and disarms the dialog. Scrolling keys only scroll.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;

use super::App;
use crate::permissions::{PermissionPrompt, PermissionReply};
use crate::tui::transcript::ToolStatus;

/// Quiet time before a dialog answers keys.
pub const GRACE: Duration = Duration::from_millis(500);

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
    /// Since when no key went to the prompt box (at first: when the dialog opened).
    quiet_since: Instant,
    armed: bool,
    /// First preview line shown.
    pub scroll: usize,
    /// Set by the renderer: preview rows visible and preview lines in all.
    pub view_rows: usize,
    pub total_lines: usize,
    /// The preview drawn at a width (a long file is laid out once, not every frame).
    pub cache: Option<(usize, Vec<Line<'static>>)>,
}

impl Approval {
    pub fn new(prompt: PermissionPrompt, now: Instant) -> Self {
        Approval {
            prompt,
            selected: 0,
            feedback: None,
            quiet_since: now,
            armed: false,
            scroll: 0,
            view_rows: 0,
            total_lines: 0,
            cache: None,
        }
    }

    /// Whether the dialog answers keys now.
    pub fn is_armed(&self) -> bool {
        self.armed
    }

    /// When the dialog will arm, if it is not armed.
    pub fn arms_at(&self) -> Option<Instant> {
        (!self.armed).then_some(self.quiet_since + GRACE)
    }

    fn disarm(&mut self, now: Instant) {
        self.armed = false;
        self.quiet_since = now;
    }

    fn max_scroll(&self) -> usize {
        self.total_lines.saturating_sub(self.view_rows.max(1))
    }

    pub fn scroll_by(&mut self, delta: isize) {
        let target = self.scroll as isize + delta;
        self.scroll = target.clamp(0, self.max_scroll() as isize) as usize;
    }

    fn page(&self) -> isize {
        self.view_rows.saturating_sub(1).max(1) as isize
    }

    fn answer(self, reply: PermissionReply) {
        // The engine may have stopped waiting (the turn was interrupted); nothing to do then.
        let _ = self.prompt.reply.send(reply);
    }
}

impl App {
    pub(super) fn queue_approval(&mut self, prompt: PermissionPrompt) {
        let now = std::time::Instant::now();
        if let Some(t) = self.transcript.tool_mut(&prompt.tool_use_id) {
            t.status = ToolStatus::Waiting;
        }
        self.approval_waits.insert(prompt.tool_use_id.clone(), now);
        if let Some(b) = self.busy.as_mut() {
            b.wait_for_user(now);
        }
        if self.approval.is_none() {
            self.approval = Some(Approval::new(prompt, now));
        } else {
            self.pending_approvals.push_back(prompt);
        }
        self.completion = None;
        self.dirty = true;
    }

    fn next_approval(&mut self, now: Instant) {
        self.approval = self.pending_approvals.pop_front().map(|p| Approval::new(p, now));
        if self.approval.is_none()
            && let Some(b) = self.busy.as_mut()
        {
            b.user_answered(now);
        }
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
        self.approval_waits.clear();
        if let Some(b) = self.busy.as_mut() {
            b.user_answered(Instant::now());
        }
    }

    /// Arms the dialog once the prompt box has been quiet for [`GRACE`] (called on timer wakeups).
    pub(super) fn arm_approval(&mut self, now: Instant) {
        if let Some(a) = self.approval.as_mut()
            && let Some(at) = a.arms_at()
            && now >= at
        {
            a.armed = true;
            self.dirty = true;
        }
    }

    fn reply(&mut self, choice: Choice, now: Instant) {
        let Some(a) = self.approval.take() else {
            return;
        };
        let (reply, label) = match choice {
            Choice::Once => (PermissionReply::AllowOnce, "approved once".to_string()),
            Choice::Always => (
                PermissionReply::AllowAlways,
                match &a.prompt.suggested_rule {
                    Some(rule) => format!("always allowed: {rule}"),
                    None => "allowed for this session".to_string(),
                },
            ),
            Choice::Deny => (
                PermissionReply::Deny {
                    feedback: a.feedback.clone().filter(|f| !f.trim().is_empty()),
                },
                "denied by you".to_string(),
            ),
        };
        let id = a.prompt.tool_use_id.clone();
        let waited = self
            .approval_waits
            .remove(&id)
            .map(|t| now.saturating_duration_since(t).as_millis() as u64)
            .unwrap_or(0);
        if let Some(t) = self.transcript.tool_mut(&id) {
            t.approval = Some(label);
            t.wait_ms += waited;
            if t.status == ToolStatus::Waiting {
                t.status = if choice == Choice::Deny {
                    ToolStatus::Denied
                } else {
                    ToolStatus::Running
                };
                t.run_started = Some(now);
            }
            if choice != Choice::Deny
                && let crate::types::permission::Body::Diff { .. } = &a.prompt.preview.body
            {
                t.approved_preview = Some(a.prompt.preview.body.clone());
            }
        }
        a.answer(reply);
        self.next_approval(now);
    }

    /// Keys that only move the dialog's preview; they work armed or not.
    pub(super) fn approval_scroll_key(&mut self, key: KeyEvent) -> bool {
        let Some(a) = self.approval.as_mut() else {
            return false;
        };
        let shift_or_ctrl = key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::CONTROL);
        match key.code {
            KeyCode::PageUp => a.scroll_by(-a.page()),
            KeyCode::PageDown => a.scroll_by(a.page()),
            KeyCode::Up if shift_or_ctrl => a.scroll_by(-1),
            KeyCode::Down if shift_or_ctrl => a.scroll_by(1),
            KeyCode::Home if a.feedback.is_none() => a.scroll = 0,
            KeyCode::End if a.feedback.is_none() => a.scroll = a.max_scroll(),
            _ => return false,
        }
        self.dirty = true;
        true
    }

    pub(super) fn approval_wheel(&mut self, lines: isize) {
        if let Some(a) = self.approval.as_mut() {
            a.scroll_by(lines);
            self.dirty = true;
        }
    }

    /// A key while the dialog is open. Returns false when the key belongs to the prompt box
    /// (the dialog is not armed, or the key is not one of its own); the dialog is then
    /// disarmed until the prompt box is quiet again.
    pub(super) fn approval_key(&mut self, key: KeyEvent, now: Instant) -> bool {
        let Some(a) = self.approval.as_mut() else {
            return false;
        };
        self.dirty = true;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(fb) = a.feedback.as_mut() {
            // Tab was pressed on an armed dialog: the feedback line has the keys now.
            match key.code {
                KeyCode::Enter => self.reply(Choice::Deny, now),
                KeyCode::Esc => a.feedback = None,
                KeyCode::Backspace => {
                    fb.pop();
                }
                KeyCode::Char('c') if ctrl => a.feedback = None,
                KeyCode::Char(c) if !ctrl => fb.push(c),
                _ => {}
            }
            return true;
        }
        if !a.armed {
            a.disarm(now);
            return false;
        }
        match key.code {
            KeyCode::Up => a.selected = (a.selected + CHOICES.len() - 1) % CHOICES.len(),
            KeyCode::Down => a.selected = (a.selected + 1) % CHOICES.len(),
            KeyCode::Char('1') => self.reply(Choice::Once, now),
            KeyCode::Char('2') => self.reply(Choice::Always, now),
            KeyCode::Char('3') | KeyCode::Esc => self.reply(Choice::Deny, now),
            KeyCode::Char('c') if ctrl => self.reply(Choice::Deny, now),
            KeyCode::Tab => {
                a.selected = 2;
                a.feedback = Some(String::new());
            }
            KeyCode::Enter => {
                let choice = CHOICES[a.selected];
                self.reply(choice, now);
            }
            _ => {
                a.disarm(now);
                return false;
            }
        }
        true
    }

    /// A paste while the dialog is open: into the feedback line when one is being typed,
    /// else into the prompt box (and the dialog waits for quiet again).
    pub(super) fn approval_paste(&mut self, text: &str, now: Instant) -> bool {
        let Some(a) = self.approval.as_mut() else {
            return false;
        };
        self.dirty = true;
        match a.feedback.as_mut() {
            Some(fb) => {
                fb.push_str(&text.replace(['\n', '\r'], " "));
                true
            }
            None => {
                a.disarm(now);
                false
            }
        }
    }
}
