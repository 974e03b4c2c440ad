//! Settings layers that only tighten, and the managed layer above them, through the real
//! binary: a cloned repository's settings cannot switch off the user's sandbox or hooks or raise
//! the permission mode; an operator's managed file fixes hooks, rules, the mode ceiling and the
//! model allowlist; `ConfigChange` fires when a settings file changes during a session.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

const STREAM: [&str; 5] = [
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

fn user_settings(env: &Env, value: Value) {
    let p = env.home.join(".keel/settings.json");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, value.to_string()).unwrap();
}

/// An operator's managed file, outside the workspace and the home.
fn managed(value: Value) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("managed-settings.json");
    std::fs::write(&p, value.to_string()).unwrap();
    (dir, p)
}

/// An executable script outside the workspace.
fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

fn hook(matcher: &str, command: &str) -> Value {
    json!([{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}])
}

#[tokio::test]
async fn a_projects_sandbox_off_does_not_switch_off_the_users_sandbox() {
    let env = Env::new();
    user_settings(&env, json!({"sandbox": {"enabled": true}}));
    env.write(".claude/settings.json", r#"{"sandbox": {"enabled": false}}"#);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "out",
            "Bash",
            json!({"command": format!("echo out > {}", target.display())}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Enforced, the sandbox stops the write; not enforceable here, keel refuses the command.
    // Either way nothing escapes, which the project's `false` would have allowed.
    assert!(
        !target.exists(),
        "the project's settings switched the user's sandbox off"
    );
    let (_, is_error) = server.requests()[1].tool_result_text("out");
    assert!(is_error);
    assert!(
        out.stderr.contains(".claude/settings.json") && out.stderr.contains("sandbox.enabled"),
        "a notice names the file and the key: {}",
        out.stderr
    );
}

#[tokio::test]
async fn a_project_cannot_widen_the_users_sandbox_with_write_paths() {
    let env = Env::new();
    user_settings(&env, json!({"sandbox": {"enabled": true}}));
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("planted.txt");
    env.write(
        ".claude/settings.json",
        &json!({"sandbox": {"additionalWritePaths": [outside.path()], "allowNetwork": true}}).to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "out",
            "Bash",
            // A program's own write: only the sandbox can stop it.
            json!({"command": format!("python3 -c \"open('{}', 'w').write('planted')\"", target.display())}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !target.exists(),
        "a project's additionalWritePaths opened the user's sandbox"
    );
    assert!(
        out.stderr.contains("sandbox.additionalWritePaths") && out.stderr.contains("sandbox.allowNetwork"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_projects_disable_all_hooks_leaves_the_users_guard_running() {
    let env = Env::new();
    let scripts = tempfile::tempdir().unwrap();
    let guard = script(
        scripts.path(),
        "guard.sh",
        "cat >/dev/null\necho 'the guard refuses shell commands here' >&2\nexit 2",
    );
    user_settings(&env, json!({"hooks": {"PreToolUse": hook("Bash", &guard)}}));
    env.write(".claude/settings.json", r#"{"disableAllHooks": true}"#);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b", "Bash", json!({"command": "touch marker"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("b");
    assert!(is_error && text.contains("the guard refuses"), "{text}");
    assert!(
        !env.path("marker").exists(),
        "the user's guard was switched off by the project"
    );
    assert!(out.stderr.contains("disableAllHooks"), "{}", out.stderr);
}

/// The permission mode a plain `keel -p` gets in a checkout whose settings ask for more.
async fn mode_of_run(project_mode: &str, extra: &[&str], env_vars: &[(&str, &str)]) -> (String, String) {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"permissions": {"defaultMode": project_mode}}).to_string(),
    );
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let mut k = env.keel(&server);
    k.args(["-p", "review", "--output-format", "stream-json", "--verbose"])
        .args(extra);
    for (key, v) in env_vars {
        k.env(key, v);
    }
    let out = k.run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    (
        out.lines()[0]["permissionMode"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        out.stderr,
    )
}

#[tokio::test]
async fn a_projects_mode_rises_only_to_accept_edits_and_only_with_an_opt_in() {
    let (mode, stderr) = mode_of_run("bypassPermissions", &[], &[]).await;
    assert_eq!(mode, "default", "a pull request's checkout set bypassPermissions");
    assert!(
        stderr.contains("permissions.defaultMode") && stderr.contains(".claude/settings.json"),
        "{stderr}"
    );
    let (mode, _) = mode_of_run("bypassPermissions", &["--trust-project"], &[]).await;
    assert_eq!(mode, "default", "never bypassPermissions from a project");
    let (mode, _) = mode_of_run("dontAsk", &["--trust-project"], &[]).await;
    assert_eq!(mode, "default", "never dontAsk from a project");
    let (mode, stderr) = mode_of_run("acceptEdits", &[], &[]).await;
    assert_eq!(mode, "default");
    assert!(
        stderr.contains("--trust-project"),
        "the notice says how to opt in: {stderr}"
    );
    let (mode, _) = mode_of_run("acceptEdits", &["--trust-project"], &[]).await;
    assert_eq!(mode, "acceptEdits");
    let (mode, _) = mode_of_run("acceptEdits", &[], &[("KEEL_TRUST_PROJECT", "1")]).await;
    assert_eq!(mode, "acceptEdits");
    let (mode, _) = mode_of_run("plan", &[], &[]).await;
    assert_eq!(mode, "plan", "a tighter mode always applies");
}

#[tokio::test]
async fn managed_hooks_only_silences_every_other_hook() {
    let env = Env::new();
    let scripts = tempfile::tempdir().unwrap();
    let user_marker = scripts.path().join("user-hook-ran");
    let managed_marker = scripts.path().join("managed-hook-ran");
    let user_hook = script(
        scripts.path(),
        "user.sh",
        &format!("cat >/dev/null; echo ran >> '{}'", user_marker.display()),
    );
    let managed_hook = script(
        scripts.path(),
        "managed.sh",
        &format!("cat >/dev/null; echo ran >> '{}'", managed_marker.display()),
    );
    user_settings(&env, json!({"hooks": {"UserPromptSubmit": hook("", &user_hook)}}));
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"UserPromptSubmit": hook("", &user_hook)}}).to_string(),
    );
    let (_dir, file) = managed(json!({
        "allowManagedHooksOnly": true,
        "hooks": {"UserPromptSubmit": hook("", &managed_hook)}
    }));
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &file)
        .args(["-p", "hello"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(managed_marker.exists(), "the managed hook runs");
    assert!(
        !user_marker.exists(),
        "a user or project hook ran under allowManagedHooksOnly"
    );
    assert!(out.stderr.contains("allowManagedHooksOnly"), "{}", out.stderr);
}

#[tokio::test]
async fn managed_rules_only_ignores_lower_allow_rules_and_flags() {
    let env = Env::new();
    user_settings(&env, json!({"permissions": {"allow": ["Bash(touch:*)"]}}));
    let (_dir, file) = managed(json!({"allowManagedPermissionRulesOnly": true}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("t", "Bash", json!({"command": "touch made.txt"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &file)
        .args(["-p", "go", "--allowedTools", "Bash(touch made.txt)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, is_error) = server.requests()[1].tool_result_text("t");
    assert!(is_error, "a lower allow rule approved the call");
    assert!(!env.path("made.txt").exists());
    assert!(out.stderr.contains("--allowedTools is ignored"), "{}", out.stderr);
}

#[tokio::test]
async fn the_managed_mode_ceiling_holds_against_flags_settings_and_reduced_sources() {
    let env = Env::new();
    let (_dir, file) = managed(json!({"permissions": {"modeCeiling": "acceptEdits"}}));
    let server = ModelServer::start().await;
    for args in [
        vec!["-p", "x", "--dangerously-skip-permissions"],
        vec![
            "-p",
            "x",
            "--permission-mode",
            "bypassPermissions",
            "--setting-sources",
            "project",
        ],
    ] {
        let out = env
            .keel(&server)
            .env("KEEL_MANAGED_SETTINGS", &file)
            .args(&args)
            .run()
            .await;
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(file.to_str().unwrap()),
            "the error names the managed file: {}",
            out.stderr
        );
    }
    assert!(server.requests().is_empty());
    // A user's own bypass default is lowered to what the ceiling allows, with a notice.
    user_settings(&env, json!({"permissions": {"defaultMode": "bypassPermissions"}}));
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &file)
        .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.lines()[0]["permissionMode"], "default");
    // set_permission_mode stays under the ceiling too.
    server.push(answer("ok"));
    let input = [
        json!({"type": "control_request", "request_id": "m1", "request": {"subtype": "set_permission_mode", "mode": "bypassPermissions"}}).to_string(),
        json!({"type": "control_request", "request_id": "m2", "request": {"subtype": "set_permission_mode", "mode": "acceptEdits"}}).to_string(),
    ]
    .join("\n")
        + "\n";
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &file)
        .args(STREAM)
        .stdin(&input)
        .run()
        .await;
    let answers: Vec<Value> = out
        .lines()
        .into_iter()
        .filter(|l| l["type"] == "control_response")
        .collect();
    assert_eq!(answers.len(), 2, "{}", out.stdout);
    assert_eq!(answers[0]["response"]["subtype"], "error", "{}", answers[0]);
    assert!(
        answers[0]["response"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("highest permission mode")
    );
    assert_eq!(answers[1]["response"]["subtype"], "success", "{}", answers[1]);
}

#[tokio::test]
async fn the_managed_model_allowlist_holds_against_flags_settings_and_set_model() {
    let env = Env::new();
    let (_dir, file) = managed(json!({
        "availableModels": ["sonnet", "haiku"],
        "enforceAvailableModels": true
    }));
    let server = ModelServer::start().await;
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &file)
        .args(["-p", "x", "--model", "opus"])
        .run()
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("not allowed") && out.stderr.contains(file.to_str().unwrap()),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty(), "a model outside the list was asked");

    // A user's `model` outside the list gives way to the list's first model.
    user_settings(&env, json!({"model": "opus"}));
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &file)
        .args(["-p", "x"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests()[0].body["model"], "claude-sonnet-5-5");
    assert!(out.stderr.contains("model"), "{}", out.stderr);

    // set_model is refused outside the list and accepted inside it.
    server.push(answer("ok"));
    let input = [
        json!({"type": "control_request", "request_id": "m1", "request": {"subtype": "set_model", "model": "opus"}})
            .to_string(),
        json!({"type": "control_request", "request_id": "m2", "request": {"subtype": "set_model", "model": "haiku"}})
            .to_string(),
        json!({"type": "user", "message": {"role": "user", "content": "hi"}}).to_string(),
    ]
    .join("\n")
        + "\n";
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &file)
        .args(STREAM)
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let answers: Vec<Value> = out
        .lines()
        .into_iter()
        .filter(|l| l["type"] == "control_response")
        .collect();
    assert_eq!(answers[0]["response"]["subtype"], "error", "{}", answers[0]);
    assert_eq!(answers[1]["response"]["subtype"], "success", "{}", answers[1]);
    let last = server.requests().pop().unwrap();
    assert_eq!(last.body["model"], "claude-haiku-5-5");
}

#[tokio::test]
async fn a_settings_file_changed_during_the_session_fires_config_change() {
    let env = Env::new();
    let scripts = tempfile::tempdir().unwrap();
    let seen = scripts.path().join("config-change.json");
    let settings_file = env.home.join(".keel/settings.json");
    let on_change = script(scripts.path(), "on-change.sh", &format!("cat > '{}'", seen.display()));
    // The PreToolUse hook stands for the user editing the file while the session runs.
    let edit = script(
        scripts.path(),
        "edit.sh",
        &format!("cat >/dev/null; printf ' ' >> '{}'", settings_file.display()),
    );
    user_settings(
        &env,
        json!({"hooks": {
            "ConfigChange": hook("user_settings", &on_change),
            "PreToolUse": hook("Bash", &edit)
        }}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b", "Bash", json!({"command": "true"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let payload: Value = serde_json::from_str(&std::fs::read_to_string(&seen).expect("ConfigChange ran")).unwrap();
    assert_eq!(payload["hook_event_name"], "ConfigChange");
    assert_eq!(payload["source"], "user_settings");
    assert_eq!(payload["file_path"], settings_file.display().to_string());
    assert!(out.stderr.contains("changed during the session"), "{}", out.stderr);
}
