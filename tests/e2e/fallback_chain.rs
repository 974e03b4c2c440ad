//! The fallback chain: up to three models after the main one, each taking over when the one
//! before is overloaded, and one retry of a request on the next model after an unexpected
//! error that retrying cannot fix.

use std::time::Duration;

use crate::support::server::Reply;
use crate::support::sse::{answer, api_error};
use crate::support::{Env, ModelServer};

/// An event stream that fails at once with an error retrying cannot fix.
fn stream_failure() -> Reply {
    let data = r#"{"type":"error","error":{"type":"invalid_state_error","message":"the model lost its state"}}"#;
    Reply::Sse {
        chunks: vec![format!("event: error\ndata: {data}\n\n")],
        pace: Duration::ZERO,
    }
}

fn models(server: &ModelServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn overloads_walk_down_the_chain_to_the_last_fallback() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..6 {
        server.push(api_error(529, "overloaded_error", "Overloaded"));
    }
    server.push(answer("answered by the second fallback"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--model", "sonnet", "--fallback-model", "haiku,opus"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("answered by the second fallback"), "{}", out.stdout);
    let m = models(&server);
    assert_eq!(m.len(), 7, "{m:?}");
    assert!(m[..3].iter().all(|x| x == "claude-sonnet-5-5"), "{m:?}");
    assert!(m[3..6].iter().all(|x| x == "claude-haiku-5-5"), "{m:?}");
    assert_eq!(m[6], "claude-opus-5-5");
    assert!(
        out.stderr.contains("continuing on the fallback model claude-haiku-5-5")
            && out.stderr.contains("continuing on the fallback model claude-opus-5-5"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn an_unexpected_error_is_retried_once_on_the_fallback() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(stream_failure()).push(answer("the fallback answered"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--model", "sonnet", "--fallback-model", "haiku"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("the fallback answered"), "{}", out.stdout);
    assert_eq!(models(&server), ["claude-sonnet-5-5", "claude-haiku-5-5"]);
    assert!(
        out.stderr
            .contains("trying this request once on the fallback model claude-haiku-5-5"),
        "{}",
        out.stderr
    );

    // Once only: when the fallback fails the same way, the turn fails with its error.
    let server = ModelServer::start().await;
    server
        .push(stream_failure())
        .push(stream_failure())
        .push(answer("never sent"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--model", "sonnet", "--fallback-model", "haiku,opus"])
        .run()
        .await;
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(out.stderr.contains("lost its state"), "{}", out.stderr);
    assert_eq!(models(&server), ["claude-sonnet-5-5", "claude-haiku-5-5"]);

    // A request the API rejects is not the server's failure: no retry.
    let server = ModelServer::start().await;
    server.push(api_error(400, "invalid_request_error", "bad field"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--model", "sonnet", "--fallback-model", "haiku"])
        .run()
        .await;
    assert_ne!(out.code, 0);
    assert_eq!(models(&server), ["claude-sonnet-5-5"]);
}

#[tokio::test]
async fn a_chain_longer_than_three_or_repeating_a_model_is_refused() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env
        .keel(&server)
        .args([
            "-p",
            "hi",
            "--model",
            "sonnet",
            "--fallback-model",
            "haiku,opus,claude-opus-4-1,claude-3-5-haiku-latest",
        ])
        .run()
        .await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("at most 3"), "{}", out.stderr);
    let out = env
        .keel(&server)
        .args([
            "-p",
            "hi",
            "--model",
            "sonnet",
            "--settings",
            r#"{"fallbackModel": ["haiku", "haiku"]}"#,
        ])
        .run()
        .await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("listed twice"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}
