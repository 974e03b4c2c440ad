//! Headless behaviour programs rely on: flags that must work (not merely parse), output and
//! transcript fields, the shell environment from SessionStart hooks, and failure modes
//! (startup errors in JSON, a closed stdout, denials explained on stderr).

use std::time::Duration;

use serde_json::{Value, json};

use crate::hooks::{group, script, settings};
use crate::support::sse::{answer, calls, frames, text, tool};
use crate::support::{Env, ModelServer, Reply, read_jsonl};

#[tokio::test]
async fn session_start_hooks_set_the_environment_of_later_commands() {
    let env = Env::new();
    let hook = script(
        &env,
        "env.sh",
        r#"cat >/dev/null; echo 'export FROM_HOOK=claude' >> "$CLAUDE_ENV_FILE"; echo 'export ALSO=keel' >> "$KEEL_ENV_FILE""#,
    );
    settings(
        &env,
        json!({"SessionStart": [{"hooks": [{"type": "command", "command": hook}]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": "echo \"$FROM_HOOK-$ALSO\""}),
        )]))
        .push(calls(vec![tool(
            "b2",
            "Bash",
            json!({"command": "echo \"again $FROM_HOOK\"", "run_in_background": false}),
        )]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--allowedTools", "Bash(echo:*)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs[1].tool_result_text("b1").0, "claude-keel");
    assert_eq!(reqs[2].tool_result_text("b2").0, "again claude");
}

#[tokio::test]
async fn transcript_lines_carry_session_parent_cwd_model_and_usage() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g1", "Glob", json!({"pattern": "*"}))]))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "look"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = read_jsonl(&env.transcripts()[0]);
    let convo: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "user" || l["type"] == "assistant")
        .collect();
    assert_eq!(convo.len(), 4);
    assert_eq!(convo[0]["parentUuid"], Value::Null);
    for pair in convo.windows(2) {
        assert_eq!(
            pair[1]["parentUuid"], pair[0]["uuid"],
            "each line follows the previous one"
        );
    }
    let session = convo[0]["sessionId"].as_str().unwrap();
    assert_eq!(session.len(), 36);
    for l in &convo {
        assert_eq!(l["sessionId"], session);
        assert_eq!(l["cwd"], env.work.display().to_string());
        assert!(l["timestamp"].as_str().is_some());
    }
    let assistant = convo[1];
    assert_eq!(assistant["message"]["model"], "claude-sonnet-4-5");
    assert_eq!(assistant["message"]["usage"]["input_tokens"], 100);
    assert!(assistant["message"]["id"].as_str().unwrap().starts_with("msg_"));
}

#[tokio::test]
async fn hook_payloads_name_the_prompt() {
    let env = Env::new();
    let hook = script(
        &env,
        "p.sh",
        r#"cat >> "$CLAUDE_PROJECT_DIR/payloads.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/payloads.jsonl""#,
    );
    settings(
        &env,
        json!({"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}],
               "PreToolUse": [group("Glob", &hook)]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g1", "Glob", json!({"pattern": "*"}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let payloads: Vec<Value> = std::fs::read_to_string(env.path("payloads.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(payloads.len(), 2);
    let id = payloads[0]["prompt_id"].as_str().expect("prompt_id");
    assert_eq!(id.len(), 36);
    assert_eq!(payloads[1]["prompt_id"], id, "the same prompt");
}

#[tokio::test]
async fn a_startup_error_still_prints_a_json_result() {
    let env = Env::new();
    for format in ["json", "stream-json"] {
        let out = env
            .keel_offline()
            .args([
                "-p",
                "x",
                "--verbose",
                "--output-format",
                format,
                "--permission-mode",
                "sideways",
            ])
            .run()
            .await;
        assert_eq!(out.code, 1);
        let r: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
        assert_eq!(r["type"], "result");
        assert_eq!(r["is_error"], true);
        assert!(r["result"].as_str().unwrap().contains("sideways"), "{r}");
        assert!(out.stderr.contains("sideways"), "{}", out.stderr);
    }
}

#[tokio::test]
async fn a_closed_stdout_ends_keel_quietly() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let mut chunks = frames(&[text(&"word ".repeat(400))], "end_turn", 10, 10);
    chunks.truncate(chunks.len());
    server.push(Reply::Sse {
        chunks,
        pace: Duration::from_millis(5),
    });
    let mut child = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ])
        .spawn();
    // Read one line, then go away like `head -1`.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let _ = tokio::io::AsyncReadExt::read(&mut stdout, &mut first).await;
    drop(stdout);
    let out = crate::support::finish(child).await;
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(out.stderr.trim().is_empty(), "nothing to say: {}", out.stderr);
    assert_eq!(out.code, 141);
}

#[tokio::test]
async fn denials_in_headless_default_mode_are_counted_on_stderr() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("w1", "Write", json!({"file_path": "a.txt", "content": "a"})),
            tool("b1", "Bash", json!({"command": "touch b.txt"})),
        ]))
        .push(answer("could not"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let notes: Vec<&str> = out.stderr.lines().filter(|l| l.contains("denied")).collect();
    assert_eq!(notes.len(), 1, "{}", out.stderr);
    assert!(
        notes[0].contains("2 tool calls were denied (Bash, Write)"),
        "{}",
        notes[0]
    );
    assert!(notes[0].contains("--allowedTools"), "{}", notes[0]);
    // Nothing to say when nothing was denied.
    let server = ModelServer::start().await;
    server.push(answer("fine"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert!(!out.stderr.contains("denied"), "{}", out.stderr);
}

#[tokio::test]
async fn system_prompt_flags_and_files() {
    let env = Env::new();
    env.write("prompt.md", "You are the release checker.");
    env.write("extra.md", "Always answer in French.");
    let server = ModelServer::start().await;
    server.push(answer("a")).push(answer("b"));
    let out = env.keel(&server).args(["-p", "x", "--system-prompt", ""]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--system-prompt-file",
            "prompt.md",
            "--append-system-prompt-file",
            "extra.md",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let empty = reqs[0].body["system"].as_array().unwrap();
    assert!(
        empty.iter().all(|b| !b["text"].as_str().unwrap().trim().is_empty()),
        "{empty:?}"
    );
    assert!(!reqs[0].body["system"].to_string().contains("You are keel"));
    let system = reqs[1].body["system"].as_array().unwrap();
    assert_eq!(system[0]["text"], "You are the release checker.");
    assert_eq!(system.last().unwrap()["text"], "Always answer in French.");
    let missing = env
        .keel(&server)
        .args(["-p", "x", "--system-prompt-file", "nope.md"])
        .run()
        .await;
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("--system-prompt-file") && missing.stderr.contains("nope.md"));
}

#[tokio::test]
async fn setting_sources_choose_which_files_count() {
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".claude")).unwrap();
    std::fs::write(
        env.home.join(".claude/settings.json"),
        json!({"permissions": {"allow": ["Write"]}}).to_string(),
    )
    .unwrap();
    let run = |sources: Option<&'static str>| {
        let env = &env;
        async move {
            let server = ModelServer::start().await;
            server
                .push(calls(vec![tool(
                    "w1",
                    "Write",
                    json!({"file_path": "a.txt", "content": "a"}),
                )]))
                .push(answer("ok"));
            let mut k = env.keel(&server);
            k.args(["-p", "x", "--output-format", "json"]);
            if let Some(s) = sources {
                k.arg(format!("--setting-sources={s}"));
            }
            let out = k.run().await;
            assert_eq!(out.code, 0, "{}", out.stderr);
            out.json()["permission_denials"].as_array().unwrap().len()
        }
    };
    assert_eq!(run(None).await, 0, "the user's allow rule counts by default");
    std::fs::remove_file(env.path("a.txt")).unwrap();
    assert_eq!(
        run(Some("project,local")).await,
        1,
        "without user settings the Write is denied"
    );
    let bad = env
        .keel_offline()
        .args(["-p", "x", "--setting-sources", "user,team"])
        .run()
        .await;
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("team"), "{}", bad.stderr);
}

#[tokio::test]
async fn fork_session_continues_under_a_new_id_and_leaves_the_original() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("first")).push(answer("forked"));
    let first = env
        .keel(&server)
        .args(["-p", "remember 42", "--output-format", "json"])
        .run()
        .await;
    let id = first.json()["session_id"].as_str().unwrap().to_string();
    let original = env.transcripts()[0].clone();
    let before = std::fs::read_to_string(&original).unwrap();
    let fork = env
        .keel(&server)
        .args([
            "-p",
            "and now?",
            "--output-format",
            "json",
            "--resume",
            &id,
            "--fork-session",
        ])
        .run()
        .await;
    assert_eq!(fork.code, 0, "{}", fork.stderr);
    let new_id = fork.json()["session_id"].as_str().unwrap().to_string();
    assert_ne!(new_id, id);
    assert_eq!(
        std::fs::read_to_string(&original).unwrap(),
        before,
        "the original is untouched"
    );
    assert_eq!(env.transcripts().len(), 2);
    // The forked turn saw the earlier conversation.
    assert!(
        server.requests()[1].body["messages"]
            .to_string()
            .contains("remember 42")
    );
}

#[tokio::test]
async fn max_budget_usd_stops_the_turn() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g1", "Glob", json!({"pattern": "*"}))]))
        .push(answer("never"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json", "--max-budget-usd", "0.0001"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    let r = out.json();
    assert_eq!(r["subtype"], "error_max_budget_usd");
    assert_eq!(r["terminal_reason"], "budget_exhausted");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn thinking_and_effort_reach_the_request() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("a")).push(answer("b"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--max-thinking-tokens", "2048", "--effort", "high"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = env
        .keel(&server)
        .args(["-p", "x", "--thinking", "adaptive"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(
        reqs[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(reqs[0].body["output_config"], json!({"effort": "high"}));
    assert_eq!(reqs[1].body["thinking"], json!({"type": "adaptive"}));
    assert!(reqs[1].body.get("output_config").is_none());
    let bad = env.keel(&server).args(["-p", "x", "--effort", "huge"]).run().await;
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("--effort"), "{}", bad.stderr);
}

#[tokio::test]
async fn flags_keel_cannot_honour_fail_with_one_line_naming_them() {
    let env = Env::new();
    for (args, flag) in [
        (vec!["--betas", "x"], "--betas"),
        (vec!["--session-mirror"], "--session-mirror"),
        (
            vec!["--permission-prompt-tool", "mcp__auth__check"],
            "--permission-prompt-tool",
        ),
        (vec!["--resume"], "--resume"),
    ] {
        let out = env.keel_offline().args(["-p", "x"]).args(&args).run().await;
        assert_eq!(out.code, 1, "{args:?}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", out.stderr);
        assert!(lines[0].contains(flag), "{args:?}: {}", out.stderr);
    }
}
