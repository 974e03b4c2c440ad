//! Signing in to an HTTP server (the MCP authorization flow against the test server acting as
//! its own OAuth authorization server on loopback) and elicitation requests from a server.

use std::os::unix::fs::PermissionsExt;

use super::{HttpServer, config, log_path, python, stdio};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};
use serde_json::{Value, json};

/// A "browser" that follows the authorization server's redirect back to keel's listener.
fn browser(env: &Env) -> String {
    let path = env.home.join("browser.py");
    std::fs::write(
        &path,
        "import sys, urllib.request\nurllib.request.urlopen(sys.argv[1], timeout=10).read()\n",
    )
    .unwrap();
    format!("python3 {}", path.display())
}

fn entries(log: &std::path::Path, key: &str) -> Vec<Value> {
    read_jsonl(log)
        .into_iter()
        .filter_map(|v| v.get(key).cloned())
        .collect()
}

#[tokio::test]
async fn sign_in_discovers_registers_stores_owner_only_and_refreshes() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "auth");
    let http = HttpServer::start("--http", &log, &["--oauth", "--token-ttl", "4"]).await;
    let model = ModelServer::start().await;
    let entry = json!({"type": "http", "url": http.url("/mcp")}).to_string();
    let added = env
        .keel(&model)
        .args(["mcp", "add-json", "-s", "user", "srv", &entry])
        .run()
        .await;
    assert_eq!(added.code, 0, "{}", added.stderr);

    // Before signing in: the run says which server needs it and how.
    model.push(answer("done"));
    let before = env.keel(&model).args(["-p", "go"]).run().await;
    assert_eq!(before.code, 0, "{}", before.stderr);
    assert!(
        before.stderr.contains("MCP server `srv` needs authentication") && before.stderr.contains("keel mcp login srv"),
        "{}",
        before.stderr
    );

    let login = env
        .keel(&model)
        .env("BROWSER", browser(&env))
        .args(["mcp", "login", "srv", "--timeout", "20"])
        .run()
        .await;
    assert_eq!(login.code, 0, "{}", login.stderr);
    assert!(
        login.stdout.contains("Signed in to MCP server `srv`"),
        "{}",
        login.stdout
    );
    // Discovery, registration, PKCE with S256, the resource indicator, the loopback redirect.
    let registered = entries(&log, "register");
    assert_eq!(registered.len(), 1, "{registered:?}");
    let redirect = registered[0]["redirect_uris"][0].as_str().unwrap().to_string();
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
        "{redirect}"
    );
    let authorize = entries(&log, "authorize");
    assert_eq!(authorize[0]["code_challenge_method"], "S256");
    assert_eq!(authorize[0]["resource"], http.url("/mcp"));
    assert!(authorize[0]["state"].as_str().is_some_and(|s| s.len() >= 16));
    let tokens = entries(&log, "token");
    assert_eq!(tokens, vec![json!("authorization_code")]);

    // Stored owner-only under KEEL_HOME; the token appears in no output.
    let dir = env.home.join(".keel").join("mcp-auth");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(std::fs::read_to_string(&files[0]).unwrap().contains("at-1"));
    assert!(!login.stdout.contains("at-1") && !login.stderr.contains("at-1"));
    let listed = env.keel(&model).args(["mcp", "list"]).run().await;
    assert!(listed.stdout.contains("signed in (scope: tools)"), "{}", listed.stdout);

    // Past the token's life: keel refreshes it first, then the call carries the new one.
    // Waiting for the token's lifetime (4 s) to pass is the condition itself: whether keel
    // refreshes a token near its end depends on how fast it starts, but an expired token must
    // be refreshed whatever the machine's load.
    tokio::time::sleep(std::time::Duration::from_millis(4500)).await;
    model
        .push(calls(vec![tool("e1", "mcp__srv__echo", json!({"message": "signed"}))]))
        .push(answer("done"));
    let after = env
        .keel(&model)
        .args(["-p", "go", "--allowedTools", "mcp__srv"])
        .run()
        .await;
    assert_eq!(after.code, 0, "{}", after.stderr);
    let requests = model.requests();
    let last = requests.len() - 1;
    assert_eq!(
        requests[last].tool_result_text("e1"),
        ("Echo: signed".to_string(), false)
    );
    assert_eq!(
        entries(&log, "token"),
        vec![json!("authorization_code"), json!("refresh_token")]
    );
    let bearers: Vec<String> = entries(&log, "headers")
        .iter()
        .filter_map(|h| h.get("authorization").and_then(Value::as_str).map(str::to_string))
        .collect();
    assert!(bearers.iter().any(|b| b == "Bearer at-2"), "{bearers:?}");
    assert!(!after.stderr.contains("at-2"), "{}", after.stderr);
}

#[tokio::test]
async fn an_authorization_server_without_https_gets_nothing() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "auth");
    let http = HttpServer::start("--http", &log, &["--oauth", "--insecure-endpoints"]).await;
    let model = ModelServer::start().await;
    let entry = json!({"type": "http", "url": http.url("/mcp")}).to_string();
    env.keel(&model)
        .args(["mcp", "add-json", "-s", "user", "srv", &entry])
        .run()
        .await;
    let login = env
        .keel(&model)
        .env("BROWSER", browser(&env))
        .args(["mcp", "login", "srv", "--timeout", "5"])
        .run()
        .await;
    assert_ne!(login.code, 0);
    assert!(
        login.stderr.contains("token endpoint") && login.stderr.contains("not https"),
        "{}",
        login.stderr
    );
    assert!(entries(&log, "register").is_empty(), "nothing was registered");
    assert!(entries(&log, "authorize").is_empty());
}

#[tokio::test]
async fn elicitation_is_declined_headless_with_a_notice_or_answered_with_defaults() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "el");
    let cfg = config(json!({"el": stdio(&log, &["--elicit"])}));
    let model = ModelServer::start().await;
    model
        .push(calls(vec![tool("a1", "mcp__el__ask", json!({}))]))
        .push(answer("done"))
        .push(calls(vec![tool("a2", "mcp__el__ask", json!({}))]))
        .push(answer("done"));
    let declined = env
        .keel(&model)
        .args(["-p", "go", "--allowedTools", "mcp__el", "--mcp-config", &cfg])
        .run()
        .await;
    assert_eq!(declined.code, 0, "{}", declined.stderr);
    assert_eq!(
        model.requests()[1].tool_result_text("a1"),
        (r#"answer: {"action": "decline"}"#.to_string(), false)
    );
    assert!(
        declined
            .stderr
            .contains("MCP server `el` asked for input (\"Who are you?\"); declined"),
        "{}",
        declined.stderr
    );
    let defaults = env
        .keel(&model)
        .env("KEEL_MCP_ELICITATION", "defaults")
        .args(["-p", "go", "--allowedTools", "mcp__el", "--mcp-config", &cfg])
        .run()
        .await;
    assert_eq!(defaults.code, 0, "{}", defaults.stderr);
    assert_eq!(
        model.requests()[3].tool_result_text("a2"),
        (
            r#"answer: {"action": "accept", "content": {"count": 3, "name": "Ann"}}"#.to_string(),
            false
        )
    );
    // keel told the server it can answer forms.
    let init = super::received(&log)
        .into_iter()
        .find(|m| m["method"] == "initialize")
        .unwrap();
    assert!(
        init["params"]["capabilities"]["elicitation"]["form"].is_object(),
        "{init}"
    );
}
