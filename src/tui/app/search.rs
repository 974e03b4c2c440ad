//! Ctrl+R: reverse search through the prompt history (this project's, across sessions).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::tui::input::history;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySearch {
    pub query: String,
    /// The matching history entry shown.
    pub hit: Option<usize>,
    /// The prompt as it was, restored when the search is cancelled.
    original: String,
}

impl App {
    pub(super) fn start_search(&mut self) {
        self.search = Some(HistorySearch {
            query: String::new(),
            hit: None,
            original: self.editor.text().to_string(),
        });
        self.completion = None;
    }

    /// The text a search shows now: its match, or the prompt as it was.
    pub fn search_preview(&self) -> Option<(&str, &str)> {
        let s = self.search.as_ref()?;
        let text = match s.hit {
            Some(i) => self.editor.history().get(i).map_or("", String::as_str),
            None => s.original.as_str(),
        };
        Some((s.query.as_str(), text))
    }

    /// A key while searching. Returns false when the key ends the search and should then be
    /// handled as usual (a cursor key, say).
    pub(super) fn search_key(&mut self, key: KeyEvent) -> bool {
        let Some(s) = self.search.as_mut() else {
            return false;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let hist = self.editor.history();
        match key.code {
            KeyCode::Char('r') if ctrl => {
                // The next older match (or the newest, when nothing matched yet).
                if let Some(i) = history::search(hist, &s.query, s.hit) {
                    s.hit = Some(i);
                }
            }
            KeyCode::Char('c' | 'g') if ctrl => self.end_search(false),
            KeyCode::Esc => self.end_search(false),
            KeyCode::Enter => self.end_search(true),
            KeyCode::Backspace => {
                s.query.pop();
                s.hit = history::search(hist, &s.query, None);
            }
            KeyCode::Char(c) if !ctrl => {
                s.query.push(c);
                s.hit = history::search(hist, &s.query, None);
            }
            _ => {
                self.end_search(true);
                return false;
            }
        }
        self.dirty = true;
        true
    }

    /// Ends the search: the match goes into the prompt (`accept`), or the prompt is restored.
    fn end_search(&mut self, accept: bool) {
        let Some(s) = self.search.take() else {
            return;
        };
        let text = match (accept, s.hit) {
            (true, Some(i)) => self.editor.history().get(i).cloned().unwrap_or(s.original),
            _ => s.original,
        };
        self.editor.set_text(&text);
        self.refresh_completion();
    }
}
