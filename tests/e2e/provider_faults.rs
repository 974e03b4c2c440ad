//! Wrong endpoints and misbehaving servers: each ends in seconds with a message that names the
//! problem (the bounds below are generous; they catch hangs, not slowness).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::sse::{answer, frames, text};
use crate::support::{Env, ModelServer, Reply};

/// A port nothing listens on.
fn closed_port() -> String {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    format!("http://{addr}")
}

#[tokio::test]
async fn a_closed_port_is_retried_twice_then_named() {
    let env = Env::new();
    let url = closed_port();
    let started = Instant::now();
    let out = env
        .keel_offline()
        .env("ANTHROPIC_BASE_URL", &url)
        .env("ANTHROPIC_API_KEY", "k")
        .args(["-p", "hi"])
        .run()
        .await;
    let took = started.elapsed();
    assert_eq!(out.code, 1);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(
        out.stderr.contains("connection refused")
            && out.stderr.contains("3 attempts")
            && out.stderr.contains("is the server running"),
        "{}",
        out.stderr
    );
    // The first retry is announced without --verbose; the one-liner ends it.
    assert_eq!(out.stderr.matches("retrying in").count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("(attempt 1 of 2)"),
        "the notice counts the retries a refused connection gets: {}",
        out.stderr
    );
    assert!(out.stderr.lines().count() <= 3, "{}", out.stderr);

    let out = env
        .keel_offline()
        .env("OPENAI_BASE_URL", format!("{url}/v1"))
        .args(["--provider", "openai", "-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("connection refused") && out.stderr.contains("OPENAI_BASE_URL"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_base_url_without_scheme_fails_at_start_with_the_fix() {
    let env = Env::new();
    let started = Instant::now();
    let out = env
        .keel_offline()
        .env("ANTHROPIC_BASE_URL", "localhost:8082")
        .env("ANTHROPIC_API_KEY", "k")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        out.stderr.contains("ANTHROPIC_BASE_URL is `localhost:8082`") && out.stderr.contains("`http://localhost:8082`"),
        "{}",
        out.stderr
    );
    let out = env
        .keel_offline()
        .env("OPENAI_BASE_URL", "openrouter.ai/api/v1")
        .args(["--provider", "openai", "-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("`https://openrouter.ai/api/v1`"), "{}", out.stderr);
}

#[tokio::test]
async fn a_doubled_v1_is_named_in_the_404() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env
        .keel_offline()
        .env("ANTHROPIC_BASE_URL", format!("{}/v1", server.url()))
        .env("ANTHROPIC_API_KEY", "k")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    let wrong = format!("{}/v1/v1/messages", server.url());
    assert!(out.stderr.contains("ends in /v1"), "warned at start: {}", out.stderr);
    assert!(
        out.stderr.contains(&format!("POST {wrong} was not found")) && out.stderr.contains("/v1 twice"),
        "{}",
        out.stderr
    );
    assert_eq!(
        server.other_requests(),
        ["POST /v1/v1/messages"],
        "a 404 is not retried"
    );

    // The other way round: an OpenAI-compatible base URL without its /v1.
    let out = env
        .keel_offline()
        .env("OPENAI_BASE_URL", server.url())
        .args(["--provider", "openai", "--model", "gpt-4.1", "-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains(&format!("try OPENAI_BASE_URL = `{}/v1`", server.url())),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn an_html_page_or_other_body_is_named_at_once() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(Reply::Raw {
        status: 200,
        content_type: "text/html; charset=utf-8".into(),
        body: "<!DOCTYPE html><html><head><title>Hotel Wi-Fi Login</title></head><body>Accept terms</body></html>"
            .into(),
    });
    let started = Instant::now();
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 1);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(server.requests().len(), 1, "not retried");
    assert!(
        out.stderr
            .contains("HTTP 200 with an HTML page (\"Hotel Wi-Fi Login\")")
            && out.stderr.contains("captive portal"),
        "{}",
        out.stderr
    );

    let server = ModelServer::start().await;
    server.push(Reply::Raw {
        status: 200,
        content_type: "text/plain".into(),
        body: "upstream connect error or disconnect/reset before headers".into(),
    });
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("not an event stream (content-type text/plain): upstream connect error"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_server_that_never_answers_is_given_up_on() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(Reply::Hang).push(Reply::Hang);
    let started = Instant::now();
    let out = env
        .keel(&server)
        .env("API_TIMEOUT_MS", "1500")
        .env("KEEL_MAX_RETRIES", "1")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(server.requests().len(), 2, "one retry");
    assert!(
        out.stderr.contains("no response from") && out.stderr.contains("within 1.5 s"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn never_ending_bodies_do_not_hang() {
    let env = Env::new();
    // An error whose body never ends.
    let server = ModelServer::start().await;
    server.push(Reply::Endless {
        status: 500,
        content_type: "text/plain".into(),
        chunk: "internal error ".into(),
        pace: Duration::from_millis(20),
    });
    server.push(answer("recovered"));
    let started = Instant::now();
    let out = env
        .keel(&server)
        .env("API_TIMEOUT_MS", "1000")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "recovered");
    assert!(out.stderr.contains("HTTP 500: internal error"), "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(20));

    // An event stream of keep-alives that never carries an event.
    let server = ModelServer::start().await;
    server.push(Reply::Endless {
        status: 200,
        content_type: "text/event-stream".into(),
        chunk: ": keep-alive\n\n".into(),
        pace: Duration::from_millis(50),
    });
    let started = Instant::now();
    let out = env
        .keel(&server)
        .env("API_TIMEOUT_MS", "1000")
        .env("KEEL_MAX_RETRIES", "0")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        out.stderr.contains("no response from") && out.stderr.contains("within 1 s"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_stalled_stream_is_retried() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(Reply::Sse {
            chunks: frames(&[text("slow words here")], "end_turn", 5, 5),
            pace: Duration::from_secs(30),
        })
        .push(answer("fresh"));
    let out = env
        .keel(&server)
        .env("API_TIMEOUT_MS", "1000")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "fresh");
    assert!(out.stderr.contains("stalled: no event for 1 s"), "{}", out.stderr);
}

#[tokio::test]
async fn a_huge_retry_after_is_capped_and_said() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(Reply::Json {
        status: 429,
        body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        headers: vec![("retry-after".into(), "100000".into())],
    });
    let started = Instant::now();
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 1);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(server.requests().len(), 1);
    assert!(
        out.stderr.contains("asks to retry after 100000 s") && out.stderr.contains("maxRetryWaitSeconds"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn one_giant_event_is_read_whole_and_an_oversized_one_refused() {
    let env = Env::new();
    let big = "x".repeat(10 * 1024 * 1024);
    // One delta of 10 MB.
    let server2 = ModelServer::start().await;
    let one = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": big}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    );
    server2.push(Reply::Sse {
        chunks: vec![one],
        pace: Duration::ZERO,
    });
    let started = Instant::now();
    let out = env.keel_openai(&server2, "openai").args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim_end().len(), big.len());
    assert!(started.elapsed() < Duration::from_secs(60));

    let server3 = ModelServer::start().await;
    server3.push(Reply::Sse {
        chunks: vec![format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": "y".repeat(2 * 1024 * 1024)}}]})
        )],
        pace: Duration::ZERO,
    });
    let out = env
        .keel_openai(&server3, "openai")
        .env("KEEL_MAX_SSE_EVENT_MB", "1")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("larger than 1 MB (KEEL_MAX_SSE_EVENT_MB)"),
        "{}",
        out.stderr
    );
}
