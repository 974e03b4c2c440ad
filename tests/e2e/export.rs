//! `keel export --format atif`: a session keel recorded (edits, a test run, a sub-agent) read
//! back as an ATIF trajectory, its figures checked against the headless result, and — where
//! the Harbor environment is installed — validated by Harbor's own models.

use serde_json::{Value, json};

use crate::support::harbor;
use crate::support::skip::{or_skip, skip_part};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

const TEST: &str = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

/// Runs a session that writes a module, runs its tests and asks a sub-agent; returns the
/// headless result and the export of the session.
async fn recorded_session(env: &Env) -> (Value, Value) {
    env.write("test_calc.py", TEST);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": env.path("calc.py"), "content": "def add(a, b):\n    return a + b\n"}),
        )]))
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": "python3 -m unittest -v", "description": "Run the tests"}),
        )]))
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "list the files", "prompt": "Which Python files are here?", "subagent_type": "general-purpose"}),
        )]))
        .push(answer("calc.py and test_calc.py."))
        .push(answer("All done."));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "add calc.add",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 5);
    let result = out.json();
    let id = result["session_id"].as_str().unwrap().to_string();
    let exported = env.keel_offline().args(["export", "--format", "atif", &id]).run().await;
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    (result, exported.json())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_session_exports_as_an_atif_trajectory() {
    or_skip!(crate::support::skip::python3());
    let env = Env::new();
    let (result, t) = recorded_session(&env).await;

    assert_eq!(t["schema_version"], "ATIF-v1.7");
    assert_eq!(t["session_id"], result["session_id"]);
    assert_eq!(t["agent"]["name"], "keel");
    assert_eq!(t["agent"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(t["agent"]["model_name"], "claude-sonnet-4-5");
    let steps = t["steps"].as_array().unwrap();
    assert_eq!(steps[0]["source"], "user");
    assert_eq!(steps[0]["message"], "add calc.add");
    let agent: Vec<&Value> = steps.iter().filter(|s| s["source"] == "agent").collect();
    let names: Vec<&str> = agent
        .iter()
        .filter_map(|s| s["tool_calls"][0]["function_name"].as_str())
        .collect();
    assert_eq!(names, ["Write", "Bash", "Agent"]);
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["step_id"], i + 1);
    }
    // Each call's result is the observation of its step.
    let bash = &agent[1]["observation"]["results"][0];
    assert_eq!(bash["source_call_id"], "b1");
    assert!(bash["content"].as_str().unwrap().contains("OK"), "{bash}");
    assert_eq!(agent.last().unwrap()["message"], "All done.");
    // Every answer has its request's tokens and cost.
    for s in &agent {
        assert_eq!(s["model_name"], "claude-sonnet-4-5");
        assert!(s["metrics"]["prompt_tokens"].as_u64().unwrap() > 0, "{s}");
        assert!(s["metrics"]["completion_tokens"].as_u64().unwrap() > 0, "{s}");
        assert!(s["metrics"]["cost_usd"].as_f64().unwrap() > 0.0, "{s}");
    }

    // The sub-agent: embedded, and referenced from the Agent call that started it.
    let subs = t["subagent_trajectories"].as_array().unwrap();
    assert_eq!(subs.len(), 1);
    let sub = &subs[0];
    let reference = &agent[2]["observation"]["results"][0];
    assert_eq!(reference["source_call_id"], "a1");
    assert_eq!(
        reference["subagent_trajectory_ref"][0]["trajectory_id"],
        sub["trajectory_id"]
    );
    assert_eq!(sub["extra"]["agent_type"], "general-purpose");
    assert_eq!(sub["extra"]["parent_tool_use_id"], "a1");
    assert_eq!(sub["steps"][0]["source"], "user");
    assert!(
        sub["steps"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("Which Python files are here?")
    );
    assert_eq!(sub["steps"][1]["message"], "calc.py and test_calc.py.");

    // The figures are the headless result's: cost with the sub-agent, the verification report.
    assert_eq!(t["final_metrics"]["total_cost_usd"], result["total_cost_usd"]);
    assert_eq!(
        t["final_metrics"]["total_steps"].as_u64().unwrap() as usize,
        steps.len()
    );
    assert_eq!(t["extra"]["verification"], result["verification"]);
    assert_eq!(t["extra"]["verification"]["status"], "passed");
    assert_eq!(t["extra"]["verification"]["runs"][0]["executed"], 1);

    // The path of the transcript names the session as well.
    let by_path = env
        .keel_offline()
        .args(["export", t["extra"]["transcript"].as_str().unwrap()])
        .run()
        .await;
    assert_eq!(by_path.code, 0, "{}", by_path.stderr);
    assert_eq!(by_path.json()["steps"], t["steps"]);

    match harbor::python() {
        Ok(python) => {
            let home = tempfile::tempdir().unwrap();
            let lines = harbor::run(&python, home.path(), "validate", &[], &t.to_string()).await;
            let valid = &lines[0];
            assert_eq!(valid["steps"].as_u64().unwrap() as usize, steps.len());
            assert_eq!(valid["subagents"], json!([sub["trajectory_id"]]));
            // Harbor's per-model usage counts the sub-agent's requests too.
            let input: u64 = [
                t["final_metrics"]["total_prompt_tokens"].as_u64().unwrap(),
                sub["final_metrics"]["total_prompt_tokens"].as_u64().unwrap(),
            ]
            .iter()
            .sum();
            assert_eq!(valid["model_usage"]["claude-sonnet-4-5"]["n_input_tokens"], input);
        }
        Err(lack) => skip_part(lack, "validation by Harbor's models"),
    }
}

#[tokio::test]
async fn an_unknown_session_is_an_error_naming_it() {
    let env = Env::new();
    let out = env
        .keel_offline()
        .args(["export", "--format", "atif", "no-such-session"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no-such-session"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let out = env.keel_offline().args(["export", "../../etc/passwd"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is neither a session id"), "{}", out.stderr);
}
