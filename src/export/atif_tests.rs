//! Transcripts written by keel's own transcript writer, read back as ATIF.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;
use crate::transcript::{SessionMeta, Transcript};
use crate::types::message::{ContentBlock, Message, ToolResultContent, Usage};

fn usage(input: u64, output: u64, cache_read: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: cache_read,
        cache_creation_input_tokens: 0,
        cache_creation_1h_input_tokens: 0,
        web_search_requests: 0,
    }
}

fn call(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }
}

fn result(id: &str, text: &str, is_error: bool) -> ContentBlock {
    ContentBlock::tool_result(id, ToolResultContent::Text(text.into()), is_error)
}

fn user(t: &mut Transcript, content: Vec<ContentBlock>) {
    t.message(&Message {
        role: crate::types::message::Role::User,
        content,
    })
    .unwrap();
}

fn answer(t: &mut Transcript, content: Vec<ContentBlock>, model: &str, u: Usage) {
    t.assistant(&Message::assistant(content), "msg_1", model, &u).unwrap();
}

/// A session transcript at `<dir>/s1.jsonl` with its meta line.
fn session(dir: &Path, model: &str) -> (PathBuf, Transcript) {
    let path = dir.join("s1.jsonl");
    let mut t = Transcript::create(&path).unwrap();
    t.set_context("s1".into(), dir.to_path_buf());
    t.meta(&SessionMeta {
        session_id: "s1".into(),
        cwd: dir.to_path_buf(),
        model: model.into(),
        version: "9.9.9".into(),
        git_branch: Some("main".into()),
    })
    .unwrap();
    (path, t)
}

#[test]
fn calls_and_their_results_are_one_step_with_tokens_and_cost() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut t) = session(dir.path(), "claude-sonnet-4-5");
    user(&mut t, vec![ContentBlock::text("fix the bug")]);
    answer(
        &mut t,
        vec![
            ContentBlock::Thinking {
                thinking: "look first".into(),
                signature: "sig".into(),
            },
            ContentBlock::text("Reading it."),
            call("t1", "Read", json!({"file_path": "a.py"})),
            call("t2", "Bash", json!({"command": "false"})),
        ],
        "claude-sonnet-4-5",
        usage(1000, 100, 500),
    );
    user(
        &mut t,
        vec![
            result("t1", "def f(): pass", false),
            result("t2", "exit 1", true),
            ContentBlock::text("<reminder>a nested CLAUDE.md applies</reminder>"),
        ],
    );
    answer(
        &mut t,
        vec![ContentBlock::text("Done.")],
        "claude-sonnet-4-5",
        usage(2000, 50, 0),
    );
    drop(t);

    let doc = export(&path).unwrap();
    assert_eq!(doc["schema_version"], SCHEMA_VERSION);
    assert_eq!(doc["session_id"], "s1");
    assert_eq!(doc["agent"]["name"], "keel");
    assert_eq!(doc["agent"]["version"], "9.9.9");
    assert_eq!(doc["agent"]["model_name"], "claude-sonnet-4-5");
    let steps = doc["steps"].as_array().unwrap();
    let sources: Vec<&str> = steps.iter().map(|s| s["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["user", "agent", "system", "agent"]);
    let ids: Vec<u64> = steps.iter().map(|s| s["step_id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    assert_eq!(steps[0]["message"], "fix the bug");

    let agent = &steps[1];
    assert_eq!(agent["message"], "Reading it.");
    assert_eq!(agent["reasoning_content"], "look first");
    assert_eq!(agent["tool_calls"][0]["tool_call_id"], "t1");
    assert_eq!(agent["tool_calls"][0]["function_name"], "Read");
    assert_eq!(agent["tool_calls"][0]["arguments"], json!({"file_path": "a.py"}));
    let results = agent["observation"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["source_call_id"], "t1");
    assert_eq!(results[0]["content"], "def f(): pass");
    assert!(results[0].get("extra").is_none());
    assert_eq!(results[1]["extra"]["is_error"], true);
    // Input counts every prompt token; cached ones are the cache reads.
    assert_eq!(agent["metrics"]["prompt_tokens"], 1500);
    assert_eq!(agent["metrics"]["completion_tokens"], 100);
    assert_eq!(agent["metrics"]["cached_tokens"], 500);
    let price = crate::config::models::info("claude-sonnet-4-5").pricing.unwrap();
    let first = price.cost(&usage(1000, 100, 500));
    let second = price.cost(&usage(2000, 50, 0));
    assert!((agent["metrics"]["cost_usd"].as_f64().unwrap() - first).abs() < 1e-6);
    assert_eq!(steps[2]["message"], "<reminder>a nested CLAUDE.md applies</reminder>");
    assert!(steps[2].get("metrics").is_none());

    let fm = &doc["final_metrics"];
    assert_eq!(fm["total_prompt_tokens"], 3500);
    assert_eq!(fm["total_completion_tokens"], 150);
    assert_eq!(fm["total_cached_tokens"], 500);
    assert_eq!(fm["total_steps"], 4);
    assert!((fm["total_cost_usd"].as_f64().unwrap() - (first + second)).abs() < 1e-6);
    // No evidence.json: the report of an empty ledger, as `-p` would give it.
    assert_eq!(doc["extra"]["verification"]["status"], "none");
    assert_eq!(doc["extra"]["git_branch"], "main");
}

#[test]
fn an_unpriced_model_leaves_the_cost_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut t) = session(dir.path(), "some-local-model");
    user(&mut t, vec![ContentBlock::text("hi")]);
    answer(
        &mut t,
        vec![ContentBlock::text("hello")],
        "some-local-model",
        usage(10, 2, 0),
    );
    drop(t);
    let doc = export(&path).unwrap();
    assert!(doc["steps"][1]["metrics"]["cost_usd"].is_null());
    assert!(doc["final_metrics"]["total_cost_usd"].is_null());
    assert_eq!(doc["final_metrics"]["total_prompt_tokens"], 10);
}

#[test]
fn what_a_compaction_writes_again_is_copied_context() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut t) = session(dir.path(), "claude-sonnet-4-5");
    user(&mut t, vec![ContentBlock::text("first task")]);
    answer(
        &mut t,
        vec![ContentBlock::text("done")],
        "claude-sonnet-4-5",
        usage(100, 10, 0),
    );
    t.write_line(json!({"type": "compact_boundary", "compactMetadata": {"trigger": "auto"}}))
        .unwrap();
    user(&mut t, vec![ContentBlock::text("Summary of the conversation so far")]);
    t.message(&Message::assistant(vec![ContentBlock::text("done")]))
        .unwrap();
    t.event(
        crate::transcript::USAGE_EVENT,
        json!({"model": "claude-sonnet-4-5", "usage": usage(300, 40, 0), "for": "compaction"}),
    )
    .unwrap();
    user(&mut t, vec![ContentBlock::text("second task")]);
    answer(
        &mut t,
        vec![ContentBlock::text("ok")],
        "claude-sonnet-4-5",
        usage(200, 5, 0),
    );
    drop(t);

    let doc = export(&path).unwrap();
    let copied: Vec<bool> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["is_copied_context"] == true)
        .collect();
    assert_eq!(copied, [false, false, true, true, false, false]);
    // The summary request has no step, but it was paid for.
    let price = crate::config::models::info("claude-sonnet-4-5").pricing.unwrap();
    let all: f64 = [usage(100, 10, 0), usage(300, 40, 0), usage(200, 5, 0)]
        .iter()
        .map(|u| price.cost(u))
        .sum();
    let fm = &doc["final_metrics"];
    assert!((fm["total_cost_usd"].as_f64().unwrap() - all).abs() < 1e-6);
    assert_eq!(fm["total_prompt_tokens"], 300, "tokens are those of the steps");
    assert_eq!(fm["extra"]["compaction_usage"]["usage"]["input_tokens"], 300);
}

#[test]
fn a_sub_agent_is_embedded_and_referenced_from_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut t) = session(dir.path(), "claude-sonnet-4-5");
    user(&mut t, vec![ContentBlock::text("look around")]);
    answer(
        &mut t,
        vec![call(
            "toolu_agent",
            "Agent",
            json!({"description": "survey", "prompt": "list files"}),
        )],
        "claude-sonnet-4-5",
        usage(100, 10, 0),
    );
    // The child's transcript, as `engine/subagent/child.rs` starts it.
    let sub_path = dir.path().join("s1/subagents/agent-1-abc.jsonl");
    let mut sub = Transcript::create(&sub_path).unwrap();
    sub.set_context("agent-1-abc".into(), dir.path().to_path_buf());
    sub.event(
        crate::transcript::SUBAGENT_EVENT,
        json!({"agent_id": "agent-1-abc", "agent_type": "Explore", "parent_tool_use_id": "toolu_agent", "description": "survey"}),
    )
    .unwrap();
    user(&mut sub, vec![ContentBlock::text("list files")]);
    answer(
        &mut sub,
        vec![ContentBlock::text("two files")],
        "claude-haiku-4-5",
        usage(50, 5, 0),
    );
    drop(sub);
    user(&mut t, vec![result("toolu_agent", "two files", false)]);
    t.event(
        crate::transcript::USAGE_EVENT,
        json!({"model": "claude-haiku-4-5", "usage": usage(50, 5, 0), "for": "subagent"}),
    )
    .unwrap();
    answer(
        &mut t,
        vec![ContentBlock::text("two files")],
        "claude-sonnet-4-5",
        usage(120, 8, 0),
    );
    drop(t);

    let doc = export(&path).unwrap();
    let subs = doc["subagent_trajectories"].as_array().unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0]["trajectory_id"], "agent-1-abc");
    assert_eq!(subs[0]["agent"]["model_name"], "claude-haiku-4-5");
    assert_eq!(subs[0]["extra"]["agent_type"], "Explore");
    assert!(subs[0]["extra"].get("verification").is_none());
    assert_eq!(subs[0]["steps"][1]["message"], "two files");
    let r = &doc["steps"][1]["observation"]["results"][0];
    assert_eq!(r["source_call_id"], "toolu_agent");
    assert_eq!(r["content"], "two files");
    assert_eq!(r["subagent_trajectory_ref"][0]["trajectory_id"], "agent-1-abc");
    assert_eq!(r["subagent_trajectory_ref"][0]["extra"]["agent_type"], "Explore");
    // The sub-agent's cost is counted once, from its own trajectory.
    let cost = |m: &str, u: Usage| crate::config::models::info(m).pricing.unwrap().cost(&u);
    let all = cost("claude-sonnet-4-5", usage(100, 10, 0))
        + cost("claude-sonnet-4-5", usage(120, 8, 0))
        + cost("claude-haiku-4-5", usage(50, 5, 0));
    assert!((doc["final_metrics"]["total_cost_usd"].as_f64().unwrap() - all).abs() < 1e-6);
}

#[test]
fn a_result_without_its_call_is_kept_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut t) = session(dir.path(), "claude-sonnet-4-5");
    user(&mut t, vec![result("ghost", "orphan output", false)]);
    drop(t);
    let doc = export(&path).unwrap();
    assert_eq!(doc["steps"][0]["source"], "system");
    assert!(doc["steps"][0]["message"].as_str().unwrap().contains("orphan output"));
}

#[test]
fn a_transcript_without_conversation_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (path, t) = session(dir.path(), "claude-sonnet-4-5");
    drop(t);
    assert!(matches!(export(&path), Err(ExportError::Empty(_))));
}

/// The ledger as a session left it: a snapshot, and a run saved only in the journal after it.
#[tokio::test]
async fn a_run_saved_only_in_the_ledgers_journal_is_reported() {
    use crate::evidence::{Config, Evidence};
    use crate::types::tool::{Effects, ToolOutput};
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (path, mut t) = session(dir.path(), "claude-sonnet-4-5");
    user(&mut t, vec![ContentBlock::text("fix it")]);
    answer(
        &mut t,
        vec![ContentBlock::text("Done.")],
        "claude-sonnet-4-5",
        usage(10, 1, 0),
    );
    drop(t);
    let session_dir = path.with_extension("");
    let ev = Evidence::new(work.path(), &session_dir, Config::default(), true);
    let file = work.path().join("app.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    let watch = ev
        .before("Edit", Effects::EDITS, &json!({"file_path": file}), None, work.path())
        .await;
    std::fs::write(&file, "x = 2\n").unwrap();
    ev.after(watch, &mut ToolOutput::text("updated"), &|_| None).await;
    ev.flush();
    let watch = ev
        .before(
            "Bash",
            Effects::RUNS,
            &json!({"command": "pytest -q"}),
            None,
            work.path(),
        )
        .await;
    let text = "..\n2 passed in 0.01s\n";
    let mut out = ToolOutput {
        content: ToolResultContent::Text(text.into()),
        is_error: false,
        structured: json!({"stdout": text, "stderr": "", "interrupted": false, "exitCode": 0}),
    };
    ev.after(watch, &mut out, &|_| None).await;
    ev.flush();
    let snapshot: Value = serde_json::from_slice(&std::fs::read(session_dir.join("evidence.json")).unwrap()).unwrap();
    assert_eq!(snapshot["runs"], json!([]), "the run is in the journal only");

    let doc = export(&path).unwrap();
    let v = &doc["extra"]["verification"];
    assert_eq!(v["status"], "passed", "{v}");
    assert_eq!(v["runs"][0]["command"], "pytest -q");
    assert_eq!(v["files_changed"], json!(["app.py"]));
}
