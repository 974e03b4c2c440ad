//! Elicitation requests from MCP servers in the TUI. The TUI does not show server forms yet:
//! a request is declined and the transcript says which server asked what (never on stderr,
//! which would write over the screen).

use futures_util::future::BoxFuture;

use crate::engine::EventSink;
use crate::engine::NoticeLevel;
use crate::mcp::elicit::{Answer, Elicitor, Request};

pub struct TuiElicitor {
    pub events: EventSink,
}

impl Elicitor for TuiElicitor {
    fn elicit(&self, request: Request) -> BoxFuture<'static, Answer> {
        let fields: Vec<String> = request.fields().into_iter().map(|(name, _, _)| name).collect();
        let asked = match (&request.url, fields.is_empty()) {
            (Some(url), _) => format!(" (to visit {url})"),
            (None, false) => format!(" (fields: {})", fields.join(", ")),
            (None, true) => String::new(),
        };
        self.events.notice(
            NoticeLevel::Warning,
            format!(
                "MCP server `{}` asked for input: \"{}\"{asked}. keel's interface cannot show server forms yet, so the request was declined.",
                request.server, request.message
            ),
        );
        Box::pin(std::future::ready(Answer::Decline))
    }
}
