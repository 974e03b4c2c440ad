//! The Agent tool's `model` input: an alias or a model id the session offers, refused when it
//! is unknown, outside managed settings' allowlist or named by a rule such as
//! `Agent(model:*opus*)` (a wildcard in a parameter rule's value).

use serde_json::json;

use crate::support::openai::{chat_answer, chat_calls};
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

/// A model on a named provider (`lab/qwen3-coder`), from the call's `model` input or the agent
/// type's front matter, sends the sub-agent's requests to that provider's server; the parent's
/// stay on its own.
#[tokio::test]
async fn a_sub_agent_on_a_named_providers_model_runs_on_that_provider() {
    let env = Env::new();
    let main = ModelServer::start().await;
    let lab = ModelServer::start().await;
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(
        env.home.join(".keel/settings.json"),
        json!({"providers": {"lab": {"type": "openai", "baseUrl": format!("{}/v1", lab.url())}}}).to_string(),
    )
    .unwrap();
    env.write(
        ".claude/agents/lab-reviewer.md",
        "---\nname: lab-reviewer\ndescription: Reviews on the lab's model.\nmodel: lab/qwen3-coder-large\ntools: Read\n---\nReview what you are given.\n",
    );
    main.push(calls(vec![agent("a1", "lab/qwen3-coder")]))
        .push(calls(vec![tool(
            "a2",
            "Agent",
            json!({"description": "review", "prompt": "Review the notes.", "subagent_type": "lab-reviewer"}),
        )]))
        .push(answer("done"));
    lab.push(chat_answer("qwen3-coder", "Nothing on the lab."))
        .push(chat_answer("qwen3-coder-large", "Reviewed on the lab."));
    let out = env.keel(&main).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    let on_lab = lab.requests();
    assert_eq!(on_lab.len(), 2, "both sub-agents asked the lab: {}", out.stdout);
    assert_eq!(on_lab[0].path, "/v1/chat/completions");
    assert_eq!(on_lab[0].body["model"], "qwen3-coder");
    assert!(
        on_lab[0].body["messages"].to_string().contains("List the files."),
        "{}",
        on_lab[0].body
    );
    assert_eq!(on_lab[1].body["model"], "qwen3-coder-large");
    assert!(
        on_lab[1].body["messages"].to_string().contains("Review the notes."),
        "{}",
        on_lab[1].body
    );

    let on_main = main.requests();
    assert_eq!(on_main.len(), 3, "no sub-agent request reached the parent's server");
    let (report, is_error) = on_main[1].tool_result_text("a1");
    assert!(!is_error && report.starts_with("Nothing on the lab."), "{report}");
    let (report, is_error) = on_main[2].tool_result_text("a2");
    assert!(!is_error && report.starts_with("Reviewed on the lab."), "{report}");
    assert!(
        on_main
            .iter()
            .all(|r| !r.body["model"].as_str().unwrap_or("").contains("qwen")),
        "the parent stays on its own model"
    );
}

/// A loaded skill's `model:` and a prompt hook's `model` that name one of the session's
/// providers run there too, and their requests count in the session's usage.
#[tokio::test]
async fn a_skills_and_a_prompt_hooks_model_on_a_named_provider_run_there() {
    let env = Env::new();
    let main = ModelServer::start().await;
    let lab = ModelServer::start().await;
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(
        env.home.join(".keel/settings.json"),
        json!({"providers": {"lab": {"type": "openai", "baseUrl": format!("{}/v1", lab.url())}}}).to_string(),
    )
    .unwrap();
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
            {"type": "prompt", "prompt": "Allow reading notes. Event: $ARGUMENTS", "model": "lab/qwen3-judge"}]}]}})
        .to_string(),
    );
    env.write(
        ".claude/skills/lab-notes/SKILL.md",
        "---\nname: lab-notes\ndescription: Reads the notes on the lab's model.\nmodel: lab/qwen3-coder\n---\nRead notes.txt and sum it up.\n",
    );
    env.write("notes.txt", "the lab's notes\n");
    main.push(calls(vec![tool("k1", "Skill", json!({"skill": "lab-notes"}))]));
    lab.push(chat_calls(
        "qwen3-coder",
        vec![tool("r1", "Read", json!({"file_path": env.path("notes.txt")}))],
    ))
    .push(chat_answer("qwen3-judge", "{\"ok\": true}"))
    .push(chat_answer("qwen3-coder", "Summed up on the lab."));
    let out = env
        .keel(&main)
        .args(["-p", "go", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    assert_eq!(
        main.requests().len(),
        1,
        "after the skill loaded, the turn left the session's server"
    );
    let on_lab = lab.requests();
    assert_eq!(on_lab.len(), 3, "{}", out.stdout);
    assert_eq!(on_lab[0].body["model"], "qwen3-coder");
    assert!(
        on_lab[0].body["messages"]
            .to_string()
            .contains("Read notes.txt and sum it up."),
        "the skill's text went with the request: {}",
        on_lab[0].body
    );
    assert_eq!(on_lab[1].body["model"], "qwen3-judge", "the hook asked its own model");
    assert!(
        on_lab[1].body["messages"].to_string().contains("Allow reading notes."),
        "{}",
        on_lab[1].body
    );
    assert_eq!(on_lab[2].body["model"], "qwen3-coder");
    let sent = on_lab[2].body["messages"].to_string();
    assert!(
        sent.contains("the lab's notes"),
        "the Read ran and its result went to the lab: {sent}"
    );

    let result: serde_json::Value = serde_json::from_str(out.stdout.trim()).expect("one JSON result");
    assert_eq!(result["result"], "Summed up on the lab.");
    let models = result["modelUsage"].as_object().expect("modelUsage");
    for m in ["claude-sonnet-4-5", "qwen3-coder", "qwen3-judge"] {
        assert!(models.contains_key(m), "{m} missing from {models:?}");
    }
}
