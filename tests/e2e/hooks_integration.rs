//! Hooks around the shell tool, compaction and the example hook scripts, end to end.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::hooks::{group, script, settings};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

#[tokio::test]
async fn post_tool_use_exit_2_feeds_back_to_the_model() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook = script(
        &env,
        "review.sh",
        "echo 'a.txt is generated; edit its template instead' >&2\nexit 2",
    );
    settings(&env, json!({"PostToolUse": [group("Read", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("p1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("p1");
    assert!(!is_error, "the tool already ran: {text}");
    assert!(
        text.contains("alpha") && text.contains("edit its template instead"),
        "{text}"
    );
}

#[tokio::test]
async fn pre_and_post_compact_hooks_see_the_compaction_and_can_cancel_it() {
    let env = Env::new();
    let dump = script(
        &env,
        "dump.sh",
        r#"cat >> "$CLAUDE_PROJECT_DIR/compact-events.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/compact-events.jsonl""#,
    );
    settings(
        &env,
        json!({"PreCompact": [group("manual", &dump)], "PostCompact": [group("", &dump)], "SessionStart": [group("compact", &dump)]}),
    );
    let server = ModelServer::start().await;
    server.push(answer("First answer."));
    let out = env.keel(&server).args(["-p", "start"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.push(answer("Decisions: none yet. Next step: continue."));
    let out = env
        .keel(&server)
        .args(["-p", "/compact keep the API notes", "-c", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events: Vec<Value> = std::fs::read_to_string(env.path("compact-events.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events.iter().map(|e| e["hook_event_name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["PreCompact", "PostCompact", "SessionStart"]);
    assert_eq!(events[0]["trigger"], "manual");
    assert_eq!(events[0]["custom_instructions"], "keep the API notes");
    assert!(
        events[1]["compact_summary"].as_str().unwrap().contains("start"),
        "{}",
        events[1]
    );
    assert_eq!(events[2]["source"], "compact");

    // A PreCompact hook that exits 2 cancels the compaction: no boundary is written.
    let block = script(&env, "block.sh", "echo 'not now: release in progress' >&2\nexit 2");
    settings(&env, json!({"PreCompact": [group("", &block)]}));
    let before = std::fs::read_to_string(&env.transcripts()[0])
        .unwrap()
        .matches("compact_boundary")
        .count();
    let out = env.keel(&server).args(["-p", "/compact", "-c"]).run().await;
    assert!(out.stderr.contains("not now: release in progress"), "{}", out.stderr);
    let after = std::fs::read_to_string(&env.transcripts()[0])
        .unwrap()
        .matches("compact_boundary")
        .count();
    assert_eq!(before, after, "a cancelled compaction must not rewrite the history");
}

#[tokio::test]
async fn exit_2_blocks_a_bash_call_and_the_command_does_not_run() {
    let env = Env::new();
    let hook = script(
        &env,
        "no-curl.sh",
        r#"cmd=$(jq -r .tool_input.command)
case "$cmd" in *curl*) echo "network downloads are not allowed: $cmd" >&2; exit 2;; esac
exit 0"#,
    );
    settings(&env, json!({"PreToolUse": [group("Bash", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool(
                "b1",
                "Bash",
                json!({"command": "touch ran.txt; curl -s http://example.invalid"}),
            ),
            tool("b2", "Bash", json!({"command": "touch allowed.txt"})),
        ]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("b1");
    assert!(is_error && text.contains("network downloads are not allowed"), "{text}");
    assert!(!env.path("ran.txt").exists(), "a blocked command must not run at all");
    assert!(env.path("allowed.txt").exists());
}

#[tokio::test]
async fn updated_input_rewrites_a_bash_command() {
    let env = Env::new();
    let hook = script(
        &env,
        "safe-rm.sh",
        r#"jq '{hookSpecificOutput: {hookEventName: "PreToolUse", updatedInput: (.tool_input | .command = (.command | sub("^rm "; "mv -t trash/ ")))}}'"#,
    );
    settings(&env, json!({"PreToolUse": [group("Bash", &hook)]}));
    env.write("old.log", "log\n");
    env.write("trash/.keep", "");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("r1", "Bash", json!({"command": "rm old.log"}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("r1");
    assert!(!is_error, "{text}");
    assert!(!env.path("old.log").exists());
    assert_eq!(std::fs::read_to_string(env.path("trash/old.log")).unwrap(), "log\n");
}

#[tokio::test]
async fn example_hooks_block_credentials_and_format_after_edits() {
    let env = Env::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ["block-credentials.sh", "format-after-edit.sh"] {
        let dst = env.write(
            &format!("examples/hooks/{f}"),
            &std::fs::read_to_string(root.join("examples/hooks").join(f)).unwrap(),
        );
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    env.write(
        ".claude/settings.json",
        &std::fs::read_to_string(root.join("examples/hooks/settings.example.json")).unwrap(),
    );
    env.write("config/.env.local", "API_KEY=hunter2\n");
    env.write("notes.md", "# Notes\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("c1", "Bash", json!({"command": "cat config/.env.local"})),
            tool("c2", "Read", json!({"file_path": env.path("notes.md")})),
        ]))
        .push(calls(vec![tool(
            "e1",
            "Edit",
            json!({"file_path": env.path("notes.md"), "old_string": "# Notes", "new_string": "# Notes   \ntrailing spaces here   "}),
        )]))
        .push(calls(vec![tool(
            "e2",
            "Edit",
            json!({"file_path": env.path("notes.md"), "old_string": "trailing spaces here", "new_string": "cleaned"}),
        )]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash(cat:*)",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let (text, is_error) = reqs[1].tool_result_text("c1");
    assert!(is_error && text.contains("block-credentials.sh"), "{text}");
    assert!(!text.contains("hunter2"));
    let (text, is_error) = reqs[2].tool_result_text("e1");
    assert!(!is_error, "{text}");
    assert!(
        text.contains("Formatted") && text.contains("trailing-whitespace cleanup"),
        "{text}"
    );
    // keel noticed the formatter's change, so the next edit needs no re-read.
    assert!(text.contains("A hook changed"), "{text}");
    let (text, is_error) = reqs[3].tool_result_text("e2");
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(env.path("notes.md")).unwrap(),
        "# Notes\ncleaned\n"
    );
}

#[tokio::test]
async fn exec_form_async_hooks_and_the_permission_request_payload() {
    let env = Env::new();
    script(&env, "record.sh", r#"cat > "$CLAUDE_PROJECT_DIR/$1.json""#);
    let slow = script(
        &env,
        "slow-async.sh",
        r#"sleep 1; cat > "$CLAUDE_PROJECT_DIR/async-done.json""#,
    );
    let record_path = env.path(".claude/hooks/record.sh").display().to_string();
    settings(
        &env,
        json!({
            // Exec form: no shell; the argument reaches the script as $1.
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": record_path, "args": ["pre"]}]}],
            "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": record_path, "args": ["permission"]}]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": slow, "async": true}]}]
        }),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("p1", "Bash", json!({"command": "make deploy"}))]))
        .push(calls(vec![tool("p2", "Bash", json!({"command": "echo fine"}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--allowedTools", "Bash(echo:*)", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let pre: Value = serde_json::from_str(&std::fs::read_to_string(env.path("pre.json")).unwrap()).unwrap();
    assert_eq!(pre["hook_event_name"], "PreToolUse");
    // `make deploy` is not allowed: headless asks the PermissionRequest hooks, then denies.
    let perm: Value = serde_json::from_str(&std::fs::read_to_string(env.path("permission.json")).unwrap()).unwrap();
    assert_eq!(perm["hook_event_name"], "PermissionRequest");
    assert_eq!(perm["tool_name"], "Bash");
    assert_eq!(perm["tool_input"]["command"], "make deploy");
    assert_eq!(
        perm["permission_suggestions"],
        json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make deploy:*"}],
                "behavior": "allow", "destination": "localSettings"}])
    );
    assert_eq!(out.json()["permission_denials"][0]["tool_use_id"], "p1");
    // The async PostToolUse hook ran in the background, and keel waited for it before exiting
    // instead of cutting it off.
    let done: Value = serde_json::from_str(&std::fs::read_to_string(env.path("async-done.json")).unwrap()).unwrap();
    assert_eq!(done["tool_input"]["command"], "echo fine");
}

/// A suggestion keeps the command's quoting: saved as offered (here by the PermissionRequest
/// hook, into the local settings), it allows that command and not one whose words differ.
#[tokio::test]
async fn a_permission_suggestion_saved_as_offered_allows_exactly_its_command() {
    let env = Env::new();
    script(&env, "record.sh", r#"cat > "$CLAUDE_PROJECT_DIR/permission.json""#);
    let record_path = env.path(".claude/hooks/record.sh").display().to_string();
    settings(
        &env,
        json!({"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": record_path}]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "p1",
            "Bash",
            json!({"command": "python3 -c 'print(42)'"}),
        )]))
        .push(answer("asked"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let perm: Value = serde_json::from_str(&std::fs::read_to_string(env.path("permission.json")).unwrap()).unwrap();
    let rule = perm["permission_suggestions"][0]["rules"][0]["ruleContent"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(rule, "python3 -c 'print(42)'", "{perm}");

    // The suggestion, saved where it says (the local settings), allows that command only.
    env.write(
        ".claude/settings.local.json",
        &json!({"permissions": {"allow": [format!("Bash({rule})")]}}).to_string(),
    );
    server
        .push(calls(vec![
            tool("same", "Bash", json!({"command": "python3 -c 'print(42)'"})),
            tool("other", "Bash", json!({"command": "python3 -c 'print(43)'"})),
        ]))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let last = &requests[requests.len() - 1];
    assert_eq!(last.tool_result_text("same"), ("42".to_string(), false));
    let (text, is_error) = last.tool_result_text("other");
    assert!(is_error && text.contains("Permission needed"), "{text}");
}

/// A SessionStart hook whose first line is the reference's `{"async": true}` marker: no
/// warning, and what it prints after the marker is the hook's output.
#[tokio::test]
async fn an_async_marker_first_draws_no_warning() {
    let env = Env::new();
    let hook = script(
        &env,
        "start.sh",
        "cat >/dev/null\necho '{\"async\": true}'\necho 'The build uses make.'",
    );
    settings(
        &env,
        json!({"SessionStart": [{"hooks": [{"type": "command", "command": hook}]}]}),
    );
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stderr.contains("invalid JSON") && !out.stderr.contains("warning"),
        "{}",
        out.stderr
    );
    let sent = server.requests()[0].body.to_string();
    assert!(sent.contains("The build uses make."), "{sent}");
}
