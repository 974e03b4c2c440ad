//! MCP servers end to end: keel against the test server in `support/mcp_server.py` (stdio,
//! streamable HTTP, legacy SSE), driven by the scripted model server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};

pub(crate) const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/support/mcp_server.py");

/// The test server needs python3; without it the test says so and passes nothing else.
pub(crate) fn python() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: python3 is not installed; the MCP test server needs it");
    }
    ok
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

fn calls_of(log: &Path, tool: &str) -> usize {
    received(log)
        .iter()
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
        .count()
}

fn init_line(out: &crate::support::Out) -> Value {
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

fn log_path(env: &Env, name: &str) -> PathBuf {
    env.home.join(format!("{name}.jsonl"))
}

#[tokio::test]
async fn stdio_tools_results_errors_and_init_status() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("e1", "mcp__t__echo", json!({"message": "hi"})),
            tool("f1", "mcp__t__fail", json!({})),
            tool("v1", "mcp__t__echo", json!({"mesage": "typo"})),
            tool("i1", "mcp__t__image", json!({})),
            tool("s1", "mcp__t__structured", json!({})),
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
            "mcp__t",
            "--mcp-config",
        ])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let init = init_line(&out);
    assert_eq!(init["mcp_servers"], json!([{"name": "t", "status": "connected"}]));
    assert!(init["tools"].as_array().unwrap().contains(&json!("mcp__t__echo")));

    let requests = server.requests();
    let first = &requests[0];
    let echo = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__t__echo")
        .expect("the echo tool is offered");
    assert_eq!(echo["input_schema"]["required"], json!(["message"]));
    assert_eq!(echo["description"], "Echoes back the message it is given");

    let last = &requests[1];
    assert_eq!(last.tool_result_text("e1"), ("Echo: hi".to_string(), false));
    let (text, is_error) = last.tool_result_text("f1");
    assert!(is_error, "isError becomes is_error");
    assert_eq!(text, "this tool always fails");
    let (text, is_error) = last.tool_result_text("v1");
    assert!(is_error);
    assert!(text.contains("`message` is required but missing"), "{text}");
    let image = last
        .tool_results()
        .into_iter()
        .find(|r| r["tool_use_id"] == "i1")
        .unwrap();
    assert_eq!(image["content"][1]["type"], "image");
    assert_eq!(image["content"][1]["source"]["media_type"], "image/png");
    assert!(last.tool_result_text("s1").0.contains("\"temperature\": 21.5"));
    // The invalid call never reached the server.
    assert_eq!(calls_of(&log, "echo"), 1);
    // The stream-json user line carries the MCP content as tool_use_result.
    let user = out
        .lines()
        .into_iter()
        .find(|l| l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == "e1")
        .unwrap();
    assert_eq!(user["tool_use_result"], json!([{"type": "text", "text": "Echo: hi"}]));
}

#[tokio::test]
async fn mcp_tools_are_never_auto_approved_and_rules_name_servers_and_tools() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "t");
    let cfg = config(json!({"t": stdio(&log, &[])}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("e1", "mcp__t__echo", json!({"message": "hi"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "json", "--mcp-config", &cfg])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        server.requests()[1].tool_result_text("e1").1,
        "denied in headless default mode"
    );
    assert_eq!(out.json()["permission_denials"][0]["tool_name"], "mcp__t__echo");
    assert_eq!(calls_of(&log, "echo"), 0, "the server never saw the call");

    // A tool rule allows that tool only.
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("e2", "mcp__t__echo", json!({"message": "ok"})),
            tool("f2", "mcp__t__fail", json!({})),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--mcp-config", &cfg, "--allowedTools", "mcp__t__echo", "--"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = &server.requests()[1];
    assert_eq!(last.tool_result_text("e2"), ("Echo: ok".to_string(), false));
    assert!(last.tool_result_text("f2").1);
    assert_eq!(calls_of(&log, "fail"), 0);

    // A bare-name deny rule for the server hides all its tools from the model.
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--mcp-config", &cfg, "--disallowedTools", "mcp__t", "--"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !server.requests()[0]
            .tool_names()
            .iter()
            .any(|n| n.starts_with("mcp__t__")),
        "{:?}",
        server.requests()[0].tool_names()
    );
}

#[tokio::test]
async fn pre_tool_use_hooks_match_mcp_tools() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "t");
    let hook = crate::hooks::script(&env, "block.sh", "echo 'no echo today' >&2\nexit 2");
    crate::hooks::settings(&env, json!({"PreToolUse": [crate::hooks::group("mcp__t__.*", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("e1", "mcp__t__echo", json!({"message": "hi"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("e1");
    assert!(is_error && text.contains("no echo today"), "{text}");
    assert_eq!(calls_of(&log, "echo"), 0);
}

#[tokio::test]
async fn a_crash_is_an_error_result_and_the_next_call_restarts_the_server() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("c1", "mcp__t__crash", json!({}))]))
        .push(calls(vec![tool("e1", "mcp__t__echo", json!({"message": "again"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let (text, is_error) = requests[1].tool_result_text("c1");
    assert!(is_error);
    assert!(text.contains("MCP server `t` stopped"), "{text}");
    assert!(
        text.contains("crashing on request"),
        "the server's stderr is quoted: {text}"
    );
    assert_eq!(requests[2].tool_result_text("e1"), ("Echo: again".to_string(), false));
    let starts = read_jsonl(&log).iter().filter(|v| v.get("pid").is_some()).count();
    assert_eq!(starts, 2, "started once, restarted once");
}

#[tokio::test]
async fn a_call_past_the_timeout_is_cancelled_on_the_server() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("s1", "mcp__t__sleep", json!({"seconds": 20}))]))
        .push(calls(vec![tool(
            "e1",
            "mcp__t__echo",
            json!({"message": "still here"}),
        )]))
        .push(answer("done"));
    let started = std::time::Instant::now();
    let out = env
        .keel(&server)
        .env("MCP_TOOL_TIMEOUT", "1000")
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the call did not wait for the server"
    );
    let requests = server.requests();
    let (text, is_error) = requests[1].tool_result_text("s1");
    assert!(is_error && text.contains("MCP_TOOL_TIMEOUT"), "{text}");
    assert_eq!(requests[2].tool_result_text("e1").0, "Echo: still here");
    let sleep_id = received(&log)
        .iter()
        .find(|m| m["params"]["name"] == "sleep")
        .map(|m| m["id"].clone())
        .expect("the sleep call reached the server");
    let cancelled: Vec<Value> = received(&log)
        .into_iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert!(
        cancelled.iter().any(|m| m["params"]["requestId"] == sleep_id),
        "notifications/cancelled for {sleep_id}: {cancelled:?}"
    );
}

#[tokio::test]
async fn servers_that_fail_to_start_are_reported_and_the_session_goes_on() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "dies");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("e1", "mcp__ok__echo", json!({"message": "fine"}))]))
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
            "mcp__ok",
            "--mcp-config",
        ])
        .arg(config(json!({
            "dies": stdio(&log, &["--die-at-start"]),
            "missing": {"command": "/no/such/program"},
            "ok": stdio(&log_path(&env, "ok"), &[]),
        })))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let init = init_line(&out);
    assert_eq!(
        init["mcp_servers"],
        json!([
            {"name": "dies", "status": "failed"},
            {"name": "missing", "status": "failed"},
            {"name": "ok", "status": "connected"}
        ])
    );
    assert!(
        out.stderr
            .contains("MCP server `missing` failed: cannot start `/no/such/program`"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("MCP server `dies` failed"), "{}", out.stderr);
    assert_eq!(server.requests()[1].tool_result_text("e1").0, "Echo: fine");
}

#[tokio::test]
async fn a_cloned_repository_cannot_start_its_servers_headless() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "repo");
    env.write(".mcp.json", &config(json!({"repo": stdio(&log, &[])})));
    // The repository tries to approve itself.
    env.write(
        ".claude/settings.json",
        &json!({"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["repo"]}).to_string(),
    );
    env.write(
        ".claude/settings.local.json",
        &json!({"enableAllProjectMcpServers": true}).to_string(),
    );
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "repo", "status": "disabled"}])
    );
    let notices: Vec<&str> = out.stderr.lines().filter(|l| l.contains("`repo`")).collect();
    assert_eq!(notices.len(), 1, "one line: {}", out.stderr);
    assert!(notices[0].contains("not started"), "{}", notices[0]);
    assert!(!log.exists(), "the program never ran");

    // The user's own settings approve it.
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(
        env.home.join(".keel/settings.json"),
        json!({"enabledMcpjsonServers": ["repo"]}).to_string(),
    )
    .unwrap();
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "repo", "status": "connected"}])
    );
    assert!(log.exists());
}

#[tokio::test]
async fn strict_config_ignores_other_sources_and_variables_expand() {
    if !python() {
        return;
    }
    let env = Env::new();
    let user_log = log_path(&env, "user");
    std::fs::write(
        env.home.join(".claude.json"),
        config(json!({"fromuser": stdio(&user_log, &[])})),
    )
    .unwrap();
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let cfg = config(json!({"t": {"command": "${PY:-python3}", "args": [SERVER, "--log", "${MCP_LOG}"]}}));
    let log = log_path(&env, "t");
    let out = env
        .keel(&server)
        .env("MCP_LOG", &log)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--strict-mcp-config",
            "--mcp-config",
            &cfg,
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "t", "status": "connected"}])
    );
    assert!(log.exists(), "${{MCP_LOG}} expanded");
    assert!(!user_log.exists());

    // Without --strict-mcp-config the reference's user file counts too.
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .env("MCP_LOG", &log)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
            &cfg,
        ])
        .run()
        .await;
    let names: Vec<Value> = init_line(&out)["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("fromuser"), json!("t")]);
}

#[tokio::test]
async fn a_bad_mcp_config_is_an_error_before_anything_runs() {
    let env = Env::new();
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
        .arg(r#"{"mcpServers": {"r": {"url": "https://example.invalid"}}}"#)
        .run()
        .await;
    assert_eq!(out.code, 0, "a bad entry fails that server only: {}", out.stderr);
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "r", "status": "failed"}])
    );
    assert!(out.stderr.contains("has a `url` but no `type`"), "{}", out.stderr);
    let out = env
        .keel(&server)
        .args(["-p", "go", "--mcp-config", "/no/such/mcp.json"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("/no/such/mcp.json"), "{}", out.stderr);
}

#[tokio::test]
async fn stdio_servers_die_with_the_session_and_get_the_project_dir() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let pid = read_jsonl(&log)
        .iter()
        .find_map(|v| v["pid"].as_i64())
        .expect("the server logged its pid");
    let gone = (0..50).any(|_| {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        if alive {
            std::thread::sleep(Duration::from_millis(100));
        }
        !alive
    });
    assert!(gone, "server process {pid} outlived the session");
}

#[tokio::test]
async fn tool_search_keeps_the_first_request_small_and_appends_what_it_loads() {
    if !python() {
        return;
    }
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
    if !python() {
        return;
    }
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

#[tokio::test]
async fn resources_and_prompts() {
    if !python() {
        return;
    }
    let env = Env::new();
    let log = log_path(&env, "t");
    let cfg = config(json!({"t": stdio(&log, &[])}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("l1", "ListMcpResources", json!({})),
            tool(
                "r1",
                "ReadMcpResource",
                json!({"server": "t", "uri": "test://docs/readme"}),
            ),
            tool("r2", "ReadMcpResource", json!({"server": "t", "uri": "test://nope"})),
            tool("r3", "ReadMcpResource", json!({"server": "nosuch", "uri": "x"})),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "/mcp__t__review the parser", "--mcp-config", &cfg])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let first_user = requests[0].messages()[0]["content"].to_string();
    assert!(first_user.contains("Please review: the parser"), "{first_user}");
    let last = &requests[1];
    assert!(last.tool_result_text("l1").0.contains("t: readme <test://docs/readme>"));
    assert!(last.tool_result_text("r1").0.contains("README CONTENT"));
    let (text, is_error) = last.tool_result_text("r2");
    assert!(is_error && text.contains("no resource test://nope"), "{text}");
    let (text, is_error) = last.tool_result_text("r3");
    assert!(is_error && text.contains("no MCP server is named `nosuch`"), "{text}");

    let out = env
        .keel(&server)
        .args(["-p", "/mcp__t__nosuch", "--mcp-config", &cfg])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no MCP prompt is named /mcp__t__nosuch"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn streamable_http_with_session_headers_sse_results_and_resume() {
    if !python() {
        return;
    }
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
    if !python() {
        return;
    }
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
        out.stderr.contains("MCP server `h` needs authentication"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn legacy_sse_transport() {
    if !python() {
        return;
    }
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
async fn keel_mcp_add_list_get_remove() {
    let env = Env::new();
    let run = |args: &[&str]| {
        let mut k = env.keel_offline();
        k.arg("mcp").args(args);
        k
    };
    let out = run(&["add", "fs", "--", "node", "server.js", "--root", "/tmp"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(&[
        "add",
        "-s",
        "project",
        "-t",
        "http",
        "-H",
        "Authorization: Bearer ${T}",
        "remote",
        "https://mcp.example.test/mcp",
    ])
    .run()
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let project: Value = serde_json::from_str(&std::fs::read_to_string(env.path(".mcp.json")).unwrap()).unwrap();
    assert_eq!(project["mcpServers"]["remote"]["type"], "http");
    let out = run(&["list"]).run().await;
    assert!(
        out.stdout
            .contains("fs: node server.js --root /tmp (stdio) — local scope"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("remote: https://mcp.example.test/mcp (http) — project scope, approved"),
        "{}",
        out.stdout
    );
    let out = run(&["get", "fs"]).run().await;
    assert!(out.stdout.contains("command: node"), "{}", out.stdout);
    let out = run(&["add-json", "fs", r#"{"command": "x"}"#]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("already exists"), "{}", out.stderr);
    let out = run(&["remove", "fs"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(&["get", "fs"]).run().await;
    assert_eq!(out.code, 1);
    let out = run(&["add", "-t", "ws", "bad", "ws://x"]).run().await;
    assert_eq!(out.code, 1);
}
