//! Waits that must not be silent or endless: a prompt argument with an open stdin nobody
//! writes, and a spending limit the last model call went past.

use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use crate::support::sse::answer;
use crate::support::{Env, ModelServer, finish};

/// keel's wait for the first byte on stdin when a prompt argument is given.
const FIRST_BYTE_WAIT: Duration = Duration::from_secs(3);

/// The text of the first user message of the first request.
fn first_prompt(server: &ModelServer) -> String {
    let requests = server.requests();
    let first = requests.first().expect("a model request");
    let content = &first.messages()[0]["content"];
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        other => other.to_string(),
    }
}

/// Waits (bounded) for keel to send its first model request.
async fn until_requested(server: &ModelServer) {
    let start = Instant::now();
    while server.requests().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "keel sent no request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Node's `spawn`, Python's `Popen(stdin=PIPE)`: a pipe that stays open and empty. With a prompt
/// argument keel goes on without it after a short wait and says so.
#[tokio::test]
async fn a_prompt_argument_does_not_wait_forever_for_an_open_silent_stdin() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let mut child = env.keel(&server).args(["-p", "the argument"]).spawn_driven();
    // Held open, never written: the writer is alive for the whole run.
    let held = child.stdin.take().expect("stdin");
    let out = tokio::time::timeout(Duration::from_secs(40), child.wait_with_output())
        .await
        .expect("keel waited for stdin instead of going on")
        .unwrap();
    drop(held);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("nothing arrived on stdin within 3 s"), "{stderr}");
    assert!(stderr.contains("--wait-for-stdin"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
    assert_eq!(first_prompt(&server), "the argument");
}

/// Once something arrives, keel reads to the end of the input, however long the rest takes.
#[tokio::test]
async fn stdin_that_starts_in_time_is_read_to_its_end() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let mut child = env.keel(&server).args(["-p", "summarise"]).spawn_driven();
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"first part\n").await.unwrap();
    stdin.flush().await.unwrap();
    // The rest comes after the first-byte wait has long passed.
    tokio::time::sleep(FIRST_BYTE_WAIT + Duration::from_secs(1)).await;
    assert!(server.requests().is_empty(), "keel went on before stdin ended");
    stdin.write_all(b"second part\n").await.unwrap();
    drop(stdin);
    let out = finish(child).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("nothing arrived"), "{}", out.stderr);
    assert_eq!(first_prompt(&server), "summarise\n\nfirst part\nsecond part\n");
}

/// `--wait-for-stdin`: a slow producer is waited for without a limit.
#[tokio::test]
async fn wait_for_stdin_waits_for_a_slow_producer() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let mut child = env
        .keel(&server)
        .args(["-p", "summarise", "--wait-for-stdin"])
        .spawn_driven();
    let mut stdin = child.stdin.take().expect("stdin");
    tokio::time::sleep(FIRST_BYTE_WAIT + Duration::from_secs(1)).await;
    assert!(server.requests().is_empty(), "keel went on without waiting");
    stdin.write_all(b"late input").await.unwrap();
    drop(stdin);
    until_requested(&server).await;
    let out = finish(child).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("nothing arrived"), "{}", out.stderr);
    assert_eq!(first_prompt(&server), "summarise\n\nlate input");
}

/// A closed or redirected stdin is no reason to wait at all.
#[tokio::test]
async fn an_empty_closed_stdin_costs_no_wait() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env.keel(&server).args(["-p", "quick"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("nothing arrived"), "{}", out.stderr);
    assert_eq!(first_prompt(&server), "quick");
}

/// One model call that costs more than `--max-budget-usd` and ends the task is still a budget
/// failure: the limit is checked after each call.
#[tokio::test]
async fn an_answer_that_went_past_the_budget_is_error_max_budget_usd() {
    let env = Env::new();
    let server = ModelServer::start().await;
    // 100 input and 20 output tokens of claude-sonnet-4-5 cost $0.0006.
    server.push(answer("finished"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json", "--max-budget-usd", "0.0001"])
        .run()
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let r = out.json();
    assert_eq!(r["subtype"], "error_max_budget_usd", "{r}");
    assert_eq!(r["is_error"], true);
    assert_eq!(r["terminal_reason"], "budget_exhausted");
    assert!(
        r.get("result").is_none(),
        "error subtypes carry errors, not a result: {r}"
    );
    let errors = r["errors"][0].as_str().unwrap();
    assert!(errors.contains("over the spending limit of $0.0001"), "{errors}");
    assert_eq!(server.requests().len(), 1);
    // Within the limit the same answer is a success.
    let server = ModelServer::start().await;
    server.push(answer("finished"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json", "--max-budget-usd", "1"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["subtype"], "success");
}
