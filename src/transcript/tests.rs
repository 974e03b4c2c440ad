use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::types::message::ContentBlock;

fn tool_use(id: &str) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: "Read".into(),
        input: json!({}),
    }
}

fn result(id: &str) -> ContentBlock {
    ContentBlock::tool_result(id, crate::types::message::ToolResultContent::Text("ok".into()), false)
}

#[test]
fn corrupt_lines_are_skipped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let mut t = Transcript::create(&p).unwrap();
    t.message(&Message::user_text("hello")).unwrap();
    drop(t);
    let mut f = OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(b"{\"type\":\"assistant\",\"message\":{\"role\":\"assis")
        .unwrap();
    let loaded = load(&p).unwrap();
    assert_eq!(loaded.history.len(), 1);
    assert_eq!(loaded.bad_lines, vec![2]);
    assert!(loaded.cut_tail);
    let w = loaded.warnings(&p);
    assert!(w[0].contains("cut off mid-write"), "{w:?}");
}

#[test]
fn a_cut_last_line_is_terminated_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let mut t = Transcript::create(&p).unwrap();
    t.message(&Message::user_text("first")).unwrap();
    drop(t);
    OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(b"{\"type\":\"assistant\",\"mess")
        .unwrap();
    // The next session appends to the same file: its line must not be glued to the fragment.
    let mut t = Transcript::create(&p).unwrap();
    t.message(&Message::assistant(vec![ContentBlock::text("second")]))
        .unwrap();
    drop(t);
    let loaded = load(&p).unwrap();
    assert_eq!(
        loaded.history,
        vec![
            Message::user_text("first"),
            Message::assistant(vec![ContentBlock::text("second")])
        ]
    );
    assert_eq!(loaded.bad_lines, vec![2]);
    assert!(!loaded.cut_tail);
}

#[test]
fn a_compact_boundary_starts_the_history_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let mut t = Transcript::create(&p).unwrap();
    t.message(&Message::user_text("old")).unwrap();
    t.message(&Message::assistant(vec![ContentBlock::text("old answer")]))
        .unwrap();
    t.write_line(json!({"type": "compact_boundary", "compactMetadata": {"trigger": "manual"}}))
        .unwrap();
    t.message(&Message::user_text("hand-off")).unwrap();
    drop(t);
    let loaded = load(&p).unwrap();
    assert_eq!(loaded.history, vec![Message::user_text("hand-off")]);
}

/// A sink whose writes fail while `full` is set, like a file on a full disk; what it accepted
/// is kept in `written`.
#[derive(Clone, Default)]
struct Disk {
    full: Arc<Mutex<bool>>,
    written: Arc<Mutex<Vec<u8>>>,
}

impl Sink for Disk {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if *self.full.lock().unwrap() {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        self.written.lock().unwrap().extend_from_slice(bytes);
        Ok(())
    }
}

#[test]
fn lines_a_full_disk_refused_are_retried_in_order_and_recorded_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let disk = Disk::default();
    let mut t = Transcript::with_sink(&p, Box::new(disk.clone()), Some(Unsaved::open(&p)));
    t.message(&Message::user_text("one")).unwrap();
    *disk.full.lock().unwrap() = true;
    assert!(t.message(&Message::assistant(vec![ContentBlock::text("two")])).is_err());
    assert!(t.event("x", json!({})).is_err());
    let health = t.health().expect("unsaved lines are reported");
    assert!(
        health.contains("2 line(s), 1 of them conversation messages"),
        "{health}"
    );
    assert!(health.contains("No space left on device"), "{health}");
    // The record beside the transcript says so, for a resume after this process is gone.
    let rec = unsaved::read(&p).expect("a record of the loss");
    assert_eq!((rec.lines, rec.messages), (2, 1));

    *disk.full.lock().unwrap() = false;
    t.message(&Message::user_text("three")).unwrap();
    assert_eq!(t.health(), None);
    assert_eq!(
        unsaved::read(&p),
        None,
        "the record is cleared once everything is written"
    );
    let written = String::from_utf8(disk.written.lock().unwrap().clone()).unwrap();
    let texts: Vec<String> = written
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            v["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or("event")
                .to_string()
        })
        .collect();
    assert_eq!(texts, vec!["one", "two", "event", "three"]);
}

#[test]
fn a_resume_reports_what_the_previous_run_could_not_save() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    Transcript::create(&p)
        .unwrap()
        .message(&Message::user_text("saved"))
        .unwrap();
    let mut u = Unsaved::open(&p);
    u.record(3, 2, "No space left on device (os error 28)");
    drop(u);
    let loaded = load(&p).unwrap();
    let w = loaded.warnings(&p).join("\n");
    assert!(
        w.contains("could not save its last 3 line(s), 2 of them conversation messages"),
        "{w}"
    );
    // Opening the transcript for the resumed run starts a fresh record.
    drop(Transcript::create(&p).unwrap());
    assert!(load(&p).unwrap().unsaved.is_none());
}

fn nested(levels: usize) -> Value {
    let mut v = json!("bottom");
    for _ in 0..levels {
        v = json!({ "a": [v] });
    }
    v
}

#[test]
fn a_tool_input_at_the_parsers_depth_limit_is_read_back() {
    // 63 objects and 63 arrays: 126 levels, accepted live (serde_json allows 128) but the
    // transcript line wraps it in four more.
    let input = nested(63);
    let text = serde_json::to_string(&input).unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_ok(), "accepted live");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let mut t = Transcript::create(&p).unwrap();
    let call = Message::assistant(vec![ContentBlock::ToolUse {
        id: "t1".into(),
        name: "Write".into(),
        input: input.clone(),
    }]);
    t.message(&Message::user_text("go")).unwrap();
    t.message(&call).unwrap();
    t.message(&Message {
        role: Role::User,
        content: vec![result("t1")],
    })
    .unwrap();
    drop(t);
    let loaded = load(&p).unwrap();
    assert!(loaded.bad_lines.is_empty(), "{:?}", loaded.bad_lines);
    assert_eq!(loaded.history[1], call);
}

#[test]
fn absurdly_deep_lines_are_refused_not_parsed() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(load::parse_line(deep.as_bytes()).is_none());
    // Up to the bound it parses, on a test thread's small stack too.
    let n = load::MAX_LINE_DEPTH;
    let ok = format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(load::parse_line(ok.as_bytes()).is_some());
}

#[test]
fn dangling_tool_use_gets_a_result() {
    let mut h = vec![Message::user_text("go"), Message::assistant(vec![tool_use("t1")])];
    assert_eq!(repair(&mut h).unanswered_calls, 1);
    assert_eq!(h.len(), 3);
    assert!(
        matches!(&h[2].content[0], ContentBlock::ToolResult { tool_use_id, is_error: true, .. } if tool_use_id == "t1")
    );
}

#[test]
fn orphan_results_and_repeated_roles_are_repaired() {
    // The assistant line with t1 was lost; a user line was written twice; the history starts
    // with the model.
    let mut h = vec![
        Message::assistant(vec![ContentBlock::text("hello")]),
        Message::user_text("a"),
        Message::user_text("b"),
        Message {
            role: Role::User,
            content: vec![result("t1")],
        },
        Message::assistant(vec![tool_use("t2")]),
        Message {
            role: Role::User,
            content: vec![result("t2"), result("t2"), result("t9")],
        },
        Message {
            role: Role::Assistant,
            content: vec![],
        },
        Message::assistant(vec![ContentBlock::text("x")]),
        Message::assistant(vec![ContentBlock::text("y")]),
    ];
    let r = repair(&mut h);
    assert_eq!(r.orphan_results, 3);
    assert_eq!(r.merged, 3);
    assert_eq!(r.empty, 1);
    assert!(r.lost_start);
    for pair in h.windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "{h:#?}");
    }
    assert_eq!(h[0].role, Role::User);
    // The one valid result stays, once, first in its message.
    let results: Vec<&ContentBlock> = h
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
        .collect();
    assert_eq!(results, vec![&result("t2")]);
}

#[test]
fn credentials_are_redacted_before_lines_are_written_and_resume_reads_the_redacted_text() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let key = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
    let mut t = Transcript::create(&p).unwrap();
    t.message(&Message::user_text(format!("use {key} please"))).unwrap();
    t.message(&Message::user_text("commit 3f786850e387550fdab836ed7e6dc881de23001b"))
        .unwrap();
    t.event("hook", json!({"stdout": "Authorization: Bearer abcdefgh12345678"}))
        .unwrap();
    drop(t);
    let raw = std::fs::read_to_string(&p).unwrap();
    assert!(!raw.contains(key), "{raw}");
    assert!(!raw.contains("abcdefgh12345678"), "{raw}");
    let lines: Vec<Value> = raw.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines[0][REDACTED_FIELD],
        json!({"count": 1, "kinds": ["anthropic-key"]})
    );
    assert!(
        lines[1].get(REDACTED_FIELD).is_none(),
        "a digest is no secret: {}",
        lines[1]
    );
    assert_eq!(lines[2][REDACTED_FIELD]["kinds"], json!(["header-credential"]));
    let loaded = load(&p).unwrap();
    assert_eq!(
        loaded.history[0].content[0],
        ContentBlock::text("use [REDACTED:anthropic-key] please")
    );
}
