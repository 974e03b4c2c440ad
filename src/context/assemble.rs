//! Builds one request from the stable layers and the view of the conversation.
//!
//! Prompt-cache breakpoints (the API allows four): the system layers carry two (the core and
//! the last system block, see `context::project`); the conversation gets at most two, on the
//! last message (written to the cache for the next request) and on the user message before it
//! (where the previous request's breakpoint sat, so this request reads the cache up to there).

use std::sync::Arc;

pub use crate::provider::prefix::tail_breakpoints;
use crate::provider::{ModelRequest, SystemBlock, ToolSet};
use crate::types::message::Message;

/// The API's limit on cache breakpoints per request.
pub const MAX_BREAKPOINTS: usize = 4;

pub fn request(
    model: &str,
    max_tokens: u32,
    system: &[SystemBlock],
    tools: &ToolSet,
    messages: Arc<Vec<Message>>,
) -> ModelRequest {
    let fixed = system.iter().filter(|b| b.cache_control.is_some()).count()
        + tools.as_slice().iter().filter(|t| t.cache_control.is_some()).count();
    let mut breakpoints = tail_breakpoints(&messages);
    breakpoints.truncate(MAX_BREAKPOINTS.saturating_sub(fixed));
    ModelRequest {
        model: model.to_string(),
        max_tokens,
        system: system.to_vec(),
        messages,
        tools: tools.clone(),
        cache_breakpoints: breakpoints,
        reasoning: Default::default(),
    }
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
        // A third marked system block leaves room for one conversation breakpoint only.
        system[1].cache_control = Some(CacheControl::ephemeral());
        let r = request("m", 100, &system, &ToolSet::default(), Arc::new(msgs));
        assert_eq!(r.cache_breakpoints, vec![4]);
    }
}
