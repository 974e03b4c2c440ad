//! What a resumed session shows: the whole conversation from its transcript file, earlier
//! parts included. The engine resumes from the last compaction on; the screen shows what
//! came before too, and the hand-off document as a folded marker (`history::fill`).

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use crate::types::message::Message;

/// Every conversation message of a transcript, in order, when the session was compacted at
/// least once (`None` otherwise, or when the file cannot be read: the history is enough then).
/// Unreadable lines are skipped here; resuming reports them.
pub fn conversation(path: &Path) -> Option<Vec<Message>> {
    let file = std::fs::File::open(path).ok()?;
    let mut out = Vec::new();
    let mut compacted = false;
    for line in BufReader::new(file).split(b'\n').map_while(Result::ok) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("compact_boundary") => compacted = true,
            Some("user") | Some("assistant") => {
                if let Ok(m) = serde_json::from_value::<Message>(v["message"].clone()) {
                    out.push(m);
                }
            }
            _ => {}
        }
    }
    compacted.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Transcript;
    use crate::types::message::ContentBlock;
    use serde_json::json;

    #[test]
    fn a_compacted_session_yields_its_whole_conversation() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut t = Transcript::create(&p).unwrap();
        t.message(&Message::user_text("first question")).unwrap();
        t.message(&Message::assistant(vec![ContentBlock::text("first answer")]))
            .unwrap();
        assert!(conversation(&p).is_none(), "not compacted: the history is enough");
        t.write_line(json!({"type": "compact_boundary", "compactMetadata": {"trigger": "manual"}}))
            .unwrap();
        t.message(&Message::user_text(
            "This session continues from an earlier part that was compacted ...",
        ))
        .unwrap();
        drop(t);
        let all = conversation(&p).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0], Message::user_text("first question"));
    }
}
