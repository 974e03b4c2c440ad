//! A machine without CA certificates (many minimal containers): plain-HTTP servers — a local
//! model, a hook on loopback — are still reached, and an https:// one fails with what to install.

use serde_json::json;

use crate::hooks::settings;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, Reply};

/// Where the TLS library looks for the system's certificates, pointed at nothing.
const NO_CERTIFICATES: [(&str, &str); 2] = [
    ("SSL_CERT_FILE", "/nonexistent/keel-test/ca-certificates.crt"),
    ("SSL_CERT_DIR", "/nonexistent/keel-test/certs"),
];

#[tokio::test]
async fn plain_http_model_and_hook_servers_need_no_certificates() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let hook_server = ModelServer::start().await;
    hook_server.push(Reply::Json {
        status: 200,
        body: json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "denied over plain HTTP"}}),
        headers: vec![],
    });
    settings(
        &env,
        json!({"PreToolUse": [{"matcher": "Read", "hooks": [{
            "type": "http", "url": format!("{}/hook", hook_server.url())
        }]}]}),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("h1", "Read", json!({"file_path": env.path("a.txt")}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .env(NO_CERTIFICATES[0].0, NO_CERTIFICATES[0].1)
        .env(NO_CERTIFICATES[1].0, NO_CERTIFICATES[1].1)
        .args(["-p", "read a.txt"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "done");
    assert_eq!(hook_server.requests().len(), 1, "the hook was reached");
    let (text, is_error) = server.requests()[1].tool_result_text("h1");
    assert!(is_error && text.contains("denied over plain HTTP"), "{text}");
}

#[tokio::test]
async fn an_https_server_without_certificates_names_what_to_install() {
    let env = Env::new();
    let out = env
        .keel_offline()
        .env(NO_CERTIFICATES[0].0, NO_CERTIFICATES[0].1)
        .env(NO_CERTIFICATES[1].0, NO_CERTIFICATES[1].1)
        .env("ANTHROPIC_BASE_URL", "https://127.0.0.1:9")
        .env("ANTHROPIC_API_KEY", "k")
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("CA certificates") && out.stderr.contains("SSL_CERT_FILE"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("retrying"),
        "a missing certificate store is not retried: {}",
        out.stderr
    );
}
