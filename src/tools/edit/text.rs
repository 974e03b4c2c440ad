//! Text-file details Edit and Write preserve: the UTF-8 byte-order mark and line endings; and
//! the numbered snippet shown after an edit.

use std::ops::Range;

pub const BOM: char = '\u{feff}';

/// Splits a leading UTF-8 byte-order mark off the text.
pub fn split_bom(text: &str) -> (bool, &str) {
    match text.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, text),
    }
}

/// Whether most line breaks of the text are CRLF.
pub fn mostly_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    let all = text.matches('\n').count();
    crlf > 0 && crlf * 2 >= all
}

/// Rewrites every line break of `text` as CRLF (existing CRLFs are kept, not doubled).
pub fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Lines shown before and after a change.
const CONTEXT_LINES: usize = 4;
/// Longest snippet; a longer change shows its start and end.
const MAX_SNIPPET_LINES: usize = 30;
const MAX_SNIPPET_LINE_CHARS: usize = 300;

/// The lines around `range` (a byte range of `text`), numbered as Read numbers them.
pub fn numbered_snippet(text: &str, range: Range<usize>) -> String {
    let start = range.start.min(text.len());
    let end = range.end.clamp(start, text.len());
    let first_line = text[..start].matches('\n').count();
    let mut last_line = text[..end].matches('\n').count();
    if end > start && text[..end].ends_with('\n') {
        last_line -= 1;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    // A final newline does not start another line.
    let line_count = if text.ends_with('\n') {
        lines.len() - 1
    } else {
        lines.len()
    };
    let from = first_line.saturating_sub(CONTEXT_LINES);
    let to = (last_line + CONTEXT_LINES).min(line_count.saturating_sub(1));
    let shown: Vec<usize> = if to + 1 - from > MAX_SNIPPET_LINES {
        let head = MAX_SNIPPET_LINES * 2 / 3;
        let tail = MAX_SNIPPET_LINES - head;
        (from..from + head).chain(to + 1 - tail..=to).collect()
    } else {
        (from..=to).collect()
    };
    let mut out = String::new();
    let mut previous: Option<usize> = None;
    for i in shown {
        if previous.is_some_and(|p| p + 1 != i) {
            out.push_str("   ...\n");
        }
        previous = Some(i);
        let line = lines.get(i).copied().unwrap_or("").trim_end_matches('\r');
        let line = if line.chars().count() > MAX_SNIPPET_LINE_CHARS {
            let cut: String = line.chars().take(MAX_SNIPPET_LINE_CHARS).collect();
            format!("{cut}…")
        } else {
            line.to_string()
        };
        out.push_str(&format!("{:>6}\t{}\n", i + 1, line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_and_line_endings() {
        assert_eq!(split_bom("\u{feff}x"), (true, "x"));
        assert_eq!(split_bom("x"), (false, "x"));
        assert!(mostly_crlf("a\r\nb\r\nc\n"));
        assert!(!mostly_crlf("a\nb\nc\r\n"));
        assert!(!mostly_crlf("no breaks"));
        assert_eq!(to_crlf("a\nb\r\nc"), "a\r\nb\r\nc");
    }

    #[test]
    fn snippet_numbers_lines_around_the_change() {
        let text: String = (1..=20).map(|i| format!("line {i}\r\n")).collect();
        let at = text.find("line 10").unwrap();
        let s = numbered_snippet(&text, at..at + 7);
        assert!(s.starts_with("     6\tline 6\n"), "{s}");
        assert!(s.contains("    10\tline 10\n"), "{s}");
        assert!(s.ends_with("    14\tline 14\n"), "{s}");
        assert!(!s.contains('\r'));
    }

    #[test]
    fn long_changes_show_both_ends() {
        let text: String = (1..=100).map(|i| format!("l{i}\n")).collect();
        let s = numbered_snippet(&text, 0..text.len());
        assert!(
            s.contains("     1\tl1\n") && s.contains("   100\tl100\n") && s.contains("   ...\n"),
            "{s}"
        );
        assert!(s.lines().count() <= MAX_SNIPPET_LINES + 1);
    }
}
