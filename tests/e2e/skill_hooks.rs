//! The hooks of a skill's front matter: `once: true` handlers, and a plugin's skill whose
//! hooks are told the plugin's folder.

use serde_json::{Value, json};

use crate::hooks::script;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};

fn logged(env: &Env, name: &str) -> Vec<Value> {
    let p = env.path(&format!("{name}.log"));
    if p.exists() { read_jsonl(&p) } else { Vec::new() }
}

/// A hook script that appends its payload to `name`.log and then runs `then`.
fn logger(env: &Env, name: &str, then: &str) -> String {
    script(
        env,
        &format!("{name}.sh"),
        &format!("jq -c . >> \"$CLAUDE_PROJECT_DIR/{name}.log\"\n{then}"),
    )
}

#[tokio::test]
async fn a_once_hook_of_a_skill_runs_a_single_time_in_the_session() {
    let env = Env::new();
    let first = logger(
        &env,
        "first",
        "echo 'read the runbook before the first command' >&2\nexit 2",
    );
    let every = logger(&env, "every", "exit 0");
    env.write(
        ".claude/skills/runbook/SKILL.md",
        &format!(
            "---\nname: runbook\ndescription: Operates the service.\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: '{first}'\n          once: true\n        - type: command\n          command: '{every}'\n---\nOperate the service.\n"
        ),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("k1", "Skill", json!({"skill": "runbook"}))]))
        .push(calls(vec![tool("b1", "Bash", json!({"command": "echo one"}))]))
        .push(calls(vec![tool("b2", "Bash", json!({"command": "echo two"}))]))
        // Loading the skill again does not bring the spent hook back.
        .push(calls(vec![tool("k2", "Skill", json!({"skill": "runbook"}))]))
        .push(calls(vec![tool("b3", "Bash", json!({"command": "echo three"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "operate", "--allowedTools", "Bash,Skill(runbook)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = server.requests();
    let (text, is_error) = r[2].tool_result_text("b1");
    assert!(is_error && text.contains("read the runbook"), "{text}");
    let (text, is_error) = r[3].tool_result_text("b2");
    assert!(!is_error && text.contains("two"), "the once hook is gone: {text}");
    let (text, is_error) = r[5].tool_result_text("b3");
    assert!(
        !is_error && text.contains("three"),
        "it stays gone after a reload: {text}"
    );
    let firsts = logged(&env, "first");
    assert_eq!(firsts.len(), 1, "{firsts:?}");
    assert_eq!(firsts[0]["tool_use_id"], "b1");
    // The skill's other hook ran for every command.
    let ids: Vec<Value> = logged(&env, "every").iter().map(|p| p["tool_use_id"].clone()).collect();
    assert_eq!(ids, [json!("b1"), json!("b2"), json!("b3")]);
}

#[tokio::test]
async fn a_plugins_skill_hooks_find_the_plugin_folder() {
    let env = Env::new();
    env.write(
        "vendor/guard-plugin/.claude-plugin/plugin.json",
        r#"{"name": "guard", "version": "1.0.0"}"#,
    );
    let script_path = env.write(
        "vendor/guard-plugin/hooks/check.sh",
        "#!/usr/bin/env bash\nprintf '%s\\n' \"$CLAUDE_PLUGIN_ROOT\" >> \"$CLAUDE_PROJECT_DIR/plugin-root.log\"\n\
         echo \"checked by $(basename \"$CLAUDE_PLUGIN_ROOT\")\" >&2\nexit 2\n",
    );
    std::fs::set_permissions(&script_path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The shell form names the script through the variable; the exec form through `args`.
    env.write(
        "vendor/guard-plugin/skills/release/SKILL.md",
        "---\ndescription: Releases carefully.\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: '${CLAUDE_PLUGIN_ROOT}/hooks/check.sh'\n  PostToolUse:\n    - matcher: Read\n      hooks:\n        - type: command\n          command: bash\n          args: ['${CLAUDE_PLUGIN_ROOT}/hooks/check.sh']\n---\nRelease it.\n",
    );
    env.write("notes.txt", "notes\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("k1", "Skill", json!({"skill": "guard:release"}))]))
        .push(calls(vec![tool("b1", "Bash", json!({"command": "echo shipping"}))]))
        .push(calls(vec![tool(
            "r1",
            "Read",
            json!({"file_path": env.path("notes.txt")}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "release",
            "--plugin-dir",
            "vendor/guard-plugin",
            "--allowedTools",
            "Bash,Read,Skill(guard:release)",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = server.requests();
    let (text, is_error) = r[2].tool_result_text("b1");
    assert!(is_error && text.contains("checked by guard-plugin"), "{text}");
    let (text, _) = r[3].tool_result_text("r1");
    assert!(text.contains("checked by guard-plugin"), "PostToolUse feedback: {text}");
    let root = env.path("vendor/guard-plugin").canonicalize().unwrap();
    let seen = std::fs::read_to_string(env.path("plugin-root.log")).unwrap();
    let seen: Vec<std::path::PathBuf> = seen
        .lines()
        .map(|l| std::path::Path::new(l).canonicalize().unwrap())
        .collect();
    assert_eq!(seen, [root.clone(), root], "both hooks were told the plugin's folder");
}
