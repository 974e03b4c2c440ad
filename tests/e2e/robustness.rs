//! Faults keel must survive without losing or hiding anything: a full KEEL_HOME (a small tmpfs
//! in a private mount namespace), signals while work is stuck, a closed terminal.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::host;
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, Out, finish};

/// Runs `script` (sh) in a private mount namespace with keel's environment; `$KEEL` is the
/// binary and `$OUT` a directory outside the namespace's mounts.
async fn in_namespace(env: &Env, server: &ModelServer, out: &Path, script: &str) -> Out {
    let child = tokio::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .current_dir(&env.work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .env("LANG", "C.UTF-8")
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("KEEL", env!("CARGO_BIN_EXE_keel"))
        .env("OUT", out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn unshare");
    finish(child).await
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[tokio::test]
async fn a_full_keel_home_is_reported_in_the_result_and_at_resume() {
    or_skip!(host::private_mounts());
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start().await;
    server
        // Fill KEEL_HOME to the last byte from inside the session.
        .push(calls(vec![tool(
            "fill",
            "Bash",
            json!({"command": "cat /dev/zero > \"$KEEL_HOME/fill\" 2>/dev/null; true"}),
        )]))
        .push(calls(vec![tool(
            "echo",
            "Bash",
            json!({"command": "echo hello from the command"}),
        )]))
        // Larger than the slack in the transcript's last page, so its line cannot be written.
        .push(answer(&format!("all done {}", "x".repeat(20_000))))
        .push(answer("resumed fine"));
    let script = r#"
        set -e
        mount -t tmpfs -o size=2m tmpfs "$KEEL_HOME"
        "$KEEL" -p go --output-format json --permission-mode bypassPermissions >"$OUT/1.json" 2>"$OUT/1.err" || true
        rm -f "$KEEL_HOME/fill"
        "$KEEL" -c -p again --output-format json --permission-mode bypassPermissions >"$OUT/2.json" 2>"$OUT/2.err" || true
        cp -r "$KEEL_HOME" "$OUT/home"
    "#;
    let out = in_namespace(&env, &server, out_dir.path(), script).await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    // The first run finished its task, but its result says the record is incomplete.
    let first: Value = serde_json::from_str(&read(&out_dir.path().join("1.json"))).unwrap();
    assert!(first["result"].as_str().unwrap().starts_with("all done"), "{first}");
    let warnings = first["warnings"].to_string();
    assert!(
        warnings.contains("could not be written") && warnings.contains("No space left on device"),
        "{first}\n{}",
        read(&out_dir.path().join("1.err"))
    );

    // The same warning is the notice a front end shows (the terminal UI renders it as a cell).
    let first_err = read(&out_dir.path().join("1.err"));
    assert!(first_err.contains("is incomplete"), "{first_err}");

    // The command's output could not be captured: keel says its own capture failed.
    let requests = server.requests();
    let (echo, _) = requests[2].tool_result_text("echo");
    assert!(
        echo.contains("keel's own capture of this command's output failed"),
        "{echo}"
    );

    // The resumed run says what was lost, and its request is valid: every call answered once,
    // roles alternating.
    let resumed_err = read(&out_dir.path().join("2.err"));
    assert!(resumed_err.contains("could not save its last"), "{resumed_err}");
    let second: Value = serde_json::from_str(&read(&out_dir.path().join("2.json"))).unwrap();
    assert_eq!(second["result"], "resumed fine", "{second}\n{resumed_err}");
    assert!(
        second["warnings"].to_string().contains("could not save its last"),
        "{second}"
    );
    let messages = requests[3].messages();
    for pair in messages.windows(2) {
        assert_ne!(pair[0]["role"], pair[1]["role"], "{messages:#?}");
    }
    let calls: Vec<&Value> = messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_use")
        .collect();
    for c in calls {
        let answered = messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_result" && b["tool_use_id"] == c["id"])
            .count();
        assert_eq!(answered, 1, "{messages:#?}");
    }
    // Every line of the transcript is whole JSON: no fragment glued to a later line.
    let project = std::fs::read_dir(out_dir.path().join("home/projects"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let transcript = std::fs::read_dir(&project)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let text = read(&transcript);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("broken line ({e}): {line}"));
    }
    assert!(
        text.contains("\"transcript_loss\""),
        "the loss is recorded in the transcript"
    );
}

fn signal(child: &tokio::process::Child, sig: nix::sys::signal::Signal) {
    let pid = child.id().expect("pid") as i32;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
}

#[tokio::test]
async fn sighup_in_headless_mode_ends_like_sigterm() {
    use crate::support::procs::{assert_gone, unique_sleep, wait_until_running};
    let env = Env::new();
    let marker = unique_sleep();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "long",
            "Bash",
            json!({"command": format!("sleep {marker}")}),
        )]))
        .push(answer("unreachable"));
    let child = env
        .keel(&server)
        .args([
            "-p",
            "run it",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ])
        .spawn();
    wait_until_running(&marker).await;
    signal(&child, nix::sys::signal::Signal::SIGHUP);
    let out = finish(child).await;
    assert_eq!(out.code, 128 + 1, "stderr: {}", out.stderr);
    let result = out.json();
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], true);
    assert_gone(&marker).await;
    let transcript = crate::support::read_jsonl(&env.transcripts()[0]);
    assert!(
        transcript
            .iter()
            .any(|l| l["type"] == "user" && l["message"].to_string().contains("[Request interrupted by user]")),
        "the interruption is recorded"
    );
}

#[tokio::test]
async fn a_second_signal_ends_keel_even_when_it_is_stuck() {
    use crate::support::procs::{
        assert_gone, signal_and_wait_taken, unique_sleep, wait_until_running, wait_until_waiting_in,
    };
    let env = Env::new();
    let marker = unique_sleep();
    let server = ModelServer::start().await;
    // A long answer streamed as partial messages fills the stdout pipe, which the test never
    // reads: keel blocks in a write, where the first signal cannot be acted on. A background
    // shell is running meanwhile; the forced exit must not leave it behind.
    let words = "word ".repeat(60_000);
    server
        .push(calls(vec![tool(
            "bg",
            "Bash",
            json!({"command": format!("sleep {marker}"), "run_in_background": true}),
        )]))
        .push(answer(&words))
        .push(answer("unreachable"));
    let mut child = env
        .keel(&server)
        .args([
            "-p",
            "talk",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-mode",
            "bypassPermissions",
        ])
        .spawn();
    let _unread_stdout = child.stdout.take();
    wait_until_running(&marker).await;
    // Until keel is stuck: blocked writing to the full stdout pipe.
    let pid = child.id().expect("pid") as i32;
    assert!(
        wait_until_waiting_in(pid, &["pipe_write"]).await,
        "keel ended before its stdout filled"
    );
    // The first signal is taken (its handler ran) and keel is still blocked in the write.
    signal_and_wait_taken(pid, nix::sys::signal::Signal::SIGINT).await;
    assert!(
        wait_until_waiting_in(pid, &["pipe_write"]).await,
        "keel was not stuck after all: the first signal ended it"
    );
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .expect("a second signal ends keel")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    assert_gone(&marker).await;
}

fn session_log(env: &Env) -> std::path::PathBuf {
    let transcript = env.transcripts().pop().expect("a transcript");
    transcript.with_extension("").join("debug.log")
}

#[tokio::test]
async fn debug_traces_one_session_into_its_own_log_file() {
    use crate::support::sse::api_error;
    let env = Env::new();
    env.write("a.txt", "x\n");
    let server = ModelServer::start().await;
    server
        .push(api_error(529, "overloaded_error", "Overloaded"))
        .push(calls(vec![tool("g1", "Glob", json!({"pattern": "*.txt"}))]))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "go", "--debug"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log = read(&session_log(&env));
    for needle in [
        "session{mode=\"headless\"}",
        "turn",
        "provider_request",
        "retrying",
        "HTTP 529",
        "tool{name=Glob",
        "tool finished",
        "close",
    ] {
        assert!(log.contains(needle), "`{needle}` missing from the debug log:\n{log}");
    }
    // Headless `--debug` also shows the lines on stderr.
    assert!(out.stderr.contains("provider_request"), "{}", out.stderr);
}

#[tokio::test]
async fn stderr_stays_quiet_without_debug_and_keel_log_writes_only_the_file() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("one")).push(answer("two"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "");
    assert!(!session_log(&env).exists(), "no log file unless asked for");

    let out = env
        .keel(&server)
        .args(["-p", "again", "-c"])
        .env("KEEL_LOG", "provider")
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "", "KEEL_LOG writes the file, not stderr");
    let log = read(&session_log(&env));
    assert!(log.contains("provider_request"), "{log}");
    assert!(!log.contains("tool{"), "the filter keeps other modules out:\n{log}");
}

#[tokio::test]
async fn a_bad_debug_filter_is_a_clear_error() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env.keel(&server).args(["-p", "go", "--debug=keel=loud"]).run().await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("invalid debug filter `keel=loud`"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
}
