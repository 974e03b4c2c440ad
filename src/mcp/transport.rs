//! Opening a connection to a server: a child process (stdio), streamable HTTP, the legacy
//! HTTP+SSE transport, or a message channel supplied by an embedding front end. Each returns
//! the same running client service, so everything above this file is transport-blind.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, ElicitRequestParams, ElicitResult, Implementation,
    InitializeRequestParams, ProtocolVersion, ServerJsonRpcMessage,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

use super::auth::{Access, Watched};
use super::config::ServerSpec;
use super::elicit;
use super::line_cap;
use super::sse::SseTransport;
use crate::tools::bash::process::ProcessGroup;

/// The client side of one connection, as the client library runs it.
pub type Service = RunningService<RoleClient, KeelClient>;

/// keel's client identity and its handling of what servers send unasked.
#[derive(Clone)]
pub struct KeelClient {
    /// The server's configured name (who is asking, in an elicitation).
    pub server: String,
    /// Set when the server says its tool list changed.
    pub tools_changed: Arc<AtomicBool>,
    /// Who answers the server's elicitation requests.
    pub elicitation: Arc<elicit::Route>,
}

/// What keel can do for a server: answer elicitation forms (and URL requests, by showing the
/// address).
fn capabilities() -> ClientCapabilities {
    serde_json::from_value(serde_json::json!({"elicitation": {"form": {}, "url": {}}})).unwrap_or_default()
}

impl ClientHandler for KeelClient {
    fn get_info(&self) -> InitializeRequestParams {
        // The newest revision that still has the `initialize` handshake, as deployed servers
        // know it; a server that speaks an older one answers with it and that is used.
        InitializeRequestParams::new(capabilities(), Implementation::new("keel", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&request).unwrap_or(Value::Null);
        let asked = elicit::Request::from_params(&self.server, &params);
        let answer = self.elicitation.ask(asked).await;
        serde_json::from_value(answer.to_json()).map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }

    fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) -> impl Future<Output = ()> + Send + '_ {
        self.tools_changed.store(true, Ordering::Relaxed);
        std::future::ready(())
    }
}

/// What a connection needs besides the server's configuration.
pub struct OpenOptions<'a> {
    /// The project directory: stdio servers' default working directory and
    /// `CLAUDE_PROJECT_DIR`.
    pub project_dir: &'a Path,
    /// Where a stdio server's stderr is appended.
    pub log: &'a Path,
    /// An HTTP server's sign-in (tokens, and the challenges it answers with).
    pub access: Option<&'a Arc<Access>>,
}

/// A message channel to a server that lives elsewhere (the Agent SDK's in-process servers,
/// relayed as `mcp_message` control requests): JSON-RPC messages as JSON values, keel's
/// messages go out on `outgoing`, the server's come back on `incoming`.
#[derive(Clone)]
pub struct McpChannel {
    outgoing: mpsc::Sender<Value>,
    incoming: Arc<Mutex<mpsc::Receiver<Value>>>,
}

/// The far end of an [`McpChannel`]: what the embedding front end holds.
pub struct ChannelPeer {
    /// Messages keel sends to the server.
    pub from_keel: mpsc::Receiver<Value>,
    /// Messages from the server to keel (responses and notifications).
    pub to_keel: mpsc::Sender<Value>,
}

impl McpChannel {
    /// A connected pair: keel's side and the front end's side.
    pub fn pair() -> (McpChannel, ChannelPeer) {
        let (out_tx, out_rx) = mpsc::channel(64);
        let (in_tx, in_rx) = mpsc::channel(64);
        (
            McpChannel {
                outgoing: out_tx,
                incoming: Arc::new(Mutex::new(in_rx)),
            },
            ChannelPeer {
                from_keel: out_rx,
                to_keel: in_tx,
            },
        )
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the channel to the server is closed")]
pub struct ChannelClosed;

/// One session over an [`McpChannel`]; a reconnect opens another over the same channel.
struct ChannelTransport {
    channel: McpChannel,
}

impl Transport<RoleClient> for ChannelTransport {
    type Error = ChannelClosed;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), ChannelClosed>> + Send + 'static {
        let tx = self.channel.outgoing.clone();
        async move {
            let value = serde_json::to_value(&item).map_err(|_| ChannelClosed)?;
            tx.send(value).await.map_err(|_| ChannelClosed)
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        let rx = self.channel.incoming.clone();
        async move {
            let mut rx = rx.lock().await;
            loop {
                let value = rx.recv().await?;
                match serde_json::from_value::<ServerJsonRpcMessage>(value) {
                    Ok(m) => return Some(m),
                    Err(e) => crate::debug::log(format!("mcp channel: ignoring a malformed message: {e}")),
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), ChannelClosed> {
        Ok(())
    }
}

/// How a transport was opened; a stdio server's process group dies with it.
pub enum Opened {
    Remote,
    Child {
        group: ProcessGroup,
        child: Box<tokio::process::Child>,
        /// Set when the server's message was too large and keel closed the connection.
        tripped: line_cap::Tripped,
    },
}

/// Why a connection could not be opened.
#[derive(Debug, Clone)]
pub enum OpenError {
    /// The server answered 401/403: it needs credentials keel does not have.
    NeedsAuth(String),
    Failed(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::NeedsAuth(m) | OpenError::Failed(m) => f.write_str(m),
        }
    }
}

/// Why an in-process SDK server cannot be reached: nobody relays its messages.
pub const NO_RELAY: &str = "it is a server inside the program driving keel, reached only while that program drives keel \
     over --input-format stream-json (its messages travel as mcp_message control requests)";

/// Where the connection goes.
pub enum Target<'a> {
    Spec(&'a ServerSpec),
    Channel(&'a McpChannel),
}

/// Opens the transport and runs the `initialize` handshake.
pub async fn open(
    target: Target<'_>,
    client: KeelClient,
    opts: &OpenOptions<'_>,
) -> Result<(Service, Opened), OpenError> {
    match target {
        Target::Channel(channel) => {
            let transport = ChannelTransport {
                channel: channel.clone(),
            };
            let service = client.serve(transport).await.map_err(init_error)?;
            Ok((service, Opened::Remote))
        }
        Target::Spec(ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        }) => {
            let max_line = line_cap::max_line_from_env().map_err(OpenError::Failed)?;
            let (mut child, group) = spawn(command, args, env, cwd.as_deref(), opts)?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err(OpenError::Failed(
                    "the server's stdin/stdout could not be opened".into(),
                ));
            };
            // keel bounds each message itself (the library would drop an oversized one and
            // leave its request waiting), so the library's own bound is lifted.
            let tripped = line_cap::Tripped::default();
            let reader = line_cap::LineCap::new(stdout, max_line, tripped.clone());
            let transport = AsyncRwTransport::new_client(reader, stdin).with_max_line_length(usize::MAX);
            match client.serve(transport).await {
                Ok(service) => Ok((
                    service,
                    Opened::Child {
                        group,
                        child: Box::new(child),
                        tripped,
                    },
                )),
                Err(e) => {
                    group.kill();
                    let _ = child.wait().await;
                    let tail = log_tail(opts.log, 5);
                    let why = tripped.reason().map(OpenError::Failed).unwrap_or_else(|| init_error(e));
                    let mut msg = format!("{why} during the MCP handshake");
                    if !tail.is_empty() {
                        msg.push_str(&format!("; its stderr ended with:\n{tail}"));
                    }
                    Err(OpenError::Failed(msg))
                }
            }
        }
        Target::Spec(ServerSpec::Http { url, headers, .. }) => {
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(header_map(headers)?)
                .reinit_on_expired_session(true);
            let base = http_client()?;
            let service = match opts.access {
                None => serve_http(client, base, config, None).await?,
                Some(access) => match access.authorized(base.clone()).await {
                    Ok(Some(signed_in)) => {
                        serve_http(client, Watched::new(signed_in, access.clone()), config, Some(access)).await?
                    }
                    Ok(None) => serve_http(client, Watched::new(base, access.clone()), config, Some(access)).await?,
                    Err(e) => return Err(OpenError::NeedsAuth(format!("signing in failed: {e}"))),
                },
            };
            Ok((service, Opened::Remote))
        }
        Target::Spec(ServerSpec::Sdk) => Err(OpenError::Failed(NO_RELAY.into())),
        Target::Spec(ServerSpec::Sse { url, headers, .. }) => {
            let transport = SseTransport::connect(http_client()?, url, headers, opts.access).await?;
            let service = client.serve(transport).await.map_err(init_error)?;
            Ok((service, Opened::Remote))
        }
    }
}

/// Opens a streamable-HTTP session over `http`; a 401/403 becomes "needs sign-in", saying how.
async fn serve_http<C: StreamableHttpClient + Sync>(
    client: KeelClient,
    http: C,
    config: StreamableHttpClientTransportConfig,
    access: Option<&Arc<Access>>,
) -> Result<Service, OpenError> {
    let transport = StreamableHttpClientTransport::with_client(http, config);
    client.serve(transport).await.map_err(|e| {
        let challenge = access.and_then(|a| a.take_challenge());
        match (access, init_error(e)) {
            (Some(a), OpenError::NeedsAuth(_)) => OpenError::NeedsAuth(a.needs_sign_in(challenge.as_ref())),
            (Some(a), OpenError::Failed(_)) if challenge.is_some() => {
                OpenError::NeedsAuth(a.needs_sign_in(challenge.as_ref()))
            }
            (_, other) => other,
        }
    })
}

fn init_error(e: rmcp::service::ClientInitializeError) -> OpenError {
    let text = super::errors::init_error(&e);
    if e.is_authorization_required() || looks_unauthorized(&text) {
        OpenError::NeedsAuth(format!(
            "the server needs authentication (it answered 401/403); configure an Authorization header ({text})"
        ))
    } else {
        OpenError::Failed(text)
    }
}

pub fn looks_unauthorized(text: &str) -> bool {
    text.contains("401") || text.contains("403") || text.contains("Unauthorized")
}

fn header_map(
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, OpenError> {
    headers
        .iter()
        .map(|(k, v)| {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| OpenError::Failed(format!("`{k}` is not a valid header name")))?;
            let value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| OpenError::Failed(format!("the value of header `{k}` is not valid in HTTP")))?;
            Ok((name, value))
        })
        .collect()
}

pub fn http_client() -> Result<reqwest::Client, OpenError> {
    // Its sign-in may go to an https:// authorization server even for an http:// server.
    crate::provider::client::build(
        reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(30)),
        crate::provider::client::Reach::Tls,
    )
    .map_err(OpenError::Failed)
}

/// Starts a stdio server in its own process group with its stderr appended to `opts.log`.
fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    opts: &OpenOptions<'_>,
) -> Result<(tokio::process::Child, ProcessGroup), OpenError> {
    if let Some(dir) = opts.log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(opts.log)
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let dir: PathBuf = match cwd {
        Some(c) => crate::fsutil::paths::resolve(opts.project_dir, &c.to_string_lossy()),
        None => opts.project_dir.to_path_buf(),
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env)
        .env("CLAUDE_PROJECT_DIR", opts.project_dir)
        .env("KEEL_PROJECT_DIR", opts.project_dir)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true);
    let child = cmd.spawn().map_err(|e| {
        OpenError::Failed(match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("cannot start `{command}`: no such program (check `command` and PATH)")
            }
            _ => format!("cannot start `{command}`: {e}"),
        })
    })?;
    let group = ProcessGroup::of(&child);
    Ok((child, group))
}

/// The last `lines` lines of a server's log, for error messages.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
