//! The legacy HTTP+SSE transport (MCP 2024-11-05): a long-lived `GET` event stream whose first
//! `endpoint` event names the URL to `POST` messages to; the server's messages arrive as
//! `message` events. The endpoint must be on the same origin as the stream, so a server cannot
//! make keel send the session's messages elsewhere. A server that asks for a sign-in gets the
//! same one as a streamable-HTTP server: the stored token as a bearer header on the stream and
//! on every message, renewed when it runs out; a 401/403 is noted so the server reads as
//! "needs sign-in" and `keel mcp login NAME` is named.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use rmcp::transport::auth::AuthClient;

use super::auth::Access;
use super::transport::OpenError;
use crate::provider::sse::{DEFAULT_EVENT_CAP, SseEvent, event_stream};

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("POST to the server failed: {0}")]
    Post(String),
    #[error("the server rejected a message with HTTP {0}")]
    Status(u16),
    #[error("the sign-in could not be renewed ({0}); run `keel mcp login {1}`")]
    SignIn(String, String),
}

/// The server's sign-in as this transport uses it: where the token comes from (renewed by the
/// client library when it expires) and where a refusal is noted.
#[derive(Clone, Default)]
struct SignIn {
    token: Option<AuthClient<reqwest::Client>>,
    access: Option<Arc<Access>>,
}

impl SignIn {
    async fn bearer(&self) -> Result<Option<reqwest::header::HeaderValue>, String> {
        let Some(auth) = &self.token else {
            return Ok(None);
        };
        let token = auth.get_access_token().await.map_err(|e| e.to_string())?;
        reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
            .map(Some)
            .map_err(|_| "the stored token is not valid in an HTTP header".into())
    }

    fn note_refusal(&self, resp: &reqwest::Response) {
        if let Some(access) = &self.access {
            let header = resp
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            access.note(resp.status().as_u16(), header);
        }
    }

    fn server(&self) -> String {
        self.access.as_ref().map(|a| a.server.clone()).unwrap_or_default()
    }
}

type Events = BoxStream<'static, Result<SseEvent, String>>;

pub struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: reqwest::header::HeaderMap,
    sign_in: SignIn,
    events: Events,
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event; `access` is the server's
    /// sign-in, when it has one.
    pub async fn connect(
        client: reqwest::Client,
        url: &str,
        headers: &BTreeMap<String, String>,
        access: Option<&Arc<Access>>,
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
        let sign_in = match access {
            Some(a) => SignIn {
                token: a
                    .authorized(client.clone())
                    .await
                    .map_err(|e| OpenError::NeedsAuth(format!("signing in failed: {e}")))?,
                access: Some(a.clone()),
            },
            None => SignIn::default(),
        };
        let mut stream_headers = map.clone();
        match sign_in.bearer().await {
            Ok(Some(bearer)) => {
                stream_headers.insert(reqwest::header::AUTHORIZATION, bearer);
            }
            Ok(None) => {}
            Err(e) => {
                return Err(OpenError::NeedsAuth(refused(
                    access,
                    &format!("the sign-in could not be renewed: {e}"),
                )));
            }
        }
        let resp = client
            .get(base.clone())
            .headers(stream_headers)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| OpenError::Failed(format!("cannot reach {url}: {e}")))?;
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            sign_in.note_refusal(&resp);
            return Err(OpenError::NeedsAuth(refused(
                access,
                &format!("the server needs authentication (HTTP {status}); configure an Authorization header"),
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
            sign_in,
            events,
        })
    }
}

/// What to say when the server refused keel: how to sign in when it can, else `fallback`.
fn refused(access: Option<&Arc<Access>>, fallback: &str) -> String {
    match access {
        Some(a) => {
            let challenge = a.take_challenge();
            a.needs_sign_in(challenge.as_ref())
        }
        None => fallback.to_string(),
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
        let sign_in = self.sign_in.clone();
        async move {
            let request = match sign_in.bearer().await {
                Ok(Some(bearer)) => request.header(reqwest::header::AUTHORIZATION, bearer),
                Ok(None) => request,
                Err(e) => return Err(SseError::SignIn(e, sign_in.server())),
            };
            let resp = request.send().await.map_err(|e| SseError::Post(e.to_string()))?;
            let status = resp.status().as_u16();
            if resp.status().is_success() {
                Ok(())
            } else {
                if status == 401 || status == 403 {
                    sign_in.note_refusal(&resp);
                }
                Err(SseError::Status(status))
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
