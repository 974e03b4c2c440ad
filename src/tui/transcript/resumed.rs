//! What a resumed session shows, read from its transcript file in one pass: the whole
//! conversation, earlier parts included (the engine resumes from the last compaction on; the
//! screen shows what came before too, and the hand-off document as a folded marker,
//! `history::fill`), and the figures of the status line — tokens and cost of the requests the
//! session made before this run, and the context the last of them occupied.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use crate::engine::session::Totals;
use crate::types::message::{Message, Usage};

#[derive(Debug, Default)]
pub struct Resumed {
    /// Every conversation message, when the session was compacted at least once (`None`
    /// otherwise: the history is enough then).
    pub conversation: Option<Vec<Message>>,
    pub figures: Figures,
}

/// The status line's figures of earlier runs.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// The answers' usage and the `usage` events (compaction summaries, sub-agents).
    pub totals: Totals,
    /// Tokens the last request occupied in the window, as the live gauge counts them (0 when a
    /// compaction or a rewind came after it: the request no longer describes the context).
    pub context_tokens: u64,
}

/// Reads the transcript at `path`; an unreadable file gives nothing (the history is enough and
/// resuming reports the problem). Unreadable lines are skipped here; resuming reports them.
pub fn read(path: &Path) -> Resumed {
    let Ok(file) = std::fs::File::open(path) else {
        return Resumed::default();
    };
    let mut conversation = Vec::new();
    let mut compacted = false;
    let mut figures = Figures::default();
    for line in BufReader::new(file).split(b'\n').map_while(Result::ok) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("compact_boundary") => {
                compacted = true;
                figures.context_tokens = 0;
            }
            Some(crate::transcript::REWIND_BOUNDARY) => figures.context_tokens = 0,
            Some("user") | Some("assistant") => {
                if let Some((model, usage)) = answer_usage(&v["message"]) {
                    figures.totals.record(&model, &usage);
                    figures.context_tokens = usage.context_tokens() + usage.output_tokens;
                }
                if let Ok(m) = serde_json::from_value::<Message>(v["message"].clone()) {
                    conversation.push(m);
                }
            }
            Some("event") if v["event"] == crate::transcript::USAGE_EVENT => {
                if let Some((model, usage)) = answer_usage(&v["data"]) {
                    figures.totals.record(&model, &usage);
                }
            }
            _ => {}
        }
    }
    Resumed {
        conversation: compacted.then_some(conversation),
        figures,
    }
}

/// The model and usage an assistant line (or a `usage` event) records.
fn answer_usage(v: &Value) -> Option<(String, Usage)> {
    let model = v.get("model")?.as_str()?.to_string();
    let usage = serde_json::from_value(v.get("usage")?.clone()).ok()?;
    Some((model, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Transcript;
    use crate::types::message::ContentBlock;
    use serde_json::json;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn a_compacted_session_yields_its_whole_conversation() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut t = Transcript::create(&p).unwrap();
        t.message(&Message::user_text("first question")).unwrap();
        t.message(&Message::assistant(vec![ContentBlock::text("first answer")]))
            .unwrap();
        assert!(read(&p).conversation.is_none(), "not compacted: the history is enough");
        t.write_line(json!({"type": "compact_boundary", "compactMetadata": {"trigger": "manual"}}))
            .unwrap();
        t.message(&Message::user_text(
            "This session continues from an earlier part that was compacted ...",
        ))
        .unwrap();
        drop(t);
        let all = read(&p).conversation.unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0], Message::user_text("first question"));
    }

    #[test]
    fn the_figures_of_earlier_runs_come_from_answers_and_usage_events() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut t = Transcript::create(&p).unwrap();
        let answer = Message::assistant(vec![ContentBlock::text("answer")]);
        t.message(&Message::user_text("q")).unwrap();
        t.assistant(&answer, "m1", "claude-sonnet-4-5", &usage(1_000, 100))
            .unwrap();
        t.event(
            crate::transcript::USAGE_EVENT,
            json!({"model": "claude-sonnet-4-5", "usage": usage(500, 50), "for": "subagent"}),
        )
        .unwrap();
        t.message(&Message::user_text("q2")).unwrap();
        t.assistant(&answer, "m2", "claude-sonnet-4-5", &usage(3_000, 200))
            .unwrap();
        drop(t);
        let f = read(&p).figures;
        assert_eq!(f.totals.requests, 3);
        assert_eq!(
            (f.totals.usage.input_tokens, f.totals.usage.output_tokens),
            (4_500, 350)
        );
        assert!(f.totals.cost_usd > 0.0 && f.totals.cost_known());
        assert_eq!(f.context_tokens, 3_200, "the last request, as the live gauge counts it");
        // A compaction after it: the last request no longer says what the context holds.
        let mut t = Transcript::create(&p).unwrap();
        t.write_line(json!({"type": "compact_boundary", "compactMetadata": {"trigger": "manual"}}))
            .unwrap();
        drop(t);
        let f = read(&p).figures;
        assert_eq!((f.totals.requests, f.context_tokens), (3, 0));
    }
}
