//! An incremental Server-Sent Events parser: bytes in, events out, linear in the input.
//!
//! Every byte is scanned once: a partial line waits in a buffer and only the newly arrived bytes
//! are searched for a line end, so one 10 MB `data:` line costs the same as a thousand small
//! ones. An event larger than the cap is refused instead of growing without bound.
//!
//! Follows the WHATWG framing: lines end in LF, CRLF or CR; `:` starts a comment; `data` lines
//! are joined with `\n`; a blank line dispatches the event; a leading BOM is skipped.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the stream did not name the event.
    pub event: String,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an event of the response stream is larger than {cap} bytes")]
    TooLarge { cap: usize },
    #[error("the response stream is not valid UTF-8")]
    NotUtf8,
}

#[derive(Debug)]
pub struct SseParser {
    cap: usize,
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    /// Comment lines seen (keep-alives), for diagnostics.
    pub comments: u64,
}

/// Largest event accepted by default (a whole file written by one tool call fits easily).
pub const DEFAULT_EVENT_CAP: usize = 64 * 1024 * 1024;

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new(DEFAULT_EVENT_CAP)
    }
}

impl SseParser {
    pub fn new(cap: usize) -> SseParser {
        SseParser {
            cap,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            comments: 0,
        }
    }

    /// Feeds a chunk; complete events are appended to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.after_cr {
            self.after_cr = false;
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.grow(chunk.len())?;
                    self.line.extend_from_slice(chunk);
                    return Ok(());
                }
                Some(i) => {
                    let ending = chunk[i];
                    let line = if self.line.is_empty() {
                        self.line_done(&chunk[..i], out)?;
                        None
                    } else {
                        self.grow(i)?;
                        self.line.extend_from_slice(&chunk[..i]);
                        Some(std::mem::take(&mut self.line))
                    };
                    if let Some(buf) = line {
                        self.line_done(&buf, out)?;
                        // Keep the allocation for the next long line.
                        self.line = buf;
                        self.line.clear();
                    }
                    chunk = &chunk[i + 1..];
                    if ending == b'\r' {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            None => self.after_cr = true,
                            Some(_) => {}
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The stream ended: a final event without its blank line is still delivered.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.line.is_empty() {
            let buf = std::mem::take(&mut self.line);
            self.line_done(&buf, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    /// Bytes held for the event being read (for callers that bound memory).
    pub fn pending(&self) -> usize {
        self.line.len() + self.data.len()
    }

    fn grow(&self, more: usize) -> Result<(), SseError> {
        if self.line.len() + self.data.len() + more > self.cap {
            return Err(SseError::TooLarge { cap: self.cap });
        }
        Ok(())
    }

    fn line_done(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            self.comments += 1;
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.cap {
                    return Err(SseError::TooLarge { cap: self.cap });
                }
                let text = std::str::from_utf8(value).map_err(|_| SseError::NotUtf8)?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(text);
                self.has_data = true;
            }
            b"event" => {
                self.event = std::str::from_utf8(value).map_err(|_| SseError::NotUtf8)?.to_string();
            }
            // `id` and `retry` matter for browsers reconnecting, not for one request.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        } else {
            self.event.clear();
        }
        self.has_data = false;
    }
}

/// Events of a streamed body (an MCP server's event stream): the same parser over `bytes`. A
/// transport error or a refused event comes after the events framed before it, and ends the stream.
pub fn event_stream<S, B, E>(bytes: S, cap: usize) -> impl futures_util::Stream<Item = Result<SseEvent, String>>
where
    S: futures_util::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    use futures_util::StreamExt;
    struct State<S> {
        bytes: S,
        parser: SseParser,
        ready: std::collections::VecDeque<SseEvent>,
        /// `Some(None)`: ended cleanly; `Some(Some(e))`: ended with an error not yet reported.
        end: Option<Option<String>>,
    }
    let state = State {
        bytes,
        parser: SseParser::new(cap),
        ready: Default::default(),
        end: None,
    };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(ev) = st.ready.pop_front() {
                return Some((Ok(ev), st));
            }
            match st.end.take() {
                Some(Some(e)) => {
                    st.end = Some(None);
                    return Some((Err(e), st));
                }
                Some(None) => return None,
                None => {}
            }
            let mut out = Vec::new();
            let step = match st.bytes.next().await {
                Some(Ok(chunk)) => st.parser.feed(chunk.as_ref(), &mut out).map_err(|e| e.to_string()),
                Some(Err(e)) => Err(e.to_string()),
                None => {
                    st.end = Some(None);
                    st.parser.finish(&mut out).map_err(|e| e.to_string())
                }
            };
            st.ready.extend(out);
            if let Err(e) = step {
                st.end = Some(Some(e));
            }
        }
    })
}

/// Parses a whole body at once (fixtures and tests), feeding it in `chunk`-byte pieces.
pub fn parse_all(bytes: &[u8], chunk: usize) -> Result<Vec<SseEvent>, SseError> {
    let mut p = SseParser::default();
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        p.feed(piece, &mut out)?;
    }
    p.finish(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn frames_events_with_every_line_ending_and_split_anywhere() {
        let body =
            "\u{feff}event: a\r\ndata: one\r\n\r\n: keep-alive\n\ndata:two\ndata:  three\n\nevent: b\rdata: x\r\r";
        for chunk in 1..body.len() + 1 {
            let got = parse_all(body.as_bytes(), chunk).unwrap();
            assert_eq!(
                got,
                vec![ev("a", "one"), ev("", "two\n three"), ev("b", "x")],
                "chunk size {chunk}"
            );
        }
    }

    #[test]
    fn comments_and_empty_events_dispatch_nothing() {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        p.feed(b": PROCESSING\n\n: PROCESSING\n\nevent: ping\n\n", &mut out)
            .unwrap();
        assert!(out.is_empty());
        assert_eq!(p.comments, 2);
        p.feed(b"data: [DONE]", &mut out).unwrap();
        p.finish(&mut out).unwrap();
        assert_eq!(out, vec![ev("", "[DONE]")]);
    }

    #[test]
    fn a_field_without_colon_and_unknown_fields_are_handled() {
        let got = parse_all(b"id: 7\nretry: 10\ndata\ndata: b\n\n", 3).unwrap();
        assert_eq!(got, vec![ev("", "\nb")]);
    }

    #[test]
    fn an_event_over_the_cap_is_refused() {
        let mut p = SseParser::new(1000);
        let mut out = Vec::new();
        let line = format!("data: {}", "x".repeat(600));
        p.feed(line.as_bytes(), &mut out).unwrap();
        assert_eq!(p.feed(b"\n", &mut out), Ok(()));
        assert_eq!(
            p.feed(line.as_bytes(), &mut out),
            Err(SseError::TooLarge { cap: 1000 }),
            "two data lines of one event count together"
        );
        let mut p = SseParser::new(1000);
        for _ in 0..100 {
            if p.feed(&[b'y'; 64], &mut out).is_err() {
                return;
            }
        }
        panic!("a line without end must hit the cap");
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        assert_eq!(parse_all(b"data: \xff\xfe\n\n", 2), Err(SseError::NotUtf8));
    }

    #[test]
    fn a_giant_event_arrives_whole() {
        // Its cost (linear) is measured in the benchmark; here: correctness over many chunks.
        let text = "a".repeat(10 * 1024 * 1024);
        let body = format!("data: {text}\n\n");
        let got = parse_all(body.as_bytes(), 16 * 1024).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data.len(), text.len());
    }

    #[tokio::test]
    async fn a_byte_stream_yields_events_then_its_error() {
        use futures_util::StreamExt;
        let chunks: Vec<Result<&[u8], String>> = vec![
            Ok(b"event: endpoint\ndata: /po"),
            Ok(b"st\n\ndata: {}\n\n"),
            Err("connection reset".into()),
            Ok(b"data: never\n\n"),
        ];
        let got: Vec<_> = event_stream(futures_util::stream::iter(chunks), 1024).collect().await;
        assert_eq!(
            got,
            vec![
                Ok(ev("endpoint", "/post")),
                Ok(ev("", "{}")),
                Err("connection reset".to_string())
            ]
        );
        let big: Vec<Result<&[u8], String>> = vec![Ok(b"data: 0123456789\n\n")];
        let got: Vec<_> = event_stream(futures_util::stream::iter(big), 8).collect().await;
        assert_eq!(got, vec![Err(SseError::TooLarge { cap: 8 }.to_string())]);
    }
}
