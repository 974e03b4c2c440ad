//! MCP configuration: sources, approval of project servers, `keel mcp`.

use super::{SERVER, config, init_line, log_path, python, stdio};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};
use serde_json::{Value, json};

#[tokio::test]
async fn a_cloned_repository_cannot_start_its_servers_headless() {
    or_skip!(python());
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
    or_skip!(python());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_asks_once_per_project_and_mcp_shows_the_servers() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "repo");
    let mut entry = stdio(&log, &[]);
    entry["env"] = json!({"SECRET": "${ANTHROPIC_API_KEY}"});
    env.write(".mcp.json", &config(json!({"repo": entry})));
    let server = ModelServer::start().await;
    // Declining workspace trust: the server stays off and nothing is asked about it.
    let t = crate::support::tmux::Tmux::start(&env, &server, &[], 110, 30);
    t.wait_for_text("Do you trust the files in this folder?").await;
    t.press(&["Down", "Enter"]);
    t.wait_for_text("Ask keel").await;
    t.type_text("/mcp");
    t.press(&["Enter"]);
    let s = t
        .wait_for("the /mcp listing", |s| {
            s.contains("disabled") && s.contains("so its MCP servers do not run")
        })
        .await;
    assert!(s.contains("repo"), "{s}");
    t.press(&["C-d"]);
    t.wait_exit().await;
    assert!(!log.exists(), "an untrusted folder's server never ran");

    // Trusting the folder, then approving the server.
    let t = crate::support::tmux::Tmux::start(&env, &server, &[], 110, 30);
    t.wait_for_text("Do you trust the files in this folder?").await;
    t.press(&["Enter"]);
    let s = t.wait_for_text("Allow MCP server `repo`").await;
    assert!(s.contains("given the values of ANTHROPIC_API_KEY"), "{s}");
    assert!(!s.contains("test-key"), "values are not shown: {s}");
    assert!(!log.exists(), "nothing runs before the answer");
    t.type_text("y");
    t.press(&["Enter"]);
    t.wait_for_text("Ask keel").await;
    t.type_text("/mcp");
    t.press(&["Enter"]);
    let s = t.wait_for_text("mcp__repo__echo").await;
    assert!(s.contains("connected"), "{s}");
    t.press(&["C-d"]);
    t.wait_exit().await;
    let pid = read_jsonl(&log)
        .into_iter()
        .find_map(|v| v["pid"].as_i64())
        .expect("the approved server ran");

    // The answer is remembered: the next start asks nothing and runs the server.
    let t = crate::support::tmux::Tmux::start(&env, &server, &[], 110, 30);
    t.wait_for_text("Ask keel").await;
    assert!(!t.screen().contains("Allow MCP server"), "{}", t.screen());
    t.press(&["C-d"]);
    t.wait_exit().await;
    let starts: Vec<i64> = read_jsonl(&log).into_iter().filter_map(|v| v["pid"].as_i64()).collect();
    assert_eq!(starts.len(), 2, "started again without asking: {starts:?}");
    assert_ne!(starts[1], pid);
}

#[tokio::test]
async fn a_plugins_servers_run_as_plugin_server_and_a_repositorys_plugin_needs_approval() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "plugin");
    let plugin = env.home.join("plugins/ops");
    std::fs::create_dir_all(plugin.join(".claude-plugin")).unwrap();
    std::fs::write(plugin.join(".claude-plugin/plugin.json"), r#"{"name": "ops"}"#).unwrap();
    std::fs::write(plugin.join(".mcp.json"), config(json!({"db": stdio(&log, &[])}))).unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "e1",
            "mcp__ops_db__echo",
            json!({"message": "from a plugin"}),
        )]))
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
            "mcp__ops_db",
            "--plugin-dir",
        ])
        .arg(&plugin)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        init_line(&out)["mcp_servers"],
        json!([{"name": "ops:db", "status": "connected"}])
    );
    assert_eq!(server.requests()[1].tool_result_text("e1").0, "Echo: from a plugin");

    // The same plugin named by the repository's settings: its server waits for approval.
    let log2 = log_path(&env, "plugin2");
    std::fs::write(plugin.join(".mcp.json"), config(json!({"db": stdio(&log2, &[])}))).unwrap();
    env.write(".claude/settings.json", &json!({"plugins": [plugin]}).to_string());
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
        json!([{"name": "ops:db", "status": "disabled"}])
    );
    assert!(!log2.exists(), "the repository's plugin did not start its program");
}
