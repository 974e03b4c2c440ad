//! The Agent tool's `model` input: an alias or a model id the session offers, refused when it
//! is unknown, outside managed settings' allowlist or named by a rule such as
//! `Agent(model:*opus*)` (a wildcard in a parameter rule's value).

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

fn agent(id: &str, model: &str) -> crate::support::sse::Block {
    tool(
        id,
        "Agent",
        json!({"description": "look around", "prompt": "List the files.", "subagent_type": "Explore", "model": model}),
    )
}

#[tokio::test]
async fn a_sub_agent_runs_on_the_model_asked_for_unless_a_rule_or_the_catalogue_refuses_it() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![agent("a1", "opus")]))
        .push(calls(vec![agent("a2", "gpt-17-ultra")]))
        .push(calls(vec![agent("a3", "haiku")]))
        // The sub-agent's one request, then the parent's last.
        .push(answer("Nothing here."))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--disallowedTools", "Agent(model:*opus*)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "{}", out.stdout);

    let (denied, is_error) = reqs[1].tool_result_text("a1");
    assert!(is_error, "{denied}");
    assert!(denied.contains("Agent(model:*opus*)"), "{denied}");
    let (unknown, is_error) = reqs[2].tool_result_text("a2");
    assert!(is_error, "{unknown}");
    assert!(
        unknown.contains("`gpt-17-ultra` is not one this session offers"),
        "{unknown}"
    );

    // The alias resolves to its model id, sent in the sub-agent's own request.
    assert_eq!(reqs[3].body["model"], "claude-haiku-5-5");
    assert_eq!(reqs[3].body["messages"][0]["content"][0]["text"], "List the files.");
    let (report, is_error) = reqs[4].tool_result_text("a3");
    assert!(!is_error, "{report}");
    assert!(report.starts_with("Nothing here."), "{report}");
    // The parent stays on its own model.
    assert_ne!(reqs[4].body["model"], "claude-haiku-5-5");
}

#[tokio::test]
async fn the_managed_model_allowlist_bounds_the_agent_tools_model() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let managed = dir.path().join("managed-settings.json");
    std::fs::write(
        &managed,
        json!({"availableModels": ["claude-sonnet-5-5"], "enforceAvailableModels": true}).to_string(),
    )
    .unwrap();
    let server = ModelServer::start().await;
    server.push(calls(vec![agent("a1", "haiku")])).push(answer("done"));
    let out = env
        .keel(&server)
        .env("KEEL_MANAGED_SETTINGS", &managed)
        .args(["-p", "go"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "no sub-agent request: {}", out.stdout);
    let (refused, is_error) = reqs[1].tool_result_text("a1");
    assert!(is_error, "{refused}");
    assert!(refused.contains("claude-haiku-5-5` is not allowed"), "{refused}");
    assert!(refused.contains(&managed.display().to_string()), "{refused}");
}
