//! MCP over HTTP: streamable HTTP (sessions, SSE, resume, headers), 401, legacy SSE.

use super::{HttpServer, config, init_line, log_path, python};
use crate::support::skip::{Lack, or_skip};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};
use serde_json::{Value, json};

#[tokio::test]
async fn streamable_http_with_session_headers_sse_results_and_resume() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "h");
    let http = HttpServer::start("--http", &log, &[]).await;
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("e1", "mcp__h__echo", json!({"message": "over http"}))]))
        .push(calls(vec![tool("r1", "mcp__h__resume_test", json!({}))]))
        .push(answer("done"));
    let cfg = config(
        json!({"h": {"type": "http", "url": http.url("/mcp"), "headers": {"Authorization": "Bearer ${TOKEN}"}}}),
    );
    let out = env
        .keel(&server)
        .env("TOKEN", "t0k3n")
        .env("MCP_TOOL_TIMEOUT", "10000")
        .args(["-p", "go", "--allowedTools", "mcp__h", "--mcp-config", &cfg])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(
        requests[1].tool_result_text("e1"),
        ("Echo: over http".to_string(), false)
    );
    assert_eq!(
        requests[2].tool_result_text("r1"),
        ("resumed result".to_string(), false)
    );
    let http_log: Vec<Value> = read_jsonl(&log)
        .into_iter()
        .filter(|v| v.get("http").is_some())
        .collect();
    assert!(
        http_log.iter().all(|r| r["headers"]["authorization"] == "Bearer t0k3n"),
        "{http_log:?}"
    );
    let posts: Vec<&Value> = http_log.iter().filter(|r| r["http"] == "POST").collect();
    assert!(posts[0]["headers"].get("mcp-session-id").is_none());
    assert!(
        posts[1..].iter().all(|r| r["headers"]["mcp-session-id"].is_string()),
        "{posts:?}"
    );
    assert!(
        http_log
            .iter()
            .any(|r| r["http"] == "GET" && r["headers"]["last-event-id"].is_string()),
        "the broken stream was resumed with Last-Event-ID: {http_log:?}"
    );
}

#[tokio::test]
async fn http_401_is_reported_as_needing_authentication() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "h");
    let http = HttpServer::start("--http", &log, &["--require-auth", "secret"]).await;
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
        ])
        .arg(config(json!({"h": {"type": "http", "url": http.url("/mcp")}})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "h", "status": "needs-auth"}])
    );
    assert!(
        out.stderr.contains(
            "keel: warning: MCP server `h` needs authentication: it answered HTTP 401; run `keel mcp login h` to sign in"
        ),
        "{}",
        out.stderr
    );

    // `/mcp login` needs a browser and a screen: with -p it says what to run instead.
    let login = env
        .keel(&server)
        .args(["-p", "/mcp login h", "--mcp-config"])
        .arg(config(json!({"h": {"type": "http", "url": http.url("/mcp")}})))
        .run()
        .await;
    assert_eq!(login.code, 1, "{}", login.stderr);
    assert!(
        format!("{}{}", login.stdout, login.stderr).contains("run `keel mcp login h`"),
        "{}\n{}",
        login.stdout,
        login.stderr
    );
}

#[tokio::test]
async fn legacy_sse_transport() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "s");
    let http = HttpServer::start("--sse", &log, &[]).await;
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("e1", "mcp__s__echo", json!({"message": "legacy"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__s", "--mcp-config"])
        .arg(config(json!({"s": {"type": "sse", "url": http.url("/sse")}})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests()[1].tool_result_text("e1"),
        ("Echo: legacy".to_string(), false)
    );
}

#[tokio::test]
async fn a_legacy_sse_server_cannot_redirect_messages_to_another_origin() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "s");
    let http = HttpServer::start("--sse", &log, &["--foreign-endpoint"]).await;
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
        ])
        .arg(config(json!({"s": {"type": "sse", "url": http.url("/sse")}})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "s", "status": "failed"}])
    );
    assert!(out.stderr.contains("another origin"), "{}", out.stderr);
    let posts = read_jsonl(&log).into_iter().filter(|v| v["http"] == "POST").count();
    assert_eq!(posts, 0, "nothing was sent");
}

/// The pinned `@modelcontextprotocol/server-everything` (`tests/e2e/mcp/everything-version.txt`),
/// installed by `scripts/mcp-everything-install.sh` (which `.ci/run` calls) into a cache outside
/// the repository (`KEEL_TEST_CACHE`, default `~/.cache/keel-tests`); the test installs nothing
/// itself. `Err` when it (or node, which runs it) is not there.
fn everything() -> Result<std::path::PathBuf, Lack> {
    let version = include_str!("everything-version.txt").trim();
    let base = std::env::var_os("KEEL_TEST_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/keel-tests")))
        .unwrap_or_else(|| std::env::temp_dir().join("keel-tests"));
    let cache = base.join(format!("everything-{version}"));
    let entry = cache.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !cache.join(".keel-ready").is_file() || !entry.is_file() {
        return Err(Lack::tool(format!(
            "the pinned @modelcontextprotocol/server-everything {version} is not installed in {} \
             (scripts/mcp-everything-install.sh)",
            cache.display()
        )));
    }
    crate::support::skip::program("node", "--version")?;
    Ok(entry)
}

#[tokio::test]
async fn the_reference_everything_server() {
    let entry = or_skip!(everything());
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("e1", "mcp__everything__echo", json!({"message": "hello"})),
            tool("s1", "mcp__everything__get-sum", json!({"a": 2, "b": 3})),
            tool("i1", "mcp__everything__get-tiny-image", json!({})),
            tool(
                "c1",
                "mcp__everything__get-structured-content",
                json!({"location": "Chicago"}),
            ),
            tool("l1", "mcp__everything__get-resource-links", json!({"count": 2})),
            tool("r1", "ListMcpResources", json!({"server": "everything"})),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "mcp__everything",
            "--mcp-config",
        ])
        .arg(config(
            json!({"everything": {"command": "node", "args": [entry, "stdio"]}}),
        ))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "everything", "status": "connected"}])
    );
    let last = &server.requests()[1];
    assert_eq!(last.tool_result_text("e1"), ("Echo: hello".to_string(), false));
    assert!(last.tool_result_text("s1").0.contains('5'));
    let image = last
        .tool_results()
        .into_iter()
        .find(|r| r["tool_use_id"] == "i1")
        .unwrap();
    assert!(
        image["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "image"),
        "{image}"
    );
    assert!(last.tool_result_text("c1").0.contains("temperature"));
    assert!(last.tool_result_text("l1").0.contains("Resource link:"));
    assert!(last.tool_result_text("r1").0.contains("everything: "));
}

#[tokio::test]
async fn stream_json_sessions_report_the_servers_in_init_and_mcp_status() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let input = [
        json!({"type": "control_request", "request_id": "s1", "request": {"subtype": "mcp_status"}}).to_string(),
        json!({"type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": null, "session_id": ""})
            .to_string(),
    ]
    .join("\n")
        + "\n";
    let out = env
        .keel(&server)
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
        ])
        .arg(config(json!({"t": super::stdio(&log, &[])})))
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let status = lines
        .iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == "s1")
        .expect("an mcp_status answer");
    let servers = &status["response"]["response"]["mcpServers"];
    assert_eq!(servers[0]["name"], "t");
    assert_eq!(servers[0]["status"], "connected");
    assert!(servers[0]["tools"].as_array().unwrap().contains(&json!("mcp__t__echo")));
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "t", "status": "connected"}])
    );
}
