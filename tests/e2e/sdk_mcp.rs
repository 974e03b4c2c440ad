//! In-process MCP servers of the program driving keel: the real Python Agent SDK's
//! `create_sdk_mcp_server` tools called by the model through `mcp_message` control requests.

use serde_json::{Value, json};

use crate::support::sdk;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

#[tokio::test]
async fn an_sdk_mcp_tool_runs_in_the_program_and_its_result_reaches_the_model() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("m1", "mcp__calc__add", json!({"a": 2, "b": 3})),
            tool("m2", "mcp__calc__fail", json!({})),
        ]))
        .push(answer("2 + 3 = 5"));
    let Some(r) = sdk::run(&env, &server, "mcp_tool").await else {
        return;
    };
    // The tool ran in the Python process, with the model's arguments.
    let calls = r.get("calls");
    assert_eq!(calls["value"], json!([{"a": 2, "b": 3}]));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let names = reqs[0].tool_names();
    assert!(names.contains(&"mcp__calc__add".to_string()), "{names:?}");
    let (sum, is_error) = reqs[1].tool_result_text("m1");
    assert!(!is_error, "{sum}");
    assert_eq!(sum, format!("sum=5 pid={}", calls["pid"]));
    // A tool that raises is an error result carrying the program's message.
    let (failed, is_error) = reqs[1].tool_result_text("m2");
    assert!(is_error && failed.contains("the calculator is broken"), "{failed}");
    // mcp_status and system/init list the program's server as connected.
    let status = &r.get("status")["value"]["mcpServers"];
    let calc: Vec<&Value> = status.as_array().unwrap().iter().filter(|s| s["name"] == "calc").collect();
    assert_eq!(calc.len(), 1, "{status}");
    assert_eq!(calc[0]["status"], "connected");
    assert_eq!(calc[0]["serverInfo"], "calc 1.2.3");
    let init = r
        .messages()
        .into_iter()
        .find(|m| m["type"] == "SystemMessage" && m["data"]["subtype"] == "init")
        .expect("an init message");
    assert_eq!(
        init["data"]["data"]["mcp_servers"],
        json!([{"name": "calc", "status": "connected"}])
    );
}
