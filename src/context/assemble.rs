//! Builds one request from the stable layers and the view of the conversation.
//!
//! Prompt-cache breakpoints (the API allows four): the system layers carry two (the core and
//! the last system block, see `context::project`); the conversation gets the rest, on the last
//! message (written to the cache for the next request) and on the user message before it
//! (where the previous request's breakpoint sat, so this request reads the cache up to there).
//!
//! Once the compactor keeps a cold part, its end is a prefix every request until the next
//! frontier step sends unchanged: it carries a breakpoint too (taking the last system block's,
//! which the cold part's prefix contains), so that the request right after a step reads the
//! cache up to the old cold part's end instead of rewriting the whole history.

use std::sync::Arc;

pub use crate::provider::prefix::tail_breakpoints;
use crate::provider::{ModelRequest, SystemBlock, ToolSet};
use crate::types::message::Message;

/// The API's limit on cache breakpoints per request.
pub const MAX_BREAKPOINTS: usize = 4;

/// View indices of the last message of prefixes that stay byte-identical between requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Anchors {
    /// The end of the cold part: every request until the next step sends it unchanged.
    pub cold_end: Option<usize>,
    /// The end of what the requests before the last step sent unchanged (the old cold part):
    /// right after a step, the longest prefix a cache can still hold.
    pub kept_end: Option<usize>,
}

/// What the compactor did, for diagnostics and the benchmark.
/// Where the conversation's stable prefixes end, and whether the view changed since the
/// previous request (a frontier step: the previous request's tail no longer matches).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CachePlan {
    pub anchors: Anchors,
    pub moved: bool,
}

/// A request whose conversation breakpoints sit on its tail only.
pub fn request(
    model: &str,
    max_tokens: u32,
    system: &[SystemBlock],
    tools: &ToolSet,
    messages: Arc<Vec<Message>>,
) -> ModelRequest {
    request_with(model, max_tokens, system, tools, messages, CachePlan::default())
}

/// A request with breakpoints on the tail and on the compactor's stable prefixes.
pub fn request_with(
    model: &str,
    max_tokens: u32,
    system: &[SystemBlock],
    tools: &ToolSet,
    messages: Arc<Vec<Message>>,
    plan: CachePlan,
) -> ModelRequest {
    let mut system = system.to_vec();
    let breakpoints = conversation_breakpoints(&messages, plan);
    let marked_tools = tools.as_slice().iter().filter(|t| t.cache_control.is_some()).count();
    let marked_system = |s: &[SystemBlock]| s.iter().filter(|b| b.cache_control.is_some()).count();
    // Room for the conversation's breakpoints comes from the system blocks after the first
    // marked one (the core, shared across sessions, keeps its own).
    while marked_tools + marked_system(&system) + breakpoints.len() > MAX_BREAKPOINTS {
        let Some(last) = system.iter().rposition(|b| b.cache_control.is_some()) else {
            break;
        };
        if system.iter().position(|b| b.cache_control.is_some()) == Some(last) {
            break;
        }
        system[last].cache_control = None;
    }
    let mut breakpoints = breakpoints;
    breakpoints.truncate(MAX_BREAKPOINTS.saturating_sub(marked_tools + marked_system(&system)));
    ModelRequest {
        model: model.to_string(),
        max_tokens,
        system,
        messages,
        tools: tools.clone(),
        cache_breakpoints: breakpoints,
        reasoning: Default::default(),
        unchanged: None,
    }
}

/// The conversation's breakpoints, most useful first: the last message (written for the next
/// request); where this request can read the cache up to (the previous request's tail, or right
/// after a step the old cold part's end); the cold part's end (so the next step finds it).
fn conversation_breakpoints(messages: &[Message], plan: CachePlan) -> Vec<usize> {
    let tail = tail_breakpoints(messages);
    let mut out: Vec<usize> = tail.first().copied().into_iter().collect();
    let read = if plan.moved {
        plan.anchors.kept_end
    } else {
        tail.get(1).copied()
    };
    for i in [read, plan.anchors.cold_end].into_iter().flatten() {
        if i < messages.len() && !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::message::{CacheControl, ContentBlock};

    #[test]
    fn breakpoints_sit_on_the_tail_and_never_exceed_four() {
        let msgs = vec![
            Message::user_text("a"),
            Message::assistant(vec![ContentBlock::text("b")]),
            Message::user_text("c"),
            Message::assistant(vec![ContentBlock::text("d")]),
            Message::user_text("e"),
        ];
        assert_eq!(tail_breakpoints(&msgs), vec![4, 2]);
        assert_eq!(tail_breakpoints(&msgs[..1]), vec![0]);
        assert!(tail_breakpoints(&[]).is_empty());
        let mut system = vec![
            SystemBlock::text("core"),
            SystemBlock::text("project"),
            SystemBlock::text("x"),
        ];
        system[0].cache_control = Some(CacheControl::ephemeral());
        system[2].cache_control = Some(CacheControl::ephemeral());
        let r = request("m", 100, &system, &ToolSet::default(), Arc::new(msgs.clone()));
        assert_eq!(r.cache_breakpoints, vec![4, 2]);
        // A third marked system block gives up its mark to the conversation's (the tail holds
        // its prefix); the core keeps its own.
        system[1].cache_control = Some(CacheControl::ephemeral());
        let r = request("m", 100, &system, &ToolSet::default(), Arc::new(msgs));
        assert_eq!(r.cache_breakpoints, vec![4, 2]);
        assert_eq!(marked(&r), vec![true, true, false]);
    }

    fn marked(r: &ModelRequest) -> Vec<bool> {
        r.system.iter().map(|b| b.cache_control.is_some()).collect()
    }

    #[test]
    fn the_cold_parts_end_gets_a_breakpoint_and_after_a_step_the_old_end_is_read() {
        let msgs: Vec<Message> = (0..11)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user_text(format!("u{i}"))
                } else {
                    Message::assistant(vec![ContentBlock::text(format!("a{i}"))])
                }
            })
            .collect();
        let mut system = vec![SystemBlock::text("core"), SystemBlock::text("project")];
        system[0].cache_control = Some(CacheControl::ephemeral());
        system[1].cache_control = Some(CacheControl::ephemeral());
        let anchors = Anchors {
            cold_end: Some(5),
            kept_end: Some(3),
        };
        let steady = CachePlan { anchors, moved: false };
        let r = request_with("m", 1, &system, &ToolSet::default(), Arc::new(msgs.clone()), steady);
        // Last message, the previous tail, the cold end; the project block gives up its mark,
        // the core keeps its own.
        assert_eq!(r.cache_breakpoints, vec![10, 8, 5]);
        assert_eq!(marked(&r), vec![true, false]);
        let moved = CachePlan { anchors, moved: true };
        let r = request_with("m", 1, &system, &ToolSet::default(), Arc::new(msgs.clone()), moved);
        assert_eq!(
            r.cache_breakpoints,
            vec![10, 3, 5],
            "right after a step the old end is read"
        );
        // Without a cold part nothing changes.
        let r = request_with(
            "m",
            1,
            &system,
            &ToolSet::default(),
            Arc::new(msgs),
            CachePlan::default(),
        );
        assert_eq!(r.cache_breakpoints, vec![10, 8]);
        assert_eq!(marked(&r), vec![true, true]);
    }
}
