//! Headless output formats, prompt input, sessions on disk and resume.

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

#[tokio::test]
async fn text_format_prints_only_the_answer() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("Hello from the model."));
    let out = env.keel(&server).args(["-p", "say hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Hello from the model.\n");
    let req = &server.requests()[0];
    assert_eq!(req.messages()[0]["content"][0]["text"], "say hi");
}

#[tokio::test]
async fn prompt_from_stdin_is_appended() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "summarise:"])
        .stdin("log line 1\nlog line 2\n")
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = server.requests()[0].messages()[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(sent, "summarise:\n\nlog line 1\nlog line 2\n");
}

#[tokio::test]
async fn no_prompt_is_an_error() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env.keel(&server).args(["-p"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no prompt"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn json_format_follows_the_reference_schema() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("j1", "Glob", json!({"pattern": "*.txt"}))]))
        .push(answer("found a.txt"));
    let out = env
        .keel(&server)
        .args(["-p", "find", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    assert_eq!(r["type"], "result");
    assert_eq!(r["subtype"], "success");
    assert_eq!(r["is_error"], false);
    assert_eq!(r["result"], "found a.txt");
    assert_eq!(r["num_turns"], 2);
    assert_eq!(r["stop_reason"], "end_turn");
    assert!(r["session_id"].as_str().unwrap().len() == 36);
    assert!(r["duration_ms"].as_u64().is_some());
    assert!(r["duration_api_ms"].as_u64().is_some());
    // 200 input tokens at $3/M + 50 output tokens at $15/M.
    assert!(
        (r["total_cost_usd"].as_f64().unwrap() - 0.00135).abs() < 1e-9,
        "{}",
        r["total_cost_usd"]
    );
    assert_eq!(r["usage"]["input_tokens"], 200);
    assert_eq!(r["usage"]["output_tokens"], 50);
    assert_eq!(r["permission_denials"], json!([]));
    assert_eq!(r["modelUsage"]["claude-sonnet-4-5"]["inputTokens"], 200);
    // Keys in the reference's order.
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    let pos = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(pos("type") < pos("subtype") && pos("subtype") < pos("is_error") && pos("result") < pos("session_id"));
}

#[tokio::test]
async fn stream_json_emits_init_assistant_user_and_result_lines() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            crate::support::sse::text("Looking."),
            tool("sj1", "Read", json!({"file_path": env.path("a.txt")})),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let init = &lines[0];
    assert_eq!(init["type"], "system");
    assert_eq!(init["subtype"], "init");
    assert_eq!(init["permissionMode"], "default");
    assert!(init["tools"].as_array().unwrap().contains(&json!("Read")));
    let session = init["session_id"].as_str().unwrap();
    let kinds: Vec<String> = lines.iter().map(|l| l["type"].as_str().unwrap().to_string()).collect();
    assert_eq!(
        kinds,
        vec!["system", "assistant", "assistant", "user", "assistant", "result"]
    );
    // Blocks of one message share its id.
    assert_eq!(lines[1]["message"]["id"], lines[2]["message"]["id"]);
    assert_eq!(lines[2]["message"]["content"][0]["type"], "tool_use");
    let user = &lines[3];
    assert_eq!(user["message"]["content"][0]["tool_use_id"], "sj1");
    assert_eq!(user["tool_use_result"]["file"]["numLines"], 1);
    for l in &lines {
        assert_eq!(l["session_id"], session);
    }
    assert_eq!(lines.last().unwrap()["result"], "done");
}

#[tokio::test]
async fn stream_json_requires_verbose() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "stream-json"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("--verbose"), "{}", out.stderr);
}

#[tokio::test]
async fn include_partial_messages_streams_raw_events() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("streamed"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "stream_event" && l["event"]["type"] == "content_block_delta")
    );
}

#[tokio::test]
async fn transcript_is_written_and_continue_resumes_with_full_history() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("I will remember 42."));
    let out = env
        .keel(&server)
        .args(["-p", "remember 42", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first_id = out.json()["session_id"].as_str().unwrap().to_string();
    let files = env.transcripts();
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with(format!("{first_id}.jsonl")));
    let lines = crate::support::read_jsonl(&files[0]);
    assert_eq!(lines[0]["type"], "meta");
    assert!(lines.iter().any(|l| l["type"] == "assistant"));

    server.push(answer("You said 42."));
    let out = env
        .keel(&server)
        .args(["-p", "what number?", "-c", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["session_id"], first_id.as_str());
    let msgs = server.requests()[1].messages().clone();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0]["content"][0]["text"], "remember 42");
    assert_eq!(msgs[1]["content"][0]["text"], "I will remember 42.");
    assert_eq!(msgs[2]["content"][0]["text"], "what number?");

    server.push(answer("Still 42."));
    let out = env.keel(&server).args(["-p", "again?", "-r", &first_id]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests()[2].messages().len(), 5);
}

#[tokio::test]
async fn corrupt_transcript_line_is_reported_and_skipped() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("first"));
    let out = env.keel(&server).args(["-p", "one"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let path = env.transcripts()[0].clone();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"type\":\"user\",\"message\":{\"role\":\"us\n");
    std::fs::write(&path, text).unwrap();
    server.push(answer("second"));
    let out = env.keel(&server).args(["-p", "two", "-c"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("skipped 1 unreadable line"), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "second");
    assert_eq!(server.requests()[1].messages().len(), 3);
}

#[tokio::test]
async fn resume_unknown_session_fails_clearly() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env.keel(&server).args(["-p", "x", "-r", "no-such-session"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no session no-such-session"), "{}", out.stderr);
}

#[tokio::test]
async fn version_flag_prints_the_version() {
    let env = Env::new();
    let out = env.keel_offline().arg("--version").run().await;
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("keel "), "{}", out.stdout);
}

#[tokio::test]
async fn script_provider_runs_real_tools_offline() {
    let env = Env::new();
    env.write("src/app.py", "def main():\n    return 'ok'\n");
    let script = env.write(
        "turns.json",
        &json!({"turns": [
            {"text": "Searching.", "tool_calls": [{"name": "Grep", "input": {"pattern": "def main", "output_mode": "content"}}]},
            {"tool_calls": [{"name": "Read", "input": {"file_path": "src/app.py"}}]},
            {"text": "main() returns 'ok'."}
        ]})
        .to_string(),
    );
    let out = env
        .keel_offline()
        .args(["-p", "what does main return?", "--provider", "script", "--script"])
        .arg(&script)
        .args(["--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let results: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "user").collect();
    assert_eq!(results.len(), 2);
    let grep = results[0]["message"]["content"][0]["content"].as_str().unwrap();
    assert!(grep.contains("app.py:1:def main():"), "{grep}");
    let read = results[1]["message"]["content"][0]["content"].as_str().unwrap();
    assert!(read.contains("     2\t    return 'ok'"), "{read}");
    assert_eq!(lines.last().unwrap()["result"], "main() returns 'ok'.");
}

#[tokio::test]
async fn exhausted_script_is_a_clear_error() {
    let env = Env::new();
    let script = env.write(
        "s.json",
        r#"[{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}]"#,
    );
    let out = env
        .keel_offline()
        .args(["-p", "go", "--provider", "script", "--script"])
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("the script has 1 turns"), "{}", out.stderr);
}
