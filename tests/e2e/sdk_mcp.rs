//! In-process MCP servers of the program driving keel: the real Python Agent SDK's
//! `create_sdk_mcp_server` tools called by the model through `mcp_message` control requests.

use serde_json::{Value, json};

use crate::support::sdk;
use crate::support::skip::or_skip;
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
    let r = or_skip!(sdk::run(&env, &server, "mcp_tool").await);
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
    // The SDK gets the in-process tool's result as a list of blocks, as the tool returned it.
    let result = r
        .messages()
        .into_iter()
        .filter(|m| m["type"] == "UserMessage")
        .flat_map(|m| m["data"]["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["tool_use_id"] == "m1")
        .expect("the tool result reached the SDK");
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": format!("sum=5 pid={}", calls["pid"])}]),
        "{result}"
    );
    // mcp_status and system/init list the program's server as connected.
    let status = &r.get("status")["value"]["mcpServers"];
    let calc: Vec<&Value> = status
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "calc")
        .collect();
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

const STREAM: [&str; 5] = [
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

const SDK_CONFIG: &str = r#"{"mcpServers":{"calc":{"type":"sdk","name":"calc"}}}"#;

/// How the hand-written program below answers each tool call.
fn raw_answer(message: &Value) -> Option<Result<Value, String>> {
    let id = message["id"].clone();
    let ok = |result: Value| {
        Some(Ok(
            json!({"mcp_response": {"jsonrpc": "2.0", "id": id, "result": result}}),
        ))
    };
    match message["method"].as_str().unwrap_or("") {
        "initialize" => ok(json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"}
        })),
        "tools/list" => {
            let tools: Vec<Value> = ["fine", "garbled", "refused", "silent"]
                .iter()
                .map(|n| json!({"name": n, "description": n, "inputSchema": {"type": "object"}}))
                .collect();
            ok(json!({ "tools": tools }))
        }
        "tools/call" => match message["params"]["name"].as_str().unwrap_or("") {
            "fine" => ok(json!({"content": [{"type": "text", "text": "all fine"}]})),
            // An answer for some other request.
            "garbled" => Some(Ok(
                json!({"mcp_response": {"jsonrpc": "2.0", "id": 999, "result": {"content": []}}}),
            )),
            "refused" => Some(Err("boom in the program".into())),
            _ => None,
        },
        _ => Some(Ok(json!({"mcp_response": {"jsonrpc": "2.0", "result": {}}}))),
    }
}

/// What the hand-written program saw: every line keel wrote, and the `mcp_message` it never
/// answered (control request id, JSON-RPC id).
struct Driven {
    lines: Vec<Value>,
    silent: Option<(String, Value)>,
    out: crate::support::Out,
}

/// Drives keel by hand over stdin/stdout: writes `first` lines, then one user message per
/// entry of `prompts`, each after the previous result; answers `mcp_message` requests with
/// `raw_answer`, and answers a withdrawn request late (keel must ignore it).
async fn drive(mut keel: crate::support::Keel, first: Vec<String>, prompts: &[&str]) -> Driven {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = keel.spawn_driven();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let user = |t: &str| json!({"type": "user", "message": {"role": "user", "content": t}}).to_string() + "\n";
    for l in first {
        stdin.write_all(format!("{l}\n").as_bytes()).await.unwrap();
    }
    stdin.write_all(user(prompts[0]).as_bytes()).await.unwrap();
    let mut lines = Vec::new();
    let mut silent: Option<(String, Value)> = None;
    let mut results = 0;
    let run = async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "control_request" && v["request"]["subtype"] == "mcp_message" {
                let id = v["request_id"].as_str().unwrap().to_string();
                let message = &v["request"]["message"];
                let reply = match raw_answer(message) {
                    Some(Ok(r)) => {
                        json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": r}})
                    }
                    Some(Err(e)) => {
                        json!({"type": "control_response", "response": {"subtype": "error", "request_id": id, "error": e}})
                    }
                    None => {
                        silent = Some((id, message["id"].clone()));
                        lines.push(v);
                        continue;
                    }
                };
                stdin.write_all(format!("{reply}\n").as_bytes()).await.unwrap();
            }
            if v["type"] == "control_cancel_request"
                && let Some((id, rpc_id)) = &silent
                && v["request_id"] == id.as_str()
            {
                let late = json!({"type": "control_response", "response": {"subtype": "success", "request_id": id,
                    "response": {"mcp_response": {"jsonrpc": "2.0", "id": rpc_id, "result": {"content": [{"type": "text", "text": "too late"}]}}}}});
                stdin.write_all(format!("{late}\n").as_bytes()).await.unwrap();
            }
            let done = v["type"] == "result";
            lines.push(v);
            if done {
                results += 1;
                match prompts.get(results) {
                    Some(p) => stdin.write_all(user(p).as_bytes()).await.unwrap(),
                    None => break,
                }
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("keel answered within a minute");
    drop(stdin);
    let out = crate::support::finish(child).await;
    Driven { lines, silent, out }
}

/// Malformed, failed and never-given answers each end their own call with a clear error, and
/// a late answer to a withdrawn request changes nothing.
#[tokio::test]
async fn bad_late_and_missing_mcp_answers_are_tool_errors_not_hangs() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("t1", "mcp__calc__fine", json!({})),
            tool("t2", "mcp__calc__garbled", json!({})),
            tool("t3", "mcp__calc__refused", json!({})),
            tool("t4", "mcp__calc__silent", json!({})),
        ]))
        .push(answer("done"))
        .push(answer("still working"));
    let mut keel = env.keel(&server);
    keel.args(STREAM)
        .args(["--mcp-config", SDK_CONFIG, "--allowedTools", "mcp__calc"])
        .env("MCP_TOOL_TIMEOUT", "1500");
    let d = drive(keel, Vec::new(), &["use the calculator", "and now?"]).await;
    assert_eq!(d.out.code, 0, "{}", d.out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "the session went on after the failed calls");
    let result = |id: &str| reqs[1].tool_result_text(id);
    assert_eq!(result("t1"), ("all fine".to_string(), false));
    let (garbled, is_error) = result("t2");
    assert!(is_error && garbled.contains("malformed MCP message"), "{garbled}");
    let (refused, is_error) = result("t3");
    assert!(is_error && refused.contains("boom in the program"), "{refused}");
    let (silent_text, is_error) = result("t4");
    assert!(
        is_error && silent_text.contains("did not answer within 1.5 s"),
        "{silent_text}"
    );
    assert!(!reqs[2].body.to_string().contains("too late"));
    let (id, _) = d.silent.expect("the silent call was asked");
    assert!(
        d.lines
            .iter()
            .any(|l| l["type"] == "control_cancel_request" && l["request_id"] == id.as_str()),
        "keel withdrew the unanswered request"
    );
}

/// Servers named in initialize's `sdkMcpServers` (without `--mcp-config`) are relayed too.
#[tokio::test]
async fn servers_named_in_initialize_are_relayed() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("t1", "mcp__calc__fine", json!({}))]))
        .push(answer("fine"));
    let mut keel = env.keel(&server);
    keel.args(STREAM).args(["--allowedTools", "mcp__calc"]);
    let init = json!({"type": "control_request", "request_id": "i1",
        "request": {"subtype": "initialize", "sdkMcpServers": ["calc"]}});
    let d = drive(keel, vec![init.to_string()], &["use it"]).await;
    assert_eq!(d.out.code, 0, "{}", d.out.stderr);
    let ok = d
        .lines
        .iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == "i1")
        .expect("initialize answered");
    assert_eq!(ok["response"]["subtype"], "success");
    let reqs = server.requests();
    assert_eq!(reqs[1].tool_result_text("t1"), ("all fine".to_string(), false));
    let init_line = d.lines.iter().find(|l| l["subtype"] == "init").unwrap();
    assert_eq!(
        init_line["mcp_servers"],
        json!([{"name": "calc", "status": "connected"}])
    );
}

#[tokio::test]
async fn an_sdk_server_without_a_driving_program_fails_clearly() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("no calculator"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "add 2 and 3",
            "--output-format",
            "json",
            "--mcp-config",
            SDK_CONFIG,
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("MCP server `calc` failed") && out.stderr.contains("--input-format stream-json"),
        "{}",
        out.stderr
    );
    // A repository cannot declare one: only the program that drives keel can.
    env.write(".mcp.json", r#"{"mcpServers":{"sneaky":{"type":"sdk"}}}"#);
    let out = env.keel_offline().args(["mcp", "get", "sneaky"]).run().await;
    assert!(
        out.stdout.contains("only --mcp-config may declare one"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}
