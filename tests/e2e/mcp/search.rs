//! Deferred MCP tools and ToolSearch.

use super::{config, log_path, python, stdio};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};
use serde_json::json;

#[tokio::test]
async fn tool_search_keeps_the_first_request_small_and_appends_what_it_loads() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "q1",
            "ToolSearch",
            json!({"query": "select:mcp__t__filler_007"}),
        )]))
        .push(calls(vec![
            tool("f1", "mcp__t__filler_007", json!({"record": "A7"})),
            tool("q2", "ToolSearch", json!({"query": "+echo message"})),
        ]))
        .push(calls(vec![tool("e1", "mcp__t__echo", json!({"message": "found"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &["--fillers", "120"])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let first = requests[0].tool_names();
    assert!(first.contains(&"ToolSearch".to_string()), "{first:?}");
    assert!(
        !first.iter().any(|n| n.starts_with("mcp__t__")),
        "MCP tools are deferred: {first:?}"
    );
    let search = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ToolSearch")
        .unwrap()
        .clone();
    let listing = search["description"].as_str().unwrap();
    assert!(
        listing.contains("mcp__t__filler_119") && listing.contains("mcp__t__echo"),
        "{listing}"
    );
    // Compared with the same session without deferral, the first request's tools are small.
    let full = ModelServer::start().await;
    full.push(answer("done"));
    env.keel(&full)
        .env("ENABLE_TOOL_SEARCH", "false")
        .args(["-p", "go", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &["--fillers", "120"])})))
        .run()
        .await;
    let all_tools = full.requests()[0].body["tools"].to_string().len();
    let first_tools = requests[0].body["tools"].to_string().len();
    assert!(
        first_tools * 4 < all_tools,
        "deferred: {first_tools} bytes of tools; all: {all_tools} bytes"
    );

    let (text, is_error) = requests[1].tool_result_text("q1");
    assert!(!is_error, "{text}");
    assert!(text.contains("\"name\":\"mcp__t__filler_007\""), "{text}");
    // Loaded tools are appended: the earlier tools are an unchanged prefix.
    let second = requests[1].body["tools"].as_array().unwrap().clone();
    let first_defs = requests[0].body["tools"].as_array().unwrap().clone();
    assert_eq!(
        &second[..first_defs.len()],
        &first_defs[..],
        "the prefix is byte-stable"
    );
    assert_eq!(second.len(), first_defs.len() + 1);
    assert_eq!(second.last().unwrap()["name"], "mcp__t__filler_007");

    assert_eq!(requests[2].tool_result_text("f1").0, "filler_007: record A7");
    assert!(requests[2].tool_result_text("q2").0.contains("mcp__t__echo"));
    let third = requests[2].body["tools"].as_array().unwrap().clone();
    assert_eq!(&third[..second.len()], &second[..]);
    assert_eq!(requests[3].tool_result_text("e1").0, "Echo: found");
}

#[tokio::test]
async fn few_tools_are_not_deferred_and_the_setting_can_force_it() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "t");
    let cfg = config(json!({"t": stdio(&log, &[])}));
    let server = ModelServer::start().await;
    server.push(answer("done"));
    env.keel(&server).args(["-p", "go", "--mcp-config", &cfg]).run().await;
    let names = server.requests()[0].tool_names();
    assert!(names.contains(&"mcp__t__echo".to_string()) && !names.contains(&"ToolSearch".to_string()));

    let server = ModelServer::start().await;
    server.push(answer("done"));
    env.keel(&server)
        .args([
            "-p",
            "go",
            "--settings",
            r#"{"toolSearch": true}"#,
            "--mcp-config",
            &cfg,
        ])
        .run()
        .await;
    let names = server.requests()[0].tool_names();
    assert!(
        !names.contains(&"mcp__t__echo".to_string()) && names.contains(&"ToolSearch".to_string()),
        "{names:?}"
    );
}
