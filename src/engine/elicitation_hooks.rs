//! The `Elicitation` and `ElicitationResult` hook events, around an MCP server's request for
//! input: an `Elicitation` hook may answer (`hookSpecificOutput.action`, and `content` when it
//! accepts) so nobody is asked; an `ElicitationResult` hook sees the answer before it goes to
//! the server and may change it. Exit 2 (or `decision: "block"`) declines, in both.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use crate::hooks::{Event, Hooks, fields};
use crate::mcp::elicit::{Answer, ElicitationHooks, Request};
use crate::tools::ModeCell;
use crate::types::events::{EventSink, NoticeLevel};

/// The session's hooks as the MCP hub's elicitation route calls them.
#[derive(Clone)]
pub(super) struct SessionElicitationHooks {
    pub hooks: Arc<Hooks>,
    pub mode: Arc<ModeCell>,
    pub events: EventSink,
}

impl SessionElicitationHooks {
    async fn fire(&self, event: Event, request: &Request, extra: Map<String, Value>) -> Option<Answer> {
        let mut payload = fields([
            ("mcp_server_name", request.server.clone().into()),
            ("mode", request.mode.clone().into()),
            (
                "elicitation_id",
                request.elicitation_id.clone().map_or(Value::Null, Value::from),
            ),
        ]);
        payload.extend(extra);
        let agg = self
            .hooks
            .fire(event, Some(&request.server), self.mode.get(), payload, &self.events)
            .await;
        if agg.blocked() {
            // Said like the decline of a run nobody can answer in: the server was refused.
            self.events.notice(
                NoticeLevel::Warning,
                format!(
                    "An {} hook declined MCP server `{}`'s request: {}",
                    event.as_str(),
                    request.server,
                    agg.block_reason()
                ),
            );
            return Some(Answer::Decline);
        }
        let given = agg.elicitation?;
        match Answer::from_json(&given) {
            Ok(answer) => Some(answer),
            Err(e) => {
                self.events.notice(
                    NoticeLevel::Warning,
                    format!("An {} hook's answer was ignored: {e}", event.as_str()),
                );
                None
            }
        }
    }
}

impl ElicitationHooks for SessionElicitationHooks {
    fn before(&self, request: &Request) -> BoxFuture<'static, Option<Answer>> {
        if !self.hooks.has(Event::Elicitation) {
            return futures_util::future::ready(None).boxed();
        }
        let (me, request) = (self.clone(), request.clone());
        async move {
            let extra = fields([
                ("message", request.message.clone().into()),
                ("url", request.url.clone().map_or(Value::Null, Value::from)),
                ("requested_schema", request.schema.clone().unwrap_or(Value::Null)),
            ]);
            me.fire(Event::Elicitation, &request, extra).await
        }
        .boxed()
    }

    fn after(&self, request: &Request, answer: Answer) -> BoxFuture<'static, Answer> {
        if !self.hooks.has(Event::ElicitationResult) {
            return futures_util::future::ready(answer).boxed();
        }
        let (me, request) = (self.clone(), request.clone());
        async move {
            let given = answer.to_json();
            let extra = fields([
                ("action", given.get("action").cloned().unwrap_or(Value::Null)),
                ("content", given.get("content").cloned().unwrap_or(Value::Null)),
            ]);
            match me.fire(Event::ElicitationResult, &request, extra).await {
                // A hook that accepts without content keeps the content that was given.
                Some(Answer::Accept(content)) if content.is_empty() => match answer {
                    Answer::Accept(kept) => Answer::Accept(kept),
                    _ => Answer::Accept(content),
                },
                Some(changed) => changed,
                None => answer,
            }
        }
        .boxed()
    }
}
