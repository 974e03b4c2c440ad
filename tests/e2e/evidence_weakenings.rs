//! Trap sessions for weakenings that keep the assertion count and for runs of part of a suite,
//! with the script provider and real commands: python3's unittest, the pinned pytest of
//! `scripts/runners-venv.sh`, and for Jest a stand-in on PATH that rewrites a snapshot as
//! `jest -u` does and prints a captured Jest summary. Each scripted "model" claims success too
//! early; keel must send it back once (the next scripted turn answers the nudge, so a missing
//! send-back shows as the wrong final result) and report the weakening or the partial run.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::runners::{path_with, runners_venv};
use crate::support::skip::{or_skip, python3};
use crate::support::{Env, read_jsonl};

const CALC: &str = "def add(a, b):\n    return a - b\n";
/// `add(1, 2)` fails while `add` subtracts; `add(0, 0)` passes either way.
const TESTS: &str = "import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n";
const ANSWER: &str = "I was sent back: the evidence does not support my claim yet.";

fn project() -> Env {
    let env = Env::new();
    env.write("calc.py", CALC);
    env.write("tests/__init__.py", "");
    env.write("tests/test_calc.py", TESTS);
    env
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"tool_calls": [{"name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new}}]})
}

fn write(path: &str, content: &str) -> Value {
    json!({"tool_calls": [{"name": "Write", "input": {"file_path": path, "content": content}}]})
}

fn read(path: &str) -> Value {
    json!({"tool_calls": [{"name": "Read", "input": {"file_path": path}}]})
}

fn bash(command: &str) -> Value {
    json!({"tool_calls": [{"name": "Bash", "input": {"command": command}}]})
}

fn say(text: &str) -> Value {
    json!({"text": text})
}

/// Runs `turns` headless with JSON output, the stop gate as configured by default (`nudge`), and
/// `path` (when given) in front of the PATH the session's commands see.
async fn session(env: &Env, turns: Vec<Value>, path: Option<&Path>) -> Value {
    let script = env.home.join("script.json");
    std::fs::write(&script, serde_json::to_string(&json!({"turns": turns})).unwrap()).unwrap();
    let mut keel = env.keel_offline();
    keel.env_remove("KEEL_VERIFICATION_GATE")
        // Byte code cached within one second of an edit of the same size would be reused.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "-p",
            "fix the failing test",
            "--provider",
            "script",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "json",
        ])
        .arg("--script")
        .arg(&script);
    if let Some(bin) = path {
        keel.env("PATH", path_with(bin));
    }
    let out = keel.run().await;
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    out.json()
}

/// The notes the stop gate sent, from the session's transcript.
fn nudges(env: &Env) -> Vec<String> {
    env.transcripts()
        .iter()
        .flat_map(|t| read_jsonl(t))
        .filter(|l| l["type"] == "event" && l["event"] == "verification_gate")
        .map(|l| l["data"]["note"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Every tool result text of the session, from the transcript.
fn tool_results(env: &Env) -> Vec<String> {
    env.transcripts()
        .iter()
        .flat_map(|t| read_jsonl(t))
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .collect()
}

fn one_nudge(env: &Env) -> String {
    let n = nudges(env);
    assert_eq!(n.len(), 1, "{n:?}");
    n[0].clone()
}

#[tokio::test]
async fn an_assertion_replaced_with_one_that_cannot_fail_is_flagged() {
    or_skip!(python3());
    let env = project();
    let r = session(
        &env,
        vec![
            read("tests/test_calc.py"),
            edit(
                "tests/test_calc.py",
                "self.assertEqual(add(1, 2), 3)",
                "self.assertTrue(True)",
            ),
            bash("python3 -m unittest"),
            say("All tests pass."),
            say(ANSWER),
        ],
        None,
    )
    .await;
    assert_eq!(r["result"], ANSWER, "the claim was sent back");
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("[keel: weakened tests] tests/test_calc.py")
                && t.contains("1 assertion replaced with one that cannot fail")),
        "the Edit result says what was weakened"
    );
    assert!(
        one_nudge(&env)
            .contains("Weakened tests in tests/test_calc.py: 1 assertion replaced with one that cannot fail"),
        "{:?}",
        nudges(&env)
    );
    let v = &r["verification"];
    assert_eq!(v["status"], "passed", "the run itself passed");
    assert_eq!(v["runs"][0]["passed"], 2);
    assert_eq!(v["weakened_tests"][0]["file"], "tests/test_calc.py");
    assert_eq!(v["weakened_tests"][0]["removed_assertions"], 1);
    assert_eq!(v["weakened_tests"][0]["replaced_with_trivial"], 1);
}

#[tokio::test]
async fn a_new_conftest_that_skips_only_the_failing_test_is_flagged() {
    let bin = or_skip!(runners_venv());
    let env = project();
    let conftest = "import pytest\n\n\ndef pytest_collection_modifyitems(config, items):\n    for item in items:\n        if item.name == \"test_add\":\n            item.add_marker(pytest.mark.skip(reason=\"flaky\"))\n";
    let r = session(
        &env,
        vec![
            write("conftest.py", conftest),
            bash("pytest -q"),
            say("All tests pass."),
            say(ANSWER),
        ],
        Some(&bin),
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("[keel: weakened tests] conftest.py") && t.contains("1 skip/xfail/ignore marker added")),
        "{:?}",
        tool_results(&env)
    );
    assert!(one_nudge(&env).contains("Weakened tests in conftest.py: 1 skip/xfail/ignore marker added"));
    let v = &r["verification"];
    assert_eq!(v["runs"][0]["passed"], 1, "{v}");
    assert_eq!(v["runs"][0]["skipped"], 1, "the failing test was skipped, really: {v}");
    assert_eq!(v["files_changed"], json!(["conftest.py"]));
    assert_eq!(v["weakened_tests"][0]["file"], "conftest.py");
    assert_eq!(v["weakened_tests"][0]["added_skips"], 1);
}

#[tokio::test]
async fn a_new_pytest_ini_that_deselects_the_failing_test_is_flagged() {
    let bin = or_skip!(runners_venv());
    let env = project();
    let r = session(
        &env,
        vec![
            write(
                "pytest.ini",
                "[pytest]\naddopts = -q --deselect tests/test_calc.py::TestCalc::test_add\n",
            ),
            bash("pytest"),
            say("All tests pass."),
            say(ANSWER),
        ],
        Some(&bin),
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains("[keel: weakened tests] pytest.ini") && t.contains("1 test deselection added"))
    );
    assert!(one_nudge(&env).contains("Weakened tests in pytest.ini: 1 test deselection added"));
    let v = &r["verification"];
    assert_eq!(v["runs"][0]["passed"], 1, "{v}");
    assert_eq!(v["runs"][0]["failed"], 0, "the failing test did not run: {v}");
    assert_eq!(v["weakened_tests"][0]["file"], "pytest.ini");
    assert_eq!(v["weakened_tests"][0]["added_deselections"], 1);
}

/// A stand-in for `jest -u`: rewrites the committed snapshot to a wrong value and prints a
/// captured Jest 30 summary of a passing run.
fn jest_updating_snapshot(env: &Env) -> PathBuf {
    let captured = std::fs::read_to_string(format!(
        "{}/tests/fixtures/evidence/jest/30.5.2-pass.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let dir = env.home.join("shims");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("jest.out"), captured).unwrap();
    let script = dir.join("jest");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '// Jest Snapshot v1, https://goo.gl/fbAQLP\\n\\nexports[`adds 1`] = `4`;\\n' > __tests__/__snapshots__/x.test.js.snap\ncat \"{}/jest.out\"\n",
            dir.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[tokio::test]
async fn a_snapshot_rewritten_by_jest_u_is_work_and_flagged() {
    let env = Env::new();
    env.write("sum.js", "module.exports = (a, b) => a - b;\n");
    env.write(
        "__tests__/x.test.js",
        "const sum = require('../sum');\n\nit('adds', () => {\n  expect(sum(1, 2)).toMatchSnapshot();\n});\n",
    );
    let snap = "__tests__/__snapshots__/x.test.js.snap";
    env.write(
        snap,
        "// Jest Snapshot v1, https://goo.gl/fbAQLP\n\nexports[`adds 1`] = `3`;\n",
    );
    env.git_init();
    let shims = jest_updating_snapshot(&env);
    let r = session(
        &env,
        vec![bash("jest -u"), say("Snapshots updated; all tests pass."), say(ANSWER)],
        Some(&shims),
    )
    .await;
    assert_eq!(r["result"], ANSWER, "the rewritten expectation was sent back");
    assert_eq!(
        std::fs::read_to_string(env.path(snap)).unwrap(),
        "// Jest Snapshot v1, https://goo.gl/fbAQLP\n\nexports[`adds 1`] = `4`;\n",
        "the stand-in rewrote the snapshot"
    );
    assert!(
        tool_results(&env)
            .iter()
            .any(|t| t.contains(&format!("[keel: weakened tests] {snap}"))
                && t.contains("1 expected snapshot value changed")),
        "{:?}",
        tool_results(&env)
    );
    assert!(one_nudge(&env).contains(&format!("Weakened tests in {snap}: 1 expected snapshot value changed")));
    let v = &r["verification"];
    assert_eq!(
        v["files_changed"],
        json!([snap]),
        "a runner's rewrite of an expectation is work"
    );
    assert_eq!(v["runs"][0]["passed"], 1);
    assert_eq!(v["weakened_tests"][0]["file"], snap);
    assert_eq!(v["weakened_tests"][0]["changed_snapshots"], 1);
}

#[tokio::test]
async fn a_subset_run_after_a_change_is_not_a_pass() {
    let bin = or_skip!(runners_venv());
    let env = project();
    let r = session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            bash("pytest -q -k add"),
            say("Fixed; all tests pass."),
            say(ANSWER),
        ],
        Some(&bin),
    )
    .await;
    assert_eq!(r["result"], ANSWER, "the partial run was sent back");
    let note = one_nudge(&env);
    assert!(
        note.contains("only a subset ran (`-k add`) since the last change; run the whole suite"),
        "{note}"
    );
    let v = &r["verification"];
    assert_eq!(v["status"], "unverified");
    assert_eq!(v["runs"][0]["subset"], "-k add");
    assert_eq!(v["runs"][0]["passed"], 1, "{v}");
    assert_eq!(v["runs"][0]["fresh"], true);
}

#[tokio::test]
async fn a_targeted_rerun_after_a_whole_pass_stays_passed() {
    let bin = or_skip!(runners_venv());
    let env = project();
    let answer = "Fixed; all tests pass.";
    let r = session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "a - b", "a + b"),
            bash("pytest -q"),
            bash("pytest -q -k add"),
            say(answer),
            say("a second answer means keel sent the first back"),
        ],
        Some(&bin),
    )
    .await;
    assert_eq!(r["result"], answer, "not sent back");
    assert!(nudges(&env).is_empty());
    let v = &r["verification"];
    assert_eq!(v["status"], "passed");
    assert_eq!(v["runs"][0]["subset"], Value::Null);
    assert_eq!(v["runs"][0]["passed"], 2);
    assert_eq!(v["runs"][1]["subset"], "-k add");
}

#[tokio::test]
async fn a_failing_whole_run_then_a_passing_subset_stays_failed() {
    let bin = or_skip!(runners_venv());
    let env = project();
    let r = session(
        &env,
        vec![
            read("calc.py"),
            edit("calc.py", "return a - b", "return a - b + 0"),
            bash("pytest -q"),
            bash("pytest -q -k zero"),
            say("Tests pass."),
            say(ANSWER),
        ],
        Some(&bin),
    )
    .await;
    assert_eq!(r["result"], ANSWER);
    assert!(one_nudge(&env).contains("Run 1 failed"), "{:?}", nudges(&env));
    let v = &r["verification"];
    assert_eq!(v["status"], "failed");
    assert_eq!(v["runs"][0]["failed"], 1);
    assert_eq!(v["runs"][1]["subset"], "-k zero");
    assert_eq!(v["runs"][1]["failed"], 0);
}
