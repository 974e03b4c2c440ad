//! The sandbox's network domain lists: sandboxed commands reach the hosts
//! `sandbox.network.allowedDomains` names through keel's filtering proxy, and nothing else —
//! neither a denied or unlisted host through the proxy, nor any address directly.

use std::io::{Read, Write};

use serde_json::json;

use crate::support::host;
use crate::support::skip::{program, skip_part};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

/// A loopback HTTP server answering every request with one line naming the path.
fn web_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let n = c.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split(' ').nth(1).unwrap_or("?").to_string();
                let host = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Host: "))
                    .unwrap_or("?")
                    .to_string();
                let body = format!("hello from loopback {path} host={host}\n");
                let _ = write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

#[tokio::test]
async fn sandboxed_commands_reach_allowed_hosts_only_through_the_proxy() {
    if let Err(lack) = program("curl", "--version") {
        return skip_part(lack, "the sandbox's domain lists (curl is needed)");
    }
    let env = Env::new();
    let port = web_server();
    let server = ModelServer::start().await;
    let py = format!(
        "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://localhost:{port}/py').read().decode())\""
    );
    let short_form = format!(
        "python3 -c \"import urllib.request, urllib.error\ntry:\n  urllib.request.urlopen('http://0x7f.1:{port}/x')\nexcept urllib.error.HTTPError as e:\n  print(e.read().decode())\""
    );
    server
        .push(calls(vec![
            tool(
                "vars",
                "Bash",
                json!({"command": "echo \"$HTTP_PROXY|$https_proxy|$ALL_PROXY\""}),
            ),
            tool(
                "plain",
                "Bash",
                json!({"command": format!("curl -sS http://localhost:{port}/plain")}),
            ),
            // -p: through a CONNECT tunnel, as HTTPS goes.
            tool(
                "tunnel",
                "Bash",
                json!({"command": format!("curl -sS -p http://localhost:{port}/tunnel")}),
            ),
            tool("python", "Bash", json!({"command": py})),
            // A Host header of the client's own choosing does not reach the server.
            tool(
                "fronting",
                "Bash",
                json!({"command": format!("curl -sS -H 'Host: evil.example' http://localhost:{port}/front")}),
            ),
            // curl rewrites short address forms itself; Python's client sends them as written.
            tool("short_form", "Bash", json!({"command": short_form})),
            tool(
                "denied",
                "Bash",
                json!({"command": format!("curl -sS http://blocked.localhost:{port}/x")}),
            ),
            tool(
                "unlisted",
                "Bash",
                json!({"command": format!("curl -sS -p http://example.org:{port}/x")}),
            ),
            tool(
                "literal",
                "Bash",
                json!({"command": format!("curl -sS http://127.0.0.1:{port}/x")}),
            ),
            // Around the proxy: there is no route out of the namespace.
            tool(
                "direct",
                "Bash",
                json!({"command": format!("curl -sS --noproxy '*' http://127.0.0.1:{port}/direct")}),
            ),
        ]))
        .push(answer("done"));
    let settings = json!({"sandbox": {"enabled": true, "network": {
        "allowedDomains": ["localhost", "*.localhost"],
        "deniedDomains": ["blocked.localhost"],
    }}});
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--dangerously-skip-permissions",
            "--settings",
            &settings.to_string(),
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    if let Err(lack) = host::landlock_and_network_namespace() {
        return skip_part(lack, "the checks of what the sandboxed commands reached");
    }
    let req = &server.requests()[1];
    let result = |id: &str| req.tool_result_text(id);
    let (vars, _) = result("vars");
    let url = vars.split('|').next().unwrap_or_default().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && vars == format!("{url}|{url}|{url}"),
        "{vars}"
    );
    for (id, path) in [("plain", "/plain"), ("tunnel", "/tunnel"), ("python", "/py")] {
        let (text, is_error) = result(id);
        assert!(
            !is_error && text.contains(&format!("hello from loopback {path}")),
            "{id}: {text}"
        );
    }
    let (text, _) = result("denied");
    assert!(
        text.contains("blocked.localhost") && text.contains("sandbox.network.deniedDomains"),
        "{text}"
    );
    let (text, is_error) = result("unlisted");
    assert!(is_error && !text.contains("hello"), "{text}");
    assert!(text.contains("403"), "curl reports the refused tunnel: {text}");
    let (text, _) = result("literal");
    assert!(
        text.contains("127.0.0.1") && text.contains("not in sandbox.network.allowedDomains"),
        "{text}"
    );
    let (text, is_error) = result("direct");
    assert!(is_error && !text.contains("hello"), "{text}");
    let (text, _) = result("fronting");
    assert!(
        text.contains("hello from loopback /front") && text.contains(&format!("host=localhost:{port}")),
        "the proxy sends the checked target as Host: {text}"
    );
    let (text, _) = result("short_form");
    assert!(
        !text.contains("hello") && text.contains("short or numeric form"),
        "{text}"
    );
}

/// With only a deny list, hosts the lists do not name reach public addresses only: a name
/// that resolves to this machine is refused, as DNS rebinding would use it.
#[tokio::test]
async fn an_unlisted_name_does_not_reach_this_machine() {
    if let Err(lack) = program("curl", "--version") {
        return skip_part(lack, "the sandbox's domain lists (curl is needed)");
    }
    let env = Env::new();
    let port = web_server();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "loopback",
            "Bash",
            json!({"command": format!("curl -sS http://localhost:{port}/x")}),
        )]))
        .push(answer("done"));
    let settings = json!({"sandbox": {"enabled": true, "allowNetwork": true, "network": {
        "deniedDomains": ["blocked.example"],
    }}});
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--dangerously-skip-permissions",
            "--settings",
            &settings.to_string(),
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    if let Err(lack) = host::landlock_and_network_namespace() {
        return skip_part(lack, "the checks of what the sandboxed commands reached");
    }
    let (text, _) = server.requests()[1].tool_result_text("loopback");
    assert!(!text.contains("hello") && text.contains("a loopback address"), "{text}");
}

/// A project's settings cannot open the network: its allowedDomains are dropped with a notice
/// (a deny list it may add).
#[tokio::test]
async fn a_projects_allowed_domains_are_ignored() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"sandbox": {"network": {"allowedDomains": ["example.org"], "deniedDomains": ["x.org"]}}}).to_string(),
    );
    let server = ModelServer::start().await;
    server.push(answer("done"));
    let out = env.keel(&server).args(["-p", "x", "--sandbox"]).run().await;
    assert!(
        out.stderr.contains("sandbox.network.allowedDomains` is ignored"),
        "{}",
        out.stderr
    );
}

/// The Python SDK's `sandbox.network` options reach keel as settings and are enforced.
#[tokio::test]
async fn the_sdks_sandbox_network_options_are_enforced() {
    use crate::support::sdk;
    let env = Env::new();
    let port = web_server();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool(
                "ok",
                "Bash",
                json!({"command": format!("curl -sS http://localhost:{port}/sdk")}),
            ),
            tool(
                "no",
                "Bash",
                json!({"command": format!("curl -sS http://blocked.localhost:{port}/x")}),
            ),
        ]))
        .push(answer("done"));
    let _report = crate::support::skip::or_skip!(sdk::run(&env, &server, "sandbox_network").await);
    if let Err(lack) = host::landlock_and_network_namespace() {
        return skip_part(lack, "the checks of what the sandboxed commands reached");
    }
    let req = &server.requests()[1];
    let (text, is_error) = req.tool_result_text("ok");
    assert!(!is_error && text.contains("hello from loopback /sdk"), "{text}");
    let (text, _) = req.tool_result_text("no");
    assert!(text.contains("sandbox.network.deniedDomains"), "{text}");
}

/// The managed form: a managed `allowedDomains` is the list (a user's own is ignored, and
/// the run says so); `allowManagedDomainsOnly` ignores the user's list where the operator
/// names none.
#[tokio::test]
async fn managed_domain_lists_override_the_users() {
    if let Err(lack) = program("curl", "--version") {
        return skip_part(lack, "the sandbox's managed domain lists (curl is needed)");
    }
    let env = Env::new();
    let port = web_server();
    let dir = tempfile::tempdir().unwrap();
    let user = json!({"sandbox": {"network": {"allowedDomains": ["*.localhost"]}}});
    let run = |network: serde_json::Value| {
        let managed = dir.path().join("managed-settings.json");
        std::fs::write(
            &managed,
            json!({"sandbox": {"enabled": true, "network": network}}).to_string(),
        )
        .unwrap();
        let env = &env;
        let user = user.to_string();
        async move {
            let server = ModelServer::start().await;
            let curl = |host: &str, path: &str| json!({"command": format!("curl -sS -p http://{host}:{port}{path}")});
            server
                .push(calls(vec![
                    tool("operator", "Bash", curl("localhost", "/operator")),
                    tool("user", "Bash", curl("user.localhost", "/user")),
                ]))
                .push(answer("done"));
            let out = env
                .keel(&server)
                .env("KEEL_MANAGED_SETTINGS", &managed)
                .args(["-p", "x", "--dangerously-skip-permissions", "--settings", &user])
                .run()
                .await;
            assert_eq!(out.code, 0, "{}", out.stderr);
            let req = server.requests()[1].clone();
            (
                out.stderr,
                req.tool_result_text("operator"),
                req.tool_result_text("user"),
            )
        }
    };
    let (stderr, operator, user_host) = run(json!({"allowedDomains": ["localhost"]})).await;
    assert!(
        stderr.contains("--settings: `sandbox.network.allowedDomains` is ignored: managed settings fix this list"),
        "{stderr}"
    );
    let jailed = host::landlock_and_network_namespace();
    if jailed.is_ok() {
        assert!(
            !operator.1 && operator.0.contains("hello from loopback /operator"),
            "{operator:?}"
        );
        assert!(
            user_host.1 && !user_host.0.contains("hello"),
            "the user's list was ignored: {user_host:?}"
        );
    }
    let (stderr, _, user_host) = run(json!({"allowManagedDomainsOnly": true})).await;
    assert!(
        stderr.contains("is ignored: managed settings allow only their own domains (allowManagedDomainsOnly)"),
        "{stderr}"
    );
    if let Err(lack) = jailed {
        return skip_part(lack, "the checks of what the sandboxed commands reached");
    }
    assert!(
        user_host.1 && !user_host.0.contains("hello"),
        "the user's list was ignored: {user_host:?}"
    );
}
