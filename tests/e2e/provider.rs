//! Provider behaviour over real HTTP: retries, auth failures, dropped and cut streams, cancel.

use std::time::Duration;

use serde_json::json;

use crate::support::sse::{answer, api_error, frames, text, tool};
use crate::support::{Env, ModelServer, Reply, finish};

#[tokio::test]
async fn overloaded_529_is_retried_then_succeeds() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(api_error(529, "overloaded_error", "Overloaded"))
        .push(answer("second time lucky"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    let lines = out.lines();
    let retry = lines
        .iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "api_retry")
        .expect("an api_retry line");
    assert_eq!(retry["attempt"], 1);
    assert_eq!(retry["error_status"], 529);
    assert_eq!(lines.last().unwrap()["result"], "second time lucky");
}

#[tokio::test]
async fn rate_limit_429_and_5xx_are_retried() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(api_error(429, "rate_limit_error", "slow down"))
        .push(api_error(500, "api_error", "internal"))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "ok");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_bounded() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..4 {
        server.push(api_error(529, "overloaded_error", "Overloaded"));
    }
    let out = env
        .keel(&server)
        .env("KEEL_MAX_RETRIES", "2")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert_eq!(server.requests().len(), 3, "1 attempt + 2 retries");
    assert!(out.stderr.contains("gave up after 3 attempts"), "{}", out.stderr);
}

#[tokio::test]
async fn unauthorized_401_is_not_retried_and_exits_1_with_one_line() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(api_error(401, "authentication_error", "invalid x-api-key"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 1);
    assert_eq!(server.requests().len(), 1);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].contains("authentication"), "{}", out.stderr);
    assert!(lines[0].contains("invalid x-api-key"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn missing_api_key_is_a_clear_error() {
    let env = Env::new();
    let out = env.keel_offline().args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("ANTHROPIC_API_KEY"), "{}", out.stderr);
}

#[tokio::test]
async fn bearer_token_is_sent_as_authorization() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel_offline()
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_AUTH_TOKEN", "tok-123")
        .args(["-p", "hi", "--model", "haiku"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer tok-123"));
    assert_eq!(req.header("x-api-key"), None);
    assert_eq!(req.body["model"], "claude-haiku-5-5");
}

#[tokio::test]
async fn error_event_inside_200_stream_is_retried_and_partial_text_discarded() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let mut chunks = frames(&[text("partial words that never finish")], "end_turn", 5, 5);
    chunks.truncate(4);
    chunks.push("event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n".into());
    server
        .push(Reply::Sse {
            chunks,
            pace: Duration::ZERO,
        })
        .push(answer("clean answer"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["result"], "clean answer");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn dropped_connection_is_retried() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let mut chunks = frames(&[text("this stream will break")], "end_turn", 5, 5);
    chunks.truncate(3);
    server.push(Reply::SseThenDrop { chunks }).push(answer("recovered"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "recovered");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn max_tokens_mid_tool_call_is_not_executed_and_model_continues() {
    let env = Env::new();
    env.write("notes.txt", "n\n");
    let server = ModelServer::start().await;
    let mut chunks = frames(
        &[
            text("Reading now."),
            tool("cut1", "Read", json!({"file_path": env.path("notes.txt")})),
        ],
        "max_tokens",
        5,
        4096,
    );
    // Drop the tool block's stop and part of its input, as a real cut stream looks.
    let stop_pos = chunks.iter().rposition(|c| c.contains("content_block_stop")).unwrap();
    chunks.remove(stop_pos);
    chunks.remove(stop_pos - 1);
    server
        .push(Reply::Sse {
            chunks,
            pace: Duration::ZERO,
        })
        .push(answer("continued"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1].messages();
    let assistant = &msgs[1];
    assert_eq!(assistant["role"], "assistant");
    assert!(
        !assistant["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "tool_use"),
        "the incomplete call must not be in the history: {assistant}"
    );
    let last = msgs.last().unwrap();
    let note = last["content"][0]["text"].as_str().unwrap();
    assert!(
        note.contains("cut off") && note.contains("Read") && note.contains("NOT run"),
        "{note}"
    );
}

#[tokio::test]
async fn interrupt_mid_stream_stops_promptly_and_keeps_history_valid() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let long: String = (0..200).map(|i| format!("word{i} ")).collect();
    server.push(Reply::Sse {
        chunks: frames(&[text(&long)], "end_turn", 5, 500),
        pace: Duration::from_millis(50),
    });
    let child = env.keel(&server).args(["-p", "tell a long story"]).spawn();
    let pid = child.id().expect("pid") as i32;
    // Interrupt once the answer is streaming: the request is in flight and text has been sent.
    server.wait_requests(1).await;
    server.wait_chunks_sent(5).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = finish(child).await;
    assert_eq!(out.code, 130, "stderr: {}", out.stderr);
    // The stream (10 s long) was abandoned by the client, not read to its end; the server
    // notices at its next chunk.
    assert_eq!(server.wait_abandoned(1).await, 1);
    let transcript = crate::support::read_jsonl(&env.transcripts()[0]);
    assert!(
        transcript
            .iter()
            .any(|l| l["type"] == "user" && l["message"].to_string().contains("[Request interrupted by user]")),
        "transcript records the interruption"
    );
}
