//! The legacy HTTP+SSE transport (MCP 2024-11-05): a long-lived `GET` event stream whose first
//! `endpoint` event names the URL to `POST` messages to; the server's messages arrive as
//! `message` events. The endpoint must be on the same origin as the stream, so a server cannot
//! make keel send the session's messages elsewhere.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;

use super::transport::OpenError;
use crate::provider::sse::{DEFAULT_EVENT_CAP, SseEvent, event_stream};

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("POST to the server failed: {0}")]
    Post(String),
    #[error("the server rejected a message with HTTP {0}")]
    Status(u16),
}

type Events = BoxStream<'static, Result<SseEvent, String>>;

pub struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: reqwest::header::HeaderMap,
    events: Events,
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event.
    pub async fn connect(
        client: reqwest::Client,
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<SseTransport, OpenError> {
        let base = reqwest::Url::parse(url).map_err(|e| OpenError::Failed(format!("bad url {url}: {e}")))?;
        let mut map = reqwest::header::HeaderMap::new();
        for (k, v) in headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| OpenError::Failed(format!("`{k}` is not a valid header name")))?;
            let value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| OpenError::Failed(format!("the value of header `{k}` is not valid in HTTP")))?;
            map.insert(name, value);
        }
        let resp = client
            .get(base.clone())
            .headers(map.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| OpenError::Failed(format!("cannot reach {url}: {e}")))?;
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            return Err(OpenError::NeedsAuth(format!(
                "the server needs authentication (HTTP {status}); keel does not sign in to MCP servers yet — configure an Authorization header instead"
            )));
        }
        if !resp.status().is_success() {
            return Err(OpenError::Failed(format!("GET {url} answered HTTP {status}")));
        }
        // keel's own linear parser, with its cap: a hostile server's giant event costs no more
        // than its bytes.
        let mut events: Events = event_stream(Box::pin(resp.bytes_stream()), DEFAULT_EVENT_CAP).boxed();
        let endpoint = loop {
            match events.next().await {
                Some(Ok(ev)) if ev.event == "endpoint" => break ev.data,
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    return Err(OpenError::Failed(format!(
                        "the event stream broke before naming its endpoint: {e}"
                    )));
                }
                None => {
                    return Err(OpenError::Failed(
                        "the event stream ended before naming its endpoint".into(),
                    ));
                }
            }
        };
        let endpoint = base
            .join(endpoint.trim())
            .map_err(|e| OpenError::Failed(format!("the server named an invalid endpoint `{endpoint}`: {e}")))?;
        if endpoint.origin() != base.origin() {
            return Err(OpenError::Failed(format!(
                "the server named an endpoint on another origin ({endpoint}); refusing to send messages there"
            )));
        }
        Ok(SseTransport {
            client,
            endpoint,
            headers: map,
            events,
        })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let resp = request.send().await.map_err(|e| SseError::Post(e.to_string()))?;
            if resp.status().is_success() {
                Ok(())
            } else {
                Err(SseError::Status(resp.status().as_u16()))
            }
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            match self.events.next().await? {
                Ok(ev) if ev.event == "message" || ev.event.is_empty() => {
                    match serde_json::from_str::<ServerJsonRpcMessage>(&ev.data) {
                        Ok(m) => return Some(m),
                        Err(e) => crate::debug::log(format!("mcp sse: ignoring a malformed message: {e}")),
                    }
                }
                Ok(_) => continue,
                Err(e) => {
                    crate::debug::log(format!("mcp sse: the event stream broke: {e}"));
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), SseError> {
        Ok(())
    }
}
