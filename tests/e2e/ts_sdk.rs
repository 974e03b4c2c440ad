//! The real TypeScript Agent SDK drives keel: a one-shot `query()`, then a streaming session
//! with an in-process MCP tool (`createSdkMcpServer`), `canUseTool` and `mcpServerStatus()`.

use serde_json::{Value, json};

use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, ts_sdk};

#[tokio::test]
async fn the_typescript_sdk_runs_queries_tools_of_its_own_and_permission_callbacks() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(answer("Hello from keel."))
        .push(calls(vec![tool("m1", "mcp__calc__add", json!({"a": 2, "b": 3}))]))
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": "note.txt", "content": "5\n"}),
        )]))
        .push(answer("2 + 3 = 5; no note written."));
    let r = or_skip!(ts_sdk::run(&env, &server, "query").await);
    let one_shot: Vec<&Value> = r.of("one_shot").iter().map(|l| &l["message"]).collect();
    let init = one_shot.iter().find(|m| m["subtype"] == "init").expect("system/init");
    assert_eq!(init["claude_code_version"], env!("CARGO_PKG_VERSION"));
    let result = one_shot.iter().find(|m| m["type"] == "result").expect("a result");
    assert_eq!(result["result"], "Hello from keel.", "{}", r.stderr);

    // The tool ran in the Node process with the model's arguments; its answer reached the model.
    assert_eq!(r.of("calls")[0]["value"], json!([{"a": 2, "b": 3}]));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[2].tool_result_text("m1"), ("sum=5".to_string(), false));
    // canUseTool was asked about the Write and its denial reached the model.
    let asked = r.of("asked");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["toolName"], "Write");
    let (denied, is_error) = reqs[3].tool_result_text("w1");
    assert!(is_error && denied.contains("No notes today."), "{denied}");
    assert!(!env.path("note.txt").exists());
    let session: Vec<&Value> = r.of("session").iter().map(|l| &l["message"]).collect();
    let result = session.iter().find(|m| m["type"] == "result").expect("a result");
    assert_eq!(result["result"], "2 + 3 = 5; no note written.");
    let status = &r.of("status")[0]["value"];
    let calc = status
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "calc"))
        .unwrap_or_else(|| panic!("calc in {status}"));
    assert_eq!(calc["status"], "connected");
}
