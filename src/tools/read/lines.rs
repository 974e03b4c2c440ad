//! The streaming line selector behind Read: one pass over the file in fixed-size chunks that
//! keeps only the requested lines, counts the rest, and hashes everything for the read-file
//! state. Memory stays bounded by the selection (and a small snapshot kept for conflict diffs),
//! whatever the size of the file.

use std::io::Read;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::tools::file_state::SNAPSHOT_LIMIT;

const CHUNK: usize = 64 * 1024;
const BOM: &[u8] = b"\xEF\xBB\xBF";
/// A NUL byte in the first 8 KiB marks a binary file (as git and ripgrep decide).
pub const SNIFF_BYTES: u64 = 8192;

/// Which lines to return, and the limits.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// 1-based first line.
    pub start: usize,
    pub limit: usize,
    /// Characters per line before it is cut.
    pub max_line_chars: usize,
    /// Bytes of formatted output before the read is refused as too large.
    pub max_output: usize,
    /// Bytes read at most; a file that turns out longer is refused (it grew, or never ends).
    pub max_bytes: u64,
}

/// What one pass found.
#[derive(Debug)]
pub struct Scan {
    /// The selected lines as `<number>\t<text>\n`.
    pub numbered: String,
    /// The selected lines' text (each cut as shown), one per line.
    pub plain: String,
    /// Lines in the file (a last line without a newline counts).
    pub total: usize,
    /// Last line returned (`start - 1` when none).
    pub end: usize,
    pub cut_lines: usize,
    /// The selection passed `max_output`; nothing is returned.
    pub over_budget: bool,
    /// The file has no text (no bytes, or only a byte-order mark).
    pub empty: bool,
    pub hash: [u8; 32],
    pub size: u64,
    /// The whole content when it is small UTF-8 text.
    pub snapshot: Option<Arc<str>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("binary content")]
    Binary,
    #[error("more than {0} bytes")]
    TooLarge(u64),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// One selected line while it is being read: its first bytes, and how many characters follow.
#[derive(Default)]
struct LineAcc {
    kept: Vec<u8>,
    extra_chars: usize,
    last_cr: bool,
}

impl LineAcc {
    fn push(&mut self, bytes: &[u8], keep: usize) {
        if bytes.is_empty() {
            return;
        }
        let room = keep.saturating_sub(self.kept.len()).min(bytes.len());
        self.kept.extend_from_slice(&bytes[..room]);
        // Characters beyond what is kept: count the bytes that start one.
        self.extra_chars += bytes[room..].iter().filter(|b| (**b & 0xC0) != 0x80).count();
        self.last_cr = bytes.last() == Some(&b'\r');
    }
}

struct State {
    req: Request,
    end_line: usize,
    /// The line the next byte belongs to.
    line_no: usize,
    line_has_bytes: bool,
    acc: LineAcc,
    numbered: String,
    plain: String,
    cut_lines: usize,
    last_shown: usize,
    over_budget: bool,
}

impl State {
    fn selected(&self) -> bool {
        !self.over_budget && self.line_no >= self.req.start && self.line_no <= self.end_line
    }

    fn keep(&self) -> usize {
        self.req.max_line_chars * 4 + 4
    }

    fn feed(&mut self, mut rest: &[u8]) {
        while !rest.is_empty() {
            if self.line_no > self.end_line || self.over_budget {
                // Past the selection: only count.
                let newlines = memchr::memchr_iter(b'\n', rest).count();
                self.line_no += newlines;
                self.line_has_bytes = rest.last() != Some(&b'\n');
                return;
            }
            if self.line_no < self.req.start {
                // Before the selection: skip whole lines at once.
                let wanted = self.req.start - self.line_no;
                match memchr::memchr_iter(b'\n', rest).enumerate().take(wanted).last() {
                    Some((k, pos)) => {
                        self.line_no += k + 1;
                        self.line_has_bytes = false;
                        rest = &rest[pos + 1..];
                    }
                    None => {
                        self.line_has_bytes = true;
                        return;
                    }
                }
                continue;
            }
            let keep = self.keep();
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    self.acc.push(&rest[..i], keep);
                    self.finish_line();
                    self.line_no += 1;
                    self.line_has_bytes = false;
                    rest = &rest[i + 1..];
                }
                None => {
                    self.acc.push(rest, keep);
                    self.line_has_bytes = true;
                    return;
                }
            }
        }
    }

    fn finish_line(&mut self) {
        let acc = std::mem::take(&mut self.acc);
        let mut bytes: &[u8] = &acc.kept;
        if self.line_no == 1 {
            bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
        }
        let mut extra = acc.extra_chars;
        if extra == 0 {
            bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        } else if acc.last_cr {
            extra -= 1;
        }
        let text = String::from_utf8_lossy(bytes);
        let count = text.chars().count() + extra;
        let max = self.req.max_line_chars;
        let (shown, plain) = if count > max {
            self.cut_lines += 1;
            let kept: String = text.chars().take(max).collect();
            (format!("{kept}… [line cut: {} more characters]", count - max), kept)
        } else {
            (text.clone().into_owned(), text.into_owned())
        };
        self.numbered.push_str(&format!("{:>6}\t{}\n", self.line_no, shown));
        self.plain.push_str(&plain);
        self.plain.push('\n');
        self.last_shown = self.line_no;
        if self.numbered.len() > self.req.max_output {
            self.over_budget = true;
            self.numbered.clear();
            self.plain.clear();
        }
    }
}

/// Reads `reader` to its end (at most `req.max_bytes`), returning the requested lines.
pub fn scan(reader: &mut impl Read, req: Request) -> Result<Scan, ScanError> {
    let start = req.start.max(1);
    let req = Request { start, ..req };
    let mut st = State {
        req,
        end_line: (start - 1).saturating_add(req.limit),
        line_no: 1,
        line_has_bytes: false,
        acc: LineAcc::default(),
        numbered: String::new(),
        plain: String::new(),
        cut_lines: 0,
        last_shown: start - 1,
        over_budget: false,
    };
    let mut buf = vec![0u8; CHUNK];
    let mut hasher = Sha256::new();
    let mut size: u64 = 0;
    let mut head: Vec<u8> = Vec::new();
    let mut snapshot: Option<Vec<u8>> = Some(Vec::new());
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        let chunk = &buf[..n];
        if size < SNIFF_BYTES {
            let upto = ((SNIFF_BYTES - size) as usize).min(n);
            if chunk[..upto].contains(&0) {
                return Err(ScanError::Binary);
            }
            if head.len() < BOM.len() {
                head.extend_from_slice(&chunk[..n.min(BOM.len() - head.len())]);
            }
        }
        size += n as u64;
        if size > req.max_bytes {
            return Err(ScanError::TooLarge(size));
        }
        hasher.update(chunk);
        snapshot = snapshot.and_then(|mut s| {
            (s.len() + n <= SNAPSHOT_LIMIT).then(|| {
                s.extend_from_slice(chunk);
                s
            })
        });
        st.feed(chunk);
    }
    let empty = size == 0 || (size == BOM.len() as u64 && head == BOM);
    if st.line_has_bytes && st.selected() {
        st.finish_line();
    }
    let total = if st.line_has_bytes { st.line_no } else { st.line_no - 1 };
    Ok(Scan {
        numbered: st.numbered,
        plain: st.plain,
        total: if empty { 0 } else { total },
        end: st.last_shown,
        cut_lines: st.cut_lines,
        over_budget: st.over_budget,
        empty,
        hash: hasher.finalize().into(),
        size,
        snapshot: snapshot.and_then(|s| String::from_utf8(s).ok()).map(Arc::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(start: usize, limit: usize) -> Request {
        Request {
            start,
            limit,
            max_line_chars: 10,
            max_output: 10_000,
            max_bytes: 1 << 20,
        }
    }

    fn run(text: &[u8], r: Request) -> Scan {
        scan(&mut std::io::Cursor::new(text.to_vec()), r).unwrap()
    }

    /// The plain reference: what splitting the whole text gives.
    fn reference(text: &str, start: usize, limit: usize) -> (usize, Vec<String>) {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let end = (start - 1 + limit).min(lines.len());
        let sel = if start > lines.len() {
            Vec::new()
        } else {
            lines[start - 1..end]
                .iter()
                .map(|l| l.trim_end_matches('\n').trim_end_matches('\r').to_string())
                .collect()
        };
        (lines.len(), sel)
    }

    #[test]
    fn matches_splitting_the_whole_text() {
        let cases = [
            "a\nb\nc\n",
            "a\nb\nc",
            "\n\n\n",
            "one line",
            "\u{feff}bom\r\nsecond\r\n",
            "x\r\ny\n\nz",
        ];
        for text in cases {
            for start in 1..5 {
                for limit in 1..4 {
                    let s = run(text.as_bytes(), req(start, limit));
                    let (total, sel) = reference(text, start, limit);
                    assert_eq!(s.total, total, "{text:?} {start} {limit}");
                    let got: Vec<String> = s.plain.lines().map(str::to_string).collect();
                    assert_eq!(got, sel, "{text:?} {start} {limit}");
                }
            }
        }
    }

    #[test]
    fn long_lines_are_cut_with_the_count_of_the_rest() {
        let s = run("0123456789abcdef\r\nshort\n".as_bytes(), req(1, 5));
        assert!(
            s.numbered.contains("0123456789… [line cut: 6 more characters]"),
            "{}",
            s.numbered
        );
        assert_eq!(s.cut_lines, 1);
        // A line far longer than what is kept.
        let long = format!("{}\n", "é".repeat(10_000));
        let s = run(long.as_bytes(), req(1, 1));
        assert!(
            s.numbered.contains("[line cut: 9990 more characters]"),
            "{}",
            s.numbered
        );
    }

    #[test]
    fn hashes_the_whole_file_and_keeps_small_snapshots() {
        let text = b"a\nb\nc\n";
        let s = run(text, req(2, 1));
        assert_eq!(s.hash, crate::tools::file_state::content_hash(text));
        assert_eq!(s.size, 6);
        assert_eq!(s.snapshot.as_deref(), Some("a\nb\nc\n"));
        assert_eq!(s.end, 2);
    }

    #[test]
    fn binary_empty_and_oversized_files() {
        assert!(matches!(
            scan(&mut std::io::Cursor::new(b"ab\0c".to_vec()), req(1, 5)),
            Err(ScanError::Binary)
        ));
        assert!(run(b"", req(1, 5)).empty);
        assert!(run(BOM, req(1, 5)).empty);
        let mut zero = std::fs::File::open("/dev/zero").unwrap();
        assert!(matches!(scan(&mut zero, req(1, 5)), Err(ScanError::Binary)));
        let mut big = std::io::repeat(b'\n').take(2 << 20);
        assert!(matches!(scan(&mut big, req(1, 5)), Err(ScanError::TooLarge(_))));
    }

    #[test]
    fn output_over_budget_is_flagged_and_counting_goes_on() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let s = run(
            text.as_bytes(),
            Request {
                max_output: 50,
                ..req(1, 100)
            },
        );
        assert!(s.over_budget);
        assert_eq!(s.total, 100);
    }
}
