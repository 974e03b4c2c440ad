//! The prompt editor: multi-line text with a cursor, history and collapsed large pastes.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Pastes longer than this (characters or lines) are shown as a placeholder.
const LARGE_PASTE_CHARS: usize = 800;
const LARGE_PASTE_LINES: usize = 6;

#[derive(Debug, Default)]
pub struct Editor {
    text: String,
    /// Byte offset of the cursor, always on a character boundary.
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing the draft.
    browsing: Option<usize>,
    draft: String,
    pastes: Vec<(String, String)>,
}

/// What a submitted prompt was: as shown (placeholders kept) and as sent (pastes expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    pub shown: String,
    pub text: String,
}

impl Editor {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Prompts of earlier sessions, oldest first.
    pub fn set_history(&mut self, history: Vec<String>) {
        self.history = history;
        self.browsing = None;
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
    }

    /// Replaces `range` of the text (a completion) and puts the cursor after it.
    pub fn replace(&mut self, range: std::ops::Range<usize>, with: &str) {
        if range.start > range.end || range.end > self.text.len() {
            return;
        }
        self.text.replace_range(range.clone(), with);
        self.cursor = range.start + with.len();
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
        self.pastes.clear();
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    pub fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// Inserts pasted text; a large paste becomes a placeholder expanded on submit.
    pub fn paste(&mut self, pasted: &str) {
        let pasted = pasted.replace("\r\n", "\n").replace('\r', "\n");
        let lines = pasted.lines().count();
        if pasted.chars().count() > LARGE_PASTE_CHARS || lines > LARGE_PASTE_LINES {
            let n = self.pastes.len() + 1;
            let label = format!("[Pasted text #{n}, {lines} lines]");
            self.pastes.push((label.clone(), pasted));
            self.insert_str(&label);
        } else {
            self.insert_str(&pasted);
        }
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor].char_indices().last().map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    pub fn backspace(&mut self) {
        if let Some(p) = self.prev_boundary() {
            self.text.replace_range(p..self.cursor, "");
            self.cursor = p;
        }
    }

    pub fn delete(&mut self) {
        if let Some(n) = self.next_boundary() {
            self.text.replace_range(self.cursor..n, "");
        }
    }

    pub fn left(&mut self) {
        if let Some(p) = self.prev_boundary() {
            self.cursor = p;
        }
    }

    pub fn right(&mut self) {
        if let Some(n) = self.next_boundary() {
            self.cursor = n;
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    pub fn word_left(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        self.cursor = trimmed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    }

    pub fn word_right(&mut self) {
        let after = &self.text[self.cursor..];
        let skip_ws = after.len() - after.trim_start().len();
        let rest = &after[skip_ws..];
        let word = rest.find(char::is_whitespace).unwrap_or(rest.len());
        self.cursor += skip_ws + word;
    }

    pub fn delete_word_back(&mut self) {
        let end = self.cursor;
        self.word_left();
        self.text.replace_range(self.cursor..end, "");
    }

    pub fn kill_to_line_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    pub fn kill_to_line_end(&mut self) {
        let end = self.line_end();
        if end == self.cursor && end < self.text.len() {
            // At the end of a line: join with the next one.
            self.text.remove(end);
        } else {
            self.text.replace_range(self.cursor..end, "");
        }
    }

    /// Moves the cursor one line up; false when it is already on the first line.
    pub fn up(&mut self) -> bool {
        let start = self.line_start();
        if start == 0 {
            return false;
        }
        let col = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = advance(&self.text, prev_start, col, start - 1);
        true
    }

    /// Moves the cursor one line down; false when it is already on the last line.
    pub fn down(&mut self) -> bool {
        let end = self.line_end();
        if end == self.text.len() {
            return false;
        }
        let col = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = advance(&self.text, next_start, col, next_end);
        true
    }

    /// Recalls the previous history entry. False when there is none.
    pub fn history_prev(&mut self) -> bool {
        let next = match self.browsing {
            None if self.history.is_empty() => return false,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return false,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        let entry = self.history[next].clone();
        self.text = entry;
        self.cursor = self.text.len();
        true
    }

    /// Goes forward in history, back to the draft at the end. False when not browsing.
    pub fn history_next(&mut self) -> bool {
        let Some(i) = self.browsing else {
            return false;
        };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.text = self.history[i + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
        true
    }

    /// Takes the text for submission, remembering it in history.
    pub fn submit(&mut self) -> Submission {
        let shown = std::mem::take(&mut self.text);
        let mut text = shown.clone();
        for (label, content) in &self.pastes {
            text = text.replacen(label.as_str(), content, 1);
        }
        // History keeps what was sent (a paste's placeholder would mean nothing later).
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        Submission { shown, text }
    }

    /// The text laid out in rows of `width` columns, wrapped between words (a word longer
    /// than a row is split), and the cursor's (row, column). Widths come from grapheme
    /// clusters.
    pub fn layout(&self, width: usize, style: Style) -> (Vec<Line<'static>>, (usize, usize)) {
        let width = width.max(2);
        let mut rows: Vec<Line<'static>> = Vec::new();
        let mut cursor = None;
        let mut line_start = 0;
        for line in self.text.split('\n') {
            let ranges = wrap_ranges(line, width);
            for (k, (start, end)) in ranges.iter().enumerate() {
                let (abs_start, abs_end) = (line_start + start, line_start + end);
                let last = k + 1 == ranges.len();
                // The cursor belongs to the row it is in; at a soft break, to the next row.
                if cursor.is_none()
                    && self.cursor >= abs_start
                    && (self.cursor < abs_end || (last && self.cursor == abs_end))
                {
                    let col = self.text[abs_start..self.cursor].width();
                    cursor = Some((rows.len(), col));
                }
                let shown = self.text[abs_start..abs_end].replace('\t', " ");
                rows.push(Line::from(Span::styled(shown, style)));
            }
            line_start += line.len() + 1;
        }
        let mut cursor = cursor.unwrap_or((rows.len().saturating_sub(1), 0));
        // A full last row: the cursor after it starts a new row.
        if cursor.1 >= width {
            rows.push(Line::from(Span::styled(String::new(), style)));
            cursor = (rows.len() - 1, 0);
        }
        (rows, cursor)
    }
}

/// Byte ranges of the rows `line` takes at `width` columns: breaks after the last space that
/// fits; a word longer than a row is split at the width.
fn wrap_ranges(line: &str, width: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut col = 0;
    // Byte offset just after the last space of the current row, and the columns before it.
    let mut brk: Option<(usize, usize)> = None;
    for (i, g) in line.grapheme_indices(true) {
        let w = if g == "\t" { 1 } else { g.width() };
        if col + w > width && col > 0 {
            match brk.filter(|(at, _)| *at > start && *at <= i) {
                Some((at, before)) if g != " " => {
                    out.push((start, at));
                    start = at;
                    col -= before;
                }
                _ => {
                    out.push((start, i));
                    start = i;
                    col = 0;
                }
            }
            brk = None;
        }
        col += w;
        if g == " " {
            brk = Some((i + g.len(), col));
        }
    }
    out.push((start, line.len()));
    out
}

/// The byte offset `col` characters after `start`, not past `limit`.
fn advance(text: &str, start: usize, col: usize, limit: usize) -> usize {
    text[start..limit]
        .char_indices()
        .nth(col)
        .map_or(limit, |(i, _)| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> Editor {
        let mut e = Editor::default();
        for c in s.chars() {
            if c == '\n' {
                e.insert_char('\n');
            } else {
                e.insert_char(c);
            }
        }
        e
    }

    #[test]
    fn moves_between_lines_keeping_the_column() {
        let mut e = typed("first line\nab\nthird");
        assert!(e.up());
        assert_eq!(e.cursor(), "first line\n".len() + 2);
        assert!(e.up());
        assert_eq!(e.cursor(), 2);
        assert!(!e.up());
        assert!(e.down());
        assert!(e.down());
        assert!(!e.down());
    }

    #[test]
    fn history_walks_back_and_restores_the_draft() {
        let mut e = Editor::default();
        e.set_text("one");
        e.submit();
        e.set_text("two");
        e.submit();
        e.set_text("draft");
        assert!(e.history_prev());
        assert_eq!(e.text(), "two");
        assert!(e.history_prev());
        assert_eq!(e.text(), "one");
        assert!(!e.history_prev());
        assert!(e.history_next());
        assert!(e.history_next());
        assert_eq!(e.text(), "draft");
        assert!(!e.history_next());
    }

    #[test]
    fn large_pastes_collapse_and_expand_on_submit() {
        let mut e = Editor::default();
        e.insert_str("look: ");
        let big = (0..50).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        e.paste(&big);
        assert_eq!(e.text(), "look: [Pasted text #1, 50 lines]");
        let s = e.submit();
        assert_eq!(s.shown, "look: [Pasted text #1, 50 lines]");
        assert_eq!(s.text, format!("look: {big}"));
        e.paste("small\r\npaste");
        assert_eq!(e.text(), "small\npaste");
    }

    #[test]
    fn word_and_line_kills() {
        let mut e = typed("hello big world");
        e.delete_word_back();
        assert_eq!(e.text(), "hello big ");
        e.word_left();
        e.kill_to_line_end();
        assert_eq!(e.text(), "hello ");
        e.kill_to_line_start();
        assert_eq!(e.text(), "");
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let mut e = typed("abcdef\nxy");
        let (rows, cur) = e.layout(4, Style::new());
        let texts: Vec<String> = rows.iter().map(|l| l.to_string()).collect();
        assert_eq!(texts, vec!["abcd", "ef", "xy"]);
        assert_eq!(cur, (2, 2));
        e.home();
        assert_eq!(e.layout(4, Style::new()).1, (2, 0));
        let e = typed("abcd");
        let (rows, cur) = e.layout(4, Style::new());
        assert_eq!(rows.len(), 2);
        assert_eq!(cur, (1, 0));
    }

    #[test]
    fn layout_wraps_between_words_and_measures_clusters() {
        let mut e = typed("the quick brown fox jumps");
        let (rows, cur) = e.layout(10, Style::new());
        let texts: Vec<String> = rows.iter().map(|l| l.to_string()).collect();
        assert_eq!(texts, vec!["the quick ", "brown fox ", "jumps"]);
        assert_eq!(cur, (2, 5));
        // The cursor at the start of a wrapped word is on the word's row.
        e.word_left();
        assert_eq!(e.layout(10, Style::new()).1, (2, 0));
        e.word_left();
        assert_eq!(e.layout(10, Style::new()).1, (1, 6));
        // A family emoji is one cluster two columns wide.
        let e = typed("ab 👨‍👩‍👧 cd");
        let (rows, cur) = e.layout(6, Style::new());
        let texts: Vec<String> = rows.iter().map(|l| l.to_string()).collect();
        assert_eq!(texts, vec!["ab 👨‍👩‍👧 ", "cd"]);
        assert_eq!(cur, (1, 2));
    }

    #[test]
    fn multibyte_editing_is_safe() {
        let mut e = typed("héllo");
        e.left();
        e.left();
        e.left();
        e.left();
        e.backspace();
        assert_eq!(e.text(), "héllo".replacen('h', "", 1));
        e.delete();
        assert_eq!(e.text(), "llo");
    }
}
