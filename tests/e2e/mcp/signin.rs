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

/// Adds the server `name` (`entry`) to the user's configuration, checks that a run before
/// signing in names it and the command to run, then signs in with the test's "browser".
async fn add_then_sign_in(env: &Env, model: &ModelServer, name: &str, entry: &Value) -> crate::support::Out {
    let added = env
        .keel(model)
        .args(["mcp", "add-json", "-s", "user", name, &entry.to_string()])
        .run()
        .await;
    assert_eq!(added.code, 0, "{}", added.stderr);
    model.push(answer("done"));
    let before = env.keel(model).args(["-p", "go"]).run().await;
    assert_eq!(before.code, 0, "{}", before.stderr);
    let wanted = format!(
        "MCP server `{name}` needs authentication: it answered HTTP 401; run `keel mcp login {name}` to sign in"
    );
    assert!(before.stderr.contains(&wanted), "{}", before.stderr);
    let login = env
        .keel(model)
        .env("BROWSER", browser(env))
        .args(["mcp", "login", name, "--timeout", "20"])
        .run()
        .await;
    assert_eq!(login.code, 0, "{}", login.stderr);
    assert!(
        login.stdout.contains(&format!("Signed in to MCP server `{name}`")),
        "{}",
        login.stdout
    );
    login
}

#[tokio::test]
async fn sign_in_discovers_registers_stores_owner_only_and_refreshes() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "auth");
    let http = HttpServer::start("--http", &log, &["--oauth", "--token-ttl", "4"]).await;
    let model = ModelServer::start().await;
    let login = add_then_sign_in(&env, &model, "srv", &json!({"type": "http", "url": http.url("/mcp")})).await;
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

/// The bearer tokens the server saw on requests of `method` to paths starting with `prefix`.
fn bearers(log: &std::path::Path, method: &str, prefix: &str) -> Vec<String> {
    read_jsonl(log)
        .into_iter()
        .filter(|v| v["http"] == method && v["path"].as_str().is_some_and(|p| p.starts_with(prefix)))
        .filter_map(|v| v["headers"]["authorization"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_legacy_sse_server_signs_in_and_renews_like_an_http_one() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "auth");
    let http = HttpServer::start("--sse", &log, &["--oauth", "--token-ttl", "4"]).await;
    let model = ModelServer::start().await;
    add_then_sign_in(&env, &model, "legacy", &json!({"type": "sse", "url": http.url("/sse")})).await;
    assert_eq!(entries(&log, "authorize")[0]["resource"], http.url("/sse"));
    let listed = env.keel(&model).args(["mcp", "list"]).run().await;
    assert!(listed.stdout.contains("signed in (scope: tools)"), "{}", listed.stdout);

    // Past the token's life (4 s): renewed before the stream opens; the stream and every
    // message carry the new token.
    tokio::time::sleep(std::time::Duration::from_millis(4500)).await;
    model
        .push(calls(vec![tool("e1", "mcp__legacy__echo", json!({"message": "old"}))]))
        .push(answer("done"));
    let after = env
        .keel(&model)
        .args(["-p", "go", "--allowedTools", "mcp__legacy"])
        .run()
        .await;
    assert_eq!(after.code, 0, "{}", after.stderr);
    let requests = model.requests();
    assert_eq!(
        requests[requests.len() - 1].tool_result_text("e1"),
        ("Echo: old".to_string(), false)
    );
    assert_eq!(
        entries(&log, "token"),
        vec![json!("authorization_code"), json!("refresh_token")]
    );
    assert_eq!(
        bearers(&log, "GET", "/sse").last().map(String::as_str),
        Some("Bearer at-2")
    );
    let posted = bearers(&log, "POST", "/messages");
    assert!(
        !posted.is_empty() && posted.iter().all(|b| b == "Bearer at-2"),
        "{posted:?}"
    );
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

/// Drives keel over stream-json: initializes, sends one prompt, and answers every
/// `elicitation` control request with `reply` (a control_response body). Returns the lines
/// keel wrote and the elicitation requests it sent.
async fn drive_elicitation(
    env: &Env,
    model: &ModelServer,
    cfg: &str,
    reply: impl Fn(&str) -> Value,
) -> (Vec<Value>, Vec<Value>, crate::support::Out) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut keel = env.keel(model);
    keel.args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        "mcp__el",
        "--mcp-config",
        cfg,
    ]);
    let mut child = keel.spawn_driven();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"type": "control_request", "request_id": "i1", "request": {"subtype": "initialize"}});
    let user = json!({"type": "user", "message": {"role": "user", "content": "go"}});
    stdin.write_all(format!("{init}\n{user}\n").as_bytes()).await.unwrap();
    let (mut lines, mut asked) = (Vec::new(), Vec::new());
    let run = async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "control_request" && v["request"]["subtype"] == "elicitation" {
                let id = v["request_id"].as_str().unwrap().to_string();
                asked.push(v["request"].clone());
                let answer = json!({"type": "control_response", "response": reply(&id)});
                stdin.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
            }
            let done = v["type"] == "result";
            lines.push(v);
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("keel answered within a minute");
    drop(stdin);
    let out = crate::support::finish(child).await;
    (lines, asked, out)
}

/// A program driving keel over the control protocol gets the server's form (message, schema,
/// field order) and its answer reaches the server; a program that answers with an error gets
/// the request declined, with a notice.
#[tokio::test]
async fn elicitation_is_forwarded_to_the_driving_program_and_its_answer_reaches_the_server() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "el");
    let cfg = config(json!({"el": stdio(&log, &["--elicit"])}));
    let model = ModelServer::start().await;
    model
        .push(calls(vec![tool("a1", "mcp__el__ask", json!({}))]))
        .push(answer("done"));
    let (lines, asked, out) = drive_elicitation(&env, &model, &cfg, |id| {
        json!({"subtype": "success", "request_id": id,
               "response": {"action": "accept", "content": {"name": "Bo", "count": 7}}})
    })
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(asked.len(), 1, "{lines:?}");
    let request = &asked[0];
    assert_eq!(request["mcp_server_name"], "el");
    assert_eq!(request["message"], "Who are you?");
    assert_eq!(request["mode"], "form");
    assert!(
        request["requested_schema"]["properties"]["name"].is_object(),
        "{request}"
    );
    assert_eq!(request["property_order"], json!(["name", "count"]));
    assert_eq!(
        model.requests()[1].tool_result_text("a1"),
        (
            r#"answer: {"action": "accept", "content": {"count": 7, "name": "Bo"}}"#.to_string(),
            false
        )
    );

    model
        .push(calls(vec![tool("a2", "mcp__el__ask", json!({}))]))
        .push(answer("done"));
    let (_, asked, out) = drive_elicitation(
        &env,
        &model,
        &cfg,
        |id| json!({"subtype": "error", "request_id": id, "error": "no form support here"}),
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(asked.len(), 1);
    assert_eq!(
        model.requests()[3].tool_result_text("a2"),
        (r#"answer: {"action": "decline"}"#.to_string(), false)
    );
    assert!(
        out.stderr.contains("declined: the program driving keel did not answer")
            && out.stderr.contains("no form support here"),
        "{}",
        out.stderr
    );
}

/// A "browser" that only notes the address it was given (in `url.txt`), so the test decides
/// when the sign-in comes back.
fn noting_browser(env: &Env) -> (String, std::path::PathBuf) {
    let path = env.home.join("note_browser.py");
    let noted = env.home.join("url.txt");
    std::fs::write(
        &path,
        format!(
            "import os, sys\ntmp = {0:?} + '.tmp'\nopen(tmp, 'w').write(sys.argv[1])\nos.replace(tmp, {0:?})\n",
            noted.display().to_string()
        ),
    )
    .unwrap();
    (format!("python3 {}", path.display()), noted)
}

async fn noted_url(noted: &std::path::Path) -> String {
    for _ in 0..600 {
        if let Ok(url) = std::fs::read_to_string(noted) {
            return url;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("keel handed no address to the browser");
}

/// In the TUI: the start-up notice offers `/mcp login NAME`; Esc cancels a sign-in that is
/// waiting for the browser; a sign-in that completes connects the server in the running
/// session, whose tool the model can then call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_mcp_login_is_offered_cancels_with_esc_and_reconnects_the_server() {
    use crate::support::tmux::Tmux;
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "auth");
    let http = HttpServer::start("--http", &log, &["--oauth"]).await;
    let model = ModelServer::start().await;
    let entry = json!({"type": "http", "url": http.url("/mcp")}).to_string();
    let added = env
        .keel(&model)
        .args(["mcp", "add-json", "-s", "user", "srv", &entry])
        .run()
        .await;
    assert_eq!(added.code, 0, "{}", added.stderr);
    let (browser, noted) = noting_browser(&env);
    let t = Tmux::start_with(
        &env,
        &model,
        &["--allowedTools", "mcp__srv"],
        100,
        30,
        &[("BROWSER", browser)],
    );
    t.wait_for_text("Ask keel").await;
    t.wait_for_text("type /mcp login srv").await;

    // With --no-browser the address is only shown; that wait is cancelled with Esc and
    // nothing is stored.
    t.type_text("/mcp login srv --no-browser");
    t.press(&["Enter"]);
    let shown = t.wait_for_text("open this address in a browser").await;
    assert!(shown.contains("/authorize?"), "{shown}");
    t.press(&["Escape"]);
    t.wait_for_text("Sign-in to MCP server `srv` cancelled").await;
    assert!(!noted.exists(), "no browser was started");
    assert!(entries(&log, "token").is_empty(), "no code was exchanged");

    // Again without the flag: the browser is started, and this time it follows the address
    // back to keel.
    t.type_text("/mcp login srv");
    t.press(&["Enter"]);
    let url = noted_url(&noted).await;
    let fetched = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, urllib.request\nurllib.request.urlopen(sys.argv[1], timeout=10).read()",
            &url,
        ])
        .output()
        .unwrap();
    assert!(fetched.status.success(), "{}", String::from_utf8_lossy(&fetched.stderr));
    let s = t.wait_for_text("is connected again").await;
    assert!(s.contains("MCP server `srv` is connected again"), "{s}");
    assert_eq!(entries(&log, "token"), vec![json!("authorization_code")]);

    // The server's tool is there in the same session, with the new sign-in.
    model
        .push(calls(vec![tool(
            "e1",
            "mcp__srv__echo",
            json!({"message": "in-session"}),
        )]))
        .push(answer("echoed"));
    t.type_text("echo please");
    t.press(&["Enter"]);
    t.wait_for_text("echoed").await;
    let requests = model.requests();
    assert_eq!(
        requests[requests.len() - 1].tool_result_text("e1"),
        ("Echo: in-session".to_string(), false)
    );
    t.type_text("/mcp");
    t.press(&["Enter"]);
    t.wait_for("`srv` listed as connected", |s| {
        s.lines()
            .any(|l| l.contains("srv") && l.contains("connected") && l.contains("http"))
    })
    .await;
}
