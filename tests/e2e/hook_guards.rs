//! Guard hooks that must not fail open: a hook's decision counts whatever it leaves running,
//! `${CLAUDE_PROJECT_DIR}` reaches exec-form hooks, and `onFailure: "block"` turns a guard that
//! cannot do its job into a refusal. Each case guards a Bash call that would create a marker
//! file, so "the tool did not run" is checked on disk.

use serde_json::{Value, json};

use crate::hooks::script;
use crate::support::procs::{assert_gone, unique_sleep};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, Out};

/// What one guarded Bash call came to.
struct Guarded {
    out: Out,
    text: String,
    is_error: bool,
    ran: bool,
    /// The `hook_response` lines of the run.
    runs: Vec<Value>,
}

/// Configures `handler` as the only PreToolUse hook for Bash and lets the model make one Bash
/// call that creates `ran.txt`.
async fn guarded_bash(env: &Env, handler: Value) -> Guarded {
    let _ = std::fs::remove_file(env.path("ran.txt"));
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}).to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g1", "Bash", json!({"command": "touch ran.txt"}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--dangerously-skip-permissions",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("g1");
    let runs = out
        .lines()
        .into_iter()
        .filter(|l| l["subtype"] == "hook_response")
        .collect();
    Guarded {
        text,
        is_error,
        ran: env.path("ran.txt").exists(),
        runs,
        out,
    }
}

fn command(cmd: &str) -> Value {
    json!({"type": "command", "command": cmd, "timeout": 20})
}

/// The one hook run of a guarded call, which must have ended well before its 20 s timeout.
fn decided_quickly(g: &Guarded) -> &Value {
    assert_eq!(g.runs.len(), 1, "{:?}", g.runs);
    let run = &g.runs[0];
    assert_ne!(run["outcome"], "timeout", "{run}");
    let ms = run["duration_ms"].as_u64().unwrap();
    assert!(ms < 10_000, "the hook took {ms} ms for a decision it printed at once");
    run
}

#[tokio::test]
async fn a_json_deny_counts_although_a_background_child_keeps_stdout_open() {
    let env = Env::new();
    let marker = unique_sleep();
    let hook = script(
        &env,
        "deny-bg.sh",
        &format!(
            r#"cat >/dev/null
sleep {marker} &
echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no touching here"}}}}'"#
        ),
    );
    let g = guarded_bash(&env, command(&hook)).await;
    assert!(g.is_error && g.text.contains("no touching here"), "{}", g.text);
    assert!(!g.ran, "a denied command must not run");
    assert_eq!(decided_quickly(&g)["decision"], "deny");
    // The hook's process group was ended once it had decided.
    assert_gone(&marker).await;
}

#[tokio::test]
async fn exit_2_counts_although_a_background_child_keeps_the_pipes_open() {
    let env = Env::new();
    let marker = unique_sleep();
    let hook = script(
        &env,
        "block-bg.sh",
        &format!("cat >/dev/null\n(sleep {marker}) &\necho 'touching is not allowed' >&2\nexit 2"),
    );
    let g = guarded_bash(&env, command(&hook)).await;
    assert!(g.is_error && g.text.contains("touching is not allowed"), "{}", g.text);
    assert!(!g.ran, "a blocked command must not run");
    assert_eq!(decided_quickly(&g)["outcome"], "blocked");
    assert_gone(&marker).await;
}

#[tokio::test]
async fn what_a_hook_leaves_running_is_ended_after_it_exits() {
    let env = Env::new();
    let marker = unique_sleep();
    // The child lets go of the hook's pipes, so nothing waits for it: it would simply linger.
    let hook = script(
        &env,
        "leave.sh",
        &format!("cat >/dev/null\nsleep {marker} >/dev/null 2>&1 &\nexit 0"),
    );
    let g = guarded_bash(&env, command(&hook)).await;
    assert!(!g.is_error && g.ran, "{}", g.text);
    assert_gone(&marker).await;
}

#[tokio::test]
async fn project_dir_is_substituted_in_the_program_and_args_of_the_exec_form() {
    let env = Env::new();
    // Denies only when it was found and its argument names the project.
    script(
        &env,
        "guard.sh",
        r#"cat >/dev/null
[ "$1" = "$CLAUDE_PROJECT_DIR" ] || { echo "guard got the wrong argument: $1" >&2; exit 1; }
echo "guard says no (${2:-args})" >&2
exit 2"#,
    );
    let g = guarded_bash(
        &env,
        json!({"type": "command", "args": ["${CLAUDE_PROJECT_DIR}/.claude/hooks/guard.sh", "$CLAUDE_PROJECT_DIR"]}),
    )
    .await;
    assert!(g.is_error && g.text.contains("guard says no (args)"), "{}", g.text);
    assert!(!g.ran, "the guarded command must not run");

    let g = guarded_bash(
        &env,
        json!({"type": "command", "command": "${CLAUDE_PROJECT_DIR}/.claude/hooks/guard.sh",
               "args": ["${KEEL_PROJECT_DIR}", "program"]}),
    )
    .await;
    assert!(g.is_error && g.text.contains("guard says no (program)"), "{}", g.text);
    assert!(!g.ran, "the guarded command must not run");
}

#[tokio::test]
async fn on_failure_block_refuses_the_call_when_the_guard_cannot_do_its_job() {
    let env = Env::new();
    let block = |mut handler: Value| {
        handler["onFailure"] = "block".into();
        handler
    };

    // Cannot start: a missing script, in the shell form and in the exec form.
    let g = guarded_bash(&env, block(command("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/missing.sh"))).await;
    assert!(g.is_error && !g.ran, "{}", g.text);
    assert!(
        g.text.contains("could not start") && g.text.contains("missing.sh"),
        "{}",
        g.text
    );
    let g = guarded_bash(
        &env,
        block(json!({"type": "command", "args": ["${CLAUDE_PROJECT_DIR}/.claude/hooks/absent.sh"]})),
    )
    .await;
    assert!(g.is_error && !g.ran, "{}", g.text);
    assert!(
        g.text.contains("could not start") && g.text.contains("absent.sh"),
        "{}",
        g.text
    );

    // Killed by a signal.
    script(&env, "killed.sh", "cat >/dev/null\nkill -KILL $$");
    let g = guarded_bash(
        &env,
        block(json!({"type": "command", "args": ["${CLAUDE_PROJECT_DIR}/.claude/hooks/killed.sh"]})),
    )
    .await;
    assert!(g.is_error && !g.ran, "{}", g.text);
    assert!(
        g.text.contains("killed by signal 9") && g.text.contains("killed.sh"),
        "{}",
        g.text
    );

    // Exit status 1.
    let crashing = script(
        &env,
        "crash.sh",
        "cat >/dev/null\necho 'policy file missing' >&2\nexit 1",
    );
    let g = guarded_bash(&env, block(command(&crashing))).await;
    assert!(g.is_error && !g.ran, "{}", g.text);
    assert!(
        g.text.contains("exit status 1") && g.text.contains("policy file missing"),
        "{}",
        g.text
    );
    assert!(g.text.contains("crash.sh"), "names the hook: {}", g.text);

    // Timed out.
    let slow = script(&env, "slow.sh", "cat >/dev/null\nsleep 30");
    let g = guarded_bash(&env, block(json!({"type": "command", "command": slow, "timeout": 1}))).await;
    assert!(g.is_error && !g.ran, "{}", g.text);
    assert!(g.text.contains("timed out"), "{}", g.text);

    // Without onFailure the same failure only warns, and the call goes on.
    let g = guarded_bash(&env, command(&crashing)).await;
    assert!(!g.is_error && g.ran, "{}", g.text);
    assert!(g.out.stderr.contains("policy file missing"), "{}", g.out.stderr);
}

#[tokio::test]
async fn an_unknown_on_failure_value_is_a_settings_error() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "true", "onFailure": "deny"}]}]}})
        .to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g1", "Bash", json!({"command": "touch ran.txt"}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("onFailure") && out.stderr.contains("deny"),
        "{}",
        out.stderr
    );
    assert!(!env.path("ran.txt").exists());

    // An `async` hook cannot block: asking it to is a contradiction, reported as such.
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "true", "async": true, "onFailure": "block"}]}]}})
        .to_string(),
    );
    let server = ModelServer::start().await;
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("onFailure") && out.stderr.contains("async"),
        "{}",
        out.stderr
    );
}
