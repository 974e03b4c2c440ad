//! Where hooks hold and what they are told: a skill's front matter hooks while it is active,
//! `agent_id`/`agent_type` inside sub-agents, the effort level and session id, PostToolUse's
//! `continueOnBlock`, and the events of tool rounds, the task list, the shell's directory,
//! instruction files and API failures.

use serde_json::{Value, json};

use crate::hooks::{group, script, settings};
use crate::support::sse::{answer, api_error, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};

/// A hook that appends its event to `name`.log (one JSON line per run) and then runs `then`.
fn logger(env: &Env, name: &str, then: &str) -> String {
    script(
        env,
        &format!("{name}.sh"),
        &format!(
            "INPUT=$(cat)\necho \"$INPUT\" | jq -c '. + {{env_effort: env.CLAUDE_EFFORT}}' >> \"$CLAUDE_PROJECT_DIR/{name}.log\"\n{then}"
        ),
    )
}

fn logged(env: &Env, name: &str) -> Vec<Value> {
    let p = env.path(&format!("{name}.log"));
    if p.exists() { read_jsonl(&p) } else { Vec::new() }
}

fn skill(env: &Env, name: &str, extra: &str, guard: &str) {
    env.write(
        &format!(".claude/skills/{name}/SKILL.md"),
        &format!(
            "---\nname: {name}\ndescription: Checks deployments.\n{extra}hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: '{guard}'\n---\nCheck the deployment.\n"
        ),
    );
}

#[tokio::test]
async fn a_skills_hooks_hold_from_its_loading_until_the_turn_ends() {
    let env = Env::new();
    let guard = logger(&env, "guard", "echo 'deploys are checked first' >&2\nexit 2");
    skill(&env, "deploy-checker", "", &guard);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "echo before"}))]))
        .push(calls(vec![tool("k1", "Skill", json!({"skill": "deploy-checker"}))]))
        .push(calls(vec![tool("b2", "Bash", json!({"command": "echo after"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "deploy", "--allowedTools", "Bash,Skill(deploy-checker)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = server.requests();
    let (text, is_error) = r[1].tool_result_text("b1");
    assert!(
        !is_error && text.contains("before"),
        "no skill hook before loading: {text}"
    );
    let (text, is_error) = r[3].tool_result_text("b2");
    assert!(is_error && text.contains("deploys are checked first"), "{text}");
    assert_eq!(logged(&env, "guard").len(), 1);
}

#[tokio::test]
async fn a_forked_skills_hooks_end_with_its_task_and_sub_agent_calls_name_the_agent() {
    let env = Env::new();
    let guard = logger(&env, "guard", "exit 2");
    skill(&env, "forked-check", "context: fork\nagent: general-purpose\n", &guard);
    let all = logger(&env, "all", "exit 0");
    settings(&env, json!({"PreToolUse": [group("Bash", &all)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("k1", "Skill", json!({"skill": "forked-check"}))]))
        // The skill's sub-agent.
        .push(calls(vec![tool("in1", "Bash", json!({"command": "echo inside"}))]))
        .push(answer("checked"))
        // The main agent again: the skill's task has ended.
        .push(calls(vec![tool("out1", "Bash", json!({"command": "echo outside"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "check", "--allowedTools", "Bash,Skill(forked-check)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = server.requests();
    let (_, is_error) = r[2].tool_result_text("in1");
    assert!(is_error, "the skill's hook blocks inside its task");
    let (text, is_error) = r[4].tool_result_text("out1");
    assert!(!is_error && text.contains("outside"), "{text}");
    let runs = logged(&env, "all");
    assert_eq!(runs.len(), 2, "{runs:?}");
    let inside = runs.iter().find(|p| p["tool_use_id"] == "in1").unwrap();
    assert_eq!(inside["agent_type"], "general-purpose");
    assert!(inside["agent_id"].as_str().is_some_and(|a| !a.is_empty()), "{inside}");
    let outside = runs.iter().find(|p| p["tool_use_id"] == "out1").unwrap();
    assert!(
        outside.get("agent_id").is_none(),
        "the main agent's calls carry none: {outside}"
    );
}

#[tokio::test]
async fn hooks_get_the_effort_and_commands_the_session_id() {
    let env = Env::new();
    let hook = logger(&env, "pre", "exit 0");
    settings(&env, json!({"PreToolUse": [group("Bash", &hook)]}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": "echo \"sid=$CLAUDE_CODE_SESSION_ID\""}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--allowedTools",
            "Bash",
            "--effort",
            "low",
            "--output-format",
            "json",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runs = logged(&env, "pre");
    assert_eq!(runs[0]["effort"], json!({"level": "low"}));
    assert_eq!(runs[0]["env_effort"], "low");
    let session = out.json()["session_id"].as_str().unwrap().to_string();
    assert_eq!(runs[0]["session_id"], json!(session));
    let (text, _) = server.requests()[1].tool_result_text("b1");
    assert!(text.contains(&format!("sid={session}")), "{text}");
}

#[tokio::test]
async fn continue_on_block_turns_a_post_tool_use_stop_into_feedback() {
    for continue_on_block in [true, false] {
        let env = Env::new();
        env.write("a.txt", "alpha\n");
        let hook = script(
            &env,
            "lint.sh",
            r#"echo '{"decision": "block", "reason": "lint failed on a.txt", "continue": false, "stopReason": "lint failed on a.txt"}'"#,
        );
        settings(
            &env,
            json!({"PostToolUse": [{"matcher": "Read", "hooks": [
                {"type": "command", "command": hook, "continueOnBlock": continue_on_block}]}]}),
        );
        let server = ModelServer::start().await;
        server
            .push(calls(vec![tool("r1", "Read", json!({"file_path": env.path("a.txt")}))]))
            .push(answer("fixed the lint"));
        let out = env
            .keel(&server)
            .args(["-p", "x", "--output-format", "json"])
            .run()
            .await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        let r = server.requests();
        if continue_on_block {
            assert_eq!(r.len(), 2, "the turn goes on");
            let (text, _) = r[1].tool_result_text("r1");
            assert!(text.contains("lint failed on a.txt"), "{text}");
            assert_eq!(out.json()["result"], "fixed the lint");
        } else {
            assert_eq!(r.len(), 1, "without it the hook's stop ends the turn");
        }
    }
}

#[tokio::test]
async fn tool_rounds_tasks_and_the_shells_directory_fire_their_events() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("sub")).unwrap();
    env.write("CLAUDE.md", "Be brief.\n");
    let batch = logger(&env, "batch", "exit 0");
    let created = logger(&env, "created", "exit 0");
    // The first completion is refused, the second accepted.
    let completed = logger(
        &env,
        "completed",
        "if [ $(wc -l < \"$CLAUDE_PROJECT_DIR/completed.log\") -eq 1 ]; then echo 'run the tests first' >&2; exit 2; fi",
    );
    let cwd = logger(&env, "cwd", "exit 0");
    let loaded = logger(&env, "loaded", "exit 0");
    settings(
        &env,
        json!({
            "PostToolBatch": [group("", &batch)],
            "TaskCreated": [group("", &created)],
            "TaskCompleted": [group("", &completed)],
            "CwdChanged": [group("", &cwd)],
            "InstructionsLoaded": [group("", &loaded)],
            "TeammateIdle": [group("", &batch)],
        }),
    );
    let todo = |status: &str| json!({"todos": [{"content": "write the parser", "status": status, "activeForm": "Writing the parser"}]});
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("t1", "TodoWrite", todo("in_progress")),
            tool("c1", "Bash", json!({"command": "cd sub"})),
        ]))
        .push(calls(vec![tool("t2", "TodoWrite", todo("completed"))]))
        .push(calls(vec![tool("t3", "TodoWrite", todo("completed"))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--allowedTools", "Bash"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("TeammateIdle") && out.stderr.contains("not registered"),
        "an unsupported event warns: {}",
        out.stderr
    );
    let batches = logged(&env, "batch");
    assert_eq!(batches.len(), 3, "one per tool round, none for TeammateIdle");
    let first: Vec<&str> = batches[0]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(first, vec!["t1", "c1"]);
    let created = logged(&env, "created");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["task_subject"], "write the parser");
    assert_eq!(logged(&env, "completed").len(), 2, "refused once, then accepted");
    // The refusal reached the model and the item went back to in progress.
    let r = server.requests();
    let round = r[2].messages().last().unwrap()["content"].to_string();
    assert!(round.contains("run the tests first"), "{round}");
    let cwd = logged(&env, "cwd");
    assert_eq!(cwd.len(), 1);
    assert!(cwd[0]["new_cwd"].as_str().unwrap().ends_with("/sub"), "{:?}", cwd[0]);
    let loaded = logged(&env, "loaded");
    assert!(
        loaded
            .iter()
            .any(|l| l["file_path"].as_str().unwrap().ends_with("/CLAUDE.md") && l["load_reason"] == "session_start"),
        "{loaded:?}"
    );
}

#[tokio::test]
async fn a_turn_ending_on_an_api_error_fires_stop_failure() {
    let env = Env::new();
    let hook = logger(&env, "failure", "exit 0");
    settings(&env, json!({"StopFailure": [group("invalid_request", &hook)]}));
    let server = ModelServer::start().await;
    server.push(api_error(400, "invalid_request_error", "messages: bad shape"));
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_ne!(out.code, 0);
    let runs = logged(&env, "failure");
    assert_eq!(runs.len(), 1, "{}", out.stderr);
    assert_eq!(runs[0]["error"], "invalid_request");
    assert!(
        runs[0]["error_details"].as_str().unwrap().contains("bad shape"),
        "{:?}",
        runs[0]
    );
}

#[tokio::test]
async fn a_typed_command_fires_user_prompt_expansion_which_may_refuse_it() {
    for refuse in [true, false] {
        let env = Env::new();
        env.write(
            ".claude/skills/greet/SKILL.md",
            "---\nname: greet\ndescription: Greets.\n---\nSay hello to $ARGUMENTS.\n",
        );
        let then = if refuse {
            "echo 'greetings are off today' >&2\nexit 2"
        } else {
            "echo 'expansion checked by the hook'"
        };
        let hook = logger(&env, "expand", then);
        settings(&env, json!({"UserPromptExpansion": [group("greet", &hook)]}));
        let server = ModelServer::start().await;
        server.push(answer("hello"));
        let out = env.keel(&server).args(["-p", "/greet the team"]).run().await;
        let runs = logged(&env, "expand");
        assert_eq!(runs.len(), 1, "{}", out.stderr);
        assert_eq!(runs[0]["command_name"], "greet");
        assert_eq!(runs[0]["command_args"], "the team");
        if refuse {
            assert_ne!(out.code, 0);
            assert!(out.stderr.contains("greetings are off today"), "{}", out.stderr);
            assert!(server.requests().is_empty(), "nothing was sent");
        } else {
            assert_eq!(out.code, 0, "{}", out.stderr);
            let sent = server.requests()[0].messages()[0]["content"].to_string();
            assert!(
                sent.contains("Say hello to the team") && sent.contains("expansion checked by the hook"),
                "{sent}"
            );
        }
    }
}
