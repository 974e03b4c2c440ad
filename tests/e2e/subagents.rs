//! Sub-agents: the Agent tool runs a child conversation whose report comes back as the result;
//! SubagentStart/SubagentStop hooks fire around it.

use serde_json::{Value, json};

use crate::hooks::script;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

fn dump_hook(env: &Env) -> String {
    script(
        env,
        "dump.sh",
        "cat >> \"$CLAUDE_PROJECT_DIR/events.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/events.jsonl\"",
    )
}

fn events(env: &Env) -> Vec<Value> {
    std::fs::read_to_string(env.path("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn an_explore_subagent_reports_back_and_fires_its_hooks() {
    let env = Env::new();
    env.write("src/config.rs", "pub const PORT: u16 = 8080;\n");
    let dump = dump_hook(&env);
    // The SubagentStop hook sends the sub-agent back once, then lets it stop.
    let gate = script(
        &env,
        "gate.sh",
        "if [ \"$(jq -r .stop_hook_active)\" = true ]; then exit 0; fi\necho 'cite the line number' >&2\nexit 2",
    );
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {
            "SubagentStart": [{"matcher": "Explore", "hooks": [
                {"type": "command", "command": dump},
                {"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SubagentStart\", \"additionalContext\": \"Ports live in src/config.rs.\"}}'"}
            ]}],
            "SubagentStop": [{"matcher": "Explore", "hooks": [
                {"type": "command", "command": dump},
                {"type": "command", "command": gate}
            ]}],
            "Stop": [{"hooks": [{"type": "command", "command": dump}]}]
        }})
        .to_string(),
    );
    let server = ModelServer::start().await;
    server
        // Parent: delegate.
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "find the port", "prompt": "Which port does src/config.rs set?", "subagent_type": "Explore"}),
        )]))
        // Sub-agent: read, answer, get sent back by SubagentStop, answer again.
        .push(calls(vec![tool("r1", "Read", json!({"file_path": env.path("src/config.rs")}))]))
        .push(answer("PORT is 8080."))
        .push(answer("PORT is 8080 (src/config.rs line 1)."))
        // Parent: edit the file the sub-agent read — the parent never read it itself.
        .push(calls(vec![tool(
            "e1",
            "Edit",
            json!({"file_path": env.path("src/config.rs"), "old_string": "8080", "new_string": "9090"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "what port?",
            "--permission-mode",
            "acceptEdits",
            "--output-format",
            "json",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);

    // The sub-agent's own conversation: only its prompt, read-only tools, a sub-agent note.
    let child = &reqs[1].body;
    assert_eq!(child["messages"].as_array().unwrap().len(), 1);
    assert_eq!(
        child["messages"][0]["content"][0]["text"],
        "Which port does src/config.rs set?"
    );
    // SubagentStart's additionalContext joins the sub-agent's prompt.
    assert!(
        child["messages"][0]["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("Ports live in src/config.rs."),
        "{}",
        child["messages"][0]
    );
    assert_eq!(reqs[1].tool_names(), vec!["Read", "Glob", "Grep"]);
    assert!(child["system"].to_string().contains("sub-agent"), "{}", child["system"]);

    // Only the final report comes back to the parent.
    let (report, is_error) = reqs[4].tool_result_text("a1");
    assert!(!is_error, "{report}");
    assert!(report.starts_with("PORT is 8080 (src/config.rs line 1)."), "{report}");
    assert!(
        !report.contains("pub const"),
        "intermediate tool output stays in the sub-agent"
    );

    // The read-file state was copied into the sub-agent, not shared back.
    let (edit, is_error) = reqs[5].tool_result_text("e1");
    assert!(
        is_error && edit.contains("read"),
        "the parent must read the file itself: {edit}"
    );

    let ev = events(&env);
    let names: Vec<&str> = ev.iter().map(|e| e["hook_event_name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["SubagentStart", "SubagentStop", "SubagentStop", "Stop"]);
    assert_eq!(ev[0]["agent_type"], "Explore");
    let id = ev[0]["agent_id"].as_str().unwrap();
    assert_eq!(ev[1]["agent_id"], id);
    assert_eq!(ev[1]["stop_hook_active"], false);
    assert_eq!(ev[2]["stop_hook_active"], true);
    assert_eq!(ev[2]["last_assistant_message"], "PORT is 8080 (src/config.rs line 1).");
    let transcript = ev[1]["agent_transcript_path"].as_str().unwrap();
    assert!(std::path::Path::new(transcript).is_file(), "{transcript}");
    // The sub-agent's tokens count in the session's totals.
    // Three tool-call turns (30 output tokens each) and three answers (20 each), parent and child.
    assert_eq!(out.json()["usage"]["output_tokens"], 30 * 3 + 20 * 3);
}

#[tokio::test]
async fn a_subagents_refused_calls_are_the_sessions_denials_and_task_rules_apply() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"permissions": {"deny": ["Task(Explore)"]}}).to_string(),
    );
    let server = ModelServer::start().await;
    server
        // Parent: an Explore agent (denied by the `Task(Explore)` rule), then a general one.
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "look around", "prompt": "List the files.", "subagent_type": "Explore"}),
        )]))
        .push(calls(vec![tool(
            "a2",
            "Agent",
            json!({"description": "write notes", "prompt": "Write notes.txt saying hi."}),
        )]))
        // Sub-agent: tries to write; default mode in headless has nobody to ask.
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": env.path("notes.txt"), "content": "hi\n"}),
        )]))
        .push(answer("I could not write notes.txt: permission was refused."))
        .push(answer("The sub-agent was refused."));
    let out = env
        .keel(&server)
        .args(["-p", "take notes", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);

    let (denied, is_error) = reqs[1].tool_result_text("a1");
    assert!(is_error && denied.contains("Task(Explore)"), "{denied}");

    // The general-purpose sub-agent is offered the parent's tools but ExitPlanMode; at depth 1
    // of the default agents.maxDepth 2 it may still delegate.
    let names = reqs[2].tool_names();
    let offers = |n: &str| names.iter().any(|t| t == n);
    assert!(offers("Write") && offers("Bash") && offers("Agent"), "{names:?}");
    assert!(!offers("ExitPlanMode"), "{names:?}");
    let (refused, is_error) = reqs[3].tool_result_text("w1");
    assert!(is_error, "{refused}");
    assert!(!env.path("notes.txt").exists(), "the refused write did not happen");

    let (report, is_error) = reqs[4].tool_result_text("a2");
    assert!(
        !is_error && report.starts_with("I could not write notes.txt"),
        "{report}"
    );

    // Both refusals are in the session's result: the parent's and the sub-agent's.
    let denials: Vec<String> = out.json()["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{}",
                d["tool_name"].as_str().unwrap(),
                d["tool_use_id"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(denials, vec!["Agent:a1", "Write:w1"]);
}
