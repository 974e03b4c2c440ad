//! WebFetch through a configured proxy (`HTTP_PROXY`, here a recording proxy on loopback) and
//! the session's page cache, end to end.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::web::{Site, html};
use crate::support::{Env, ModelServer};
use crate::web::user_settings;

/// A forward proxy on loopback that answers every request itself, recording its request line.
fn proxy() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut buf = [0u8; 4096];
            let n = c.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            log.lock()
                .unwrap()
                .push(head.lines().next().unwrap_or_default().to_string());
            let body = "<p>served by the proxy</p>";
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

/// Two fetches through the proxy; returns their results (text, is_error) by id.
async fn through_proxy(env: &Env, port: u16, urls: [&str; 2]) -> Vec<(String, bool)> {
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("a", "WebFetch", json!({"url": urls[0], "prompt": "p"})),
            tool("b", "WebFetch", json!({"url": urls[1], "prompt": "p"})),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .env("HTTP_PROXY", format!("http://127.0.0.1:{port}"))
        // The model server is on loopback too: not through the proxy.
        .env("NO_PROXY", "127.0.0.1")
        .args(["-p", "read", "--allowedTools", "WebFetch"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    vec![req.tool_result_text("a"), req.tool_result_text("b")]
}

/// Through a proxy keel still judges the address: its own resolution of the name, and a
/// private address written as a literal, are refused before anything reaches the proxy.
#[tokio::test]
async fn a_fetch_goes_through_the_configured_proxy_which_gets_nothing_private() {
    let env = Env::new();
    let (port, seen) = proxy();
    let refused = through_proxy(&env, port, ["http://10.1.2.3/admin", "http://localhost:9/status"]).await;
    assert!(refused[0].1 && refused[0].0.contains("10.1.2.3"), "{:?}", refused[0]);
    assert!(
        refused[1].1 && refused[1].0.contains("refused: localhost resolves to"),
        "{:?}",
        refused[1]
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing reached the proxy");

    // Where the private network is open, the request goes to the proxy, as a proxy request.
    user_settings(&env, json!({"webFetch": {"allowPrivateNetwork": true}}));
    let served = through_proxy(&env, port, ["http://localhost:9/guide", "http://10.1.2.3/admin"]).await;
    for (text, is_error) in &served {
        assert!(!is_error && text.contains("served by the proxy"), "{text}");
    }
    // The two calls run side by side: in either order.
    let mut lines = seen.lock().unwrap().clone();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            "GET http://10.1.2.3/admin HTTP/1.1".to_string(),
            "GET http://localhost:9/guide HTTP/1.1".to_string()
        ],
        "{lines:?}"
    );
}

#[tokio::test]
async fn the_same_page_twice_in_a_session_is_fetched_once() {
    let env = Env::new();
    user_settings(&env, json!({"webFetch": {"allowPrivateNetwork": true}}));
    let site = Site::start(vec![("/page", html("<p>cached words</p>"))]).await;
    let url = site.url("/page");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "first",
            "WebFetch",
            json!({"url": url, "prompt": "a"}),
        )]))
        .push(calls(vec![tool(
            "second",
            "WebFetch",
            json!({"url": url, "prompt": "b"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "read", "--allowedTools", "WebFetch(domain:127.0.0.1)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let (first, _) = requests[1].tool_result_text("first");
    let (second, is_error) = requests[2].tool_result_text("second");
    assert!(
        first.contains("cached words") && !first.contains("ago in this session"),
        "{first}"
    );
    assert!(
        !is_error && second.contains("cached words") && second.contains("ago in this session"),
        "{second}"
    );
    assert!(
        second.contains("Looking for: b"),
        "the second prompt is its own: {second}"
    );
    assert_eq!(site.paths(), vec!["/page"], "one request reached the site");
}
