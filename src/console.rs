//! What keel writes for a person to read on stderr and stdout. Text from files, commands,
//! models, servers and repositories can carry control sequences a terminal obeys — OSC 52
//! writes the clipboard, OSC 0 the title, OSC 8 makes links, CSI clears the screen or moves
//! the cursor, a lone carriage return overwrites the line — so such text is shown escaped:
//!
//! - C0 controls other than newline and tab, and DEL: `\xNN` (ESC is `\x1b`, a lone CR `\x0d`);
//!   a CR directly before a newline is kept, since `\r\n` cannot overwrite anything;
//! - C1 controls (U+0080–U+009F, which some terminals obey as ESC sequences: U+009B is CSI):
//!   `\u{NN}`;
//! - bidirectional formatting characters (U+202A–U+202E, U+2066–U+2069), which reorder what
//!   is shown: `\u{NNNN}`.
//!
//! Backslashes are not doubled: the escaped form is for reading, not for decoding.
//! stderr is always escaped; stdout only when it is a terminal, so `keel -p … > file` keeps
//! the model's answer byte for byte. JSON output stays JSON: serde escapes C0 controls, and
//! [`json_safe`] writes the rest of the set above as `\uNNNN`, the same value to a decoder.
//! Every line keel prints for a person goes through [`err_line!`] or [`out_line!`]
//! (clippy's `disallowed-macros` keeps `eprintln!` and `println!` out).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

/// Whether `c` is shown escaped (CR aside: it depends on what follows).
fn escaped(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character but newline and tab shown escaped (see the module
/// comment for the forms); text without any is returned as it is.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    let needs = |(i, c): (usize, char)| (escaped(c) && c != '\r') || (c == '\r' && !text[i + 1..].starts_with('\n'));
    if !text.char_indices().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => out.push('\r'),
            c if c.is_ascii() && escaped(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if escaped(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` as it goes to a stream: escaped for a terminal, byte for byte otherwise.
pub fn for_stream(text: &str, is_terminal: bool) -> Cow<'_, str> {
    if is_terminal {
        terminal_safe(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Serialized JSON with the characters serde leaves raw but a terminal may obey (DEL, C1
/// controls, bidirectional formatting) written as `\uNNNN`. They can only stand inside
/// strings, where the escape means the same character.
pub fn json_safe(json: String) -> String {
    if !json.chars().any(escaped) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether stdout is a terminal (asked once).
pub fn stdout_is_terminal() -> bool {
    static TTY: OnceLock<bool> = OnceLock::new();
    *TTY.get_or_init(|| std::io::stdout().is_terminal())
}

/// Writes one line to stderr, escaped; a closed stderr (a hung-up terminal) is not a panic.
pub fn write_err_line(text: &str) {
    let mut line = terminal_safe(text).into_owned();
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Writes `text` to stdout, escaped when stdout is a terminal; a closed stdout (`keel doctor
/// | head -1`) ends the output quietly.
pub fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(for_stream(text, stdout_is_terminal()).as_bytes())
        .and_then(|_| out.flush());
}

/// `eprintln!` for keel's messages: the line escaped, a closed stderr no panic.
macro_rules! err_line {
    ($($t:tt)*) => {
        $crate::console::write_err_line(&format!($($t)*))
    };
}
pub(crate) use err_line;

/// `println!` for text a person reads: escaped when stdout is a terminal, a closed stdout no
/// panic.
macro_rules! out_line {
    () => {
        $crate::console::write_out("\n")
    };
    ($($t:tt)*) => {
        $crate::console::write_out(&format!("{}\n", format_args!($($t)*)))
    };
}
pub(crate) use out_line;

/// A writer for diagnostics on stderr (the `--debug` copy): what one event writes is kept and
/// written escaped, in one piece, when the writer is dropped.
#[derive(Default)]
pub struct SafeStderr {
    buf: Vec<u8>,
}

impl Write for SafeStderr {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for SafeStderr {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buf);
        let _ = std::io::stderr().lock().write_all(terminal_safe(&text).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_newlines_and_tabs_pass_unchanged() {
        for s in [
            "",
            "plain",
            "a\tb\nc\n",
            "ünïcödé → ✓",
            "windows\r\nlines\r\n",
            "back\\slash",
        ] {
            assert!(matches!(terminal_safe(s), Cow::Borrowed(_)), "{s:?}");
        }
    }

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        // OSC 52 (clipboard), OSC 0 (title), OSC 8 (link), clear screen, cursor move.
        assert_eq!(
            terminal_safe("\x1b]52;c;ZWNobyBoaQ==\x07"),
            "\\x1b]52;c;ZWNobyBoaQ==\\x07"
        );
        assert_eq!(terminal_safe("\x1b]0;owned\x1b\\"), "\\x1b]0;owned\\x1b\\");
        assert_eq!(
            terminal_safe("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\"
        );
        assert_eq!(terminal_safe("\x1b[2J\x1b[H\x1b[10;5f"), "\\x1b[2J\\x1b[H\\x1b[10;5f");
        assert_eq!(terminal_safe("lone \x1b"), "lone \\x1b");
        assert_eq!(
            terminal_safe("nul\0 bell\x07 bs\x08 del\x7f"),
            "nul\\x00 bell\\x07 bs\\x08 del\\x7f"
        );
        assert_eq!(terminal_safe("vt\x0b ff\x0c"), "vt\\x0b ff\\x0c");
    }

    #[test]
    fn c1_controls_and_bidirectional_overrides_are_escaped() {
        assert_eq!(terminal_safe("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(terminal_safe("\u{9d}0;t\u{9c}"), "\\u{9d}0;t\\u{9c}");
        assert_eq!(terminal_safe("a\u{80}b\u{9f}"), "a\\u{80}b\\u{9f}");
        assert_eq!(terminal_safe("file\u{202e}txt.exe"), "file\\u{202e}txt.exe");
        assert_eq!(terminal_safe("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        // The characters right after the C1 block are ordinary text.
        assert_eq!(terminal_safe("\u{a0}é"), "\u{a0}é");
    }

    #[test]
    fn a_carriage_return_is_kept_only_before_a_newline() {
        assert_eq!(terminal_safe("ok\r\n"), "ok\r\n");
        assert_eq!(terminal_safe("safe\rEVIL"), "safe\\x0dEVIL");
        assert_eq!(terminal_safe("end\r"), "end\\x0d");
        assert_eq!(terminal_safe("\r\r\n"), "\\x0d\r\n");
    }

    #[test]
    fn a_stream_is_escaped_only_when_it_is_a_terminal() {
        let answer = "colour \x1b[31mred\x1b[0m";
        assert_eq!(for_stream(answer, false), answer);
        assert_eq!(for_stream(answer, true), "colour \\x1b[31mred\\x1b[0m");
    }

    #[test]
    fn json_keeps_its_value_and_loses_raw_controls() {
        let value = serde_json::json!({"text": "a\u{1b}[2J b\u{9b}c \u{7f} \u{202e}", "n": 1});
        let raw = value.to_string();
        assert!(!raw.contains('\u{1b}'), "serde escapes C0 itself: {raw}");
        assert!(
            raw.contains('\u{9b}') && raw.contains('\u{7f}'),
            "serde leaves these raw: {raw}"
        );
        let safe = json_safe(raw);
        assert!(!safe.chars().any(|c| c.is_control() || escaped(c)), "{safe}");
        assert!(safe.contains("\\u009b") && safe.contains("\\u007f") && safe.contains("\\u202e"));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }
}
