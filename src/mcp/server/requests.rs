//! The requests keel makes to a server once it is connected: tool calls, resources and
//! prompts, each bounded in time and cancellable, and what a failure means (`CallError`).

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    GetPromptRequest, GetPromptRequestParams, ReadResourceRequest, ReadResourceRequestParams,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{Server, State};

/// How a request to a server failed.
#[derive(Debug)]
pub enum CallError {
    Unavailable(String),
    Timeout(Duration),
    Cancelled,
    /// The server answered with a JSON-RPC error.
    Server(String),
    /// The connection broke during the request.
    Broken(String),
}

impl CallError {
    pub fn message(&self, server: &str) -> String {
        match self {
            CallError::Unavailable(m) => format!("MCP server `{server}` is not available: {m}"),
            CallError::Timeout(d) => format!(
                "MCP server `{server}` did not answer within {} s; the request was cancelled. The limit is MCP_TOOL_TIMEOUT (milliseconds).",
                d.as_secs_f64()
            ),
            CallError::Cancelled => "The call was interrupted before the server answered.".into(),
            CallError::Server(m) => format!("MCP server `{server}` returned an error: {m}"),
            CallError::Broken(m) => {
                format!("MCP server `{server}` stopped during the call ({m}); it will be restarted on the next call.")
            }
        }
    }
}

impl Server {
    /// Calls a tool; the result JSON as the server sent it.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match arguments {
            Value::Object(m) => Some(m),
            _ => Some(Map::new()),
        };
        self.request(ClientRequest::CallToolRequest(CallToolRequest::new(params)), cancel)
            .await
    }

    pub async fn list_resources(&self, cancel: &CancellationToken) -> Result<Value, CallError> {
        let peer = self.peer().await?;
        let list = self
            .bounded(self.timeouts.tool, cancel, peer.list_all_resources())
            .await?;
        serde_json::to_value(&list).map_err(|e| CallError::Server(e.to_string()))
    }

    pub async fn read_resource(&self, uri: &str, cancel: &CancellationToken) -> Result<Value, CallError> {
        let params = ReadResourceRequestParams::new(uri.to_string());
        self.request(
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params)),
            cancel,
        )
        .await
    }

    pub async fn list_prompts(&self) -> Result<Value, CallError> {
        if !self.has_capability("prompts").await {
            return Ok(Value::Array(Vec::new()));
        }
        let peer = self.peer().await?;
        let list = self
            .bounded(
                self.timeouts.startup,
                &CancellationToken::new(),
                peer.list_all_prompts(),
            )
            .await?;
        serde_json::to_value(&list).map_err(|e| CallError::Server(e.to_string()))
    }

    pub async fn get_prompt(
        &self,
        prompt: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let mut params = GetPromptRequestParams::new(prompt.to_string());
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        self.request(ClientRequest::GetPromptRequest(GetPromptRequest::new(params)), cancel)
            .await
    }

    /// Sends one request with the tool time limit and the caller's cancellation; when either
    /// ends the wait, the server is told with `notifications/cancelled` (sent before this
    /// returns, so it goes out even when the session ends right after). The result's JSON.
    async fn request(&self, request: ClientRequest, cancel: &CancellationToken) -> Result<Value, CallError> {
        // A (re)start can take up to MCP_TIMEOUT; an interruption ends it too.
        let peer = tokio::select! {
            _ = cancel.cancelled() => return Err(CallError::Cancelled),
            p = self.peer() => p?,
        };
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(self.failure(e).await),
        };
        let id = handle.id.clone();
        let limit = self.timeouts.tool;
        let outcome = tokio::select! {
            _ = cancel.cancelled() => {
                cancel_on_server(&peer, id, "the user interrupted the call").await;
                return Err(CallError::Cancelled);
            }
            r = tokio::time::timeout(limit, handle.await_response()) => r,
        };
        match outcome {
            Err(_) => {
                cancel_on_server(&peer, id, "the client's time limit (MCP_TOOL_TIMEOUT) passed").await;
                Err(CallError::Timeout(limit))
            }
            Ok(Ok(result)) => serde_json::to_value(&result).map_err(|e| CallError::Server(e.to_string())),
            Ok(Err(e)) => Err(self.failure(e).await),
        }
    }

    /// What a failed request means: a JSON-RPC error from the server, or a broken connection
    /// (the server is marked failed and restarted by the next call).
    async fn failure(&self, e: ServiceError) -> CallError {
        if let Some(challenge) = self.access.as_ref().and_then(|a| a.take_challenge()) {
            let message = self
                .access
                .as_ref()
                .map(|a| a.needs_sign_in(Some(&challenge)))
                .unwrap_or_default();
            let mut slot = self.slot.lock().await;
            slot.live = None;
            drop(slot);
            self.refused(message.clone());
            return CallError::Unavailable(message);
        }
        match e {
            ServiceError::McpError(e) => CallError::Server(e.message.to_string()),
            e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                let e = crate::mcp::errors::service_error(&e);
                let mut slot = self.slot.lock().await;
                let note = match slot.live.as_mut() {
                    Some(live) => {
                        if live.is_closed() || live.tripped().is_some() {
                            live.exit_note()
                        } else {
                            e
                        }
                    }
                    None => e,
                };
                let detail = self.with_stderr_tail(note);
                slot.live = None;
                self.set_state(State::Failed, Some(detail.clone()));
                CallError::Broken(detail)
            }
            e => CallError::Server(crate::mcp::errors::service_error(&e)),
        }
    }

    /// Runs a listing with a time limit and the caller's cancellation (dropping it lets the
    /// client library tell the server).
    async fn bounded<T>(
        &self,
        limit: Duration,
        cancel: &CancellationToken,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, CallError> {
        let outcome = tokio::select! {
            _ = cancel.cancelled() => return Err(CallError::Cancelled),
            r = tokio::time::timeout(limit, request) => r,
        };
        match outcome {
            Err(_) => Err(CallError::Timeout(limit)),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.failure(e).await),
        }
    }
}

/// Tells the server a request is abandoned; bounded, since a stuck server must not hold up
/// the session.
async fn cancel_on_server(peer: &rmcp::Peer<rmcp::RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let notification = CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason.to_string())));
    let _ = tokio::time::timeout(Duration::from_secs(2), peer.send_notification(notification.into())).await;
}
