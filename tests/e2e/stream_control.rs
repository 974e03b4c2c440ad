//! Control requests that change the session under `--input-format stream-json`.

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

fn user(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": text}}).to_string()
}

fn request(id: &str, body: Value) -> String {
    json!({"type": "control_request", "request_id": id, "request": body}).to_string()
}

#[tokio::test]
async fn set_model_reaches_sub_agents_started_afterwards() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "look", "prompt": "Look around.", "subagent_type": "general-purpose"}),
        )]))
        .push(answer("nothing here"))
        .push(answer("the helper found nothing"));
    let input = [
        request("m1", json!({"subtype": "set_model", "model": "haiku"})),
        user("delegate"),
    ]
    .join("\n")
        + "\n";
    let out = env
        .keel(&server)
        .args(STREAM)
        .args(["--model", "opus"])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let models: Vec<&Value> = reqs.iter().map(|r| &r.body["model"]).collect();
    assert_eq!(models, vec!["claude-haiku-4-5"; 3], "parent, sub-agent, parent");
}

/// A PermissionRequest hook that allows a call may send permission updates, as a program's
/// approval can: here a deny rule for the rest of the session.
#[tokio::test]
async fn a_permission_request_hook_applies_its_permission_updates() {
    let env = Env::new();
    let decision = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
        "behavior": "allow",
        "updatedPermissions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch c.txt"}],
                                "behavior": "deny", "destination": "session"}]}}});
    let hook = env.write("allow.sh", &format!("#!/bin/sh\ncat >/dev/null\necho '{decision}'\n"));
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": hook.display().to_string()}]}]}})
        .to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "touch a.txt"}))]))
        .push(calls(vec![tool("b2", "Bash", json!({"command": "touch c.txt"}))]))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "make files"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("a.txt").exists(), "the hook allowed the first call");
    assert!(!env.path("c.txt").exists(), "the rule it added denies the second");
    let (text, is_error) = server.requests()[2].tool_result_text("b2");
    assert!(is_error && text.contains("touch c.txt"), "{text}");
}
