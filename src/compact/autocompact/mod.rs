//! Tier 5, autocompaction: when the context nears the window (or the user asks with
//! `/compact`), a summary request condenses the conversation; the history is replaced by a
//! hand-off ([`handoff`]) plus re-mounted hot state ([`remount`]) and the newest, unanswered
//! exchange. The engine drives it (`engine::compaction`); this module holds the pure parts.

pub mod handoff;
pub mod remount;
pub mod summary;

pub use handoff::Trigger;

use crate::types::message::{ContentBlock, Message, Role};

/// The history after compaction: the hand-off blocks first, then what must stay verbatim —
/// the last exchange when its results are still unanswered (the model has not seen them), or
/// the user's pending message.
pub fn new_history(store: &[Message], handoff: Vec<ContentBlock>) -> Vec<Message> {
    let n = store.len();
    let user = |content| Message {
        role: Role::User,
        content,
    };
    let Some(last) = store.last() else {
        return vec![user(handoff)];
    };
    if last.role == Role::Assistant {
        return vec![user(handoff)];
    }
    let has_results = last
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolResult { .. }));
    if has_results && n >= 2 && store[n - 2].role == Role::Assistant {
        return vec![user(handoff), store[n - 2].clone(), last.clone()];
    }
    let mut content = handoff;
    content.extend(last.content.iter().cloned());
    vec![user(content)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unanswered_results_and_pending_prompts_survive() {
        let h = || vec![ContentBlock::text("HANDOFF")];
        let call = Message::assistant(vec![ContentBlock::ToolUse {
            id: "t9".into(),
            name: "Grep".into(),
            input: json!({"pattern": "x"}),
        }]);
        let results = Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result("t9", "found".to_string().into(), false)],
        };
        let store = vec![Message::user_text("go"), call.clone(), results.clone()];
        let new = new_history(&store, h());
        assert_eq!(new, vec![Message::user_text("HANDOFF"), call, results]);

        let store = vec![
            Message::user_text("go"),
            Message::assistant(vec![ContentBlock::text("done")]),
            Message::user_text("next task"),
        ];
        let new = new_history(&store, h());
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].text(), "HANDOFFnext task");

        let store = vec![
            Message::user_text("go"),
            Message::assistant(vec![ContentBlock::text("done")]),
        ];
        assert_eq!(new_history(&store, h()), vec![Message::user_text("HANDOFF")]);
        assert_eq!(new_history(&[], h()), vec![Message::user_text("HANDOFF")]);
    }
}
