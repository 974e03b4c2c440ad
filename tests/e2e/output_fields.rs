//! The fields programs read from `--output-format json` / `stream-json --verbose`: session facts
//! in `system/init`, how each call's permission was decided, the result's timings, usage
//! breakdown and sub-agent counts, and the partial-message lines.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::server::Reply;
use crate::support::sse::{self, answer, calls, text, tool};
use crate::support::{Env, ModelServer};

/// A tool-calling turn whose usage reports cache writes of both lifetimes.
fn calls_with_cache_writes(blocks: Vec<sse::Block>) -> Reply {
    let mut chunks = sse::frames(&blocks, "tool_use", 100, 30);
    chunks[0] = chunks[0].replacen(
        "\"cache_creation_input_tokens\":0",
        "\"cache_creation_input_tokens\":30,\"cache_creation\":{\"ephemeral_5m_input_tokens\":10,\"ephemeral_1h_input_tokens\":20}",
        1,
    );
    assert!(chunks[0].contains("ephemeral_1h"), "the fixture sets the breakdown");
    Reply::Sse {
        chunks,
        pace: Duration::ZERO,
    }
}

fn of_kind<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

#[tokio::test]
async fn a_multi_tool_session_reports_session_facts_decisions_and_timings() {
    let env = Env::new();
    env.write("notes.txt", "alpha\n");
    std::fs::create_dir_all(env.path("extra")).unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls_with_cache_writes(vec![
            text("Looking."),
            tool(
                "b1",
                "Bash",
                json!({"command": "mkdir -p made", "description": "make a folder"}),
            ),
            tool("b2", "Bash", json!({"command": "echo hi", "description": "say hi"})),
            tool("r1", "Read", json!({"file_path": env.path("notes.txt")})),
        ]))
        .push(answer("done"));
    let extra = env.path("extra").display().to_string();
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "stream-json", "--verbose"])
        .args(["--add-dir", &extra, "--allowedTools", "Bash", "--"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();

    let init = of_kind(&lines, "system")[0];
    assert_eq!(init["subtype"], "init");
    assert!(
        init["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("can_use_tool")),
        "{init}"
    );
    let cwd = init["cwd"].as_str().unwrap();
    assert_eq!(init["original_cwd"], cwd);
    let dirs: Vec<String> = init["additional_directories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            std::fs::canonicalize(d.as_str().unwrap())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    let extra_real = std::fs::canonicalize(&extra).unwrap().display().to_string();
    assert_eq!(dirs, vec![extra_real], "{init}");
    let memory = init["memory_paths"]["auto"].as_str().unwrap();
    assert!(
        memory.ends_with("/memory/") && memory.contains("/.keel/projects/"),
        "{memory}"
    );
    assert_eq!(init["sandbox_enabled"], false);
    assert_eq!(
        init["served_by_anthropic"], false,
        "a loopback server is not Anthropic's API"
    );
    assert!(
        init["terminal_slash_commands"]
            .as_array()
            .unwrap()
            .contains(&json!("rewind"))
    );

    for a in of_kind(&lines, "assistant") {
        assert_eq!(a["message"]["stop_reason"], Value::Null, "{a}");
        assert_eq!(a["message"]["context_management"], Value::Null);
    }
    let first = of_kind(&lines, "assistant")[0];
    assert_eq!(
        first["message"]["usage"]["cache_creation"],
        json!({"ephemeral_5m_input_tokens": 10, "ephemeral_1h_input_tokens": 20})
    );

    let users = of_kind(&lines, "user");
    assert_eq!(users.len(), 3);
    for u in &users {
        let id = u["message"]["content"][0]["tool_use_id"].as_str().unwrap();
        let meta = &u["tool_result_meta"][0];
        assert_eq!(meta["id"], id, "{u}");
        assert_eq!(meta["permission_decision"]["decision"], "accept");
        assert_eq!(meta["permission_decision"]["source"], "config");
        assert!(meta.get("non_execution_kind").is_none());
        let expected = match id {
            "b1" | "b2" => "rule",
            _ => "read_only",
        };
        assert_eq!(meta["permission_decision"]["reason_type"], expected, "{u}");
        match id {
            "b1" => assert_eq!(u["tool_use_result"]["noOutputExpected"], true, "mkdir prints nothing"),
            "b2" => assert_eq!(u["tool_use_result"]["noOutputExpected"], false),
            _ => {}
        }
    }

    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    let ms = |k: &str| result[k].as_u64().unwrap_or_else(|| panic!("{k} in {result}"));
    assert!(ms("time_to_request_ms") <= ms("ttft_ms"), "{result}");
    assert!(ms("ttft_ms") <= ms("duration_ms"), "{result}");
    assert!(ms("ttft_stream_ms") <= ms("ttft_ms"));
    assert_eq!(
        result["usage"]["cache_creation"],
        json!({"ephemeral_5m_input_tokens": 10, "ephemeral_1h_input_tokens": 20})
    );
    assert_eq!(result["usage"]["iterations"], json!([]));
    assert_eq!(result["usage"]["output_tokens_details"]["thinking_tokens"], 0);
    assert_eq!(result["subagent_stats"]["spawned"], 0);
    assert_eq!(result["safety_stops"], 0);
    assert_eq!(result["begun_message_ids"].as_array().unwrap().len(), 2);
    assert_eq!(result["begun_message_ids"][0], first["message"]["id"]);
    assert_eq!(result["result_index"], 0);
    let model = result["modelUsage"].as_object().unwrap().values().next().unwrap();
    assert_eq!(model["cacheCreationEphemeral1hInputTokens"], 20);
    assert_eq!(model["contextWindow"], 200_000);
    assert_eq!(result["model_usage_since_last_result"], result["modelUsage"]);
}

#[tokio::test]
async fn denied_calls_cut_by_max_turns_say_why_they_did_not_run() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..2 {
        server.push(calls(vec![tool(
            "w",
            "Write",
            json!({"file_path": env.path("x.txt"), "content": "x"}),
        )]));
    }
    let out = env
        .keel(&server)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-turns",
            "2",
        ])
        .run()
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines = out.lines();
    let users = of_kind(&lines, "user");
    assert!(!users.is_empty());
    for u in users {
        let meta = &u["tool_result_meta"][0];
        assert_eq!(meta["non_execution_kind"], "user-rejected", "{u}");
        assert_eq!(meta["permission_decision"]["decision"], "reject");
    }
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(
        result["stop_reason"], "tool_use",
        "the last answer's stop reason, as a string"
    );
    assert_eq!(result["permission_denials"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn partial_messages_carry_the_message_id_and_status_lines() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g", "Glob", json!({"pattern": "*.txt"}))]))
        .push(answer("none"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let status: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == "status")
        .collect();
    assert_eq!(status.len(), 2, "one per request");
    assert!(status.iter().all(|s| s["status"] == "requesting"));
    let events = of_kind(&lines, "stream_event");
    let starts: Vec<&&Value> = events
        .iter()
        .filter(|e| e["event"]["type"] == "message_start")
        .collect();
    assert_eq!(starts.len(), 2);
    for s in &starts {
        assert!(s["ttft_ms"].is_u64(), "{s}");
        assert_eq!(s["api_message_id"], s["event"]["message"]["id"]);
    }
    // Every event names the message it belongs to.
    let ids: Vec<&Value> = of_kind(&lines, "assistant")
        .iter()
        .map(|a| &a["message"]["id"])
        .collect();
    for e in &events {
        assert!(ids.contains(&&e["api_message_id"]), "{e}");
    }
}

#[tokio::test]
async fn a_json_result_counts_the_sub_agents_it_started() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "look", "prompt": "Say hello.", "subagent_type": "general-purpose"}),
        )]))
        .push(answer("hello from the sub-agent"))
        .push(answer("it said hello"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "json", "--allowedTools", "Agent"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    let s = &r["subagent_stats"];
    assert_eq!(s["spawned"], 1, "{r}");
    assert_eq!(s["completed"], 1);
    assert_eq!(s["requested"]["unset"], 1);
    assert_eq!(s["max_depth"], 1);
    assert_eq!(s["by_type"]["general-purpose"], 1);
    assert!(r["ttft_ms"].is_u64());
}

#[tokio::test]
async fn initialize_lists_every_command_the_session_offers_and_each_runs() {
    let env = Env::new();
    env.write(
        ".claude/commands/ship.md",
        "---\ndescription: Ship the release\nargument-hint: <version>\n---\nShip $ARGUMENTS.",
    );
    let server = ModelServer::start().await;
    let input =
        json!({"type": "control_request", "request_id": "i1", "request": {"subtype": "initialize"}}).to_string() + "\n";
    let out = env
        .keel(&server)
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let reply = lines
        .iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == "i1")
        .expect("an answer to initialize");
    let commands = reply["response"]["response"]["commands"].as_array().unwrap();
    let names: Vec<&str> = commands.iter().map(|c| c["name"].as_str().unwrap()).collect();
    for name in [
        "compact",
        "context",
        "cost",
        "help",
        "permissions",
        "skills",
        "agents",
        "mcp",
        "ship",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let ship = commands.iter().find(|c| c["name"] == "ship").unwrap();
    assert_eq!(ship["description"], "Ship the release");
    assert_eq!(ship["argumentHint"], "<version>");
    assert!(
        commands
            .iter()
            .all(|c| c["description"].as_str().is_some_and(|d| !d.is_empty()))
    );

    // Each listed built-in answers with -p, without the model (the server has no answers).
    for name in ["help", "permissions", "skills", "agents", "mcp"] {
        let out = env
            .keel(&server)
            .args(["-p", &format!("/{name}"), "--output-format", "json"])
            .run()
            .await;
        assert_eq!(out.code, 0, "/{name}: {}", out.stderr);
        let r = out.json();
        assert_eq!(r["is_error"], false, "/{name}: {r}");
        assert!(!r["result"].as_str().unwrap().is_empty());
    }
    let help = env.keel(&server).args(["-p", "/help"]).run().await;
    assert!(
        help.stdout.contains("/ship <version> — Ship the release"),
        "{}",
        help.stdout
    );
}

#[tokio::test]
async fn sub_agent_model_aliases_and_plugin_style_front_matter_load() {
    let env = Env::new();
    // A plugin-style agent file: its description runs over unindented example lines.
    env.write(
        ".claude/agents/quick.md",
        "---\nname: quick\ndescription: Answers fast.\\n\\nExamples:\\n\\n<example>\nContext: a question came.\n\
         user: \"How?\"\n<commentary>\nUse quick.\n</commentary>\n</example>\nmodel: haiku\n---\nYou answer briefly.\n",
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "ask", "prompt": "Say hi.", "subagent_type": "quick"}),
        )]))
        .push(answer("hi"))
        .push(answer("it said hi"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "json", "--allowedTools", "Agent"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("YAML"), "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[1].body["model"], "claude-haiku-5-5",
        "`haiku` names the current model"
    );
    assert_eq!(out.json()["subagent_stats"]["by_type"]["quick"], 1);
}

#[tokio::test]
async fn doctor_reports_the_web_tool_settings() {
    let env = Env::new();
    let doctor = env.keel_offline().args(["doctor", "--offline"]).run().await;
    assert!(
        doctor.stdout.contains("WebFetch: public internet only"),
        "{}",
        doctor.stdout
    );
    assert!(
        doctor.stdout.contains("webSearch.searxngUrl is not set"),
        "{}",
        doctor.stdout
    );

    let user = env.home.join(".claude/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        json!({"webFetch": {"allowPrivateNetwork": true}, "webSearch": {"searxngUrl": "http://127.0.0.1:8888"}})
            .to_string(),
    )
    .unwrap();
    let doctor = env.keel_offline().args(["doctor", "--offline"]).run().await;
    assert!(
        doctor.stdout.contains("WebFetch: private network allowed"),
        "{}",
        doctor.stdout
    );
    assert!(
        doctor.stdout.contains("SearXNG at http://127.0.0.1:8888"),
        "{}",
        doctor.stdout
    );

    std::fs::write(&user, json!({"webSearch": {"searxngUrl": "ftp://x"}}).to_string()).unwrap();
    let doctor = env.keel_offline().args(["doctor", "--offline"]).run().await;
    assert!(doctor.stdout.contains("FAIL WebSearch"), "{}", doctor.stdout);
}

/// The share of the reference CLI's output key paths keel prints (the four sessions of
/// `scripts/output-keys.py`, against its recorded list of the reference's paths and types):
/// at least 95%, with no shared path of another JSON type.
#[tokio::test]
async fn the_reference_output_key_paths_are_covered() {
    crate::support::skip::or_skip!(crate::support::skip::python3());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/output-keys.py");
    let out = tokio::process::Command::new("python3")
        .args([script, "--keel", env!("CARGO_BIN_EXE_keel"), "--min", "0.95"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("type differences: 0"), "{stdout}");
}
