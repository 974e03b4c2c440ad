//! Reading a transcript back for `--continue`/`--resume`: every line keel writes can be read
//! (however deep a tool input nests), unreadable lines are counted, the history is repaired,
//! and the record of lines an earlier run could not save is reported.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::repair::{Repairs, repair};
use super::unsaved::{self, UnsavedRecord};
use super::{SessionMeta, TODOS_EVENT, TranscriptError};
use crate::types::message::Message;

/// Deepest nesting read back. Live input is parsed with serde_json's limit of 128 levels, and a
/// transcript line wraps it in a few more, so every line keel writes is well within this; the
/// bound keeps the recursive parse (and the drop of the value) far from the stack's end.
pub const MAX_LINE_DEPTH: usize = 256;

/// What a transcript file yields when resumed.
#[derive(Debug, Default)]
pub struct Loaded {
    pub meta: Option<SessionMeta>,
    pub history: Vec<Message>,
    /// 1-based numbers of lines that could not be parsed (reported, then skipped).
    pub bad_lines: Vec<usize>,
    /// The file ends in a line cut mid-write (a crash or a full disk).
    pub cut_tail: bool,
    /// Tool calls that had no result (a crash mid-turn); synthesized results were added.
    pub repaired_calls: usize,
    /// Everything the repair changed to make the history valid for the API.
    pub repairs: Repairs,
    /// Lines the previous run could not write (disk full), from its record beside the file.
    pub unsaved: Option<UnsavedRecord>,
    /// The session's latest task list.
    pub todos: Vec<crate::tools::Todo>,
    /// With [`load_until`]: whether the stop point was found.
    pub reached: bool,
}

/// The line that starts the conversation afresh after a rewind (the messages after it are the
/// rewound conversation).
pub const REWIND_BOUNDARY: &str = "rewind_boundary";

impl Loaded {
    /// What the user should be told about this resume: lost, unreadable or repaired content.
    pub fn warnings(&self, path: &Path) -> Vec<String> {
        self.warnings_of(path, false)
    }

    /// [`Loaded::warnings`] of a session another process is still writing (read for a fork):
    /// its calls without a result are running there, not cut off.
    pub fn warnings_while_running(&self, path: &Path) -> Vec<String> {
        self.warnings_of(path, true)
    }

    fn warnings_of(&self, path: &Path, running: bool) -> Vec<String> {
        let mut out = Vec::new();
        let shown = path.display();
        if let Some(u) = &self.unsaved {
            out.push(format!(
                "transcript {shown}: the previous run could not save its last {} line(s), {} of them \
                 conversation messages ({}, since {}); the conversation continues without them",
                u.lines, u.messages, u.error, u.since
            ));
        }
        let bad: Vec<String> = self.bad_lines.iter().map(|n| n.to_string()).collect();
        if self.cut_tail && self.bad_lines.len() == 1 {
            out.push(format!(
                "transcript {shown}: the last line (line {}) was cut off mid-write; it is skipped",
                bad[0]
            ));
        } else if !bad.is_empty() {
            out.push(format!(
                "transcript {shown}: skipped {} unreadable line(s) ({})",
                bad.len(),
                bad.join(", ")
            ));
        }
        let r = &self.repairs;
        if r.unanswered_calls > 0 && running {
            out.push(format!(
                "transcript {shown}: {} tool call(s) are still running in the other process; this session has \
                 them as interrupted",
                r.unanswered_calls
            ));
        } else if r.unanswered_calls > 0 {
            out.push(format!(
                "transcript {shown}: {} tool call(s) had no result (the session ended mid-turn); they are marked \
                 interrupted",
                r.unanswered_calls
            ));
        }
        let mut fixes = Vec::new();
        if r.orphan_results > 0 {
            fixes.push(format!(
                "removed {} tool result(s) whose call was missing",
                r.orphan_results
            ));
        }
        if r.merged > 0 {
            fixes.push(format!(
                "merged {} message(s) into the one before (same role)",
                r.merged
            ));
        }
        if r.empty > 0 {
            fixes.push(format!("removed {} empty message(s)", r.empty));
        }
        if r.lost_start {
            fixes.push("noted that the conversation's start is missing".to_string());
        }
        if !fixes.is_empty() {
            out.push(format!(
                "transcript {shown}: messages are missing or out of order; to keep the conversation valid keel {}",
                fixes.join(", ")
            ));
        }
        out
    }
}

pub fn load(path: &Path) -> Result<Loaded, TranscriptError> {
    load_until(path, None)
}

/// Like [`load`], but stops at the `checkpoint` event of point `stop` (the moment before that
/// prompt or rewind), for rewinding the conversation.
pub fn load_until(path: &Path, stop: Option<u32>) -> Result<Loaded, TranscriptError> {
    let file = File::open(path).map_err(|source| TranscriptError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Loaded::default();
    let mut last_complete = true;
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let Ok(line) = line else {
            out.bad_lines.push(i + 1);
            continue;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Some(v) = parse_line(&line) else {
            out.bad_lines.push(i + 1);
            last_complete = false;
            continue;
        };
        last_complete = true;
        match v.get("type").and_then(Value::as_str) {
            Some("meta") => out.meta = serde_json::from_value(v).ok(),
            // The conversation was compacted or rewound: what follows replaces everything before.
            Some("compact_boundary") | Some(REWIND_BOUNDARY) => out.history.clear(),
            Some("event")
                if stop.is_some()
                    && v["event"] == crate::checkpoint::TRANSCRIPT_EVENT
                    && v["data"]["point"].as_u64() == stop.map(u64::from) =>
            {
                out.reached = true;
                break;
            }
            Some("user") | Some("assistant") => match Message::deserialize(&v["message"]) {
                Ok(m) => out.history.push(m),
                Err(_) => out.bad_lines.push(i + 1),
            },
            Some("event") if v["event"] == TODOS_EVENT => match serde_json::from_value(v["data"]["todos"].clone()) {
                Ok(todos) => out.todos = todos,
                Err(_) => out.bad_lines.push(i + 1),
            },
            _ => {}
        }
    }
    out.cut_tail = !last_complete && ends_without_newline(path);
    out.repairs = repair(&mut out.history);
    out.repaired_calls = out.repairs.unanswered_calls;
    out.unsaved = unsaved::read(path);
    Ok(out)
}

/// How much of a rewind's record a transcript holds: the `checkpoint` event of its point, and
/// (for a rewind of the conversation to before point `to`) a `rewind_boundary` after it
/// followed by all `messages` messages the conversation kept. A crash can stop between any two
/// of these lines; what is missing is appended again (a later boundary replaces an earlier one).
pub fn rewind_recorded(path: &Path, point: u32, to: u32, messages: Option<usize>) -> (bool, bool) {
    let Ok(file) = File::open(path) else {
        return (false, messages.is_none());
    };
    let (mut event, mut boundary, mut after) = (false, false, 0usize);
    for line in BufReader::new(file).split(b'\n').map_while(Result::ok) {
        let Some(v) = parse_line(&line) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("event")
                if v["event"] == crate::checkpoint::TRANSCRIPT_EVENT
                    && v["data"]["point"].as_u64() == Some(u64::from(point)) =>
            {
                event = true;
            }
            Some(REWIND_BOUNDARY) if event && v["toPoint"].as_u64() == Some(u64::from(to)) => {
                boundary = true;
                after = 0;
            }
            Some("user") | Some("assistant") if boundary => after += 1,
            _ => {}
        }
    }
    (event, messages.is_none_or(|n| boundary && after == n))
}

fn ends_without_newline(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = File::open(path) else {
        return false;
    };
    let mut last = [0u8; 1];
    f.seek(SeekFrom::End(-1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] != b'\n'
}

/// One JSON line. serde_json stops at 128 levels of nesting; a line keel wrote can nest a few
/// levels more (a tool input at the parser's limit, inside the message), so such a line is
/// parsed again without that limit once a scan has shown it stays within [`MAX_LINE_DEPTH`].
pub fn parse_line(line: &[u8]) -> Option<Value> {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) => Some(v),
        Err(e) if e.to_string().starts_with("recursion limit exceeded") && depth(line) <= MAX_LINE_DEPTH => {
            let mut de = serde_json::Deserializer::from_slice(line);
            de.disable_recursion_limit();
            let v = Value::deserialize(&mut de).ok()?;
            de.end().ok()?;
            Some(v)
        }
        Err(_) => None,
    }
}

/// The deepest nesting of arrays and objects in a JSON text (strings skipped).
fn depth(text: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}
