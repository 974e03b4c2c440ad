//! The hub with a server reached through a message channel (how an embedding front end relays
//! its in-process servers): registration, status, tools, calls, deferral.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::server::Timeouts;
use super::{ChannelPeer, HubOptions, McpChannel, McpHub, State, search};
use crate::tools::registry::ToolRegistry;
use crate::tools::{ToolContext, Workspace};

/// A minimal in-process MCP server on the far end of a channel.
fn serve(mut peer: ChannelPeer, tools: usize) {
    tokio::spawn(async move {
        while let Some(msg) = peer.from_keel.recv().await {
            let Some(id) = msg.get("id").cloned() else {
                continue;
            };
            let result = match msg["method"].as_str().unwrap_or("") {
                "initialize" => json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}, "resources": {}},
                    "serverInfo": {"name": "calc", "version": "0.1"}
                }),
                "tools/list" => json!({"tools": (0..tools).map(|i| json!({
                    "name": if i == 0 { "add".to_string() } else { format!("tool_{i}") },
                    "description": "Adds two numbers",
                    "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}
                })).collect::<Vec<_>>()}),
                "tools/call" => {
                    let a = msg["params"]["arguments"]["a"].as_f64().unwrap_or(0.0);
                    let b = msg["params"]["arguments"]["b"].as_f64().unwrap_or(0.0);
                    json!({"content": [{"type": "text", "text": format!("{}", a + b)}]})
                }
                "resources/read" if msg["params"]["uri"] == "test://big" => json!({"contents": [
                    {"uri": "test://big", "mimeType": "text/plain", "text": "y".repeat(super::mentions::MAX_ATTACH_CHARS + 10)}
                ]}),
                "resources/read" => json!({"contents": [
                    {"uri": msg["params"]["uri"], "mimeType": "text/plain", "text": "resource body"}
                ]}),
                _ => json!({}),
            };
            if peer
                .to_keel
                .send(json!({"jsonrpc": "2.0", "id": id, "result": result}))
                .await
                .is_err()
            {
                break;
            }
        }
    });
}

fn hub(mode: search::Mode, context_window: u64) -> Arc<McpHub> {
    McpHub::new(HubOptions {
        timeouts: Timeouts {
            startup: Duration::from_secs(5),
            tool: Duration::from_secs(5),
        },
        output_budget: 100_000,
        tool_search: mode,
        context_window,
        project_dir: PathBuf::from("/"),
        log_dir: std::env::temp_dir(),
        hidden: Arc::new(|_| false),
        keel_home: None,
        elicitation: Arc::new(super::elicit::Route::default()),
    })
}

#[tokio::test]
async fn a_channel_server_registers_reports_and_answers() {
    let hub = hub(search::Mode::default(), 200_000);
    let registry = Arc::new(ToolRegistry::new(crate::tools::builtin_tools()).unwrap());
    hub.attach(&registry);
    let (channel, peer) = McpChannel::pair();
    serve(peer, 1);
    let status = hub.register_channel_server("calc", channel).await.unwrap();
    assert_eq!(status.state, State::Connected, "{:?}", status.detail);
    assert_eq!(status.tools, vec!["mcp__calc__add"]);
    assert_eq!(hub.init_json(), vec![json!({"name": "calc", "status": "connected"})]);
    assert!(registry.is_offered("mcp__calc__add"));

    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(
        Arc::new(Workspace::new(
            dir.path().to_path_buf(),
            dir.path().to_path_buf(),
            Vec::new(),
        )),
        tokio_util::sync::CancellationToken::new(),
        "toolu_1",
    );
    let tool = registry.get("mcp__calc__add").unwrap();
    assert!(
        tool.validate(&json!({"a": 1})).is_err(),
        "the server's schema is enforced"
    );
    let out = tool.tool.call(json!({"a": 2, "b": 3}), &ctx).await.unwrap();
    assert_eq!(out.content.as_text(), "5");
    assert!(!out.is_error);

    let (again, _peer) = McpChannel::pair();
    assert!(
        hub.register_channel_server("calc", again).await.is_err(),
        "names are unique"
    );
}

#[tokio::test]
async fn a_silent_channel_fails_with_a_clear_status() {
    let hub = hub(search::Mode::default(), 200_000);
    let registry = Arc::new(ToolRegistry::new(Vec::new()).unwrap());
    hub.attach(&registry);
    let (channel, peer) = McpChannel::pair();
    drop(peer);
    let status = hub.register_channel_server("gone", channel).await.unwrap();
    assert_eq!(status.state, State::Failed);
    assert!(status.detail.is_some());
    assert!(registry.names().is_empty());
}

#[tokio::test]
async fn many_tools_are_deferred_behind_tool_search() {
    let hub = hub(search::Mode::Auto(10), 10_000);
    let registry = Arc::new(ToolRegistry::new(Vec::new()).unwrap());
    hub.attach(&registry);
    let (channel, peer) = McpChannel::pair();
    serve(peer, 40);
    hub.register_channel_server("calc", channel).await.unwrap();
    let offered: Vec<String> = registry.tool_set().as_slice().iter().map(|d| d.name.clone()).collect();
    assert_eq!(offered, vec!["ToolSearch", "ListMcpResources", "ReadMcpResource"]);
    let description = registry.tool_set().as_slice()[0].description.clone();
    assert!(description.contains("- mcp__calc__tool_39"), "{description}");
    let generation = registry.generation();
    registry.activate(&["mcp__calc__add".to_string()]);
    assert!(registry.generation() > generation);
    let after: Vec<Value> = registry
        .tool_set()
        .as_slice()
        .iter()
        .map(|d| serde_json::to_value(d).unwrap())
        .collect();
    assert_eq!(after.len(), 4);
    assert_eq!(after[3]["name"], "mcp__calc__add");
    assert_eq!(
        after[0]["description"].as_str().unwrap(),
        description.as_str(),
        "activating does not change the listing"
    );
}

#[tokio::test]
async fn resource_mentions_attach_contents() {
    let hub = hub(search::Mode::default(), 200_000);
    let registry = Arc::new(ToolRegistry::new(Vec::new()).unwrap());
    hub.attach(&registry);
    let (channel, peer) = McpChannel::pair();
    serve(peer, 1);
    hub.register_channel_server("calc", channel).await.unwrap();
    assert!(registry.is_offered("ListMcpResources") && registry.is_offered("ReadMcpResource"));
    let cancel = tokio_util::sync::CancellationToken::new();
    let attached = super::mentions::resolve(&hub, "see @calc:test://a, and @src/main.rs", &cancel).await;
    assert_eq!(attached.handled, vec!["calc:test://a"]);
    assert_eq!(attached.blocks.len(), 1);
    let text = format!("{:?}", attached.blocks[0]);
    assert!(text.contains("resource body") && text.contains("test://a"), "{text}");
    let big = super::mentions::resolve(&hub, "@calc:test://big", &cancel).await;
    assert!(big.notes[0].contains("only its beginning"), "{:?}", big.notes);
}

#[tokio::test]
async fn a_sub_agents_subset_keeps_deferred_tools_behind_its_own_tool_search() {
    let hub = hub(search::Mode::Auto(10), 10_000);
    let parent = Arc::new(ToolRegistry::new(crate::tools::builtin_tools()).unwrap());
    hub.attach(&parent);
    let (channel, peer) = McpChannel::pair();
    serve(peer, 40);
    hub.register_channel_server("calc", channel).await.unwrap();
    parent.activate(&["mcp__calc__tool_5".to_string()]);
    let child = Arc::new(parent.subset(|n| n != "Bash").unwrap());
    assert!(child.get("Bash").is_none());
    assert!(child.get(search::NAME).is_none(), "the parent's loader is not copied");
    assert!(
        child.is_offered("mcp__calc__tool_5"),
        "what the parent loaded stays offered"
    );
    assert!(child.is_deferred("mcp__calc__add") && !child.is_offered("mcp__calc__add"));
    super::add_loader(&child);
    assert!(child.is_offered(search::NAME));
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(
        Arc::new(Workspace::new(
            dir.path().to_path_buf(),
            dir.path().to_path_buf(),
            Vec::new(),
        )),
        tokio_util::sync::CancellationToken::new(),
        "toolu_1",
    );
    let loader = child.get(search::NAME).unwrap();
    loader
        .tool
        .call(json!({"query": "select:mcp__calc__add"}), &ctx)
        .await
        .unwrap();
    assert!(
        child.is_offered("mcp__calc__add"),
        "loaded into the sub-agent's registry"
    );
    assert!(!parent.is_offered("mcp__calc__add"), "not into the parent's");
}
