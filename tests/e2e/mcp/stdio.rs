//! MCP over stdio: results, errors, permissions, hooks, crashes, timeouts, resources, prompts.

use std::time::Duration;

use super::{calls_of, config, init_line, log_path, python, received, stdio};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};
use serde_json::{Value, json};

#[tokio::test]
async fn stdio_tools_results_errors_and_init_status() {
    or_skip!(python());
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
    // structuredContent reaches the model as the JSON, in a block of its own.
    let structured = last
        .tool_results()
        .into_iter()
        .find(|r| r["tool_use_id"] == "s1")
        .unwrap();
    let blocks = structured["content"].as_array().expect("a list of blocks");
    let json_block = blocks
        .iter()
        .find_map(|b| {
            // Inside the untrusted-content envelope the model's view puts around it.
            let t = b["text"].as_str()?;
            serde_json::from_str::<Value>(t.get(t.find('{')?..=t.rfind('}')?)?).ok()
        })
        .expect("a block holding the JSON");
    assert_eq!(json_block["temperature"], 21.5, "{structured}");
    // The invalid call never reached the server.
    assert_eq!(calls_of(&log, "echo"), 1);
    // The stream-json user line carries the MCP content as tool_use_result.
    let user = out
        .lines()
        .into_iter()
        .find(|l| l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == "e1")
        .unwrap();
    assert_eq!(user["tool_use_result"], json!([{"type": "text", "text": "Echo: hi"}]));
    // The result content is a list of blocks, as the server sent it.
    assert_eq!(
        user["message"]["content"][0]["content"],
        json!([{"type": "text", "text": "Echo: hi"}])
    );
}

#[tokio::test]
async fn mcp_tools_are_never_auto_approved_and_rules_name_servers_and_tools() {
    or_skip!(python());
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
    or_skip!(python());
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
    or_skip!(python());
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
    or_skip!(python());
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
    or_skip!(python());
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
async fn stdio_servers_die_with_the_session_and_get_the_project_dir() {
    or_skip!(python());
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
    let start = read_jsonl(&log)
        .into_iter()
        .find(|v| v.get("pid").is_some())
        .expect("the server logged its start");
    assert_eq!(
        start["cwd"],
        json!(env.work),
        "stdio servers run in the project directory"
    );
    assert_eq!(start["project_dir"], json!(env.work), "and get CLAUDE_PROJECT_DIR");
    let pid = start["pid"].as_i64().unwrap() as i32;
    let mut gone = false;
    for _ in 0..250 {
        if !crate::support::procs::running(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "server process {pid} outlived the session");
}

#[tokio::test]
async fn resources_and_prompts() {
    or_skip!(python());
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
async fn general_purpose_sub_agents_get_the_mcp_tools() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        // Parent: delegate.
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "echo it", "prompt": "Echo `from the child` with the MCP tool.", "subagent_type": "general-purpose"}),
        )]))
        // Sub-agent: the MCP tool, then its report.
        .push(calls(vec![tool("c1", "mcp__t__echo", json!({"message": "from the child"}))]))
        .push(answer("The server said: Echo: from the child"))
        // Parent: done.
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert!(
        requests[1].tool_names().contains(&"mcp__t__echo".to_string()),
        "{:?}",
        requests[1].tool_names()
    );
    assert_eq!(
        requests[2].tool_result_text("c1"),
        ("Echo: from the child".to_string(), false)
    );
    assert!(requests[3].tool_result_text("a1").0.contains("Echo: from the child"));
    assert_eq!(calls_of(&log, "echo"), 1);
}

#[tokio::test]
async fn tools_a_server_adds_later_are_appended() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("a1", "mcp__t__add_tool", json!({}))]))
        .push(calls(vec![tool("l1", "mcp__t__late_tool", json!({}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let before = requests[0].body["tools"].as_array().unwrap().clone();
    let after = requests[1].body["tools"].as_array().unwrap().clone();
    assert!(!requests[0].tool_names().contains(&"mcp__t__late_tool".to_string()));
    assert_eq!(&after[..before.len()], &before[..], "appended, the prefix unchanged");
    assert_eq!(after.last().unwrap()["name"], "mcp__t__late_tool");
    assert_eq!(
        requests[2].tool_result_text("l1"),
        ("late tool works".to_string(), false)
    );
}

#[tokio::test]
async fn an_interrupted_call_is_cancelled_on_the_server() {
    or_skip!(python());
    interrupt_a_call_and_expect_its_cancellation(&[]).await;
}

/// A server still busy with earlier input when keel ends hears the cancellation too: keel
/// closes its input and lets it exit by itself before killing what is left.
#[tokio::test]
async fn a_busy_server_still_hears_the_cancellation_when_the_session_ends() {
    or_skip!(python());
    interrupt_a_call_and_expect_its_cancellation(&["--read-delay", "0.2"]).await;
}

/// Interrupts a session while the test server (started with `extra`) sleeps in a call, and
/// checks that the server received `notifications/cancelled` for that call.
async fn interrupt_a_call_and_expect_its_cancellation(extra: &[&str]) {
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("s1", "mcp__t__sleep", json!({"seconds": 30}))]))
        .push(answer("unreachable"));
    let child = env
        .keel(&server)
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, extra)})))
        .spawn();
    let pid = child.id().expect("pid") as i32;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while calls_of(&log, "sleep") == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sleep call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = crate::support::finish(child).await;
    assert_eq!(out.code, 130, "{}", out.stderr);
    let sleep_id = received(&log)
        .iter()
        .find(|m| m["params"]["name"] == "sleep")
        .map(|m| m["id"].clone())
        .unwrap();
    assert!(
        received(&log)
            .iter()
            .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == sleep_id),
        "{:?}",
        received(&log)
    );
}

#[tokio::test]
async fn long_output_is_capped_and_saved_like_other_tools() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "t");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("b1", "mcp__t__big", json!({"size": 20000})),
            tool("b2", "mcp__t__big", json!({"size": 50})),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .env("MAX_MCP_OUTPUT_TOKENS", "250")
        .args(["-p", "go", "--allowedTools", "mcp__t", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = &server.requests()[1];
    let (text, is_error) = last.tool_result_text("b1");
    assert!(!is_error);
    assert!(text.starts_with("<persisted-output>"), "{text}");
    assert!(text.len() < 8000, "{} characters kept", text.len());
    let spilled = std::fs::read_dir(env.home.join(".keel/projects"))
        .unwrap()
        .flatten()
        .flat_map(|p| walk(&p.path()))
        .find(|p| p.ends_with("tool-results/b1.txt"))
        .expect("the whole output is saved");
    assert_eq!(std::fs::read_to_string(spilled).unwrap().len(), 20000);
    assert_eq!(last.tool_result_text("b2").0, "x".repeat(50));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
