//! MCP failures told as they are: an answer too large to accept fails its call at once, a
//! server that did not start is named when its tool is called, HTTP errors are said in words.

use serde_json::{Value, json};

use crate::mcp::{config, python};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, Reply};

/// A stdio MCP server with one tool, `huge`, whose answer is a single line of `size` bytes. It
/// keeps running after it answered, as a server that merely answered too much would.
const HUGE_SERVER: &str = r#"
import json, sys
size = int(sys.argv[1])
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "huge", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "huge", "description": "answers too much",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "x" * size}]}
    elif mid is None:
        continue
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
    sys.stdout.flush()
"#;

/// The client library drops an answer line over 16 MiB and would leave the call waiting for
/// the tool timeout; keel fails it at once and says why.
#[tokio::test]
async fn an_answer_line_over_16_mib_fails_the_call_at_once() {
    or_skip!(python());
    let env = Env::new();
    let script = env.write("huge_server.py", HUGE_SERVER);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("h1", "mcp__big__huge", json!({}))]))
        .push(answer("done"));
    let size = (17 * 1024 * 1024).to_string();
    let out = env
        .keel(&server)
        // Long enough that a wait for it fails the test; the fixed call ends long before.
        .env("MCP_TOOL_TIMEOUT", "45000")
        .args(["-p", "go", "--allowedTools", "mcp__big", "--mcp-config"])
        .arg(config(json!({"big": {"command": "python3", "args": [script, size]}})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", out.stderr);
    let (text, is_error) = requests[1].tool_result_text("h1");
    assert!(is_error, "{text}");
    assert!(
        text.contains("larger than 16 MB") && text.contains("KEEL_MCP_MAX_MESSAGE_MB"),
        "the real reason: {text}"
    );
    assert!(!text.contains("did not answer"), "{text}");
}

/// A call to a tool of a server that failed to start says what the start failure was.
#[tokio::test]
async fn a_call_to_a_server_that_failed_to_start_names_the_failure() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("e1", "mcp__f__echo", json!({"message": "hi"}))]))
        .push(answer("done"));
    let broken = json!({"command": "sh", "args": ["-c", "echo 'boom: no config file found' >&2; exit 3"]});
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__f", "--mcp-config"])
        .arg(config(json!({ "f": broken })))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("e1");
    assert!(is_error);
    assert!(text.contains("No tool named `mcp__f__echo` exists"), "{text}");
    assert!(text.contains("MCP server `f` failed to start"), "{text}");
    assert!(text.contains("boom: no config file found"), "its stderr: {text}");
}

/// A streamable-HTTP MCP endpoint on the scripted server: `initialize`, `tools/list` and the
/// notification answered as a server would; `tools/call` (or every POST, with `fail_all`)
/// answered HTTP 500.
fn http_mcp(mcp: &ModelServer, fail_all: bool) {
    mcp.respond_with(move |body: &Value| {
        let id = body["id"].clone();
        let ok = |result: Value| Reply::Json {
            status: 200,
            body: json!({"jsonrpc": "2.0", "id": id, "result": result}),
            headers: vec![("mcp-session-id".into(), "s1".into())],
        };
        let method = body["method"].as_str().unwrap_or("");
        Some(match method {
            _ if fail_all || method == "tools/call" => Reply::Json {
                status: 500,
                body: json!({"error": "internal"}),
                headers: Vec::new(),
            },
            "initialize" => ok(json!({
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "h", "version": "1"}
            })),
            "tools/list" => {
                ok(json!({"tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {}}}]}))
            }
            _ => Reply::Raw {
                status: 202,
                content_type: "application/json".into(),
                body: String::new(),
            },
        })
    });
    mcp.route(
        "/mcp",
        Reply::Raw {
            status: 405,
            content_type: "text/plain".into(),
            body: String::new(),
        },
    );
}

/// An HTTP MCP server that fails at start is reported in words: the status, no Rust type
/// names.
#[tokio::test]
async fn http_mcp_start_errors_are_said_in_words() {
    let env = Env::new();
    let mcp = ModelServer::start().await;
    http_mcp(&mcp, true);
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let entry = json!({"type": "http", "url": format!("{}/mcp", mcp.url())});
    let out = env
        .keel(&server)
        .args(["-p", "go", "--mcp-config"])
        .arg(config(json!({ "h": entry })))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("MCP server `h` failed"))
        .unwrap_or_else(|| panic!("no start failure line: {}", out.stderr));
    assert!(
        line.contains("the server answered HTTP 500 (Internal Server Error)"),
        "{line}"
    );
    assert!(
        !out.stderr.contains("rmcp::") && !out.stderr.contains("Transport ["),
        "{}",
        out.stderr
    );
}

/// A tool call an HTTP MCP server refuses is reported in words too.
#[tokio::test]
async fn http_mcp_call_errors_are_said_in_words() {
    let env = Env::new();
    let mcp = ModelServer::start().await;
    http_mcp(&mcp, false);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("e1", "mcp__h__echo", json!({}))]))
        .push(answer("done"));
    let entry = json!({"type": "http", "url": format!("{}/mcp", mcp.url())});
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__h", "--mcp-config"])
        .arg(config(json!({ "h": entry })))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("e1");
    assert!(is_error, "{text}");
    assert!(text.contains("HTTP 500"), "{text}");
    assert!(!text.contains("rmcp::") && !text.contains("Transport ["), "{text}");
}
