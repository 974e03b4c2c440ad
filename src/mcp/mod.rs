//! The MCP client: configured servers (`sources.rs`, `config.rs`), their connections
//! (`server.rs`, `transport.rs`, `sse.rs`), their tools as keel tools (`tool.rs`, `result.rs`,
//! `names.rs`), resources (`resources.rs`), and deferred tools behind ToolSearch (`search.rs`).
//!
//! [`McpHub`] owns the servers of a session. Front ends start it once
//! ([`McpHub::start_all`]: all servers in parallel, tools registered in configuration order so
//! the tool list is the same whichever server answers first), report it
//! ([`McpHub::statuses`]) and shut it down. An embedding front end registers servers it relays
//! itself with [`McpHub::register_channel_server`].

pub mod auth;
pub mod config;
pub mod elicit;
pub mod errors;
pub mod line_cap;
pub mod manage;
pub mod mentions;
pub mod names;
pub mod report;
pub mod resources;
pub mod result;
pub mod search;
pub mod server;
pub mod setup;
pub mod signin;
pub mod sources;
pub mod sse;
pub mod startup;
pub mod tool;
pub mod transport;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

pub use server::{ServerStatus, State};
pub use transport::{ChannelPeer, McpChannel};

use crate::tools::Tool;
use crate::tools::registry::ToolRegistry;
use config::Scope;
use server::{Reach, RemoteTool, Server, Timeouts};

/// Session-wide MCP settings, lowered from the environment and settings.
#[derive(Clone)]
pub struct HubOptions {
    pub timeouts: Timeouts,
    /// Characters of a tool result kept before spilling (`MAX_MCP_OUTPUT_TOKENS` × 4).
    pub output_budget: usize,
    pub tool_search: search::Mode,
    /// The model's context window in tokens (for the deferral threshold).
    pub context_window: u64,
    pub project_dir: PathBuf,
    /// Where stdio servers' stderr logs go.
    pub log_dir: PathBuf,
    /// Tools a bare-name deny rule removes from the model's view.
    pub hidden: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// Where HTTP servers' sign-ins are kept (`<KEEL_HOME>/mcp-auth/`); `None`: nowhere.
    pub keel_home: Option<PathBuf>,
    /// Who answers servers' elicitation requests (front ends replace the default).
    pub elicitation: Arc<elicit::Route>,
}

pub struct McpHub {
    me: Weak<McpHub>,
    options: HubOptions,
    servers: Mutex<Vec<Arc<Server>>>,
    registry: Mutex<Option<Weak<ToolRegistry>>>,
    taken: Mutex<BTreeSet<String>>,
    /// Tokens of the MCP tool definitions registered so far (for the deferral threshold).
    mcp_tokens: Mutex<u64>,
    search_registered: AtomicBool,
    resources_registered: AtomicBool,
    /// A program relays in-process SDK servers (`--input-format stream-json`); without one
    /// they are reported failed instead of waiting.
    relays_expected: AtomicBool,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field(
                "servers",
                &self.servers().iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A configured server as the hub receives it.
pub struct Planned {
    pub name: String,
    pub scope: Scope,
    pub source: String,
    pub spec: Result<config::ServerSpec, String>,
    /// `None`: may start; `Some(reason)`: disabled (not approved, rejected).
    pub disabled: Option<String>,
}

impl McpHub {
    pub fn new(options: HubOptions) -> Arc<McpHub> {
        Arc::new_cyclic(|me| McpHub {
            me: me.clone(),
            options,
            servers: Mutex::new(Vec::new()),
            registry: Mutex::new(None),
            taken: Mutex::new(BTreeSet::new()),
            mcp_tokens: Mutex::new(0),
            search_registered: AtomicBool::new(false),
            resources_registered: AtomicBool::new(false),
            relays_expected: AtomicBool::new(false),
        })
    }

    /// Adds configured servers (not started yet).
    pub fn plan(&self, planned: Vec<Planned>) {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        for p in planned {
            let (reach, initial) = match (p.spec, p.disabled) {
                (Err(e), _) => (
                    Reach::None,
                    (State::Failed, Some(format!("invalid configuration: {e}"))),
                ),
                (Ok(spec), Some(reason)) => (Reach::Spec(spec), (State::Disabled, Some(reason))),
                (Ok(spec), None) => (Reach::Spec(spec), (State::Pending, None)),
            };
            servers.push(Arc::new(self.new_server(p.name, p.scope, p.source, reach, initial)));
        }
    }

    fn new_server(
        &self,
        name: String,
        scope: Scope,
        source: String,
        reach: Reach,
        initial: (State, Option<String>),
    ) -> Server {
        let log = self.options.log_dir.join(format!("{}.log", names::sanitize(&name)));
        Server::new(
            name,
            scope,
            source,
            reach,
            initial,
            server::Placement {
                project_dir: self.options.project_dir.clone(),
                log,
                timeouts: self.options.timeouts,
                keel_home: self.options.keel_home.clone(),
                elicitation: self.options.elicitation.clone(),
            },
        )
    }

    /// The registry MCP tools are added to (held weakly: the registry's tools hold the hub).
    pub fn attach(&self, registry: &Arc<ToolRegistry>) {
        *self.registry.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::downgrade(registry));
        let hub = self.me.clone();
        registry.explain_unknown(Arc::new(move |name| hub.upgrade()?.why_missing(name)));
    }

    /// Why a tool name of one of the servers is not registered: the server did not start (or
    /// may not), in its own words.
    pub fn why_missing(&self, tool_name: &str) -> Option<String> {
        // The longest prefix: `mcp__a__b__x` belongs to server `a__b` if there is one.
        let server = self
            .servers()
            .into_iter()
            .filter(|s| tool_name.starts_with(&names::server_prefix(&s.name)))
            .max_by_key(|s| names::server_prefix(&s.name).len())?;
        let status = server.status();
        let detail = status.detail.unwrap_or_else(|| "no reason was given".into());
        let detail = detail.trim_end().trim_end_matches('.');
        let name = &server.name;
        Some(match status.state {
            State::Connected => return None,
            State::Failed => {
                format!("MCP server `{name}` failed to start, so none of its tools exist in this session: {detail}.")
            }
            State::NeedsAuth => {
                format!("MCP server `{name}` needs authentication, so its tools are missing: {detail}.")
            }
            State::Disabled => format!("MCP server `{name}` is not running: {detail}."),
            State::Pending => format!("MCP server `{name}` has not finished starting."),
        })
    }

    fn registry(&self) -> Option<Arc<ToolRegistry>> {
        self.registry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()?
            .upgrade()
    }

    /// Who answers the servers' elicitation requests (front ends install theirs).
    pub fn elicitation(&self) -> &Arc<elicit::Route> {
        &self.options.elicitation
    }

    /// Where HTTP servers' sign-ins are kept; `None`: nowhere.
    pub fn keel_home(&self) -> Option<&std::path::Path> {
        self.options.keel_home.as_deref()
    }

    pub fn servers(&self) -> Vec<Arc<Server>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn server(&self, name: &str) -> Option<Arc<Server>> {
        self.servers().into_iter().find(|s| s.name == name)
    }

    pub fn is_empty(&self) -> bool {
        self.servers().is_empty()
    }

    pub fn unknown_server(&self, name: &str) -> String {
        let names: Vec<String> = self.servers().iter().map(|s| s.name.clone()).collect();
        format!(
            "no MCP server is named `{name}`; configured servers: {}",
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        )
    }

    /// Starts every startable server that is not connected yet, all at once, and registers
    /// their tools in configuration order.
    pub async fn start_all(&self) {
        if !self.relays_expected.load(Ordering::Relaxed) {
            for s in self.servers() {
                s.fail_unrelayed();
            }
        }
        let servers: Vec<Arc<Server>> = self
            .servers()
            .into_iter()
            .filter(|s| {
                s.startable() && (s.state() == State::Pending || s.recheck_sign_in()) && s.status().tools.is_empty()
            })
            .collect();
        let started = futures_util::future::join_all(servers.iter().map(|s| s.start())).await;
        let mut batch = Vec::new();
        for (server, result) in servers.into_iter().zip(started) {
            if let Ok(tools) = result {
                batch.push((server, tools));
            }
        }
        self.register(batch).await;
    }

    /// Approves a server that was waiting (interactive approval) and starts it.
    pub async fn approve_and_start(&self, name: &str) {
        if let Some(s) = self.server(name) {
            s.approve();
            self.start_all().await;
        }
    }

    /// Lists a server's tools again after it announced a change and registers the new ones
    /// (appended, like any late tool). Tools it no longer has stay registered; calling them
    /// returns the server's own error.
    pub async fn refresh(&self, server: &Arc<Server>) {
        if let Ok(tools) = server.start().await {
            self.register(vec![(server.clone(), tools)]).await;
        }
    }

    /// Registers a server reached through a message channel (the Agent SDK's in-process
    /// servers), connects it and adds its tools. Returns its status; failures are reported
    /// there, not as an error. A name already in use is refused.
    pub async fn register_channel_server(&self, name: &str, channel: McpChannel) -> Result<ServerStatus, String> {
        config::validate_name(name)?;
        if self.server(name).is_some() {
            return Err(format!("an MCP server named `{name}` is already configured"));
        }
        let server = Arc::new(self.new_server(
            name.to_string(),
            Scope::Sdk,
            "sdk".into(),
            Reach::Channel(channel),
            (State::Pending, None),
        ));
        self.servers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(server.clone());
        if let Ok(tools) = server.start().await {
            self.register(vec![(server.clone(), tools)]).await;
        }
        Ok(server.status())
    }

    /// The driving program will relay in-process SDK servers: they wait for
    /// [`McpHub::sdk_servers_to_relay`] instead of failing at start.
    pub fn expect_relays(&self) {
        self.relays_expected.store(true, Ordering::Relaxed);
    }

    /// In-process SDK servers from the configuration that no relay serves yet.
    pub fn sdk_servers_to_relay(&self) -> Vec<Arc<Server>> {
        self.servers()
            .into_iter()
            .filter(|s| s.is_sdk() && !s.has_relay())
            .collect()
    }

    /// Every server's status, in configuration order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers().iter().map(|s| s.status()).collect()
    }

    /// The `system/init` `mcp_servers` list.
    pub fn init_json(&self) -> Vec<Value> {
        self.statuses().iter().map(ServerStatus::init_json).collect()
    }

    /// Closes every connection and kills every stdio server's process group.
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.servers().iter().map(|s| s.shutdown())).await;
    }

    async fn register(&self, batch: Vec<(Arc<Server>, Vec<RemoteTool>)>) {
        let Some(registry) = self.registry() else {
            return;
        };
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut any_resources = false;
        for (server, remote) in batch {
            any_resources |= server.has_capability("resources").await;
            let mut names = Vec::new();
            let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
            for r in remote {
                if !server.note_remote(&r.name) {
                    continue;
                }
                let name = names::tool_name(&server.name, &r.name, &mut taken);
                if (self.options.hidden)(&name) {
                    continue;
                }
                names.push(name.clone());
                tools.push(Arc::new(tool::McpTool::new(
                    name,
                    r,
                    server.clone(),
                    self.options.output_budget,
                    self.me.clone(),
                )));
            }
            server.set_tool_names(names);
        }
        let tokens: u64 = tools
            .iter()
            .map(|t| {
                (t.name().len() + t.description().len() + t.input_schema().to_string().len()) as u64
                    / crate::context::tokens::BYTES_PER_TOKEN
            })
            .sum();
        let total = {
            let mut t = self.mcp_tokens.lock().unwrap_or_else(|p| p.into_inner());
            *t += tokens;
            *t
        };
        let deferred = !tools.is_empty() && self.options.tool_search.defers(total, self.options.context_window);
        if deferred && !self.search_registered.swap(true, Ordering::Relaxed) {
            let search: Arc<dyn Tool> = Arc::new(search::ToolSearch::new(&registry));
            if let Err(e) = registry.add(vec![search], false) {
                crate::debug::log(format!("mcp: cannot register ToolSearch: {e}"));
            }
        }
        if any_resources && !self.resources_registered.swap(true, Ordering::Relaxed) {
            let list: Arc<dyn Tool> = Arc::new(resources::ListResources { hub: self.me.clone() });
            let read: Arc<dyn Tool> = Arc::new(resources::ReadResource { hub: self.me.clone() });
            let wanted: Vec<Arc<dyn Tool>> = vec![list, read]
                .into_iter()
                .filter(|t| !(self.options.hidden)(t.name()))
                .collect();
            if let Err(e) = registry.add(wanted, false) {
                crate::debug::log(format!("mcp: cannot register the resource tools: {e}"));
            }
        }
        if let Err(e) = registry.add(tools, deferred) {
            crate::debug::log(format!("mcp: cannot register tools: {e}"));
        }
    }

    /// The servers' prompts as slash commands: `(command, server, prompt, description, argument names)`.
    pub async fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut out = Vec::new();
        for server in self.servers() {
            if server.state() != State::Connected {
                continue;
            }
            let Ok(list) = server.list_prompts().await else {
                continue;
            };
            for p in list.as_array().cloned().unwrap_or_default() {
                let Some(name) = p.get("name").and_then(Value::as_str) else {
                    continue;
                };
                out.push(PromptCommand {
                    command: format!("mcp__{}__{}", names::sanitize(&server.name), names::sanitize(name)),
                    server: server.name.clone(),
                    prompt: name.to_string(),
                    description: p.get("description").and_then(Value::as_str).unwrap_or("").to_string(),
                    arguments: p
                        .get("arguments")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|x| x.get("name").and_then(Value::as_str).map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default(),
                });
            }
        }
        out
    }

    /// Expands `/mcp__server__prompt args` into the prompt's text. `None`: not an MCP prompt
    /// command. Arguments are given positionally, in the prompt's argument order.
    pub async fn expand_prompt(&self, line: &str) -> Option<Result<String, String>> {
        let rest = line.trim_start().strip_prefix("/mcp__")?;
        let (command, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let command = format!("mcp__{command}");
        let prompts = self.prompt_commands().await;
        let Some(p) = prompts.iter().find(|p| p.command == command) else {
            return Some(Err(format!("no MCP prompt is named /{command}")));
        };
        let server = self.server(&p.server)?;
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut map = serde_json::Map::new();
        for (i, name) in p.arguments.iter().enumerate() {
            let value = if i + 1 == p.arguments.len() {
                words.get(i..).map(|w| w.join(" ")).unwrap_or_default()
            } else {
                words.get(i).map(|w| w.to_string()).unwrap_or_default()
            };
            if !value.is_empty() {
                map.insert(name.clone(), Value::String(value));
            }
        }
        let cancel = tokio_util::sync::CancellationToken::new();
        Some(
            server
                .get_prompt(&p.prompt, map, &cancel)
                .await
                .map(|v| result::prompt_text(&v))
                .map_err(|e| e.message(&server.name)),
        )
    }
}

/// Gives a registry with deferred tools its own ToolSearch (a sub-agent's registry, made with
/// `ToolRegistry::subset`, leaves out the parent's, which loads into the parent's registry).
pub fn add_loader(registry: &Arc<ToolRegistry>) {
    if registry.deferred_pending().is_empty() || registry.get(search::NAME).is_some() {
        return;
    }
    let search: Arc<dyn Tool> = Arc::new(search::ToolSearch::new(registry));
    if let Err(e) = registry.add(vec![search], false) {
        crate::debug::log(format!("mcp: cannot give a sub-agent ToolSearch: {e}"));
    }
}

/// An MCP prompt offered as a slash command.
#[derive(Debug, Clone)]
pub struct PromptCommand {
    pub command: String,
    pub server: String,
    pub prompt: String,
    pub description: String,
    pub arguments: Vec<String>,
}

#[cfg(test)]
mod tests;
