//! Permissions end to end: settings layers, rules, modes and headless denials.

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

#[tokio::test]
async fn credential_file_read_is_denied_and_listed() {
    let env = Env::new();
    env.write(".env", "SECRET=hunter2\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("c1", "Read", json!({"file_path": env.path(".env")}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "show env",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("c1");
    assert!(is_error);
    assert!(!text.contains("hunter2"), "secret leaked: {text}");
    assert!(text.contains("credentials"), "{text}");
    let denials = &out.json()["permission_denials"];
    assert_eq!(denials[0]["tool_name"], "Read");
    assert_eq!(denials[0]["tool_use_id"], "c1");
    assert_eq!(
        denials[0]["tool_input"]["file_path"],
        env.path(".env").display().to_string()
    );
}

#[tokio::test]
async fn explicit_allow_rule_unlocks_a_credential_file() {
    let env = Env::new();
    env.write(".env.example", "SECRET=placeholder\n");
    env.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Read(.env.example)"]}}"#,
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "c2",
            "Read",
            json!({"file_path": env.path(".env.example")}),
        )]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "show"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("c2");
    assert!(!is_error, "{text}");
    assert!(text.contains("placeholder"));
}

#[tokio::test]
async fn bare_name_deny_removes_the_tool_from_the_offer() {
    let env = Env::new();
    env.write(".keel/settings.json", r#"{"permissions": {"deny": ["Grep"]}}"#);
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--disallowedTools", "Glob"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let names: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"Read".to_string()));
    assert!(!names.contains(&"Grep".to_string()), "{names:?}");
    assert!(!names.contains(&"Glob".to_string()), "{names:?}");
}

#[tokio::test]
async fn deny_rule_holds_in_bypass_mode() {
    let env = Env::new();
    env.write("src/secret.txt", "classified\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "d1",
            "Read",
            json!({"file_path": env.path("src/secret.txt")}),
        )]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--dangerously-skip-permissions", "--output-format", "json"])
        .args(["--settings", r#"{"permissions": {"deny": ["Read(src/secret.txt)"]}}"#])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("d1");
    assert!(is_error);
    assert!(
        text.contains("Read(src/secret.txt)"),
        "the denial names the rule: {text}"
    );
    assert_eq!(out.json()["permission_denials"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn reads_outside_the_working_directories_need_approval_or_add_dir() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("notes.txt");
    std::fs::write(&file, "outside notes\n").unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("o1", "Read", json!({"file_path": file}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("o1");
    assert!(is_error);
    assert!(text.contains("outside the working directories"), "{text}");
    assert!(
        text.contains("non-interactively"),
        "headless says why nobody approved: {text}"
    );
    assert_eq!(out.json()["permission_denials"][0]["tool_use_id"], "o1");

    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("o2", "Read", json!({"file_path": file}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--add-dir"])
        .arg(outside.path())
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("o2");
    assert!(!is_error, "{text}");
    assert!(text.contains("outside notes"));
}

#[tokio::test]
async fn plan_mode_exit_cannot_be_approved_headless() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("p1", "ExitPlanMode", json!({"plan": "1. change x"}))]))
        .push(answer("Plan: change x."));
    let out = env
        .keel(&server)
        .args(["-p", "plan it", "--permission-mode", "plan", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("p1");
    assert!(is_error);
    assert!(text.contains("plan mode stays on"), "{text}");
    assert_eq!(out.json()["permission_denials"][0]["tool_name"], "ExitPlanMode");
}

#[tokio::test]
async fn default_mode_comes_from_settings() {
    let env = Env::new();
    env.write(
        ".claude/settings.local.json",
        r#"{"permissions": {"defaultMode": "plan"}}"#,
    );
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.lines()[0]["permissionMode"], "plan");
}

#[tokio::test]
async fn invalid_settings_json_is_a_startup_error_naming_file_and_line() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        "{\n  \"permissions\": {\n    \"allow\": [\"Read\",]\n  }\n}\n",
    );
    let server = ModelServer::start().await;
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains(".claude/settings.json:3:"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn invalid_rule_is_a_startup_error() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env
        .keel(&server)
        .args(["-p", "x", "--allowedTools", "Bash(ls"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("invalid permission rule `Bash(ls`"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn unknown_setting_keys_are_ignored_with_a_debug_note() {
    let env = Env::new();
    env.write(".keel/settings.json", r#"{"someFutureKey": true}"#);
    let server = ModelServer::start().await;
    server.push(answer("fine"));
    let out = env.keel(&server).args(["-p", "x", "--debug"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("ignoring unknown setting `someFutureKey`"),
        "{}",
        out.stderr
    );
}
