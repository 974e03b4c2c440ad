//! The output of a command while it runs: the last lines and how many there are so far.

use ratatui::text::{Line, Span};

use crate::tui::render::theme;
use crate::tui::render::wrap::{self, Mode, sanitize};

/// Lines of a running command's output shown in its cell.
pub const LIVE_LINES: usize = 4;
/// After this long a running command's cell says how to keep long work out of the way.
pub const HINT_AFTER_MS: u64 = 10_000;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveOutput {
    /// Bytes of the output file read so far.
    pub offset: u64,
    /// Complete lines so far.
    pub lines: usize,
    /// The last complete lines.
    pub tail: Vec<String>,
    /// The line being written.
    pub partial: String,
    pub elapsed_ms: u64,
}

impl LiveOutput {
    /// Adds output read from the file.
    pub fn feed(&mut self, text: &str) {
        let mut rest = text;
        while let Some(nl) = rest.find('\n') {
            let mut line = std::mem::take(&mut self.partial);
            line.push_str(&rest[..nl]);
            self.lines += 1;
            self.tail.push(line);
            if self.tail.len() > LIVE_LINES {
                self.tail.remove(0);
            }
            rest = &rest[nl + 1..];
        }
        self.partial.push_str(rest);
        // A line without an end (a progress bar redrawn with \r) shows its latest state.
        if let Some(cr) = self.partial.rfind('\r') {
            self.partial.drain(..=cr);
        }
    }

    /// The lines under a running command's header.
    pub fn render(&self, width: usize) -> Vec<Line<'static>> {
        let first = [Span::styled("  └ ", theme::dim())];
        let rest = [Span::raw("    ")];
        let mut shown: Vec<&str> = self.tail.iter().map(String::as_str).collect();
        if !self.partial.is_empty() {
            shown.push(&self.partial);
        }
        let skip = shown.len().saturating_sub(LIVE_LINES);
        let mut out = Vec::new();
        for (i, l) in shown.iter().skip(skip).enumerate() {
            let p: &[Span<'static>] = if i == 0 { &first } else { &rest };
            let text = sanitize(l).into_owned();
            // One screen line per output line: the tail moves, it does not grow.
            let mut wrapped = wrap::wrap(&[Span::styled(text, theme::dim())], width, p, &rest, Mode::Chars);
            wrapped.truncate(1);
            out.extend(wrapped);
        }
        let count = self.lines + usize::from(!self.partial.is_empty());
        let mut status = format!(
            "{} line{} so far · {}",
            count,
            if count == 1 { "" } else { "s" },
            super::cells::format_duration(self.elapsed_ms)
        );
        if self.elapsed_ms >= HINT_AFTER_MS {
            status.push_str(" · Esc stops it; servers and watchers can run in the background (ask keel)");
        }
        out.extend(wrap::wrap_text(&status, theme::dim(), width, &rest, &rest));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_counts_them_all() {
        let mut l = LiveOutput::default();
        l.feed("one\ntwo\nthr");
        l.feed("ee\nfour\nfive\nsix\nprogress 10%\rprogress 20%");
        assert_eq!(l.lines, 6);
        assert_eq!(l.tail, vec!["three", "four", "five", "six"]);
        assert_eq!(l.partial, "progress 20%");
        l.elapsed_ms = 12_000;
        let text: Vec<String> = l.render(100).iter().map(|x| x.to_string()).collect();
        assert_eq!(text[0], "  └ four");
        assert_eq!(text[3], "    progress 20%");
        assert!(
            text[4].starts_with("    7 lines so far · 12.0 s · Esc stops it"),
            "{text:?}"
        );
    }
}
