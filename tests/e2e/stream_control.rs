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
    assert_eq!(models, vec!["claude-haiku-5-5"; 3], "parent, sub-agent, parent");
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

/// A sub-agent's tool calls and results reach the program as lines whose
/// `parent_tool_use_id` is the Agent call; its text and thinking only with
/// `forwardSubagentText`.
#[tokio::test]
async fn sub_agent_messages_are_forwarded_under_their_agent_call() {
    for forward in [false, true] {
        let env = Env::new();
        env.write("notes.txt", "remember the milk\n");
        let server = ModelServer::start().await;
        server
            .push(calls(vec![tool(
                "a1",
                "Agent",
                json!({"description": "look", "prompt": "Read notes.txt.", "subagent_type": "general-purpose"}),
            )]))
            .push(calls(vec![
                crate::support::sse::text("Reading it now."),
                tool("r1", "Read", json!({"file_path": env.path("notes.txt")})),
            ]))
            .push(answer("It says: remember the milk."))
            .push(answer("The notes say to remember the milk."));
        let input = [
            request("i1", json!({"subtype": "initialize", "forwardSubagentText": forward})),
            user("what do the notes say?"),
        ]
        .join("\n")
            + "\n";
        let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        let lines = out.lines();
        let nested: Vec<&Value> = lines.iter().filter(|l| l["parent_tool_use_id"] == "a1").collect();
        let blocks: Vec<(String, String)> = nested
            .iter()
            .map(|l| {
                let b = &l["message"]["content"][0];
                (
                    l["type"].as_str().unwrap().to_string(),
                    b["type"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let mut expected = vec![
            ("assistant".to_string(), "tool_use".to_string()),
            ("user".to_string(), "tool_result".to_string()),
        ];
        if forward {
            expected.insert(0, ("assistant".into(), "text".into()));
            expected.push(("assistant".into(), "text".into()));
        }
        assert_eq!(blocks, expected, "forwardSubagentText: {forward}");
        let read = nested.iter().find(|l| l["type"] == "user").unwrap();
        assert!(read["message"]["content"][0].to_string().contains("remember the milk"));
        // The parent's own lines stay unnested.
        let top: Vec<&Value> = lines
            .iter()
            .filter(|l| l["type"] == "assistant" && l["parent_tool_use_id"].is_null())
            .collect();
        assert_eq!(top.len(), 2, "the Agent call and the final answer");
    }
}

/// `disableBypassPermissionsMode` holds for the whole session: neither `set_permission_mode`
/// nor a permission update may enter bypassPermissions.
#[tokio::test]
async fn bypass_mode_stays_out_of_reach_when_a_setting_disables_it() {
    let env = Env::new();
    let decision = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
        "behavior": "allow",
        "updatedPermissions": [{"type": "setMode", "mode": "bypassPermissions", "destination": "session"}]}}});
    let hook = env.write("allow.sh", &format!("#!/bin/sh\ncat >/dev/null\necho '{decision}'\n"));
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.write(
        ".claude/settings.json",
        &json!({"permissions": {"disableBypassPermissionsMode": "disable"},
                "hooks": {"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command",
                    "command": hook.display().to_string()}]}]}})
        .to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "touch a.txt"}))]))
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": "b.txt", "content": "b"}),
        )]))
        .push(answer("done"));
    let input = [
        request(
            "m1",
            json!({"subtype": "set_permission_mode", "mode": "bypassPermissions"}),
        ),
        user("make files"),
    ]
    .join("\n")
        + "\n";
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    let lines = out.lines();
    let m1 = lines
        .iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == "m1")
        .expect("an answer to set_permission_mode");
    assert_eq!(m1["response"]["subtype"], "error");
    assert!(
        m1["response"]["error"].as_str().unwrap().contains("disabled by"),
        "{m1}"
    );
    assert!(env.path("a.txt").exists(), "the hook still allowed the call");
    assert!(!env.path("b.txt").exists(), "the mode did not become bypassPermissions");
    assert!(
        out.stderr.contains("bypassPermissions mode is disabled"),
        "{}",
        out.stderr
    );
}

/// `excludeDynamicSections`: the system prompt loses the environment and git snapshot (the
/// same for every user and folder), and the first user message carries them instead.
#[tokio::test]
async fn dynamic_sections_move_from_the_system_prompt_to_the_first_message() {
    let env = Env::new();
    env.write("CLAUDE.md", "Always run the linter.\n");
    let server = ModelServer::start().await;
    server.push(answer("one")).push(answer("two"));
    let input = [
        request("i1", json!({"subtype": "initialize", "excludeDynamicSections": true})),
        user("first"),
        user("second"),
    ]
    .join("\n")
        + "\n";
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let work = env.work.display().to_string();
    for r in &reqs {
        let system = r.body["system"].to_string();
        assert!(!system.contains("Environment:"), "{system}");
        assert!(!system.contains("Working directory"), "{system}");
        // Instruction files stay: they must survive compaction.
        assert!(system.contains("Always run the linter."));
    }
    let first = reqs[0].messages()[0]["content"].to_string();
    assert!(
        first.contains("<system-reminder>") && first.contains("Environment:") && first.contains(&work),
        "{first}"
    );
    assert!(first.contains("first"));
    let second_turn = reqs[1].messages().last().unwrap()["content"].to_string();
    assert!(!second_turn.contains("<system-reminder>"), "sent once: {second_turn}");
}

/// `systemPromptSnapshot: true`: a resumed session sends the system prompt recorded at its
/// start; without it the prompt is rebuilt from the current options.
#[tokio::test]
async fn a_snapshot_keeps_the_recorded_system_prompt_across_resume() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("one")).push(answer("two")).push(answer("three"));
    let session = |snapshot: bool, append: &str| {
        [
            request(
                "i1",
                json!({"subtype": "initialize", "systemPromptSnapshot": snapshot, "appendSystemPrompt": append}),
            ),
            user("hello"),
        ]
        .join("\n")
            + "\n"
    };
    let out = env
        .keel(&server)
        .args(STREAM)
        .stdin(&session(true, "Style A."))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = out
        .lines()
        .iter()
        .find(|l| l["type"] == "result")
        .map(|l| l["session_id"].as_str().unwrap().to_string())
        .unwrap();
    let out = env
        .keel(&server)
        .args(STREAM)
        .args(["--resume", &id])
        .stdin(&session(true, "Style B."))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = env
        .keel(&server)
        .args(STREAM)
        .args(["--resume", &id])
        .stdin(&session(false, "Style C."))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let systems: Vec<String> = server.requests().iter().map(|r| r.body["system"].to_string()).collect();
    assert!(systems[0].contains("Style A."));
    assert!(
        systems[1].contains("Style A.") && !systems[1].contains("Style B."),
        "{}",
        systems[1]
    );
    assert!(
        systems[2].contains("Style C.") && !systems[2].contains("Style A."),
        "{}",
        systems[2]
    );
}

/// initialize's `skills` list: only the listed skills are offered; the Skill tool refuses the
/// others and `/name` does not know them.
#[tokio::test]
async fn a_skills_list_limits_the_session_to_those_skills() {
    let env = Env::new();
    for name in ["review", "deploy"] {
        env.write(
            &format!(".claude/skills/{name}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo the {name}.\n"),
        );
    }
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("s1", "Skill", json!({"skill": "deploy"})),
            tool("s2", "Skill", json!({"skill": "review"})),
        ]))
        .push(answer("reviewed"));
    let input = [
        request("i1", json!({"subtype": "initialize", "skills": ["review", "missing"]})),
        user("go"),
        user("/deploy now"),
    ]
    .join("\n")
        + "\n";
    let out = env.keel(&server).args(STREAM).stdin(&input).run().await;
    let lines = out.lines();
    let init = lines
        .iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == "i1")
        .unwrap();
    assert_eq!(init["response"]["subtype"], "success", "{init}");
    assert!(out.stderr.contains("no skill named `missing`"), "{}", out.stderr);
    let system_init = lines.iter().find(|l| l["subtype"] == "init").unwrap();
    assert_eq!(system_init["skills"], json!(["review"]));
    let reqs = server.requests();
    let system = reqs[0].body["system"].to_string();
    assert!(
        system.contains("The review skill.") && !system.contains("The deploy skill."),
        "{system}"
    );
    let (deploy, is_error) = reqs[1].tool_result_text("s1");
    assert!(is_error && deploy.contains("Skill(deploy)"), "{deploy}");
    let (review, is_error) = reqs[1].tool_result_text("s2");
    assert!(!is_error && review.contains("review"), "{review}");
    let round = reqs[1].messages().last().unwrap()["content"].to_string();
    assert!(
        round.contains("Do the review.") && !round.contains("Do the deploy."),
        "{round}"
    );
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1]["is_error"], true, "/deploy is unknown: {}", results[1]);
    assert_eq!(reqs.len(), 2, "the unknown command never reached the model");
}

/// A user's own settings with a named provider on the scripted server, its key in LOCAL_KEY.
fn local_provider(env: &Env, server: &ModelServer) {
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(
        env.home.join(".keel/settings.json"),
        json!({"providers": {"local": {"type": "openai", "baseUrl": format!("{}/v1", server.url()),
                                       "apiKeyEnv": "LOCAL_KEY", "models": ["qwen3-coder"]}}})
        .to_string(),
    )
    .unwrap();
}

/// The `initialize` answer (request id `id`) among the lines.
fn init_reply<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    let reply = lines
        .iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}: {lines:?}"));
    assert_eq!(reply["response"]["subtype"], "success", "{reply}");
    &reply["response"]["response"]
}

fn values(answer: &Value) -> Vec<String> {
    answer["models"]
        .as_array()
        .expect("a models list")
        .iter()
        .map(|m| m["value"].as_str().expect("a value").to_string())
        .collect()
}

/// Every model `initialize` lists is one `set_model` accepts; switching to another provider's
/// model changes the model and key source that a second `initialize` and `system/init` name,
/// and the next turn goes to that provider.
#[tokio::test]
async fn initialize_describes_an_anthropic_session_and_every_listed_model_switches() {
    let env = Env::new();
    let server = ModelServer::start().await;
    local_provider(&env, &server);
    let input = request("i1", json!({"subtype": "initialize"})) + "\n";
    let out = env
        .keel(&server)
        .env("LOCAL_KEY", "local-secret")
        .args(STREAM)
        .args(["--model", "opus"])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let answer = init_reply(&lines, "i1");
    let listed = values(answer);
    assert_eq!(listed[..4], ["default", "sonnet", "opus", "haiku"], "{answer}");
    assert!(listed.contains(&"local/qwen3-coder".to_string()), "{listed:?}");
    assert!(!listed.iter().any(|v| v.starts_with("gpt")), "{listed:?}");
    assert_eq!(answer["models"][0]["resolvedModel"], "claude-opus-5-5");
    assert_eq!(answer["models"][2]["resolvedModel"], "claude-opus-5-5");
    assert_eq!(answer["model"], "claude-opus-5-5");
    assert_eq!(answer["account"]["apiKeySource"], "ANTHROPIC_API_KEY", "{answer}");
    assert_eq!(answer["account"]["apiProvider"], "firstParty");
    assert_eq!(answer["account"]["provider"], "anthropic");
    assert!(!out.stdout.contains("local-secret"), "a key is named, never shown");

    // Each listed value switches; the last one to the named provider.
    server.push(crate::support::openai::chat_answer("qwen3-coder", "local answer"));
    let mut input: Vec<String> = listed
        .iter()
        .filter(|v| *v != "local/qwen3-coder")
        .chain(std::iter::once(&"local/qwen3-coder".to_string()))
        .enumerate()
        .map(|(i, v)| request(&format!("m{i}"), json!({"subtype": "set_model", "model": v})))
        .collect();
    input.push(request("i2", json!({"subtype": "initialize"})));
    input.push(user("hi"));
    let out = env
        .keel(&server)
        .env("LOCAL_KEY", "local-secret")
        .args(STREAM)
        .args(["--model", "opus"])
        .stdin(&(input.join("\n") + "\n"))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    for i in 0..listed.len() {
        let id = format!("m{i}");
        let reply = lines
            .iter()
            .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no answer to {id}"));
        assert_eq!(reply["response"]["subtype"], "success", "{reply}");
    }
    let answer = init_reply(&lines, "i2");
    assert_eq!(answer["model"], "local/qwen3-coder", "{answer}");
    assert_eq!(answer["account"]["apiKeySource"], "LOCAL_KEY", "{answer}");
    assert_eq!(answer["account"]["provider"], "local");
    assert_eq!(answer["account"]["providerType"], "openai");
    assert!(answer["account"].get("apiProvider").is_none(), "{answer}");
    assert_eq!(values(answer), listed, "the same models to switch among");
    let init = lines
        .iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .expect("a system/init line");
    assert_eq!(init["apiKeySource"], "LOCAL_KEY", "{init}");
    let result = lines.iter().find(|l| l["type"] == "result").expect("a result line");
    assert_eq!(result["result"], "local answer", "{result}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].body["model"], "qwen3-coder");
}

/// A session on the OpenAI protocol lists its own models, not Claude's, and names the
/// OpenAI key, or none when a local server needs no key.
#[tokio::test]
async fn initialize_describes_an_openai_session() {
    let env = Env::new();
    let server = ModelServer::start().await;
    local_provider(&env, &server);
    let input = request("i1", json!({"subtype": "initialize"})) + "\n";
    let out = env
        .keel_openai(&server, "openai")
        .args(STREAM)
        .args(["--model", "gpt-4.1"])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let answer = init_reply(&lines, "i1");
    let listed = values(answer);
    assert_eq!(listed[..2], ["default", "gpt-4.1"], "{answer}");
    assert!(listed.contains(&"local/qwen3-coder".to_string()), "{listed:?}");
    assert!(
        !listed
            .iter()
            .any(|v| ["sonnet", "opus", "haiku", "claude"].iter().any(|c| v.contains(c))),
        "no Claude model on an OpenAI session: {listed:?}"
    );
    assert_eq!(answer["models"][0]["resolvedModel"], "gpt-4.1");
    assert_eq!(answer["models"][1]["provider"], "openai");
    assert_eq!(answer["model"], "gpt-4.1");
    assert_eq!(answer["account"]["apiKeySource"], "OPENAI_API_KEY", "{answer}");
    assert_eq!(answer["account"]["provider"], "openai");
    assert_eq!(answer["account"]["providerType"], "openai");
    assert!(answer["account"].get("apiProvider").is_none(), "{answer}");

    // A local OpenAI-compatible server without a key: none.
    let out = env
        .keel_openai(&server, "openai-responses")
        .env_remove("OPENAI_API_KEY")
        .args(STREAM)
        .args(["--model", "gpt-5"])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let answer = init_reply(&lines, "i1");
    assert_eq!(answer["account"]["apiKeySource"], "none", "{answer}");
    assert_eq!(answer["account"]["providerType"], "openai-responses");
    assert_eq!(answer["model"], "gpt-5");
}
