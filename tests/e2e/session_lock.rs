//! One writer per session: a second `keel -c` on a session another keel process is writing
//! waits for it briefly, then continues as a new session and says so; the first session's
//! transcript never gets the second process's lines.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, finish};

/// A Bash call that says it started, then holds its keel process until `release` exists.
fn held_command() -> Value {
    json!({"command": "touch started; while [ ! -e release ]; do sleep 0.02; done; echo released"})
}

async fn wait_for_file(p: &Path) {
    for _ in 0..1500 {
        if p.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} never appeared", p.display());
}

/// Whether process `pid` has the lock file of session `id` open (it is trying to take it).
fn has_lock_open(pid: u32, id: &str) -> bool {
    let wanted = format!("/{id}/lock");
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|target| target.to_string_lossy().ends_with(&wanted))
        })
        .unwrap_or(false)
}

/// A first session (one prompt, "alpha"); returns its id.
async fn first_session(env: &Env) -> String {
    let server = ModelServer::start().await;
    server.push(answer("one"));
    let out = env
        .keel(&server)
        .args(["-p", "alpha", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()["session_id"].as_str().unwrap().to_string()
}

fn transcript_text(env: &Env, id: &str) -> String {
    std::fs::read_to_string(env.project_dir().join(format!("{id}.jsonl"))).unwrap()
}

#[tokio::test]
async fn a_second_process_on_a_busy_session_waits_then_continues_as_a_new_session() {
    let env = Env::new();
    let id = first_session(&env).await;
    let server_a = ModelServer::start().await;
    server_a
        .push(calls(vec![tool("hold", "Bash", held_command())]))
        .push(answer("A done"));
    let a = env
        .keel(&server_a)
        .args([
            "-c",
            "-p",
            "from A",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ])
        .spawn();
    wait_for_file(&env.path("started")).await;

    // A rewind of the busy session is refused, naming the holder.
    let rewind = env
        .keel_offline()
        .args(["rewind", "--to", "1"])
        .env("KEEL_SESSION_LOCK_WAIT_MS", "100")
        .run()
        .await;
    assert_eq!(rewind.code, 1, "{}", rewind.stdout);
    assert!(
        rewind.stderr.contains(&format!(
            "session {id} is in use by another keel process (pid {}",
            a.id().unwrap()
        )),
        "{}",
        rewind.stderr
    );

    // B waits the default time, then forks.
    let server_b = ModelServer::start().await;
    server_b.push(answer("B done"));
    let started = std::time::Instant::now();
    let b = env
        .keel(&server_b)
        .args(["-c", "-p", "from B", "--output-format", "json"])
        .run()
        .await;
    assert!(started.elapsed() >= Duration::from_secs(2), "it waited first");
    assert_eq!(b.code, 0, "{}", b.stderr);
    let result = b.json();
    let b_id = result["session_id"].as_str().unwrap().to_string();
    assert_ne!(b_id, id, "a new session, not a second writer of {id}");
    let warnings = result["warnings"].to_string();
    assert!(
        warnings.contains(&format!("session {id} is in use by another keel process"))
            && warnings.contains(&format!("continues it as a new session {b_id}")),
        "{warnings}"
    );
    assert!(
        warnings.contains("1 tool call(s) are still running in the other process"),
        "A's running call is not called cut off: {warnings}"
    );
    assert_eq!(
        b.stderr.lines().filter(|l| l.contains("is in use")).count(),
        1,
        "one line says so: {}",
        b.stderr
    );
    // The fork continues the conversation as it stood.
    let sent = serde_json::to_string(server_b.requests()[0].messages()).unwrap();
    assert!(sent.contains("alpha") && sent.contains("from B"), "{sent}");

    std::fs::write(env.path("release"), "").unwrap();
    let a = finish(a).await;
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(a.json()["session_id"], id.as_str());

    // Each transcript has its own process's lines only.
    let first = transcript_text(&env, &id);
    assert!(first.contains("from A") && !first.contains("from B"), "{first}");
    let fork = transcript_text(&env, &b_id);
    assert!(fork.contains("from B") && !fork.contains("A done"), "{fork}");

    // Resuming the first session needs no repair.
    let server_c = ModelServer::start().await;
    server_c.push(answer("fine"));
    let c = env
        .keel(&server_c)
        .args(["--resume", &id, "-p", "after", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(c.json().get("warnings").is_none(), "{}", c.stdout);
    let sent = serde_json::to_string(server_c.requests()[0].messages()).unwrap();
    assert!(sent.contains("released") && !sent.contains("from B"), "{sent}");
}

#[tokio::test]
async fn a_second_process_continues_the_same_session_once_the_first_is_done() {
    let env = Env::new();
    let id = first_session(&env).await;
    let server_a = ModelServer::start().await;
    server_a
        .push(calls(vec![tool("hold", "Bash", held_command())]))
        .push(answer("A done"));
    let a = env
        .keel(&server_a)
        .args(["-c", "-p", "from A", "--permission-mode", "bypassPermissions"])
        .spawn();
    wait_for_file(&env.path("started")).await;

    let server_b = ModelServer::start().await;
    server_b.push(answer("B done"));
    let b = env
        .keel(&server_b)
        .args(["-c", "-p", "from B", "--output-format", "json"])
        .env("KEEL_SESSION_LOCK_WAIT_MS", "60000")
        .spawn();
    let b_pid = b.id().unwrap();
    for _ in 0..1500 {
        if has_lock_open(b_pid, &id) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(has_lock_open(b_pid, &id), "B waits for the session's lock");
    assert!(server_b.requests().is_empty(), "B has not started its turn");

    std::fs::write(env.path("release"), "").unwrap();
    let a = finish(a).await;
    assert_eq!(a.code, 0, "{}", a.stderr);
    let b = finish(b).await;
    assert_eq!(b.code, 0, "{}", b.stderr);
    let result = b.json();
    assert_eq!(result["session_id"], id.as_str(), "the same session, after A");
    assert!(result.get("warnings").is_none(), "{result}");
    // B read the session after A had finished with it: A's whole turn is in B's request.
    let sent = serde_json::to_string(server_b.requests()[0].messages()).unwrap();
    assert!(
        sent.contains("from A") && sent.contains("released") && sent.contains("A done"),
        "{sent}"
    );
    let text = transcript_text(&env, &id);
    let (a_at, b_at) = (text.find("A done").unwrap(), text.find("from B").unwrap());
    assert!(a_at < b_at, "A's lines, then B's");
}
