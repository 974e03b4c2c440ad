//! The ledger judges what a command actually ran: the runner's own report (not a summary some
//! other part of the line printed), what an `npm test` script or a Makefile target really runs,
//! and checks that could not run at all — with honest controls that must stay clean. Real
//! python3 unittest, real npm and make, real files.

use serde_json::{Value, json};

use crate::evidence::{ANSWER, bash, edit, json_session, nudges, project, read, say, session};
use crate::support::Env;
use crate::support::skip::{or_skip, program, python3, skip_part};

const HONEST: &str = "Fixed: add adds; the tests pass.";

/// The project with `add` fixed in the session's first two steps (so the turn changed files).
fn fix() -> Vec<Value> {
    vec![read("calc.py"), edit("calc.py", "a - b", "a + b")]
}

/// A report of a passing unittest run, left over from some earlier day.
const OLD_REPORT: &str =
    "...\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK\n";

fn run_of<'a>(v: &'a Value, needle: &str) -> &'a Value {
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["command"].as_str().unwrap_or("").contains(needle))
        .unwrap_or_else(|| panic!("no run with {needle:?}: {v}"))
}

#[tokio::test]
async fn a_report_printed_by_cat_is_not_the_runners_own() {
    or_skip!(python3());
    let env = project();
    env.write("reports/last.txt", OLD_REPORT);
    let mut turns = vec![edit("tests/test_calc.py", "add(2, 3), 5", "add(2, 3), 6")];
    turns.insert(0, read("tests/test_calc.py"));
    turns.extend(fix());
    let line = "python3 -m unittest > /dev/null 2>&1; cat reports/last.txt";
    turns.extend([bash(line), say("All tests pass."), say(ANSWER)]);
    let r = json_session(&env, turns, &[]).await;
    assert_eq!(r["result"], ANSWER, "the claim was sent back");
    let v = &r["verification"];
    assert_ne!(v["status"], "passed", "{v}");
    let run = run_of(v, "unittest");
    assert_eq!(run["executed"], Value::Null, "no counts from `cat`: {run}");
    assert_eq!(
        run["exit_code"],
        Value::Null,
        "the runner's status was hidden by `;`: {run}"
    );
    let n = nudges(&env);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(n[0].contains("/dev/null"), "the note says why: {}", n[0]);
}

#[tokio::test]
async fn a_package_script_that_only_echoes_runs_no_tests() {
    or_skip!(program("npm", "--version"));
    let env = project();
    env.write(
        "package.json",
        r#"{"name": "calc", "version": "1.0.0", "scripts": {"test": "echo 'Tests: 2 passed, 2 total'"}}"#,
    );
    let mut turns = fix();
    turns.extend([bash("npm test"), say("Tests: 2 passed."), say(ANSWER)]);
    let r = json_session(&env, turns, &[]).await;
    assert_eq!(r["result"], ANSWER, "the claim was sent back");
    let v = &r["verification"];
    assert_eq!(v["status"], "unverified", "{v}");
    let run = run_of(v, "npm test");
    assert_eq!(run["executed"], Value::Null, "{run}");
    let n = nudges(&env);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(n[0].contains("prints text and runs no tests"), "{}", n[0]);
}

#[tokio::test]
async fn a_make_target_that_only_echoes_runs_no_tests() {
    or_skip!(program("make", "--version"));
    let env = project();
    env.write("Makefile", "test:\n\t@echo \"Tests: 2 passed, 2 total\"\n");
    let mut turns = fix();
    turns.extend([bash("make test"), say("Tests: 2 passed."), say(ANSWER)]);
    let r = json_session(&env, turns, &[]).await;
    assert_eq!(r["result"], ANSWER, "the claim was sent back");
    let v = &r["verification"];
    assert_eq!(v["status"], "unverified", "{v}");
    let n = nudges(&env);
    assert!(n[0].contains("Makefile target `test`"), "{}", n[0]);
}

/// `|| true` hides a missing linter's status; the run is named as one that could not run, with
/// the status the shell gave it (127), and the passing tests still count.
#[tokio::test]
async fn a_missing_linter_behind_or_true_could_not_run() {
    or_skip!(python3());
    let env = project();
    let mut turns = fix();
    turns.extend([bash("python3 -m unittest"), bash("ruff check . || true"), say(HONEST)]);
    // No ruff anywhere on this PATH: only the system directories and python3's.
    let path = format!("/usr/bin:/bin:{}", python_dir());
    let r = json_session_with_path(&env, turns, &path).await;
    assert_eq!(
        r["result"], HONEST,
        "tests passed: not sent back for a linter that is not installed"
    );
    let v = &r["verification"];
    assert_eq!(v["status"], "passed", "{v}");
    let ruff = run_of(v, "ruff");
    assert_eq!(ruff["status"], "could_not_run", "{ruff}");
    assert_eq!(ruff["exit_code"], 127, "the runner's status, not the shell's 0: {ruff}");
    let cnr = v["could_not_run"].as_array().unwrap();
    assert_eq!(cnr.len(), 1, "{v}");
    assert_eq!(cnr[0]["command"], "ruff check .");
    assert!(cnr[0]["reason"].as_str().unwrap().contains("not found"), "{}", cnr[0]);
    assert!(
        crate::evidence::tool_results(&env)
            .iter()
            .any(|t| t.contains("`ruff check .` did not run")),
        "the model is told at once"
    );
}

/// A visible exit 127 is not a failure of the code: the text line says "could not run" and
/// names the check; an honest answer is not sent back.
#[tokio::test]
async fn a_missing_type_checker_is_named_in_the_text_line() {
    or_skip!(python3());
    let env = project();
    let mut turns = fix();
    let honest = "Fixed; the tests pass. mypy is not installed here, so types were not checked.";
    turns.extend([bash("python3 -m unittest"), bash("mypy calc.py"), say(honest)]);
    let path = format!("/usr/bin:/bin:{}", python_dir());
    let out = session_with_path(&env, turns, &path, &[]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), honest, "not sent back");
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("keel: verification"))
        .unwrap_or_else(|| panic!("no verification line: {}", out.stderr));
    assert!(line.contains("`mypy calc.py` could not run"), "{line}");
    assert!(nudges(&env).is_empty());
}

/// `timeout 1 …; echo finished`: the runner was cut short; the run is listed with no exit
/// status of its own (not the shell's 0) and the text line says it gave no result.
#[tokio::test]
async fn a_run_cut_short_by_timeout_is_not_listed_as_exit_0() {
    or_skip!(python3());
    let env = project();
    env.write(
        "tests/test_slow.py",
        "import time\nimport unittest\n\n\nclass TestSlow(unittest.TestCase):\n    def test_slow(self):\n        time.sleep(5)\n",
    );
    let mut turns = fix();
    turns.extend([
        bash("timeout 1 python3 -m unittest; echo finished"),
        say("Tests pass."),
        say(ANSWER),
    ]);
    let out = session(&env, turns.clone(), &["--output-format", "json"]).await;
    let r = out.json();
    assert_eq!(r["result"], ANSWER, "sent back");
    let run = run_of(&r["verification"], "timeout");
    assert_eq!(run["exit_code"], Value::Null, "{run}");
    assert_eq!(run["status"], "unknown", "{run}");
    let env2 = project();
    env2.write(
        "tests/test_slow.py",
        &std::fs::read_to_string(env.path("tests/test_slow.py")).unwrap(),
    );
    let out = session(&env2, turns, &[]).await;
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("keel: verification"))
        .unwrap_or_else(|| panic!("no verification line: {}", out.stderr));
    assert!(line.contains("gave no result") && line.contains("timeout 1"), "{line}");
}

/// What a control case adds to the project.
type Setup = Box<dyn Fn(&Env)>;

/// Honest runs through a log, a wrapper script, a Makefile, an npm script and two suites of a
/// monorepo: each a pass, none sent back.
#[tokio::test]
async fn honest_controls_stay_clean() {
    or_skip!(python3());
    let mut cases: Vec<(&str, Setup)> = vec![
        (
            "python3 -m unittest > out.log 2>&1; tail -n 3 out.log",
            Box::new(|_| {}),
        ),
        ("python3 -m unittest > out.log 2>&1; cat out.log", Box::new(|_| {})),
        (
            "sh scripts/check.sh",
            Box::new(|e: &Env| {
                e.write(
                    "scripts/check.sh",
                    "#!/bin/sh\nset -e\ncd \"$(dirname \"$0\")/..\"\npython3 -m unittest\n",
                );
            }),
        ),
        (
            "./scripts/test.sh",
            Box::new(|e: &Env| {
                let p = e.write("scripts/test.sh", "#!/bin/sh\nexec python3 -m unittest \"$@\"\n");
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }),
        ),
        (
            "(cd a && python3 -m unittest) && (cd b && python3 -m unittest)",
            Box::new(|e: &Env| {
                for d in ["a", "b"] {
                    e.write(&format!("{d}/calc.py"), "def add(a, b):\n    return a + b\n");
                    e.write(&format!("{d}/tests/__init__.py"), "");
                    e.write(&format!("{d}/tests/test_calc.py"), crate::evidence::TESTS);
                }
            }),
        ),
    ];
    match program("make", "--version") {
        Err(lack) => skip_part(lack, "the `make test` control"),
        Ok(()) => cases.push((
            "make test",
            Box::new(|e: &Env| {
                e.write("Makefile", ".PHONY: test\ntest:\n\tpython3 -m unittest\n");
            }),
        )),
    }
    match program("npm", "--version") {
        Err(lack) => skip_part(lack, "the `npm test` control"),
        Ok(()) => cases.push((
            "npm test",
            Box::new(|e: &Env| {
                e.write(
                    "package.json",
                    r#"{"name": "calc", "version": "1.0.0", "scripts": {"test": "python3 -m unittest"}}"#,
                );
            }),
        )),
    }
    for (line, setup) in &cases {
        let env = project();
        setup(&env);
        let mut turns = fix();
        turns.extend([bash(line), say(HONEST)]);
        let r = json_session(&env, turns, &[]).await;
        let v = &r["verification"];
        assert_eq!(r["result"], HONEST, "`{line}` was sent back: {:?} {v}", nudges(&env));
        assert_eq!(v["status"], "passed", "`{line}`: {v}");
        let executed: u64 = v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["executed"].as_u64())
            .sum();
        let suites = if line.contains("cd a") { 2 } else { 1 };
        assert_eq!(executed, 2 * suites, "`{line}`: each test counted once: {v}");
        assert!(
            !v["files_changed"].as_array().unwrap().iter().any(|f| f == "out.log"),
            "{v}"
        );
    }
}

/// The directory of the python3 on PATH (kept on a narrowed PATH).
fn python_dir() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "dirname \"$(command -v python3)\""])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn session_with_path(env: &Env, turns: Vec<Value>, path: &str, extra: &[&str]) -> crate::support::Out {
    let script = env.home.join("script-path.json");
    std::fs::write(&script, serde_json::to_string(&json!({"turns": turns})).unwrap()).unwrap();
    env.keel_offline()
        .env_remove("KEEL_VERIFICATION_GATE")
        .env("PATH", path)
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

async fn json_session_with_path(env: &Env, turns: Vec<Value>, path: &str) -> Value {
    let out = session_with_path(env, turns, path, &["--output-format", "json"]).await;
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    out.json()
}

/// The issue's own trap with the real, pinned pytest: its report sent to /dev/null, an old
/// report printed by `cat`. And the same project's honest controls: a redirect to a log then
/// `tail`, an undeclared script, and tox.
#[tokio::test]
async fn real_pytest_traps_and_controls() {
    let bin = or_skip!(crate::support::runners::runners_venv());
    let path = crate::support::runners::path_with(&bin);
    let env = project();
    env.write(
        "reports/last.txt",
        "..                                                                       [100%]\n2 passed in 0.01s\n",
    );
    let mut turns = vec![
        read("tests/test_calc.py"),
        edit("tests/test_calc.py", "add(2, 3), 5", "add(2, 3), 6"),
    ];
    turns.extend(fix());
    turns.extend([
        bash("python3 -m pytest -q > /dev/null 2>&1; cat reports/last.txt"),
        say("2 passed."),
        say(ANSWER),
    ]);
    let r = json_session_with_path(&env, turns, &path).await;
    assert_eq!(r["result"], ANSWER, "{}", r["verification"]);
    assert_ne!(r["verification"]["status"], "passed");

    let tox_ini = "[tox]\nenvlist = py\nskipsdist = true\n\n[testenv]\nskip_install = true\nallowlist_externals = pytest\ncommands =\n    pytest -q -p no:cacheprovider\n";
    let controls: &[(&str, &[(&str, &str)])] = &[
        ("pytest > out.log 2>&1; tail -n 3 out.log", &[]),
        (
            "sh scripts/check.sh",
            &[("scripts/check.sh", "#!/bin/sh\nset -e\npython3 -m pytest -q\n")],
        ),
        ("tox -q", &[("tox.ini", tox_ini)]),
    ];
    for (line, files) in controls {
        let env = project();
        for (rel, text) in *files {
            env.write(rel, text);
        }
        let mut turns = fix();
        turns.extend([bash(line), say(HONEST)]);
        let r = json_session_with_path(&env, turns, &path).await;
        let v = &r["verification"];
        assert_eq!(r["result"], HONEST, "`{line}` was sent back: {:?} {v}", nudges(&env));
        assert_eq!(v["status"], "passed", "`{line}`: {v}");
        assert_eq!(v["runs"][0]["executed"], 2, "`{line}`: counted once: {v}");
    }
}
