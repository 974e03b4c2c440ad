//! One configured server: its connection (opened on demand, restarted after a crash with a
//! bounded number of attempts), its status for `/mcp` and `system/init`, and the requests keel
//! makes to it. Every failure is returned as a message for the model or the user; none ends
//! the session.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Mutex;

use super::auth::Access;
use super::config::{Scope, ServerSpec};
use super::elicit;
use super::transport::{self, McpChannel, Opened};

/// Restarts after a crash before a server is left failed for the rest of the session.
pub const MAX_RESTARTS: u32 = 3;

/// How long a stdio server whose input keel closed may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

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

mod connection;
mod requests;
mod status;

use connection::Slot;
pub use requests::CallError;
pub use status::{ServerStatus, State};
