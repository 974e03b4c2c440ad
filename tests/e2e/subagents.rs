//! Sub-agents: the Agent tool runs a child conversation whose report comes back as the result;
//! SubagentStart/SubagentStop hooks fire around it.

use serde_json::{Value, json};

use crate::hooks::script;
use crate::support::skip::or_skip;
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

// The stop gate judges the parent's turn: a sub-agent's own turn (sharing the session's evidence
// ledger) must not restart the parent's count of changes, or the parent may end its turn on a
// change no passing run covers.

const CALC: &str = "def add(a, b):\n    return a + b\n";
const CALC_TESTS: &str = "import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 0), 2)\n        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n";
const SENT_BACK: &str = "I was sent back: the evidence does not support finishing yet.";

/// A Python project whose tests pass until `add` is made to subtract (then one of two fails).
fn calc_project() -> Env {
    let env = Env::new();
    env.write("calc.py", CALC);
    env.write("test_calc.py", CALC_TESTS);
    env
}

/// The real test runner to use: the pinned pytest (scripts/runners-venv.sh), else pytest when
/// python3 has it, else unittest (always there).
fn python_test_command() -> String {
    if let Ok(bin) = crate::support::runners::runners_venv() {
        return format!("{} -m pytest -q", bin.join("python3").display());
    }
    let pytest = std::process::Command::new("python3")
        .args(["-m", "pytest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if pytest {
        "python3 -m pytest -q".into()
    } else {
        "python3 -m unittest".into()
    }
}

/// The parent's first two steps: read `calc.py`, then break `add`.
fn push_parent_breaks_add(server: &ModelServer, env: &Env) {
    server
        .push(calls(vec![tool(
            "p1",
            "Read",
            json!({"file_path": env.path("calc.py")}),
        )]))
        .push(calls(vec![tool(
            "p2",
            "Edit",
            json!({"file_path": env.path("calc.py"), "old_string": "a + b", "new_string": "a - b"}),
        )]));
}

/// keel with the stop gate on (nudge), the permission layer out of the way, JSON output.
async fn gated_run(env: &Env, server: &ModelServer) -> Value {
    let out = env
        .keel(server)
        .env_remove("KEEL_VERIFICATION_GATE")
        .args([
            "-p",
            "make add robust",
            "--permission-mode",
            "bypassPermissions",
            "--settings",
            r#"{"verification": {"stopGate": "nudge"}}"#,
            "--output-format",
            "json",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    out.json()
}

/// The `verification_gate` events of one transcript file.
fn gate_events(transcript: &std::path::Path) -> Vec<Value> {
    crate::support::read_jsonl(transcript)
        .into_iter()
        .filter(|l| l["type"] == "event" && l["event"] == "verification_gate")
        .map(|l| l["data"].clone())
        .collect()
}

/// The gate events of the parent session's own transcript, and of its sub-agents' transcripts.
fn parent_and_subagent_gate_events(env: &Env, session_id: &str) -> (Vec<Value>, Vec<Value>) {
    let parent = env.project_dir().join(format!("{session_id}.jsonl"));
    assert!(parent.is_file(), "no parent transcript at {}", parent.display());
    assert_eq!(env.transcripts(), vec![parent.clone()], "one top-level session");
    let subagents: Vec<std::path::PathBuf> = std::fs::read_dir(env.project_dir().join(session_id).join("subagents"))
        .expect("the sub-agent's transcript directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(subagents.len(), 1, "one sub-agent transcript: {subagents:?}");
    (gate_events(&parent), gate_events(&subagents[0]))
}

/// The text of the last user message of a request (where the gate's note goes).
fn last_user_text(req: &crate::support::Recorded) -> String {
    let last = req.messages().last().expect("a message");
    assert_eq!(last["role"], "user", "{last}");
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn a_subagents_failing_run_leaves_the_parents_stop_gate_on() {
    // The sub-agent runs real Python tests.
    or_skip!(crate::support::skip::python3());
    let run = python_test_command();
    let env = calc_project();
    let server = ModelServer::start().await;
    push_parent_breaks_add(&server, &env);
    server
        // Parent: delegate the test run.
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "run the tests", "prompt": "Run the Python tests and report.", "subagent_type": "general-purpose"}),
        )]))
        // Sub-agent: run the real tests (one fails), then claim the opposite.
        .push(calls(vec![tool("b1", "Bash", json!({"command": run}))]))
        .push(answer("All tests pass."))
        // Parent: believe the report and finish; then answer the gate's note.
        .push(answer("done"))
        .push(answer(SENT_BACK));
    let r = gated_run(&env, &server).await;
    let reqs = server.requests();

    // The sub-agent's run really failed, and its claim reached the parent.
    assert_eq!(reqs[3].messages().len(), 1, "request 3 is the sub-agent's first");
    let (bash, is_error) = reqs[4].tool_result_text("b1");
    let runner_says = if run.contains("pytest") {
        "1 failed, 1 passed"
    } else {
        "FAILED (failures=1)"
    };
    assert!(bash.contains(runner_says), "is_error {is_error}: {bash}");
    let (report, is_error) = reqs[5].tool_result_text("a1");
    assert!(!is_error && report.starts_with("All tests pass."), "{report}");

    // The parent's "done" is sent back once, with the sub-agent's failing run.
    let (parent_gates, child_gates) = parent_and_subagent_gate_events(&env, r["session_id"].as_str().unwrap());
    assert_eq!(
        r["result"], SENT_BACK,
        "the parent ended its turn on a failing run without being sent back; gate events: {parent_gates:?}"
    );
    assert_eq!(reqs.len(), 7, "the scripted answer to the gate's note was consumed");
    assert_eq!(parent_gates.len(), 1, "{parent_gates:?}");
    assert!(
        child_gates.is_empty(),
        "the gate judges the parent, not the sub-agent: {child_gates:?}"
    );
    let gate = &parent_gates[0];
    assert_eq!(gate["mode"], "nudge");
    assert_eq!(gate["status"], "failed");
    let note = gate["note"].as_str().unwrap();
    let failed = format!("Run 1 failed: `{run}`: 1 passed, 1 failed (exit 1).");
    assert!(note.contains(&failed), "{note}");
    assert!(
        last_user_text(&reqs[6]).contains(&failed),
        "the parent's model got the note"
    );

    let v = &r["verification"];
    assert_eq!(v["status"], "failed");
    assert_eq!(v["files_changed"], json!(["calc.py"]));
    assert_eq!(v["runs"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["runs"][0]["command"], run);
    assert_eq!(v["runs"][0]["failed"], 1);
    assert_eq!(v["runs"][0]["fresh"], true);
}

#[tokio::test]
async fn a_read_only_subagent_leaves_the_parents_stop_gate_on() {
    let env = calc_project();
    let server = ModelServer::start().await;
    push_parent_breaks_add(&server, &env);
    server
        // Parent: ask a read-only sub-agent to look at the code.
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "review add", "prompt": "Where is add defined and tested?", "subagent_type": "Explore"}),
        )]))
        // Sub-agent: read and search only, then report.
        .push(calls(vec![tool("r1", "Read", json!({"file_path": env.path("calc.py")}))]))
        .push(calls(vec![tool("g1", "Grep", json!({"pattern": "def add"}))]))
        .push(answer("add is defined in calc.py and tested in test_calc.py."))
        // Parent: finish without any test run; then answer the gate's note.
        .push(answer("done"))
        .push(answer(SENT_BACK));
    let r = gated_run(&env, &server).await;
    let reqs = server.requests();

    assert_eq!(
        reqs[3].tool_names(),
        vec!["Read", "Glob", "Grep"],
        "request 3 is the sub-agent's"
    );
    let (report, is_error) = reqs[6].tool_result_text("a1");
    assert!(!is_error && report.starts_with("add is defined in calc.py"), "{report}");

    let (parent_gates, child_gates) = parent_and_subagent_gate_events(&env, r["session_id"].as_str().unwrap());
    assert_eq!(
        r["result"], SENT_BACK,
        "the parent ended its turn on an untested edit without being sent back; gate events: {parent_gates:?}"
    );
    assert_eq!(reqs.len(), 8, "the scripted answer to the gate's note was consumed");
    assert_eq!(parent_gates.len(), 1, "{parent_gates:?}");
    assert!(child_gates.is_empty(), "{child_gates:?}");
    let gate = &parent_gates[0];
    assert_eq!(gate["mode"], "nudge");
    assert_eq!(gate["status"], "unverified");
    let unverified = "No test run is recorded in this session, and these files changed: calc.py (Edit).";
    let note = gate["note"].as_str().unwrap();
    assert!(note.contains(unverified), "{note}");
    assert!(
        last_user_text(&reqs[7]).contains(unverified),
        "the parent's model got the note"
    );

    let v = &r["verification"];
    assert_eq!(v["status"], "unverified");
    assert_eq!(v["files_changed"], json!(["calc.py"]));
    assert_eq!(v["runs"], json!([]));
}
