//! Hooks end to end, with real hook scripts (bash + jq) configured the reference's way.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, Reply};

/// Writes an executable hook script under `.claude/hooks/`.
pub(crate) fn script(env: &Env, name: &str, body: &str) -> String {
    let p = env.write(
        &format!(".claude/hooks/{name}"),
        &format!("#!/usr/bin/env bash\n{body}\n"),
    );
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/{name}")
}

pub(crate) fn settings(env: &Env, hooks: Value) {
    env.write(".claude/settings.json", &json!({"hooks": hooks}).to_string());
}

pub(crate) fn group(matcher: &str, command: &str) -> Value {
    json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]})
}

#[tokio::test]
async fn pre_tool_use_exit_2_blocks_and_stderr_reaches_the_model() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(&env, "block.sh", "echo 'reading a.txt is not allowed here' >&2\nexit 2");
    settings(&env, json!({"PreToolUse": [group("Read", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("b1");
    assert!(is_error);
    assert!(text.contains("reading a.txt is not allowed here"), "{text}");
    assert!(!text.contains("alpha"), "the tool must not have run: {text}");
}

#[tokio::test]
async fn non_blocking_exit_code_warns_and_the_tool_runs() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(&env, "warn.sh", "echo 'lint service unreachable' >&2\nexit 1");
    settings(&env, json!({"PreToolUse": [group("Read", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("w1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("w1");
    assert!(!is_error && text.contains("alpha"), "{text}");
    assert!(
        out.stderr.contains("lint service unreachable"),
        "visible warning: {}",
        out.stderr
    );
    assert!(
        !text.contains("lint service"),
        "the model does not see non-blocking errors"
    );
}

#[tokio::test]
async fn json_deny_reason_reaches_the_model() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(
        &env,
        "deny.sh",
        r#"jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "use Grep for this repository"}}'"#,
    );
    settings(&env, json!({"PreToolUse": [group("Read", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("j1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("j1");
    assert!(is_error);
    assert!(text.contains("use Grep for this repository"), "{text}");
    assert_eq!(out.json()["permission_denials"][0]["tool_use_id"], "j1");
}

#[tokio::test]
async fn updated_input_rewrites_the_call_and_is_validated() {
    let env = Env::new();
    env.write("old.txt", "old content\n");
    env.write("new.txt", "new content\n");
    let hook = script(
        &env,
        "rewrite.sh",
        r#"jq '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow", updatedInput: (.tool_input | .file_path = (.file_path | sub("old.txt$"; "new.txt")))}}'"#,
    );
    let bad = script(
        &env,
        "bad.sh",
        r#"echo '{"hookSpecificOutput": {"updatedInput": {"pattern": 42}}}'"#,
    );
    settings(&env, json!({"PreToolUse": [group("Read", &hook), group("Glob", &bad)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("u1", "Read", json!({"file_path": env.path("old.txt")})),
            tool("u2", "Glob", json!({"pattern": "*.txt"})),
        ]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("u1");
    assert!(!is_error && text.contains("new content"), "{text}");
    let (text, is_error) = server.requests()[1].tool_result_text("u2");
    assert!(is_error, "an invalid rewrite must not run: {text}");
    assert!(text.contains("`pattern`"), "{text}");
}

#[tokio::test]
async fn post_tool_use_additional_context_reaches_the_next_request() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(
        &env,
        "post.sh",
        r#"jq '{hookSpecificOutput: {hookEventName: "PostToolUse", additionalContext: ("checked " + .tool_name + " of " + (.tool_input.file_path | split("/") | last) + ", lines: " + (.tool_response.file.numLines | tostring))}}'"#,
    );
    settings(&env, json!({"PostToolUse": [group("Read", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("p1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, _) = server.requests()[1].tool_result_text("p1");
    assert!(text.contains("checked Read of a.txt, lines: 1"), "{text}");
}

#[tokio::test]
async fn stop_hook_sends_the_model_back_once_then_lets_it_stop() {
    let env = Env::new();
    let hook = script(
        &env,
        "stop.sh",
        r#"input=$(cat)
if [ "$(echo "$input" | jq -r .stop_hook_active)" = "true" ]; then exit 0; fi
echo "Run the test suite before finishing." >&2
exit 2"#,
    );
    settings(
        &env,
        json!({"Stop": [{"hooks": [{"type": "command", "command": hook}]}]}),
    );
    let server = ModelServer::start().await;
    server.push(answer("All done.")).push(answer("Tests ran: 12 passed."));
    let out = env
        .keel(&server)
        .args(["-p", "fix it", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["result"], "Tests ran: 12 passed.");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let last = reqs[1].messages().last().unwrap().to_string();
    assert!(last.contains("Run the test suite before finishing."), "{last}");
}

#[tokio::test]
async fn stop_hook_loop_is_bounded() {
    let env = Env::new();
    let hook = script(&env, "nag.sh", "echo 'keep going' >&2\nexit 2");
    settings(
        &env,
        json!({"Stop": [{"hooks": [{"type": "command", "command": hook}]}]}),
    );
    let server = ModelServer::start().await;
    for i in 0..12 {
        server.push(answer(&format!("done {i}")));
    }
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // One first answer plus eight continuations, then keel ends the turn and says why.
    assert_eq!(server.requests().len(), 9);
    assert!(out.stderr.contains("8 times in a row"), "{}", out.stderr);
}

#[tokio::test]
async fn user_prompt_submit_and_session_start_inject_context() {
    let env = Env::new();
    let start = script(&env, "start.sh", "echo 'Project uses tabs, never spaces.'");
    let prompt = script(
        &env,
        "prompt.sh",
        r#"jq '{hookSpecificOutput: {hookEventName: "UserPromptSubmit", additionalContext: ("ticket context for: " + .prompt)}}'"#,
    );
    settings(
        &env,
        json!({
            "SessionStart": [group("startup", &start)],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": prompt}]}]
        }),
    );
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env.keel(&server).args(["-p", "fix KEEL-7"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = server.requests()[0].messages()[0].to_string();
    assert!(first.contains("fix KEEL-7"), "{first}");
    assert!(first.contains("Project uses tabs, never spaces."), "{first}");
    assert!(first.contains("ticket context for: fix KEEL-7"), "{first}");
}

#[tokio::test]
async fn user_prompt_submit_exit_2_rejects_the_prompt() {
    let env = Env::new();
    let hook = script(
        &env,
        "reject.sh",
        "echo 'prompts may not contain passwords' >&2\nexit 2",
    );
    settings(
        &env,
        json!({"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}]}),
    );
    let server = ModelServer::start().await;
    let out = env.keel(&server).args(["-p", "my password is x"]).run().await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("prompts may not contain passwords"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty(), "the model never saw the prompt");
}

#[tokio::test]
async fn regex_matchers_do_not_fire_on_other_tools() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(
        &env,
        "mark.sh",
        r#"cat > "$CLAUDE_PROJECT_DIR/fired-$(jq -r .tool_name)""#,
    );
    settings(
        &env,
        json!({"PreToolUse": [group("^Gr.*p$", &hook), group("Glob|Write", &hook)]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("r1", "Read", json!({"file_path": env.path("a.txt")})),
            tool("r2", "Grep", json!({"pattern": "alpha"})),
            tool("r3", "Glob", json!({"pattern": "*.txt"})),
        ]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("fired-Grep").exists());
    assert!(env.path("fired-Glob").exists());
    assert!(!env.path("fired-Read").exists(), "the matchers must not match Read");
}

#[tokio::test]
async fn slow_hook_times_out_without_hanging_the_session() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    // An unusual duration marks this test's processes among everything else running.
    let hook = script(&env, "slow.sh", "sleep 30.0417 &\nsleep 30.0417\necho never");
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": hook, "timeout": 1}]}]}})
            .to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("s1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("timed out after 1s"), "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("s1");
    assert!(
        !is_error && text.contains("alpha"),
        "a timed-out hook does not block: {text}"
    );
    // The hook's whole process group was killed: no `sleep 30.0417` survives.
    let ps = std::process::Command::new("ps").args(["-eo", "args"]).output().unwrap();
    let survivors = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.trim() == "sleep 30.0417")
        .count();
    assert_eq!(survivors, 0, "a hook process survived its timeout");
}

#[tokio::test]
async fn every_event_gets_its_payload_fields() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");
    let dump = script(
        &env,
        "dump.sh",
        r#"input=$(cat); echo "$input" >> "$CLAUDE_PROJECT_DIR/events.jsonl""#,
    );
    let fail = script(&env, "fail.sh", "cat > /dev/null; exit 0");
    let all = |m: &str| group(m, &dump);
    settings(
        &env,
        json!({
            "SessionStart": [all("")], "UserPromptSubmit": [all("")], "PreToolUse": [all("")],
            "PostToolUse": [all("")], "PostToolUseFailure": [all("")], "Stop": [all("")],
            "SessionEnd": [all("")], "Notification": [group("", &fail)]
        }),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("e1", "Read", json!({"file_path": "a.txt"})),
            tool("e2", "Read", json!({"file_path": env.path("missing.txt")})),
        ]))
        .push(answer("finished"));
    let out = env.keel(&server).args(["-p", "look"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = std::fs::read_to_string(env.path("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by = |name: &str| -> Vec<&Value> { lines.iter().filter(|l| l["hook_event_name"] == name).collect() };
    for l in &lines {
        for k in [
            "session_id",
            "transcript_path",
            "cwd",
            "hook_event_name",
            "permission_mode",
        ] {
            assert!(l.get(k).is_some(), "{k} missing in {l}");
        }
        assert_eq!(l["cwd"], env.work.display().to_string());
    }
    assert_eq!(by("SessionStart")[0]["source"], "startup");
    assert_eq!(by("UserPromptSubmit")[0]["prompt"], "look");
    let pre = by("PreToolUse");
    assert_eq!(pre.len(), 2);
    // The two reads run concurrently, so their hooks may log in either order.
    let e1 = pre
        .iter()
        .find(|p| p["tool_use_id"] == "e1")
        .expect("PreToolUse for e1");
    assert_eq!(e1["tool_name"], "Read");
    // Paths reach hooks absolute even when the model gave a relative one.
    assert_eq!(e1["tool_input"]["file_path"], env.path("a.txt").display().to_string());
    let post = by("PostToolUse");
    assert_eq!(post[0]["tool_response"]["file"]["numLines"], 1);
    assert!(post[0]["duration_ms"].is_u64());
    let failure = by("PostToolUseFailure");
    assert_eq!(failure[0]["tool_use_id"], "e2");
    assert!(failure[0]["error"].as_str().unwrap().contains("does not exist"));
    assert_eq!(failure[0]["is_interrupt"], false);
    let stop = by("Stop");
    assert_eq!(stop[0]["stop_hook_active"], false);
    assert_eq!(stop[0]["last_assistant_message"], "finished");
    assert_eq!(by("SessionEnd")[0]["reason"], "other");
}

#[tokio::test]
async fn parallel_hooks_combine_deny_over_allow() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let allow = script(
        &env,
        "allow.sh",
        r#"sleep 0.2; jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow"}}'"#,
    );
    let deny = script(
        &env,
        "deny.sh",
        r#"jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "second opinion says no"}}'"#,
    );
    settings(
        &env,
        json!({"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": allow}, {"type": "command", "command": deny}]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("pd", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("pd");
    assert!(is_error && text.contains("second opinion says no"), "{text}");
}

#[tokio::test]
async fn hook_allow_does_not_override_a_deny_rule() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let allow = script(
        &env,
        "allow.sh",
        r#"jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow"}}'"#,
    );
    env.write(
        ".claude/settings.json",
        &json!({"permissions": {"deny": ["Read(a.txt)"]}, "hooks": {"PreToolUse": [group("Read", &allow)]}})
            .to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("hd", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("hd");
    assert!(is_error && text.contains("Read(a.txt)"), "{text}");
}

#[tokio::test]
async fn identical_handlers_from_two_files_run_once_and_disable_all_hooks_works() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(
        &env,
        "count.sh",
        r#"cat >/dev/null; echo x >> "$CLAUDE_PROJECT_DIR/count""#,
    );
    settings(&env, json!({"PreToolUse": [group("Read", &hook)]}));
    env.write(
        ".keel/settings.json",
        &json!({"hooks": {"PreToolUse": [group("Read|Grep", &hook)]}}).to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("c1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(env.path("count")).unwrap(), "x\n");

    env.write(".claude/settings.local.json", r#"{"disableAllHooks": true}"#);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("c2", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(env.path("count")).unwrap(),
        "x\n",
        "disabled hooks must not run"
    );
}

#[tokio::test]
async fn a_hook_that_cannot_start_is_reported_loudly() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.write(".claude/hooks/not-exec.sh", "#!/bin/sh\nexit 0\n");
    settings(
        &env,
        json!({"PreToolUse": [
            group("Read", "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/missing.sh"),
            group("Read", "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/not-exec.sh")
        ]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("n1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("command not found"), "{}", out.stderr);
    assert!(out.stderr.contains("not executable"), "{}", out.stderr);
    let runs: Vec<Value> = out
        .lines()
        .into_iter()
        .filter(|l| l["subtype"] == "hook_response")
        .collect();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["outcome"] == "failed_to_start"), "{runs:?}");
    let transcript = crate::support::read_jsonl(&env.transcripts()[0]);
    assert_eq!(transcript.iter().filter(|l| l["event"] == "hook_run").count(), 2);
}

#[tokio::test]
async fn http_hooks_post_the_event_and_use_the_response() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook_server = ModelServer::start().await;
    hook_server.push(Reply::Json {
        status: 200,
        body: json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "policy server says no"}}),
        headers: vec![],
    });
    settings(
        &env,
        json!({"PreToolUse": [{"matcher": "Read", "hooks": [{
            "type": "http", "url": format!("{}/hook", hook_server.url()),
            "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Leak": "$HOME"},
            "allowedEnvVars": ["HOOK_TOKEN"]
        }]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("h1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .env("HOOK_TOKEN", "s3cret")
        .args(["-p", "x"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("h1");
    assert!(is_error && text.contains("policy server says no"), "{text}");
    let req = &hook_server.requests()[0];
    assert_eq!(req.path, "/hook");
    assert_eq!(req.body["hook_event_name"], "PreToolUse");
    assert_eq!(req.body["tool_name"], "Read");
    assert_eq!(req.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(
        req.header("x-leak"),
        Some(""),
        "variables outside allowedEnvVars are not interpolated"
    );
}

#[tokio::test]
async fn keel_hooks_lists_by_event_and_source() {
    let env = Env::new();
    settings(
        &env,
        json!({"PreToolUse": [group("Bash", "./check.sh")], "Stop": [group("", "./stop.sh")]}),
    );
    let out = env.keel_offline().arg("hooks").run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("PreToolUse\n  [Bash] ./check.sh"), "{}", out.stdout);
    assert!(out.stdout.contains("Stop\n  [*] ./stop.sh"), "{}", out.stdout);
    assert!(out.stdout.contains(".claude/settings.json"), "{}", out.stdout);
}
