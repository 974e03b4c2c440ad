//! Hook types keel answers itself: `prompt` (a side request to the session's model), `agent` (a
//! short sub-agent run with tools) and `mcp_tool` (a tool of a configured MCP server), with the
//! decision contract of command hooks.

use serde_json::{Value, json};

use crate::hooks::settings;
use crate::mcp::{config, log_path, python, received, stdio};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

fn system_text(body: &Value) -> String {
    body["system"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter_map(|x| x["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_prompt_hook_asks_the_model_and_its_verdict_decides() {
    let env = Env::new();
    env.write("secret.txt", "the key\n");
    env.write("open.txt", "hello\n");
    settings(
        &env,
        json!({"PreToolUse": [{"matcher": "Read", "hooks": [
            {"type": "prompt", "prompt": "Refuse reading secret.txt. Event: $ARGUMENTS"}]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "s1",
            "Read",
            json!({"file_path": env.path("secret.txt")}),
        )]))
        .push(answer("{\"ok\": false, \"reason\": \"secret.txt holds credentials\"}"))
        .push(calls(vec![tool(
            "o1",
            "Read",
            json!({"file_path": env.path("open.txt")}),
        )]))
        .push(answer("```json\n{\"ok\": true}\n```"))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "read them"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = server.requests();
    assert_eq!(r.len(), 5, "two hook requests besides the session's three");
    // The hook's request: keel's verdict instructions, the event written into the prompt.
    let hook = &r[1];
    assert!(
        system_text(&hook.body).contains("{\"ok\": true}"),
        "{}",
        system_text(&hook.body)
    );
    let asked = hook.messages()[0]["content"].to_string();
    assert!(asked.contains("Refuse reading secret.txt. Event:"), "{asked}");
    assert!(asked.contains("secret.txt") && asked.contains("PreToolUse"), "{asked}");
    assert!(
        asked.contains("<untrusted-content source=\\\"hook event\\\">"),
        "the event is marked as outside text: {asked}"
    );
    assert!(
        hook.body["tools"].as_array().is_none_or(|t| t.is_empty()),
        "no tools for a prompt hook"
    );
    let (text, is_error) = r[2].tool_result_text("s1");
    assert!(is_error && text.contains("secret.txt holds credentials"), "{text}");
    assert!(!text.contains("the key"), "the call must not have run: {text}");
    let (text, is_error) = r[4].tool_result_text("o1");
    assert!(!is_error && text.contains("hello"), "{text}");
}

#[tokio::test]
async fn a_prompt_hook_answer_without_a_verdict_is_a_hook_failure() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    settings(
        &env,
        json!({"PreToolUse": [{"matcher": "Read", "hooks": [
            {"type": "prompt", "prompt": "Check it", "onFailure": "block"}]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("a1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("I think it is fine."))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // An answer that is no verdict is a failure of the hook: under `onFailure: block` it blocks.
    let (text, is_error) = server.requests()[2].tool_result_text("a1");
    assert!(is_error && text.contains("without the JSON verdict"), "{text}");
}

#[tokio::test]
async fn a_guard_prompt_hook_without_a_verdict_denies_even_when_its_answer_looks_like_a_command_hooks() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    settings(
        &env,
        json!({"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "prompt", "prompt": "Check it"}]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("a1", "Read", json!({"file_path": env.path("a.txt")}))]))
        // Command-hook output, not `{"ok": …}`: no verdict, so the guard fails closed.
        .push(answer(
            "{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\"}}",
        ))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[2].tool_result_text("a1");
    assert!(
        is_error && text.contains("no verdict") && text.contains("prompt: Check it"),
        "{text}"
    );
    assert!(!text.contains("alpha"), "the call must not have run: {text}");
}

#[tokio::test]
async fn the_documents_verify_the_tests_agent_hook_runs_them_on_stop() {
    let env = Env::new();
    // A test suite that fails until the fix exists, and counts its runs.
    env.write(
        "run_tests.sh",
        "echo run >> runs.log\nif [ -f fixed ]; then echo '2 passed'; else echo 'FAILED test_add'; exit 1; fi\n",
    );
    settings(
        &env,
        json!({"Stop": [{"hooks": [{"type": "agent",
            "prompt": "Verify all unit tests pass. Run the test suite and check results. $ARGUMENTS", "timeout": 120}]}]}),
    );
    let server = ModelServer::start().await;
    server
        // The session says it is done.
        .push(answer("done"))
        // The hook's agent runs the tests and finds a failure.
        .push(calls(vec![tool("t1", "Bash", json!({"command": "sh run_tests.sh"}))]))
        .push(answer(
            "{\"ok\": false, \"reason\": \"test_add fails: FAILED test_add\"}",
        ))
        // The session is sent back, fixes, says done again.
        .push(calls(vec![tool("f1", "Bash", json!({"command": "touch fixed"}))]))
        .push(answer("fixed"))
        // The hook's agent runs them again: they pass.
        .push(calls(vec![tool("t2", "Bash", json!({"command": "sh run_tests.sh"}))]))
        .push(answer("{\"ok\": true}"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "make the tests pass",
            "--allowedTools",
            "Bash(sh run_tests.sh),Bash(touch fixed)",
            "--output-format",
            "json",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["result"], "fixed");
    let r = server.requests();
    assert_eq!(
        r.len(),
        7,
        "{:?}",
        r.iter().map(|x| x.messages().len()).collect::<Vec<_>>()
    );
    // The agent's requests offer read, search and shell tools only, and carry the event.
    let mut offered = r[1].tool_names();
    offered.sort();
    assert_eq!(offered, vec!["Bash", "Glob", "Grep", "Read"]);
    let task = r[1].messages()[0]["content"].to_string();
    assert!(
        task.contains("Verify all unit tests pass") && task.contains("stop_hook_active"),
        "{task}"
    );
    let (text, _) = r[2].tool_result_text("t1");
    assert!(text.contains("FAILED test_add"), "the agent really ran them: {text}");
    // The verdict reached the session as the Stop hook's reason.
    let back = r[3].messages().last().unwrap()["content"].to_string();
    assert!(back.contains("test_add fails"), "{back}");
    let runs = std::fs::read_to_string(env.path("runs.log")).unwrap();
    assert_eq!(runs.lines().count(), 2, "the suite ran once per Stop: {runs}");
}

#[tokio::test]
async fn an_mcp_tool_hook_calls_the_server_and_its_result_is_the_hooks_output() {
    or_skip!(python());
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let log = log_path(&env, "h");
    settings(
        &env,
        json!({
            "UserPromptSubmit": [{"hooks": [{"type": "mcp_tool", "server": "t", "tool": "echo",
                "input": {"message": "prompt was ${prompt}"}}]}],
            "PreToolUse": [{"matcher": "Read", "hooks": [{"type": "mcp_tool", "server": "t", "tool": "fail",
                "input": {"path": "${tool_input.file_path}"}, "onFailure": "block"}]}]
        }),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("r1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "check this", "--mcp-config"])
        .arg(config(json!({"t": stdio(&log, &[])})))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = server.requests();
    // Plain output of a UserPromptSubmit hook is context for the model.
    let first = r[0].messages()[0]["content"].to_string();
    assert!(first.contains("Echo: prompt was check this"), "{first}");
    // The server received the event's values in the input.
    let got = received(&log);
    let fail = got
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "fail")
        .expect("the fail tool was called");
    assert_eq!(fail["params"]["arguments"]["path"], json!(env.path("a.txt")));
    // Its error result, under `onFailure: block`, blocks the call.
    let (text, is_error) = r[1].tool_result_text("r1");
    assert!(is_error && !text.contains("alpha"), "{text}");
    assert!(text.contains("mcp_tool t/fail"), "the reason names the hook: {text}");
}
