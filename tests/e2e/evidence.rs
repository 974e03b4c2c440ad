//! Trap sessions for the evidence ledger and the stop gate, with the script provider and real
//! commands (python3's unittest; for the other runners, stand-ins on PATH that print captured
//! output of the real runner). Each scripted "model" claims success too early; keel must send it
//! back once with the facts (the next scripted turn answers the nudge, so a missing gate shows
//! as the wrong final result) and report the real state in the `verification` object.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::skip::{or_skip, python3};
use crate::support::{Env, Out, read_jsonl};

pub(crate) const CALC: &str = "def add(a, b):\n    return a - b\n";
pub(crate) const TESTS: &str = "import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 0), 2)\n        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n";
pub(crate) const ANSWER: &str = "I was sent back: the evidence does not support my claim yet.";

/// A small Python project whose `add` subtracts: one of three assertions fails.
pub(crate) fn project() -> Env {
    let env = Env::new();
    env.write("calc.py", CALC);
    env.write("tests/__init__.py", "");
    env.write("tests/test_calc.py", TESTS);
    env
}

pub(crate) fn read(path: &str) -> Value {
    json!({"tool_calls": [{"name": "Read", "input": {"file_path": path}}]})
}

pub(crate) fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"tool_calls": [{"name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new}}]})
}

pub(crate) fn bash(command: &str) -> Value {
    json!({"tool_calls": [{"name": "Bash", "input": {"command": command}}]})
}

pub(crate) fn say(text: &str) -> Value {
    json!({"text": text})
}

/// Runs `turns` with the stop gate as the settings say (`KEEL_VERIFICATION_GATE` unset).
pub(crate) async fn session(env: &Env, turns: Vec<Value>, extra: &[&str]) -> Out {
    let script = env.home.join(format!("script-{}.json", uuid_like()));
    std::fs::write(&script, serde_json::to_string(&json!({"turns": turns})).unwrap()).unwrap();
    env.keel_offline()
        .env_remove("KEEL_VERIFICATION_GATE")
        .args([
            "-p",
            "fix the failing test",
            "--provider",
            "script",
            "--permission-mode",
            "bypassPermissions",
        ])
        .arg("--script")
        .arg(&script)
        .args(extra)
        .run()
        .await
}

fn uuid_like() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

pub(crate) async fn json_session(env: &Env, turns: Vec<Value>, extra: &[&str]) -> Value {
    let mut args = vec!["--output-format", "json"];
    args.extend_from_slice(extra);
    let out = session(env, turns, &args).await;
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    out.json()
}

/// The notes the stop gate sent, from the session's transcript.
pub(crate) fn nudges(env: &Env) -> Vec<String> {
    env.transcripts()
        .iter()
        .flat_map(|t| read_jsonl(t))
        .filter(|l| l["type"] == "event" && l["event"] == "verification_gate")
        .map(|l| l["data"]["note"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Every tool result text of the session, from the transcript.
pub(crate) fn tool_results(env: &Env) -> Vec<String> {
    env.transcripts()
        .iter()
        .flat_map(|t| read_jsonl(t))
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .collect()
}

#[tokio::test]
async fn zero_tests_with_exit_0_is_not_a_pass() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            bash("python3 -m unittest discover -p 'none*'"),
            say("Fixed; all tests pass."),
            say(ANSWER),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], ANSWER, "the claim was sent back");
    let n = nudges(&env);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(n[0].contains("executed zero tests"), "{}", n[0]);
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("executed zero tests, which is not a pass")),
        "the model is told at once"
    );
    let v = &r["verification"];
    assert_eq!(v["status"], "not_run");
    assert_eq!(v["files_changed"], json!(["calc.py"]));
    assert_eq!(v["runs"][0]["command"], "python3 -m unittest discover -p 'none*'");
    assert_eq!(v["runs"][0]["executed"], 0);
    assert_eq!(v["runs"][0]["fresh"], true);
    assert_eq!(v["weakened_tests"], json!([]));
}

#[tokio::test]
async fn a_pass_followed_by_an_edit_is_stale() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            bash("python3 -m unittest"),
            edit("calc.py", "return a + b", "return b + a"),
            say("Done, tests pass."),
            say(ANSWER),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    let n = nudges(&env);
    assert_eq!(n.len(), 1);
    assert!(n[0].contains("Tests last passed in run 1"), "{}", n[0]);
    assert!(n[0].contains("files changed since: calc.py (Edit)"), "{}", n[0]);
    let v = &r["verification"];
    assert_eq!(v["status"], "stale");
    assert_eq!(v["runs"][0]["passed"], 2);
    assert_eq!(v["runs"][0]["exit_code"], 0);
    assert_eq!(v["runs"][0]["fresh"], false);
}

#[tokio::test]
async fn a_pipeline_hiding_a_failure_is_a_failure() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "return a - b", "return a - b + 0"),
            bash("python3 -m unittest 2>&1 | tail -n 4"),
            say("Tests pass."),
            say(ANSWER),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    assert!(nudges(&env)[0].contains("Run 1 failed"), "{:?}", nudges(&env));
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("failed although the command line exited 0"))
    );
    let run = &r["verification"]["runs"][0];
    assert_eq!(r["verification"]["status"], "failed");
    assert_eq!(run["exit_code"], 1, "the runner's own status, not the pipeline's 0");
    assert_eq!((run["executed"].as_u64(), run["failed"].as_u64()), (Some(2), Some(1)));
}

#[tokio::test]
async fn a_failing_run_followed_by_done_is_sent_back_and_reported() {
    or_skip!(python3());
    let env = project();
    let turns = vec![
        read("calc.py"),
        edit("calc.py", "return a - b", "return a - b + 0"),
        bash("python3 -m unittest"),
        say("Done, the fix is in."),
        say("The tests still fail; the fix is not done."),
    ];
    let out = session(&env, turns, &[]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "The tests still fail; the fix is not done.");
    assert!(nudges(&env)[0].contains("Run 1 failed: `python3 -m unittest`: 1 passed, 1 failed"));
    // Text mode: one line on stderr says what the evidence shows.
    let line: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("keel: verification"))
        .collect();
    assert_eq!(line.len(), 1, "{}", out.stderr);
    assert!(line[0].contains("failed"), "{}", line[0]);
}

#[tokio::test]
async fn a_deleted_assertion_is_flagged_even_when_the_tests_then_pass() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            read("tests/test_calc.py"),
            edit("tests/test_calc.py", "        self.assertEqual(add(2, 3), 5)\n", ""),
            bash("python3 -m unittest"),
            say("All tests pass."),
            say(ANSWER),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("[keel: weakened tests] tests/test_calc.py") && t.contains("1 assertion removed")),
        "the Edit result says what was weakened"
    );
    assert!(nudges(&env)[0].contains("Weakened tests in tests/test_calc.py"));
    let v = &r["verification"];
    assert_eq!(v["status"], "passed", "the run itself passed");
    assert_eq!(
        v["weakened_tests"],
        json!([{
            "file": "tests/test_calc.py",
            "removed_assertions": 1,
            "replaced_with_trivial": 0,
            "added_skips": 0,
            "added_deselections": 0,
            "changed_snapshots": 0
        }])
    );
}

#[tokio::test]
async fn an_added_skip_marker_is_flagged() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            read("tests/test_calc.py"),
            edit(
                "tests/test_calc.py",
                "    def test_add(self):",
                "    @unittest.skip(\"flaky\")\n    def test_add(self):",
            ),
            bash("python3 -m unittest"),
            say("All tests pass."),
            say(ANSWER),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    let v = &r["verification"];
    assert_eq!(v["weakened_tests"][0]["added_skips"], 1);
    assert_eq!(v["runs"][0]["skipped"], 1);
    assert!(nudges(&env)[0].contains("1 skip/xfail/ignore marker added"));
}

#[tokio::test]
async fn a_shell_sed_fix_is_a_change_and_needs_a_new_run() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            bash("python3 -m unittest"),
            // A different size, so python does not reuse its cached byte code of calc.py.
            bash("sed -i 's/a - b/(a + b)/' calc.py"),
            say("Fixed."),
            bash("python3 -m unittest"),
            say("Fixed, and the tests now pass: 2 tests ran."),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], "Fixed, and the tests now pass: 2 tests ran.");
    let n = nudges(&env);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(
        n[0].contains("calc.py (shell `sed -i 's/a - b/(a + b)/' calc.py`)"),
        "{}",
        n[0]
    );
    let v = &r["verification"];
    assert_eq!(v["status"], "passed");
    assert_eq!(v["files_changed"], json!(["calc.py"]));
    assert_eq!(v["runs"][0]["fresh"], false);
    assert_eq!(v["runs"][1]["fresh"], true);
}

#[tokio::test]
async fn an_assertion_deleted_by_the_shell_is_flagged() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            bash("sed -i '/add(2, 3)/d' tests/test_calc.py"),
            bash("python3 -m unittest"),
            say("All green."),
            say(ANSWER),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("[keel: weakened tests] tests/test_calc.py"))
    );
    assert_eq!(r["verification"]["weakened_tests"][0]["removed_assertions"], 1);
}

#[tokio::test]
async fn a_read_only_session_is_never_nudged() {
    or_skip!(python3());
    let env = project();
    let answer = "add subtracts instead of adding; test_add fails.";
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            json!({"tool_calls": [{"name": "Grep", "input": {"pattern": "def add"}}]}),
            bash("python3 -m unittest 2>&1 | tail -n 3 > run.log; cat run.log"),
            say(answer),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], answer);
    assert!(nudges(&env).is_empty());
    let v = &r["verification"];
    assert_eq!(v["files_changed"], json!([]), "the run's own log is not work");
    assert_eq!(v["status"], "failed");
}

#[tokio::test]
async fn the_gate_off_sends_nothing_back_but_the_report_still_tells() {
    or_skip!(python3());
    let env = project();
    let out = session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            bash("python3 -m unittest discover -p 'none*'"),
            say("Fixed; all tests pass."),
        ],
        &[
            "--settings",
            r#"{"verification": {"stopGate": "off"}}"#,
            "--output-format",
            "stream-json",
            "--verbose",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let r = lines.last().unwrap();
    assert_eq!(r["type"], "result");
    assert_eq!(r["result"], "Fixed; all tests pass.");
    assert!(nudges(&env).is_empty());
    // The stream-json result line carries the same report.
    assert_eq!(r["verification"]["status"], "not_run");
    assert_eq!(r["verification"]["runs"][0]["executed"], 0);
}

#[tokio::test]
async fn the_nudge_is_sent_once_and_require_stops_after_three() {
    or_skip!(python3());
    let env = project();
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            say("Done."),
            say("Done, really."),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], "Done, really.", "one nudge, then the turn ends");
    let n = nudges(&env);
    assert_eq!(n.len(), 1);
    assert!(n[0].contains("No test run is recorded in this session, and these files changed: calc.py (Edit)"));
    assert_eq!(r["verification"]["status"], "unverified");

    let env = project();
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            say("Done 1."),
            say("Done 2."),
            say("Done 3."),
            say("Done 4."),
        ],
        &["--settings", r#"{"verification": {"stopGate": "require"}}"#],
    )
    .await;
    assert_eq!(r["result"], "Done 4.", "require sends back three times, never more");
    let n = nudges(&env);
    assert_eq!(n.len(), 3);
    assert!(n[2].contains("reminder 3 of 3"), "{}", n[2]);
}

#[tokio::test]
async fn stop_hooks_fire_once_for_a_stop_the_gate_sent_back_first() {
    or_skip!(python3());
    let env = project();
    // A Stop hook that reports whether it is already in a loop.
    let log = env.home.join("stop.log");
    let hook = format!("cat >> {}; echo >> {}", log.display(), log.display());
    let settings = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook}]}]}}).to_string();
    let r = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            say("Done."),
            say("Done, really."),
        ],
        &["--settings", &settings],
    )
    .await;
    assert_eq!(r["result"], "Done, really.");
    let calls: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The gate sent the first stop back before the hooks ran: they fire once, for the stop
    // that happened, and see the gate's send-back as a block.
    assert_eq!(
        calls.len(),
        1,
        "Stop hooks fire only for a stop the gate lets through: {calls:?}"
    );
    assert_eq!(calls[0]["stop_hook_active"], true, "the gate's send counts as a block");
}

#[tokio::test]
async fn the_ledger_survives_compaction_and_resume() {
    or_skip!(python3());
    let env = project();
    let first = json_session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "return a - b", "return a - b + 0"),
            bash("python3 -m unittest"),
            say("Done."),
            say("Still failing; stopping here."),
        ],
        &[],
    )
    .await;
    let id = first["session_id"].as_str().unwrap().to_string();
    assert_eq!(first["verification"]["status"], "failed");
    // The summary claims success; the hand-off is keel's ledger, not that claim.
    let summary = "<decisions>Fixed add.</decisions><open_items>none</open_items><current_work>All tests pass now.</current_work><next_step>Nothing; all tests pass.</next_step>";
    let script = env.home.join("compact.json");
    std::fs::write(&script, json!({"turns": [{"text": summary}]}).to_string()).unwrap();
    let out = env
        .keel_offline()
        .env_remove("KEEL_VERIFICATION_GATE")
        .args([
            "-p",
            "/compact",
            "--provider",
            "script",
            "--output-format",
            "json",
            "--resume",
            &id,
        ])
        .arg("--script")
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let handoff: Vec<String> = env
        .transcripts()
        .iter()
        .flat_map(|t| read_jsonl(t))
        .filter(|l| l["type"] == "user")
        .map(|l| l["message"].to_string())
        .filter(|m| m.contains("This session continues"))
        .collect();
    assert!(
        handoff
            .iter()
            .any(|h| h.contains("Verification status recorded by keel: failed")),
        "{handoff:?}"
    );
    let last = json_session(&env, vec![say("All tests pass.")], &["--resume", &id]).await;
    let v = &last["verification"];
    assert_eq!(
        v["status"], "failed",
        "neither the summary nor resuming turns a failure into a pass"
    );
    assert_eq!(v["runs"][0]["failed"], 1);
    assert_eq!(v["files_changed"], json!(["calc.py"]));
}

/// A stand-in for a runner: prints a captured output of the real runner and exits 0, as the
/// runner would look behind `| tail`.
pub(crate) fn shim(env: &Env, name: &str, fixture: &str) -> PathBuf {
    let captured = std::fs::read_to_string(format!(
        "{}/tests/fixtures/evidence/{fixture}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let dir = env.home.join("shims");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.out")), captured).unwrap();
    let script = dir.join(name);
    std::fs::write(&script, format!("#!/bin/sh\ncat \"{}/{name}.out\"\n", dir.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[tokio::test]
async fn every_runner_behind_a_pipeline_is_read_from_its_own_summary() {
    // (stand-in program, command line, captured output, failed tests, the runner's exit status)
    let cases: &[(&str, &str, &str, u64, i64)] = &[
        ("pytest", "pytest -q", "pytest/9.2.0-fail.txt", 1, 1),
        ("cargo", "cargo test", "cargo/1.95.0-fail.txt", 1, 101),
        ("go", "go test -v ./...", "go/go1.19.8-fail-v.txt", 1, 1),
        ("jest", "jest --ci", "jest/30.5.2-fail.txt", 1, 1),
        ("vitest", "vitest run", "vitest/3.2.7-fail.txt", 1, 1),
        ("mocha", "mocha test/", "mocha/11.8.0-fail.txt", 1, 1),
        ("rspec", "rspec", "rspec/3.12-fail.txt", 1, 1),
        ("phpunit", "phpunit tests", "phpunit/9.6.7-fail.txt", 1, 1),
        ("ctest", "ctest", "ctest/3.25.1-fail.txt", 1, 8),
        ("mvn", "mvn test", "written/maven-fail.txt", 1, 1),
        ("dotnet", "dotnet test", "written/dotnet-fail.txt", 1, 1),
        ("cargo", "cargo nextest run", "written/nextest-fail.txt", 1, 101),
    ];
    for (program, command, fixture, failed, exit) in cases {
        let env = project();
        let dir = shim(&env, program, fixture);
        let line = format!("PATH={}:$PATH {command} 2>&1 | tail -n 40", dir.display());
        let r = json_session(
            &env,
            vec![
                json!({"tool_calls": [{"name": "Write", "input": {"file_path": "notes.txt", "content": "x\n"}}]}),
                bash(&line),
                say("Tests pass."),
                say(ANSWER),
            ],
            &[],
        )
        .await;
        assert_eq!(r["result"], ANSWER, "{command}: the hidden failure was sent back");
        let run = &r["verification"]["runs"][0];
        assert_eq!(r["verification"]["status"], "failed", "{command}");
        assert_eq!(run["failed"].as_u64(), Some(*failed), "{command}: {run}");
        assert_eq!(run["exit_code"].as_i64(), Some(*exit), "{command}: {run}");
    }
}

/// Three completed todos, none about verifying, and no file changed: one reminder, then the
/// turn ends.
#[tokio::test]
async fn completed_todos_without_verification_are_reminded_once_without_file_changes() {
    let env = Env::new();
    let todos = json!([
        {"content": "Read the parser", "status": "completed", "activeForm": "Reading the parser"},
        {"content": "Find the bug", "status": "completed", "activeForm": "Finding the bug"},
        {"content": "Explain the fix", "status": "completed", "activeForm": "Explaining the fix"}
    ]);
    let r = json_session(
        &env,
        vec![
            json!({"tool_calls": [{"name": "TodoWrite", "input": {"todos": todos}}]}),
            say("All done."),
            say("Nothing was verified: I only read the code."),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], "Nothing was verified: I only read the code.");
    let n = nudges(&env);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(n[0].contains("3 todos are completed"), "{}", n[0]);
}

/// Task dependencies end to end: a cycle is refused (an error, the list as it was), and the
/// reminder never asks for a verification step that is blocked: it names what it waits on.
#[tokio::test]
async fn task_dependencies_are_checked_and_the_reminder_respects_them() {
    let env = Env::new();
    let item = |id: &str, content: &str, status: &str, blocked_by: &[&str]| json!({"id": id, "content": content, "activeForm": content, "status": status, "blockedBy": blocked_by});
    let todos = json!([
        item("a", "Read the parser", "completed", &[]),
        item("b", "Find the bug", "completed", &[]),
        item("c", "Explain the fix", "completed", &[]),
        item("docs", "Write the release note", "pending", &[]),
        item("verify", "Run the tests", "pending", &["docs"]),
    ]);
    let cycle = json!([item("x", "One", "pending", &["y"]), item("y", "Two", "pending", &["x"])]);
    let r = json_session(
        &env,
        vec![
            json!({"tool_calls": [{"name": "TodoWrite", "input": {"todos": todos}}]}),
            json!({"tool_calls": [{"name": "TodoWrite", "input": {"todos": cycle}}]}),
            say("All done."),
            say("Not verified yet: the release note comes first."),
        ],
        &[],
    )
    .await;
    assert_eq!(r["result"], "Not verified yet: the release note comes first.");
    let results = tool_results(&env);
    assert!(
        results[0].contains(r#"Blocked: \"verify\" (waits on \"docs\")"#),
        "{}",
        results[0]
    );
    assert!(results[1].contains("cycle"), "{}", results[1]);
    let n = nudges(&env);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(
        n[0].contains("\"Run the tests\" is blocked: it waits on \"Write the release note\"")
            && !n[0].contains("do it now"),
        "{}",
        n[0]
    );
}
