//! A test run against a server that started before the latest change is stale evidence: the
//! ledger names the process and the port. A real `python3 -m http.server` serves the
//! workspace; the tests talk to it on the port their command line names.

use std::time::Duration;

use serde_json::json;

use crate::evidence::{ANSWER, bash, edit, json_session, nudges, read, say, tool_results};
use crate::support::Env;
use crate::support::skip::{or_skip, python3};

/// A test that fetches the served `calc.py` from the server on `$PORT` (retrying while it starts).
const TESTS: &str = r#"import os, time, unittest, urllib.request


class TestServed(unittest.TestCase):
    def test_served(self):
        url = "http://127.0.0.1:%s/calc.py" % os.environ["PORT"]
        for _ in range(100):
            try:
                body = urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        self.assertIn(b"def add", body)
"#;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server the test started, ended when the test ends.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(env: &Env, port: u16) -> Server {
    let server = Server(
        std::process::Command::new("python3")
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"])
            .current_dir(&env.work)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return server;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("python3 -m http.server did not listen on {port}");
}

fn project() -> Env {
    let env = Env::new();
    env.write("calc.py", "def add(a, b):\n    return a - b\n");
    env.write("tests/__init__.py", "");
    env.write("tests/test_served.py", TESTS);
    env
}

#[tokio::test]
async fn a_pass_against_a_server_older_than_the_change_is_stale_and_names_it() {
    or_skip!(python3());
    let env = project();
    let port = free_port();
    let server = start_server(&env, port);
    let pid = server.0.id();
    // Started before the session: the edit below is newer than the process.
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            bash(&format!("PORT={port} python3 -m unittest")),
            say("Fixed; the tests pass."),
            say(ANSWER),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], ANSWER, "the claim was sent back");
    let v = &r["verification"];
    assert_eq!(v["status"], "stale", "{v}");
    let run = &v["runs"][0];
    assert_eq!(run["status"], "stale", "{run}");
    assert_eq!(run["fresh"], false);
    assert_eq!(run["stale_target"]["port"], json!(port), "{run}");
    assert_eq!(run["stale_target"]["pid"], json!(pid), "{run}");
    assert_eq!(run["stale_target"]["changed_file"], "calc.py", "{run}");
    let n = nudges(&env);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(
        n[0].contains(&format!("port {port} served by process {pid}")),
        "{}",
        n[0]
    );
    assert!(n[0].contains("http.server"), "{}", n[0]);
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("This pass is stale evidence")),
        "the model is told at once"
    );
    drop(server);
}

#[tokio::test]
async fn a_server_started_after_the_change_gives_fresh_evidence() {
    or_skip!(python3());
    let env = project();
    let port = free_port();
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            json!({"tool_calls": [{"name": "Bash", "input": {
                "command": format!("python3 -m http.server {port} --bind 127.0.0.1"),
                "run_in_background": true
            }}]}),
            bash(&format!("PORT={port} python3 -m unittest")),
            say("Fixed; the tests pass."),
        ],
        &[],
    )
    .await;
    let v = &r["verification"];
    assert_eq!(v["runs"][0]["status"], "passed", "{v}");
    assert!(v["runs"][0].get("stale_target").is_none_or(|t| t.is_null()), "{v}");
    assert_eq!(v["status"], "passed", "{v}");
}
