//! MCP servers end to end: keel against the test server in `support/mcp_server.py` (stdio,
//! streamable HTTP, legacy SSE), driven by the scripted model server.

mod config;
mod conformance;
mod elicit_hooks;
mod remote;
mod search;
mod signin;
mod stdio;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::support::{Env, read_jsonl};

pub(crate) const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/support/mcp_server.py");

/// The test server needs python3: `or_skip!(python())`.
pub(crate) fn python() -> Result<(), crate::support::skip::Lack> {
    crate::support::skip::python3()
}

/// A stdio server entry running the test server with its message log at `log`.
pub(crate) fn stdio(log: &Path, extra: &[&str]) -> Value {
    let mut args = vec![json!(SERVER), json!("--log"), json!(log)];
    args.extend(extra.iter().map(|a| json!(a)));
    json!({"command": "python3", "args": args})
}

pub(crate) fn config(servers: Value) -> String {
    json!({ "mcpServers": servers }).to_string()
}

/// Every message the server received (`recv` entries of its log).
pub(crate) fn received(log: &Path) -> Vec<Value> {
    if !log.exists() {
        return Vec::new();
    }
    read_jsonl(log)
        .into_iter()
        .filter_map(|v| v.get("recv").cloned())
        .collect()
}

pub(crate) fn calls_of(log: &Path, tool: &str) -> usize {
    received(log)
        .iter()
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
        .count()
}

pub(crate) fn init_line(out: &crate::support::Out) -> Value {
    out.lines()
        .into_iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .expect("an init line")
}

/// An HTTP-mode test server (`--http` or `--sse`), killed on drop.
pub(crate) struct HttpServer {
    child: tokio::process::Child,
    pub port: u16,
}

impl HttpServer {
    pub(crate) async fn start(mode: &str, log: &Path, extra: &[&str]) -> HttpServer {
        let mut child = tokio::process::Command::new("python3")
            .arg(SERVER)
            .arg(mode)
            .arg("--log")
            .arg(log)
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the test server");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("the server prints its port")
            .unwrap()
            .unwrap();
        let port = line.trim_start_matches("PORT ").trim().parse().expect("a port");
        HttpServer { child, port }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

pub(crate) fn log_path(env: &Env, name: &str) -> PathBuf {
    env.home.join(format!("{name}.jsonl"))
}
