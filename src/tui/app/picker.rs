//! Pickers: a list to choose from, filtered as you type (`/resume`, `/model`, `/rewind` and
//! Esc Esc).

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio_util::sync::CancellationToken;

use super::{Activity, App};
use crate::checkpoint::Point;
use crate::tui::sessions::SessionSummary;
use crate::tui::worker::Job;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickItem {
    pub label: String,
    /// Shown dimmed after the label.
    pub detail: String,
}

/// What choosing an item does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerKind {
    /// Resume the session at this path.
    Resume(Vec<PathBuf>),
    /// Switch to the model of this name; typed text not in the list is a model name too.
    Model(Vec<String>),
    /// Rewind: first the point, then what to restore.
    RewindPoint(Vec<u32>),
    RewindWhat {
        point: u32,
        prompt: String,
    },
}

#[derive(Debug)]
pub struct Picker {
    pub title: String,
    pub items: Vec<PickItem>,
    pub kind: PickerKind,
    /// Typed text the list is filtered by.
    pub query: String,
    /// Indices of the items that match the query.
    pub shown: Vec<usize>,
    /// Position in `shown`.
    pub selected: usize,
    pub hint: String,
}

impl Picker {
    pub fn new(title: &str, items: Vec<PickItem>, kind: PickerKind, hint: &str) -> Picker {
        let shown = (0..items.len()).collect();
        Picker {
            title: title.to_string(),
            items,
            kind,
            query: String::new(),
            shown,
            selected: 0,
            hint: hint.to_string(),
        }
    }

    /// Keeps the items whose label or detail contain every word of the query (any case).
    fn filter(&mut self) {
        let words: Vec<String> = self.query.split_whitespace().map(str::to_lowercase).collect();
        self.shown = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, it)| {
                let hay = format!("{} {}", it.label, it.detail).to_lowercase();
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect();
        self.selected = 0;
    }

    /// Pasted text goes into the query.
    pub fn type_text(&mut self, text: &str) {
        self.query.push_str(&text.replace(['\n', '\r'], " "));
        self.filter();
    }

    /// The highlighted item's index in `items`.
    pub fn current(&self) -> Option<usize> {
        self.shown.get(self.selected).copied()
    }

    fn step(&mut self, by: isize) {
        if self.shown.is_empty() {
            return;
        }
        let last = self.shown.len() as isize - 1;
        self.selected = (self.selected as isize + by).clamp(0, last) as usize;
    }
}

/// Items for the sessions of `/resume`: when, how long, which branch, the first prompt.
pub fn session_items(sessions: &[SessionSummary]) -> Vec<PickItem> {
    sessions
        .iter()
        .map(|s| {
            let when: chrono::DateTime<chrono::Local> = s.modified.into();
            let mut detail = format!("{} · {} messages", when.format("%Y-%m-%d %H:%M"), s.messages);
            if let Some(b) = &s.branch {
                detail.push_str(&format!(" · {b}"));
            }
            PickItem {
                label: s.first_prompt.clone(),
                detail,
            }
        })
        .collect()
}

/// Items for the points of `/rewind`, newest first.
pub fn point_items(points: &[Point]) -> Vec<PickItem> {
    points
        .iter()
        .rev()
        .map(|p| PickItem {
            label: match p.kind {
                crate::checkpoint::PointKind::Rewind => format!("{} (undo that rewind)", p.text),
                crate::checkpoint::PointKind::Prompt => p.text.clone(),
            },
            detail: format!(
                "point {} · {} file{} changed since{}",
                p.point,
                p.files_changed,
                if p.files_changed == 1 { "" } else { "s" },
                match p.not_restorable {
                    0 => String::new(),
                    n => format!(" ({n} not restorable: no earlier content kept)"),
                }
            ),
        })
        .collect()
}

const REWIND_WHAT: [(&str, &str); 3] = [
    ("Code and conversation", "both"),
    ("Conversation only", "conversation"),
    ("Code only", "code"),
];

impl App {
    pub(super) fn open_picker(&mut self, picker: Picker) {
        self.picker = Some(picker);
        self.completion = None;
        self.dirty = true;
    }

    pub(super) fn picker_key(&mut self, key: KeyEvent) {
        let Some(p) = self.picker.as_mut() else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up => p.step(-1),
            KeyCode::Down => p.step(1),
            KeyCode::PageUp => p.step(-10),
            KeyCode::PageDown => p.step(10),
            KeyCode::Enter => self.picker_choose(),
            KeyCode::Esc if !p.query.is_empty() => {
                p.query.clear();
                p.filter();
            }
            KeyCode::Esc => self.picker = None,
            KeyCode::Char('c') if ctrl => self.picker = None,
            KeyCode::Backspace => {
                p.query.pop();
                p.filter();
            }
            KeyCode::Char(c) if !ctrl => {
                p.query.push(c);
                p.filter();
            }
            _ => {}
        }
    }

    pub fn picker_choose(&mut self) {
        let Some(p) = self.picker.take() else {
            return;
        };
        let chosen = p.current();
        self.dirty = true;
        match (p.kind, chosen) {
            (PickerKind::Resume(paths), Some(i)) => {
                if let Some(path) = paths.get(i) {
                    self.begin(Activity::Command("/resume".into()), CancellationToken::new());
                    self.effects
                        .push(super::Effect::Job(Job::Resume { path: path.clone() }));
                }
            }
            (PickerKind::Model(names), chosen) => {
                let name = match chosen {
                    Some(i) => names.get(i).cloned(),
                    // A name typed that is not in the list.
                    None => Some(p.query.trim().to_string()).filter(|q| !q.is_empty()),
                };
                if let Some(model) = name {
                    self.dispatch(crate::tui::input::editor::Submission {
                        shown: format!("/model {model}"),
                        text: format!("/model {model}"),
                    });
                }
            }
            (PickerKind::RewindPoint(points), Some(i)) => {
                if let Some(&point) = points.get(i) {
                    let prompt = p.items.get(i).map(|it| it.label.clone()).unwrap_or_default();
                    let items = REWIND_WHAT
                        .iter()
                        .map(|(label, _)| PickItem {
                            label: label.to_string(),
                            detail: String::new(),
                        })
                        .collect();
                    self.open_picker(Picker::new(
                        &format!(" Rewind to before point {point} ",),
                        items,
                        PickerKind::RewindWhat { point, prompt },
                        "Enter to rewind · Esc to cancel",
                    ));
                }
            }
            (PickerKind::RewindWhat { point, .. }, Some(i)) => {
                let what = REWIND_WHAT.get(i).map_or("both", |(_, w)| w);
                self.dispatch(crate::tui::input::editor::Submission {
                    shown: format!("/rewind {point} {what}"),
                    text: format!("/rewind {point} {what}"),
                });
            }
            _ => {}
        }
    }
}
