//! `--input-format stream-json` driven line by line, as a program would: turns, control
//! requests and their answers, hook events, and the failure cases that must never hang.

use serde_json::{Value, json};

use crate::hooks::{group, script, settings};
use crate::support::sse::{answer, api_error, calls, tool};
use crate::support::{Env, ModelServer};

const STREAM: [&str; 5] = [
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

fn user(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": null, "session_id": ""})
        .to_string()
}

fn request(id: &str, body: Value) -> String {
    json!({"type": "control_request", "request_id": id, "request": body}).to_string()
}

fn lines_of<'a>(lines: &'a [Value], t: &str, subtype: Option<&str>) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == t && subtype.is_none_or(|s| l["subtype"] == s))
        .collect()
}

fn response_to<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == id)
        .unwrap_or_else(|| panic!("no control_response for {id} in {lines:#?}"))
}

#[tokio::test]
async fn one_turn_per_message_until_stdin_closes_without_print() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("first answer")).push(answer("second answer"));
    let input = [user("one"), user("two")].join("\n") + "\n";
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let results = lines_of(&lines, "result", None);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["result"], "first answer");
    assert_eq!(results[1]["result"], "second answer");
    assert_eq!(results[0]["session_id"], results[1]["session_id"]);
    // Each turn opens with system/init; results carry the turn's own usage.
    assert_eq!(lines_of(&lines, "system", Some("init")).len(), 2);
    assert_eq!(results[1]["usage"]["input_tokens"], 100);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let second = reqs[1].body["messages"].to_string();
    assert!(second.contains("one") && second.contains("first answer") && second.contains("two"));
}

#[tokio::test]
async fn content_blocks_and_replayed_messages() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("seen"));
    let msg = json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "look at this"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    ]}});
    let out = env
        .keel(&server)
        .args(STREAM)
        .arg("--replay-user-messages")
        .stdin(&format!("{msg}\n"))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let replay = lines
        .iter()
        .find(|l| l["isReplay"] == true)
        .expect("a replayed message");
    assert_eq!(replay["message"]["content"][0]["text"], "look at this");
    let reqs = server.requests();
    let sent = &reqs[0].messages()[0]["content"];
    assert_eq!(sent[0]["text"], "look at this");
    assert_eq!(sent[1]["type"], "image");
}

#[tokio::test]
async fn unknown_and_malformed_requests_get_error_answers_and_bad_lines_are_reported() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("still here"));
    let input = [
        request("r1", json!({"subtype": "rewind_files", "user_message_id": "u"})),
        request("r2", json!({"subtype": "set_permission_mode"})),
        request("r3", json!({"subtype": "set_permission_mode", "mode": "sideways"})),
        "this is not json".to_string(),
        request("r4", json!({"subtype": "mcp_status"})),
        user("hello"),
    ]
    .join("\n")
        + "\n";
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let r1 = response_to(&lines, "r1");
    assert_eq!(r1["response"]["subtype"], "error");
    assert!(r1["response"]["error"].as_str().unwrap().contains("rewind_files"));
    assert_eq!(response_to(&lines, "r2")["response"]["subtype"], "error");
    let r3 = &response_to(&lines, "r3")["response"];
    assert!(r3["error"].as_str().unwrap().contains("sideways"), "{r3}");
    assert_eq!(
        response_to(&lines, "r4")["response"]["response"],
        json!({"mcpServers": []})
    );
    assert!(out.stderr.contains("not JSON"), "{}", out.stderr);
    assert_eq!(lines_of(&lines, "result", None)[0]["result"], "still here");
}

#[tokio::test]
async fn initialize_answers_and_set_permission_mode_reports_the_mode() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": "a.txt", "content": "a"}),
        )]))
        .push(answer("written"));
    let input = [
        request("i1", json!({"subtype": "initialize", "hooks": null})),
        request("m1", json!({"subtype": "set_permission_mode", "mode": "acceptEdits"})),
        user("write it"),
    ]
    .join("\n")
        + "\n";
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let init = &response_to(&lines, "i1")["response"]["response"];
    assert_eq!(init["claude_code_version"], env!("CARGO_PKG_VERSION"));
    assert!(
        init["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "Explore")
    );
    assert_eq!(
        response_to(&lines, "m1")["response"]["response"],
        json!({"mode": "acceptEdits"})
    );
    let status = lines_of(&lines, "system", Some("status"));
    assert_eq!(status[0]["permissionMode"], "acceptEdits");
    assert!(env.path("a.txt").exists(), "acceptEdits let the Write run");
}

#[tokio::test]
async fn initialize_refuses_malformed_options_and_names_unknown_fields() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let cases = [
        ("skills", json!("all")),
        ("excludeDynamicSections", json!("yes")),
        ("systemPromptSnapshot", json!(1)),
        ("forwardSubagentText", json!("true")),
    ];
    let mut input = String::new();
    for (i, (field, value)) in cases.iter().enumerate() {
        let mut body = json!({"subtype": "initialize"});
        body[*field] = value.clone();
        input.push_str(&(request(&format!("i{i}"), body) + "\n"));
    }
    // Well-formed options are accepted; an unknown field is named on stderr.
    input.push_str(
        &(request(
            "ok",
            json!({"subtype": "initialize", "systemPromptSnapshot": false, "somethingNew": 1}),
        ) + "\n"),
    );
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    let lines = out.lines();
    for (i, (field, _)) in cases.iter().enumerate() {
        let r = &response_to(&lines, &format!("i{i}"))["response"];
        assert_eq!(r["subtype"], "error", "{field}");
        assert!(r["error"].as_str().unwrap().contains(&format!("`{field}")), "{r}");
    }
    assert_eq!(response_to(&lines, "ok")["response"]["subtype"], "success");
    assert!(out.stderr.contains("`somethingNew`"), "{}", out.stderr);
}

#[tokio::test]
async fn a_question_nobody_answers_is_denied_when_stdin_closes() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": "a.txt", "content": "a"}),
        )]))
        .push(answer("could not write"));
    let out = env
        .keel(&server)
        .args(STREAM)
        .args(["--permission-prompt-tool", "stdio"])
        .stdin(&(user("write it") + "\n"))
        .run()
        .await;
    let lines = out.lines();
    // The client closed its input before the question came up: nobody can answer, so the call
    // is denied at once (saying why) and the turn finishes.
    let (text, is_error) = server.requests()[1].tool_result_text("w1");
    assert!(is_error && text.contains("closed its input"), "{text}");
    assert!(!env.path("a.txt").exists());
    let result = lines_of(&lines, "result", None)[0];
    assert_eq!(result["permission_denials"][0]["tool_use_id"], "w1");
    assert_eq!(result["result"], "could not write");
}

#[tokio::test]
async fn hook_events_appear_only_when_asked_for() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(&env, "pre.sh", "cat >/dev/null; echo checked; echo note >&2");
    settings(&env, json!({"PreToolUse": [group("Read", &hook)]}));
    let run = |extra: &'static [&'static str]| {
        let env = &env;
        async move {
            let server = ModelServer::start().await;
            server
                .push(calls(vec![tool("r1", "Read", json!({"file_path": env.path("a.txt")}))]))
                .push(answer("ok"));
            let out = env
                .keel(&server)
                .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
                .args(extra)
                .run()
                .await;
            assert_eq!(out.code, 0, "{}", out.stderr);
            out.lines()
        }
    };
    let quiet = run(&[]).await;
    assert!(
        quiet
            .iter()
            .all(|l| !l["subtype"].as_str().unwrap_or("").starts_with("hook_"))
    );
    let lines = run(&["--include-hook-events"]).await;
    let started = lines_of(&lines, "system", Some("hook_started"));
    let response = lines_of(&lines, "system", Some("hook_response"));
    assert_eq!((started.len(), response.len()), (1, 1), "{lines:#?}");
    assert_eq!(started[0]["hook_id"], response[0]["hook_id"]);
    assert_eq!(response[0]["hook_name"], "PreToolUse:Read");
    assert_eq!(response[0]["hook_event"], "PreToolUse");
    assert_eq!(response[0]["stdout"], "checked\n");
    assert_eq!(response[0]["stderr"], "note\n");
    assert_eq!(response[0]["output"], "checked\nnote\n");
    assert_eq!(response[0]["exit_code"], 0);
    assert_eq!(response[0]["outcome"], "success");
}

#[tokio::test]
async fn stream_json_input_needs_stream_json_output() {
    let env = Env::new();
    let out = env
        .keel_offline()
        .args(["--input-format", "stream-json", "--output-format", "text"])
        .stdin("")
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("--input-format stream-json needs --output-format stream-json"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn initialize_sets_prompt_options_and_a_schema_and_state_events_frame_each_turn() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(calls(vec![tool("s1", "StructuredOutput", json!({"ok": true}))]));
    let input = [
        request(
            "i1",
            json!({"subtype": "initialize", "appendSystemPrompt": "Answer tersely.",
                   "jsonSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}),
        ),
        user("check"),
    ]
    .join("\n")
        + "\n";
    let out = env
        .keel(&server)
        .args(STREAM)
        .env("CLAUDE_CODE_SDK_READS_SESSION_STATE", "1")
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    assert_eq!(response_to(&lines, "i1")["response"]["subtype"], "success");
    let req = &server.requests()[0];
    assert_eq!(
        req.body["system"].as_array().unwrap().last().unwrap()["text"],
        "Answer tersely."
    );
    assert!(req.tool_names().contains(&"StructuredOutput".to_string()));
    let result = lines_of(&lines, "result", None)[0];
    assert_eq!(result["structured_output"], json!({"ok": true}));
    // running … result … idle, marked for the SDK host only.
    let states: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["subtype"] == "session_state_changed")
        .map(|(i, l)| (i, l["state"].as_str().unwrap()))
        .collect();
    let result_at = lines.iter().position(|l| l["type"] == "result").unwrap();
    assert_eq!(states.len(), 2, "{states:?}");
    assert!(states[0].1 == "running" && states[0].0 < result_at);
    assert!(states[1].1 == "idle" && states[1].0 > result_at);
    assert!(
        lines
            .iter()
            .filter(|l| l["subtype"] == "session_state_changed")
            .all(|l| l["sdk_host_only"] == true)
    );
}

#[tokio::test]
async fn slash_commands_run_in_stream_input_as_with_print() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let input = [user("/cost"), user("/no-such-command")].join("\n") + "\n";
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    let lines = out.lines();
    let results = lines_of(&lines, "result", None);
    assert_eq!(results.len(), 2, "{lines:#?}");
    assert_eq!(results[0]["is_error"], false);
    assert!(
        results[0]["result"].as_str().unwrap().contains("Total cost"),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["errors"][0].as_str().unwrap().contains("no-such-command"),
        "{}",
        results[1]
    );
    assert!(server.requests().is_empty(), "no model request for commands");
    assert_eq!(out.code, 1, "the last turn failed");
}

#[tokio::test]
async fn the_fallback_model_takes_over_in_a_driven_session() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..3 {
        server.push(api_error(529, "overloaded_error", "Overloaded"));
    }
    server
        .push(answer("answered by the fallback"))
        .push(answer("still the fallback"));
    let input = [user("one"), user("two")].join("\n") + "\n";
    let out = env
        .keel(&server)
        .args(STREAM)
        .args(["--model", "sonnet", "--fallback-model", "haiku"])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
        .collect();
    // Three overloads, then the fallback; the next turn goes to it at once.
    assert_eq!(
        models,
        [
            "claude-sonnet-5-5",
            "claude-sonnet-5-5",
            "claude-sonnet-5-5",
            "claude-haiku-5-5",
            "claude-haiku-5-5"
        ]
    );
    let lines = out.lines();
    let notices = lines_of(&lines, "system", Some("notice"));
    assert!(
        notices.iter().any(|n| n["message"]
            .as_str()
            .is_some_and(|m| m.contains("continuing on the fallback model claude-haiku-5-5"))),
        "the switch is a line of the output: {notices:#?}"
    );
    let results = lines_of(&lines, "result", None);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["result"], "answered by the fallback");
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[1]["result"], "still the fallback");
}

#[tokio::test]
async fn set_model_keeps_the_fallback_and_refuses_a_model_it_cannot_reach() {
    let env = Env::new();
    let server = ModelServer::start().await;
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(
        env.home.join(".keel/settings.json"),
        json!({"providers": {"locked": {"type": "openai", "baseUrl": format!("{}/v1", server.url()),
                                         "apiKeyEnv": "KEEL_TEST_KEY_NEVER_SET"}}})
        .to_string(),
    )
    .unwrap();
    for _ in 0..3 {
        server.push(api_error(529, "overloaded_error", "Overloaded"));
    }
    server.push(answer("from the fallback"));
    let input = [
        request("m1", json!({"subtype": "set_model", "model": "locked/gpt-4.1"})),
        request("m2", json!({"subtype": "set_model", "model": "opus"})),
        user("go"),
    ]
    .join("\n")
        + "\n";
    let out = env
        .keel(&server)
        .args(STREAM)
        .args(["--model", "sonnet", "--fallback-model", "haiku"])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let refused = response_to(&lines, "m1");
    assert_eq!(refused["response"]["subtype"], "error", "{refused}");
    assert!(
        refused["response"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("KEEL_TEST_KEY_NEVER_SET")),
        "{refused}"
    );
    let switched = response_to(&lines, "m2");
    assert_eq!(switched["response"]["subtype"], "success", "{switched}");
    assert_eq!(switched["response"]["response"]["model"], "claude-opus-5-5");
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        models,
        [
            "claude-opus-5-5",
            "claude-opus-5-5",
            "claude-opus-5-5",
            "claude-haiku-5-5"
        ],
        "the new model has the session's fallback behind it"
    );
    assert_eq!(lines_of(&lines, "result", None)[0]["result"], "from the fallback");
}
