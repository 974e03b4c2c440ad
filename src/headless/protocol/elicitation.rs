//! Elicitation requests from MCP servers, forwarded to the program driving keel: an
//! `elicitation` control request (server name, message, mode, the form's schema and the order of
//! its fields, or the URL), answered with `{"action", "content"}`. A program that cannot answer
//! (an error reply, closed input) gets the request declined, with a notice on stderr.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::client::ClientLink;
use crate::console::{err_line, terminal_safe};
use crate::mcp::elicit::{Answer, Elicitor, Request};

pub struct SdkElicitor {
    pub link: Arc<ClientLink>,
}

/// The control request for one elicitation.
pub fn control_request(request: &Request) -> Value {
    let mut body = json!({
        "subtype": "elicitation",
        "mcp_server_name": request.server,
        "message": request.message,
        "mode": request.mode,
    });
    if let Some(schema) = &request.schema {
        body["requested_schema"] = schema.clone();
        let order: Vec<String> = request.fields().into_iter().map(|(name, _, _)| name).collect();
        if !order.is_empty() {
            body["property_order"] = json!(order);
        }
    }
    if let Some(url) = &request.url {
        body["url"] = json!(url);
    }
    if let Some(id) = &request.elicitation_id {
        body["elicitation_id"] = json!(id);
    }
    body
}

impl Elicitor for SdkElicitor {
    fn elicit(&self, request: Request) -> BoxFuture<'static, Answer> {
        let link = self.link.clone();
        Box::pin(async move {
            let outcome = link
                .request(control_request(&request))
                .await
                .and_then(|v| Answer::from_json(&v));
            match outcome {
                Ok(answer) => answer,
                Err(e) => {
                    err_line!(
                        "keel: MCP server `{}` asked for input (\"{}\"); declined: the program driving keel did not answer the elicitation request ({})",
                        request.server,
                        terminal_safe(&request.message),
                        terminal_safe(&e)
                    );
                    Answer::Decline
                }
            }
        })
    }
}
