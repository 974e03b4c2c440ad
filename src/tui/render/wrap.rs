//! Wrapping styled text to a width, and making untrusted text safe to draw.
//!
//! The transcript wraps text itself (instead of letting the paragraph widget do it) so that
//! every cell knows its exact height: that is what makes virtualised scrolling possible.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Break between words; words longer than a line are split.
    Words,
    /// Break at exactly the width, keeping all whitespace (code, command output).
    Chars,
}

/// Wraps `spans` to `width` columns. `first` prefixes the first line, `rest` every other line.
/// Widths come from grapheme clusters (a flag or a ZWJ emoji is one wide cluster). In `Words`
/// mode a line's leading whitespace is kept, and its wrapped continuation lines are indented
/// as far (tracebacks and compiler output keep their shape).
pub fn wrap(
    spans: &[Span<'static>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
    mode: Mode,
) -> Vec<Line<'static>> {
    let mut w = Wrapper::new(width, first, rest, mode);
    for span in spans {
        for g in span.content.graphemes(true) {
            w.push(g, span.style);
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

/// The display width of a grapheme cluster.
pub fn cluster_width(g: &str) -> usize {
    g.width()
}

struct Wrapper<'p> {
    width: usize,
    mode: Mode,
    rest: &'p [Span<'static>],
    lines: Vec<Line<'static>>,
    cur: Vec<Span<'static>>,
    cur_width: usize,
    /// Columns taken by the prefix of the current line.
    prefix_width: usize,
    /// Spans of the current line that are its prefix (never merged into).
    prefix_spans: usize,
    /// The word being collected (Words mode), with its styled pieces.
    word: Vec<(String, Style)>,
    word_width: usize,
    /// Whitespace seen since the last word, emitted only if the next word fits on this line.
    space: Vec<(String, Style)>,
    /// Nothing but spaces so far on this logical line (Words mode keeps those).
    leading: bool,
    /// The logical line's leading whitespace, repeated on its continuation lines.
    hang: usize,
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(Span::width).sum()
}

impl<'p> Wrapper<'p> {
    fn new(width: usize, first: &[Span<'static>], rest: &'p [Span<'static>], mode: Mode) -> Self {
        let prefix_width = spans_width(first);
        Wrapper {
            // At least one column of text, whatever the prefixes take.
            width: width.max(prefix_width.max(spans_width(rest)) + 1),
            mode,
            rest,
            lines: Vec::new(),
            cur: first.to_vec(),
            cur_width: prefix_width,
            prefix_width,
            prefix_spans: first.len(),
            word: Vec::new(),
            word_width: 0,
            space: Vec::new(),
            leading: true,
            hang: 0,
        }
    }

    fn push(&mut self, g: &str, style: Style) {
        if g == "\n" || g == "\r\n" {
            self.flush_word();
            self.break_line(false);
            self.leading = true;
            self.hang = 0;
            return;
        }
        let g = if g == "\t" { " " } else { g };
        match self.mode {
            Mode::Chars => self.put(g, style),
            Mode::Words if g == " " && self.leading => {
                // Indentation is content: kept, and repeated on continuation lines.
                self.put(g, style);
                self.hang += 1;
            }
            Mode::Words if g == " " => {
                self.flush_word();
                self.space.push((g.to_string(), style));
            }
            Mode::Words => {
                self.leading = false;
                self.word.push((g.to_string(), style));
                self.word_width += cluster_width(g);
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
            self.break_line(true);
        } else if !at_line_start {
            for (g, s) in std::mem::take(&mut self.space) {
                self.put(&g, s);
            }
        }
        self.space.clear();
        for (g, s) in std::mem::take(&mut self.word) {
            self.put(&g, s);
        }
        self.word_width = 0;
    }

    /// Places one cluster, breaking the line first when it would not fit.
    fn put(&mut self, g: &str, style: Style) {
        let w = cluster_width(g);
        if self.cur_width + w > self.width && self.cur_width > self.prefix_width {
            self.break_line(true);
        }
        self.cur_width += w;
        let mergeable = self.cur.len() > self.prefix_spans;
        match self.cur.last_mut() {
            Some(last) if mergeable && last.style == style => last.content.to_mut().push_str(g),
            _ => self.cur.push(Span::styled(g.to_string(), style)),
        }
    }

    /// Ends the current line; `soft` when the text wraps (the logical line goes on).
    fn break_line(&mut self, soft: bool) {
        let line = std::mem::replace(&mut self.cur, self.rest.to_vec());
        self.lines.push(Line::from(line));
        self.prefix_width = spans_width(self.rest);
        self.prefix_spans = self.rest.len();
        // A wrapped line of indented text continues at its indentation (at most half the room).
        let room = self.width.saturating_sub(self.prefix_width);
        let hang = if soft && self.mode == Mode::Words {
            self.hang.min(room / 2)
        } else {
            0
        };
        if hang > 0 {
            self.cur.push(Span::raw(" ".repeat(hang)));
            self.prefix_spans += 1;
            self.prefix_width += hang;
        }
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
    fn leading_whitespace_is_kept_and_continuations_hang_at_it() {
        let text = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    raise ValueError(\"the total went negative\")";
        let lines = wrap_text(text, Style::new(), 30, &[], &[]);
        assert_eq!(
            texts(&lines),
            vec![
                "Traceback (most recent call",
                "last):",
                "  File \"app.py\", line 3, in",
                "  <module>",
                "    raise ValueError(\"the",
                "    total went negative\")",
            ]
        );
    }

    #[test]
    fn clusters_are_measured_whole() {
        // A family (ZWJ sequence) and a flag are two columns each, not six and two.
        let lines = wrap_text("👨‍👩‍👧🇫🇷 ab", Style::new(), 5, &[], &[]);
        assert_eq!(texts(&lines), vec!["👨‍👩‍👧🇫🇷", "ab"]);
        let lines = wrap(&[Span::raw("a👨‍👩‍👧bcd")], 4, &[], &[], Mode::Chars);
        assert_eq!(texts(&lines), vec!["a👨‍👩‍👧b", "cd"]);
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
