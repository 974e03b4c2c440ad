//! One configured server: its connection (opened on demand, restarted after a crash with a
//! bounded number of attempts), its status for `/mcp` and `system/init`, and the requests keel
//! makes to it. Every failure is returned as a message for the model or the user; none ends
//! the session.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    GetPromptRequest, GetPromptRequestParams, ReadResourceRequest, ReadResourceRequestParams,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::auth::Access;
use super::config::{Scope, ServerSpec};
use super::elicit;
use super::transport::{self, KeelClient, McpChannel, OpenError, OpenOptions, Opened, Service, Target};

/// Restarts after a crash before a server is left failed for the rest of the session.
pub const MAX_RESTARTS: u32 = 3;

/// How long a stdio server whose input keel closed may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// A server's state as `/mcp`, `system/init` and the SDK's `mcp_status` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Configured, not connected yet.
    Pending,
    Connected,
    Failed,
    /// The server answered 401/403.
    NeedsAuth,
    /// Not started: a project server nobody approved, or one that was rejected.
    Disabled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Connected => "connected",
            State::Failed => "failed",
            State::NeedsAuth => "needs-auth",
            State::Disabled => "disabled",
        }
    }
}

/// What can be said about a server at one moment.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub scope: Scope,
    pub transport: &'static str,
    /// The command line or URL.
    pub target: String,
    pub source: String,
    pub state: State,
    /// Why it failed, needs authentication or is disabled.
    pub detail: Option<String>,
    /// The model-facing names of its tools.
    pub tools: Vec<String>,
    /// `name version` from the server's `initialize` answer.
    pub server_info: Option<String>,
    pub log: Option<PathBuf>,
    pub restarts: u32,
}

impl ServerStatus {
    /// The `system/init` `mcp_servers` entry.
    pub fn init_json(&self) -> Value {
        serde_json::json!({"name": self.name, "status": self.state.as_str()})
    }

    /// The SDK's `mcp_status` entry: name, status, and what is known about the server.
    pub fn sdk_json(&self) -> Value {
        let mut v = serde_json::json!({"name": self.name, "status": self.state.as_str(), "scope": self.scope.as_str()});
        if let Some(info) = &self.server_info {
            v["serverInfo"] = serde_json::json!(info);
        }
        if let Some(d) = &self.detail {
            v["error"] = serde_json::json!(d);
        }
        if !self.tools.is_empty() {
            v["tools"] = serde_json::json!(self.tools);
        }
        v
    }
}

/// Where a server is reached.
pub enum Reach {
    Spec(ServerSpec),
    Channel(McpChannel),
    /// Its configuration is unusable (the message says why) or it may not start.
    None,
}

/// A tool as the server describes it.
#[derive(Debug, Clone)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Per-request limits.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Opening the connection and the handshake (`MCP_TIMEOUT`).
    pub startup: Duration,
    /// One tool call (`MCP_TOOL_TIMEOUT`).
    pub tool: Duration,
}

struct Live {
    service: Service,
    opened: Opened,
    capabilities: Value,
}

impl Live {
    fn is_closed(&mut self) -> bool {
        if self.service.is_closed() || self.service.peer().is_transport_closed() {
            return true;
        }
        match &mut self.opened {
            Opened::Child { child, .. } => !matches!(child.try_wait(), Ok(None)),
            Opened::Remote => false,
        }
    }

    fn exit_note(&mut self) -> String {
        if let Some(reason) = self.tripped() {
            return reason;
        }
        match &mut self.opened {
            Opened::Child { child, .. } => match child.try_wait() {
                Ok(Some(status)) => format!("the server process exited ({status})"),
                _ => "the connection to the server closed".into(),
            },
            Opened::Remote => "the connection to the server closed".into(),
        }
    }
}

impl Live {
    /// Why keel itself closed the connection (a message over the size bound), if it did.
    fn tripped(&self) -> Option<String> {
        match &self.opened {
            Opened::Child { tripped, .. } => tripped.reason(),
            Opened::Remote => None,
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Opened::Child { group, .. } = &mut self.opened {
            group.kill_and_disarm();
        }
    }
}

struct Slot {
    live: Option<Live>,
    /// Whether a connection was ever open: opening another one counts as a restart.
    ever_connected: bool,
}

/// Where a server runs and how long keel waits for it.
pub struct Placement {
    /// The project directory (stdio servers' working directory and `CLAUDE_PROJECT_DIR`).
    pub project_dir: PathBuf,
    /// Where a stdio server's stderr is appended.
    pub log: PathBuf,
    pub timeouts: Timeouts,
    /// Where sign-ins are kept (HTTP servers); `None`: nowhere.
    pub keel_home: Option<PathBuf>,
    /// Who answers the server's elicitation requests.
    pub elicitation: Arc<elicit::Route>,
}

pub struct Server {
    pub name: String,
    pub scope: Scope,
    pub source: String,
    reach: Reach,
    project_dir: PathBuf,
    log: PathBuf,
    timeouts: Timeouts,
    slot: Mutex<Slot>,
    /// Restarts after a crash in this session (bounded by `MAX_RESTARTS`).
    restarts: AtomicU32,
    status: StdMutex<(State, Option<String>, Option<String>)>,
    tools: StdMutex<Vec<String>>,
    /// The server's names of the tools registered so far (a refresh adds only new ones).
    remote_names: StdMutex<std::collections::BTreeSet<String>>,
    /// Set when the server sends `notifications/tools/list_changed`.
    tools_changed: Arc<AtomicBool>,
    /// The channel to an in-process SDK server, once the driving program's relay is attached.
    relay: StdMutex<Option<McpChannel>>,
    /// An HTTP server's sign-in.
    access: Option<Arc<Access>>,
    /// When the sign-in it had was made, as of the server's last refusal (a newer sign-in
    /// clears `needs-auth`).
    refused_sign_in: std::sync::atomic::AtomicU64,
    elicitation: Arc<elicit::Route>,
}

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
    pub fn new(
        name: String,
        scope: Scope,
        source: String,
        reach: Reach,
        initial: (State, Option<String>),
        place: Placement,
    ) -> Server {
        let access = match &reach {
            Reach::Spec(spec) => spec.remote().map(|(url, headers, oauth)| {
                Arc::new(Access::new(
                    &name,
                    url,
                    oauth.clone(),
                    place.keel_home.as_deref(),
                    headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")),
                ))
            }),
            _ => None,
        };
        Server {
            access,
            refused_sign_in: std::sync::atomic::AtomicU64::new(0),
            elicitation: place.elicitation,
            name,
            scope,
            source,
            reach,
            project_dir: place.project_dir,
            log: place.log,
            timeouts: place.timeouts,
            restarts: AtomicU32::new(0),
            slot: Mutex::new(Slot {
                live: None,
                ever_connected: false,
            }),
            status: StdMutex::new((initial.0, initial.1, None)),
            tools: StdMutex::new(Vec::new()),
            remote_names: StdMutex::new(std::collections::BTreeSet::new()),
            tools_changed: Arc::new(AtomicBool::new(false)),
            relay: StdMutex::new(None),
        }
    }

    /// The configuration of a server that signs in (streamable HTTP or legacy SSE), if this
    /// is one.
    pub fn remote_spec(&self) -> Option<&ServerSpec> {
        match &self.reach {
            Reach::Spec(spec) if spec.remote().is_some() => Some(spec),
            _ => None,
        }
    }

    /// Whether this is an in-process server of the program driving keel (`"type": "sdk"`).
    pub fn is_sdk(&self) -> bool {
        matches!(self.reach, Reach::Spec(ServerSpec::Sdk))
    }

    pub fn has_relay(&self) -> bool {
        self.relay.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Connects an in-process SDK server to the program's relay; it starts with the next
    /// `start_all`.
    pub fn attach_relay(&self, channel: McpChannel) {
        *self.relay.lock().unwrap_or_else(|p| p.into_inner()) = Some(channel);
        if self.state() == State::Failed {
            self.set_state(State::Pending, None);
        }
    }

    /// Leaves an in-process SDK server that nobody relays failed, saying why.
    pub fn fail_unrelayed(&self) {
        if self.is_sdk() && !self.has_relay() && self.state() == State::Pending {
            self.set_state(State::Failed, Some(transport::NO_RELAY.into()));
        }
    }

    pub fn state(&self) -> State {
        self.status.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    fn set_state(&self, state: State, detail: Option<String>) {
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        s.0 = state;
        s.1 = detail;
    }

    /// The server refused keel (401/403): `needs-auth` until someone signs in again.
    fn refused(&self, message: String) {
        if let Some(a) = &self.access {
            self.refused_sign_in.store(a.signed_in_at(), Ordering::Relaxed);
        }
        self.set_state(State::NeedsAuth, Some(message));
    }

    /// A server left `needs-auth` that has been signed in to since (`keel mcp login`) goes back
    /// to pending, so the next start or call connects with the new sign-in. True if it did.
    pub fn recheck_sign_in(&self) -> bool {
        let Some(a) = &self.access else { return false };
        if self.state() != State::NeedsAuth || a.signed_in_at() <= self.refused_sign_in.load(Ordering::Relaxed) {
            return false;
        }
        self.set_state(State::Pending, None);
        true
    }

    /// Whether the server said its tool list changed since the last look (and forgets it).
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed.swap(false, Ordering::Relaxed)
    }

    /// Records a tool as registered; `false` when it already was.
    pub fn note_remote(&self, remote: &str) -> bool {
        self.remote_names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(remote.to_string())
    }

    pub fn set_tool_names(&self, names: Vec<String>) {
        self.tools.lock().unwrap_or_else(|p| p.into_inner()).extend(names);
    }

    pub fn status(&self) -> ServerStatus {
        let (state, detail, info) = self.status.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (transport, target) = match &self.reach {
            Reach::Spec(spec) => (spec.transport(), spec.target()),
            Reach::Channel(_) => ("sdk", "in-process".to_string()),
            Reach::None => ("-", String::new()),
        };
        let restarts = self.restarts.load(Ordering::Relaxed);
        ServerStatus {
            name: self.name.clone(),
            scope: self.scope,
            transport,
            target,
            source: self.source.clone(),
            state,
            detail,
            tools: self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            server_info: info,
            log: matches!(&self.reach, Reach::Spec(ServerSpec::Stdio { .. })).then(|| self.log.clone()),
            restarts,
        }
    }

    /// Whether this server is meant to run (configured, allowed and reachable).
    pub fn startable(&self) -> bool {
        !matches!(self.reach, Reach::None) && self.state() != State::Disabled && (!self.is_sdk() || self.has_relay())
    }

    /// Connects (if not connected) and lists the server's tools.
    pub async fn start(&self) -> Result<Vec<RemoteTool>, String> {
        let mut slot = self.slot.lock().await;
        self.ensure_live(&mut slot, false).await?;
        let Some(live) = slot.live.as_ref() else {
            return Err("not connected".into());
        };
        if live.capabilities.get("tools").is_none() {
            return Ok(Vec::new());
        }
        let peer = live.service.peer().clone();
        drop(slot);
        // A change announced before this listing is in it.
        self.tools_changed.store(false, Ordering::Relaxed);
        let listed = tokio::time::timeout(self.timeouts.startup, peer.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                let msg = format!("listing its tools failed: {}", super::errors::service_error(&e));
                self.set_state(State::Failed, Some(msg.clone()));
                return Err(msg);
            }
            Err(_) => {
                let msg = format!(
                    "listing its tools took longer than {} s (MCP_TIMEOUT)",
                    self.timeouts.startup.as_secs_f64()
                );
                self.set_state(State::Failed, Some(msg.clone()));
                return Err(msg);
            }
        };
        Ok(tools
            .into_iter()
            .filter_map(|t| serde_json::to_value(&t).ok())
            .map(|v| RemoteTool {
                name: v.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                description: v.get("description").and_then(Value::as_str).unwrap_or("").to_string(),
                input_schema: v.get("inputSchema").cloned().unwrap_or(Value::Null),
            })
            .filter(|t| !t.name.is_empty())
            .collect())
    }

    /// Whether the server offers resources (or prompts) according to its capabilities.
    pub async fn has_capability(&self, key: &str) -> bool {
        let slot = self.slot.lock().await;
        slot.live.as_ref().is_some_and(|l| l.capabilities.get(key).is_some())
    }

    /// Makes sure a connection is open: the first one, or a restart after a crash (bounded).
    async fn ensure_live(&self, slot: &mut Slot, restart: bool) -> Result<(), String> {
        if let Some(live) = slot.live.as_mut() {
            if !live.is_closed() {
                return Ok(());
            }
            let note = live.exit_note();
            let tail = transport::log_tail(&self.log, 5);
            let detail = if tail.is_empty() {
                note
            } else {
                format!("{note}; stderr:\n{tail}")
            };
            slot.live = None;
            self.set_state(State::Failed, Some(detail));
        }
        if matches!(self.reach, Reach::None) || self.state() == State::Disabled {
            let detail = self
                .status()
                .detail
                .unwrap_or_else(|| "it is not configured to run".into());
            return Err(detail);
        }
        // A server that refused keel is asked again only once someone signed in since.
        let signed_in_again = self.state() == State::NeedsAuth && self.recheck_sign_in();
        if self.state() == State::NeedsAuth {
            return Err(self.status().detail.unwrap_or_default());
        }
        if (slot.ever_connected || restart) && !signed_in_again {
            if self.restarts.load(Ordering::Relaxed) >= MAX_RESTARTS {
                let detail = self.status().detail.unwrap_or_default();
                return Err(format!(
                    "it stopped and was restarted {MAX_RESTARTS} times, so it is not restarted again in this session (last problem: {detail})"
                ));
            }
            self.restarts.fetch_add(1, Ordering::Relaxed);
        }
        let relayed = self.relay.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let target = match (&self.reach, relayed.as_ref()) {
            (Reach::Spec(ServerSpec::Sdk), Some(c)) | (Reach::Channel(c), _) => Target::Channel(c),
            (Reach::Spec(spec), _) => Target::Spec(spec),
            (Reach::None, _) => return Err("it is not configured to run".into()),
        };
        let client = KeelClient {
            server: self.name.clone(),
            tools_changed: self.tools_changed.clone(),
            elicitation: self.elicitation.clone(),
        };
        let opts = OpenOptions {
            project_dir: &self.project_dir,
            log: &self.log,
            access: self.access.as_ref(),
        };
        self.set_state(State::Pending, None);
        let opened = tokio::time::timeout(self.timeouts.startup, transport::open(target, client, &opts)).await;
        match opened {
            Ok(Ok((service, opened))) => {
                let info = service.peer().peer_info().and_then(|i| serde_json::to_value(&*i).ok());
                let capabilities = info
                    .as_ref()
                    .and_then(|i| i.get("capabilities").cloned())
                    .unwrap_or(Value::Null);
                let server_info = info.as_ref().and_then(|i| i.get("serverInfo")).map(|s| {
                    format!(
                        "{} {}",
                        s.get("name").and_then(Value::as_str).unwrap_or("?"),
                        s.get("version").and_then(Value::as_str).unwrap_or("")
                    )
                    .trim()
                    .to_string()
                });
                slot.live = Some(Live {
                    service,
                    opened,
                    capabilities,
                });
                slot.ever_connected = true;
                let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
                *s = (State::Connected, None, server_info);
                Ok(())
            }
            Ok(Err(OpenError::NeedsAuth(m))) => {
                self.refused(m.clone());
                Err(m)
            }
            Ok(Err(OpenError::Failed(m))) => {
                self.set_state(State::Failed, Some(m.clone()));
                Err(m)
            }
            Err(_) => {
                let m = format!(
                    "it did not finish starting within {} s (MCP_TIMEOUT, in milliseconds)",
                    self.timeouts.startup.as_secs_f64()
                );
                self.set_state(State::Failed, Some(m.clone()));
                Err(m)
            }
        }
    }

    /// The client for one request, restarting a crashed server (bounded).
    async fn peer(&self) -> Result<rmcp::Peer<rmcp::RoleClient>, CallError> {
        let mut slot = self.slot.lock().await;
        self.ensure_live(&mut slot, true)
            .await
            .map_err(CallError::Unavailable)?;
        match slot.live.as_ref() {
            Some(l) => Ok(l.service.peer().clone()),
            None => Err(CallError::Unavailable("not connected".into())),
        }
    }

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
                let e = super::errors::service_error(&e);
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
                let tail = transport::log_tail(&self.log, 5);
                let detail = if tail.is_empty() {
                    note
                } else {
                    format!("{note}; stderr:\n{tail}")
                };
                slot.live = None;
                self.set_state(State::Failed, Some(detail.clone()));
                CallError::Broken(detail)
            }
            e => CallError::Server(super::errors::service_error(&e)),
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

    /// Closes the connection. A stdio server, its input now closed, gets a moment to exit by
    /// itself, so it still reads what keel sent last (the cancellation of an interrupted call);
    /// then its process group is killed.
    pub async fn shutdown(&self) {
        let mut slot = self.slot.lock().await;
        if let Some(mut live) = slot.live.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), live.service.close()).await;
            if let Opened::Child { child, .. } = &mut live.opened {
                let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
            }
            drop(live);
        }
    }

    /// Keeps a server that was waiting for approval from starting, saying why.
    pub fn reject(&self, reason: String) {
        self.set_state(State::Disabled, Some(reason));
    }

    /// Starts a server that was waiting for approval.
    pub fn approve(&self) {
        if self.state() == State::Disabled {
            self.set_state(State::Pending, None);
        }
    }
}

/// Tells the server a request is abandoned; bounded, since a stuck server must not hold up
/// the session.
async fn cancel_on_server(peer: &rmcp::Peer<rmcp::RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let notification = CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason.to_string())));
    let _ = tokio::time::timeout(Duration::from_secs(2), peer.send_notification(notification.into())).await;
}
