//! Wrapping styled text to a width, and making untrusted text safe to draw.
//!
//! The transcript wraps text itself (instead of letting the paragraph widget do it) so that
//! every cell knows its exact height: that is what makes virtualised scrolling possible.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Break between words; words longer than a line are split.
    Words,
    /// Break at exactly the width, keeping all whitespace (code, command output).
    Chars,
}

/// Wraps `spans` to `width` columns. `first` prefixes the first line, `rest` every other line.
pub fn wrap(
    spans: &[Span<'static>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
    mode: Mode,
) -> Vec<Line<'static>> {
    let mut w = Wrapper::new(width, first, rest);
    for span in spans {
        for c in span.content.chars() {
            w.push_char(c, span.style, mode);
        }
    }
    w.finish()
}

/// One styled line of plain text, wrapped.
pub fn wrap_text(
    text: &str,
    style: Style,
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    wrap(
        &[Span::styled(text.to_string(), style)],
        width,
        first,
        rest,
        Mode::Words,
    )
}

struct Wrapper<'p> {
    width: usize,
    rest: &'p [Span<'static>],
    lines: Vec<Line<'static>>,
    cur: Vec<Span<'static>>,
    cur_width: usize,
    /// Columns taken by the prefix of the current line.
    prefix_width: usize,
    /// Spans of the current line that are its prefix (never merged into).
    prefix_spans: usize,
    /// The word being collected (Words mode), with its styled pieces.
    word: Vec<(char, Style)>,
    word_width: usize,
    /// Whitespace seen since the last word, emitted only if the next word fits on this line.
    space: Vec<(char, Style)>,
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(Span::width).sum()
}

impl<'p> Wrapper<'p> {
    fn new(width: usize, first: &[Span<'static>], rest: &'p [Span<'static>]) -> Self {
        let prefix_width = spans_width(first);
        Wrapper {
            // At least one column of text, whatever the prefixes take.
            width: width.max(prefix_width.max(spans_width(rest)) + 1),
            rest,
            lines: Vec::new(),
            cur: first.to_vec(),
            cur_width: prefix_width,
            prefix_width,
            prefix_spans: first.len(),
            word: Vec::new(),
            word_width: 0,
            space: Vec::new(),
        }
    }

    fn push_char(&mut self, c: char, style: Style, mode: Mode) {
        let c = if c == '\t' { ' ' } else { c };
        if c == '\n' {
            self.flush_word();
            self.break_line();
            return;
        }
        match mode {
            Mode::Chars => self.put(c, style),
            Mode::Words if c == ' ' => {
                self.flush_word();
                self.space.push((c, style));
            }
            Mode::Words => {
                self.word.push((c, style));
                self.word_width += c.width().unwrap_or(0);
            }
        }
    }

    fn flush_word(&mut self) {
        if self.word.is_empty() {
            return;
        }
        let space_width = self.space.len();
        let at_line_start = self.cur_width == self.prefix_width;
        if !at_line_start && self.cur_width + space_width + self.word_width > self.width {
            self.break_line();
        } else if !at_line_start {
            for (c, s) in std::mem::take(&mut self.space) {
                self.put(c, s);
            }
        }
        self.space.clear();
        for (c, s) in std::mem::take(&mut self.word) {
            self.put(c, s);
        }
        self.word_width = 0;
    }

    /// Places one character, breaking the line first when it would not fit.
    fn put(&mut self, c: char, style: Style) {
        let w = c.width().unwrap_or(0);
        if self.cur_width + w > self.width && self.cur_width > self.prefix_width {
            self.break_line();
        }
        self.cur_width += w;
        let mergeable = self.cur.len() > self.prefix_spans;
        match self.cur.last_mut() {
            Some(last) if mergeable && last.style == style => last.content.to_mut().push(c),
            _ => self.cur.push(Span::styled(c.to_string(), style)),
        }
    }

    fn break_line(&mut self) {
        let line = std::mem::replace(&mut self.cur, self.rest.to_vec());
        self.lines.push(Line::from(line));
        self.prefix_width = spans_width(self.rest);
        self.prefix_spans = self.rest.len();
        self.cur_width = self.prefix_width;
        self.space.clear();
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        self.flush_word();
        let line = std::mem::take(&mut self.cur);
        self.lines.push(Line::from(line));
        self.lines
    }
}

/// Makes text from a tool, a file or the model safe to draw: terminal escape sequences are
/// removed, tabs become spaces and other control characters become visible.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            '\x1b' => {
                // CSI: ESC [ params final-byte; OSC: ESC ] ... BEL or ESC \.
                match chars.peek() {
                    Some('[') => {
                        chars.next();
                        for n in chars.by_ref() {
                            if ('@'..='~').contains(&n) {
                                break;
                            }
                        }
                    }
                    Some(']') => {
                        chars.next();
                        while let Some(n) = chars.next() {
                            if n == '\x07' || (n == '\x1b' && chars.peek() == Some(&'\\')) {
                                if n == '\x1b' {
                                    chars.next();
                                }
                                break;
                            }
                        }
                    }
                    _ => {
                        chars.next();
                    }
                }
            }
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_between_words_with_prefixes() {
        let lines = wrap_text(
            "the quick brown fox jumps",
            Style::new(),
            12,
            &[Span::raw("> ")],
            &[Span::raw("  ")],
        );
        assert_eq!(texts(&lines), vec!["> the quick", "  brown fox", "  jumps"]);
    }

    #[test]
    fn splits_words_longer_than_a_line() {
        let lines = wrap_text("abcdefghij xy", Style::new(), 4, &[], &[]);
        assert_eq!(texts(&lines), vec!["abcd", "efgh", "ij", "xy"]);
    }

    #[test]
    fn newlines_break_lines() {
        let lines = wrap_text(
            "one\ntwo three",
            Style::new(),
            80,
            &[Span::raw("- ")],
            &[Span::raw("  ")],
        );
        assert_eq!(texts(&lines), vec!["- one", "  two three"]);
    }

    #[test]
    fn char_mode_keeps_indentation() {
        let lines = wrap(&[Span::raw("    let x = 1;")], 8, &[], &[], Mode::Chars);
        assert_eq!(texts(&lines), vec!["    let ", "x = 1;"]);
    }

    #[test]
    fn wide_characters_count_double() {
        let lines = wrap_text("日本語の文", Style::new(), 6, &[], &[]);
        assert_eq!(texts(&lines), vec!["日本語", "の文"]);
    }

    #[test]
    fn styles_are_kept_per_piece() {
        let bold = Style::new().add_modifier(ratatui::style::Modifier::BOLD);
        let lines = wrap(
            &[Span::raw("a "), Span::styled("bold", bold), Span::raw(" c")],
            80,
            &[],
            &[],
            Mode::Words,
        );
        assert_eq!(lines.len(), 1);
        let bold_span = lines[0].spans.iter().find(|s| s.content == "bold").unwrap();
        assert_eq!(bold_span.style, bold);
    }

    #[test]
    fn sanitize_strips_escapes_and_controls() {
        assert_eq!(sanitize("plain"), "plain");
        assert_eq!(sanitize("\x1b[31mred\x1b[0m ok"), "red ok");
        assert_eq!(sanitize("a\tb\r\n"), "a    b\n");
        assert_eq!(sanitize("\x1b]0;title\x07x"), "x");
        assert_eq!(sanitize("bell\x07"), "bell\u{FFFD}");
    }
}
