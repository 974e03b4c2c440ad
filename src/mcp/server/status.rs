//! What is said about a server at one moment: its `State` and the `ServerStatus` that `/mcp`,
//! `system/init` and the SDK's `mcp_status` report. Plain values, apart from the connection.

use std::path::PathBuf;

use serde_json::Value;

use crate::mcp::config::Scope;

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
