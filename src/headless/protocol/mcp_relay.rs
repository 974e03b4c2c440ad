//! In-process MCP servers of the program driving keel (the Agent SDK's `create_sdk_mcp_server`):
//! keel's MCP client talks to each over an [`McpChannel`]; this relay carries every JSON-RPC
//! message to the program as an `mcp_message` control request and hands the `mcp_response` of
//! its answer back. An answer that is malformed, an error, or never comes (the program closed
//! its input) becomes a JSON-RPC error for that one request, so the tool call fails with a
//! message instead of waiting. Time limits are the MCP client's (`MCP_TIMEOUT`,
//! `MCP_TOOL_TIMEOUT`); when it gives up it sends `notifications/cancelled`, and the relay then
//! withdraws the control request (`control_cancel_request`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::task::AbortHandle;

use super::client::ClientLink;
use crate::mcp::{ChannelPeer, McpChannel, McpHub};

/// Attaches a relay to every in-process SDK server of the configuration (`--mcp-config` entries
/// with `"type": "sdk"`) and connects them.
pub async fn connect_configured(hub: Arc<McpHub>, link: Arc<ClientLink>) -> Vec<String> {
    let servers = hub.sdk_servers_to_relay();
    if servers.is_empty() {
        return Vec::new();
    }
    for server in &servers {
        let (channel, peer) = McpChannel::pair();
        server.attach_relay(channel);
        spawn_relay(server.name.clone(), peer, link.clone());
    }
    hub.start_all().await;
    servers
        .iter()
        .map(|s| s.status())
        .filter(|s| s.state != crate::mcp::State::Connected)
        .map(|s| {
            format!(
                "MCP server `{}` of the driving program is {}: {}",
                s.name,
                s.state.as_str(),
                s.detail.unwrap_or_default()
            )
        })
        .collect()
}

/// Registers and connects the servers `initialize` names in `sdkMcpServers` that the
/// configuration does not declare already. Returns one warning per name that cannot be served.
pub async fn connect_named(hub: Arc<McpHub>, link: Arc<ClientLink>, names: Vec<String>) -> Vec<String> {
    let mut warnings = Vec::new();
    for name in names {
        match hub.server(&name) {
            Some(s) if s.is_sdk() => {}
            Some(_) => warnings.push(format!(
                "sdkMcpServers: `{name}` is already configured as another kind of MCP server; the program's server of that name is not used"
            )),
            None => {
                let (channel, peer) = McpChannel::pair();
                spawn_relay(name.clone(), peer, link.clone());
                if let Err(e) = hub.register_channel_server(&name, channel).await {
                    warnings.push(format!("sdkMcpServers: {e}"));
                }
            }
        }
    }
    warnings
}

/// Relays one server's messages until keel drops its side of the channel.
fn spawn_relay(server: String, mut peer: ChannelPeer, link: Arc<ClientLink>) {
    let in_flight: Arc<Mutex<HashMap<String, AbortHandle>>> = Arc::default();
    tokio::spawn(async move {
        while let Some(message) = peer.from_keel.recv().await {
            if let Some(id) = cancelled_request(&message)
                && let Some(task) = in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&id)
            {
                // Dropping the wait withdraws the control request from the program.
                task.abort();
            }
            let request_id = message
                .get("method")
                .and(message.get("id"))
                .filter(|id| !id.is_null())
                .cloned();
            let to_keel = peer.to_keel.clone();
            let link = link.clone();
            let server = server.clone();
            let registry = in_flight.clone();
            let key = request_id.as_ref().and_then(id_key);
            // Held until the task is recorded, so it cannot remove its entry before it exists.
            let mut open = in_flight.lock().unwrap_or_else(|p| p.into_inner());
            let task = tokio::spawn(async move {
                let method = message.get("method").and_then(Value::as_str).unwrap_or("").to_string();
                let answer = link
                    .request(json!({"subtype": "mcp_message", "server_name": server, "message": message}))
                    .await;
                // Notifications and keel's own responses need no answer back.
                let Some(id) = request_id else { return };
                let reply = reply_for(&id, &method, answer);
                if let Some(k) = id_key(&id) {
                    registry.lock().unwrap_or_else(|p| p.into_inner()).remove(&k);
                }
                let _ = to_keel.send(reply).await;
            });
            if let Some(k) = key {
                open.insert(k, task.abort_handle());
            }
        }
    });
}

fn id_key(id: &Value) -> Option<String> {
    (!id.is_null()).then(|| id.to_string())
}

/// The request a `notifications/cancelled` withdraws.
fn cancelled_request(message: &Value) -> Option<String> {
    if message.get("method").and_then(Value::as_str) != Some("notifications/cancelled") {
        return None;
    }
    id_key(message.get("params")?.get("requestId")?)
}

/// The JSON-RPC message keel's client receives for request `id`: the program's response when
/// it is one for this request, else an error that says what went wrong.
pub fn reply_for(id: &Value, method: &str, answer: Result<Value, String>) -> Value {
    let problem = match answer {
        Err(e) => format!("the program driving keel failed to answer `{method}`: {e}"),
        Ok(body) => match body.get("mcp_response") {
            Some(r) if r.get("id") == Some(id) && (r.get("result").is_some() || r.get("error").is_some()) => {
                let mut r = r.clone();
                r["jsonrpc"] = json!("2.0");
                return r;
            }
            Some(r) => format!(
                "the program driving keel answered `{method}` with a malformed MCP message (expected a JSON-RPC response with id {id} and a result or an error): {}",
                clip(&r.to_string())
            ),
            None => format!(
                "the program driving keel answered `{method}` without an `mcp_response`: {}",
                clip(&body.to_string())
            ),
        },
    };
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": problem}})
}

fn clip(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matching_response_passes_through() {
        let r = reply_for(
            &json!(3),
            "tools/call",
            Ok(json!({"mcp_response": {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}})),
        );
        assert_eq!(r, json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}}));
        let e = reply_for(
            &json!("a"),
            "tools/call",
            Ok(json!({"mcp_response": {"id": "a", "error": {"code": -32601, "message": "nope"}}})),
        );
        assert_eq!(e["error"]["message"], "nope");
        assert_eq!(e["jsonrpc"], "2.0");
    }

    #[test]
    fn wrong_missing_or_failed_answers_become_errors_for_that_request() {
        let cases = [
            Ok(json!({"mcp_response": {"jsonrpc": "2.0", "id": 4, "result": {}}})),
            Ok(json!({"mcp_response": {"jsonrpc": "2.0", "id": 3}})),
            Ok(json!({"mcp_response": "yes"})),
            Ok(json!({})),
            Err("the client has closed its input".to_string()),
        ];
        for answer in cases {
            let r = reply_for(&json!(3), "tools/call", answer.clone());
            assert_eq!(r["id"], 3, "{answer:?}");
            assert!(r.get("result").is_none(), "{answer:?}");
            let m = r["error"]["message"].as_str().unwrap();
            assert!(m.contains("tools/call") && m.contains("program driving keel"), "{m}");
        }
    }

    #[test]
    fn a_cancellation_names_the_request_it_withdraws() {
        let n =
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "t"}});
        assert_eq!(cancelled_request(&n).as_deref(), Some("7"));
        assert_eq!(cancelled_request(&json!({"method": "tools/call", "id": 7})), None);
    }

    #[test]
    fn long_answers_are_clipped_on_a_character_boundary() {
        let s = "é".repeat(400);
        let c = clip(&s);
        assert!(c.len() < 310 && c.ends_with('…'));
    }
}
