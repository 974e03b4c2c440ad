//! keel under the real Harbor: `integrations/harbor/tasks/fix-median` run end to end through
//! Harbor's trial runner with keel's installed agent (`keel_harbor:KeelAgent`) in the local
//! scratch environment (`keel_harbor.local_env:LocalEnvironment`), keel talking to the
//! scripted model server on loopback; and keel's failures as Harbor's error classes.

use serde_json::{Value, json};

use crate::support::harbor;
use crate::support::skip::or_skip;
use crate::support::sse::{answer, api_error, calls, tool};
use crate::support::{Env, ModelServer};

const BUGGY: &str = "    return ordered[middle]\n";
const RIGHT: &str = "    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n";
const WRONG: &str = "    if len(ordered) % 2 == 0:\n        return (ordered[middle] + ordered[middle + 1]) / 2\n    return ordered[middle]\n";

/// The model's side of the task: read the file, make `fix`, run the tests, report.
fn script(server: &ModelServer, fix: &str) {
    server.push(calls(vec![tool("r1", "Read", json!({"file_path": "/app/stats.py"}))]));
    server.push(calls(vec![tool(
        "e1",
        "Edit",
        json!({"file_path": "/app/stats.py", "old_string": BUGGY, "new_string": fix}),
    )]));
    server.push(calls(vec![tool(
        "b1",
        "Bash",
        json!({"command": "python3 -m unittest -v", "description": "Run the tests"}),
    )]));
    server.push(answer("Fixed median for even-length lists."));
}

fn steps(t: &Value) -> &Vec<Value> {
    t["steps"].as_array().expect("steps")
}

/// The tool calls of the trajectory's agent steps, by name, each with its observed result.
fn calls_with_results(t: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in steps(t).iter().filter(|s| s["source"] == "agent") {
        for c in s["tool_calls"].as_array().into_iter().flatten() {
            let id = &c["tool_call_id"];
            let result = s["observation"]["results"]
                .as_array()
                .and_then(|rs| rs.iter().find(|r| &r["source_call_id"] == id))
                .and_then(|r| r["content"].as_str())
                .unwrap_or_else(|| panic!("no observation for {c}"))
                .to_string();
            out.push((c["function_name"].as_str().unwrap().to_string(), result));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_right_fix_earns_reward_1_and_its_trajectory_validates() {
    let python = or_skip!(harbor::python());
    or_skip!(harbor::namespaces());
    let env = Env::new();
    let server = ModelServer::start().await;
    script(&server, RIGHT);
    let report = harbor::trial(&python, &env.work, "fix-median", &server.url()).await;

    assert_eq!(report["exception"], Value::Null, "{report:#}");
    assert_eq!(report["rewards"], json!({"reward": 1.0}), "{report:#}");
    assert_eq!(report["agent_info"]["name"], "keel");
    assert_eq!(report["agent_info"]["version"], env!("CARGO_PKG_VERSION"));
    // Harbor's model, key and base URL reached keel: four requests, each with the key.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.header("x-api-key") == Some("test-key")));
    assert_eq!(requests[0].body["model"], "claude-sonnet-4-5");

    // Validated by Harbor's models in run_trial.py; its content is the session's.
    let t = &report["trajectory"];
    assert_eq!(t["agent"]["name"], "keel");
    assert_eq!(steps(t)[0]["source"], "user");
    assert!(steps(t)[0]["message"].as_str().unwrap().contains("`median`"));
    let done = calls_with_results(t);
    let names: Vec<&str> = done.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Read", "Edit", "Bash"]);
    assert!(done[0].1.contains("def median"), "{}", done[0].1);
    assert!(
        done[2].1.contains("Ran 3 tests") && done[2].1.contains("OK"),
        "{}",
        done[2].1
    );
    assert_eq!(
        steps(t).last().unwrap()["message"],
        "Fixed median for even-length lists."
    );
    let fm = &t["final_metrics"];
    assert_eq!(fm["total_steps"].as_u64().unwrap() as usize, steps(t).len());
    assert!(fm["total_cost_usd"].as_f64().unwrap() > 0.0);
    // Tokens and cost agree with keel's own result object, which the agent put in the context.
    let context = &report["agent_result"];
    assert_eq!(fm["total_cost_usd"], context["cost_usd"]);
    assert_eq!(fm["total_prompt_tokens"], context["n_input_tokens"]);
    assert_eq!(
        report["model_usage"]["claude-sonnet-4-5"]["n_input_tokens"],
        context["n_input_tokens"]
    );

    // keel's claim is backed by a test run, and the Harbor user can see it.
    let v = &t["extra"]["verification"];
    assert_eq!(v["status"], "passed", "{v:#}");
    assert_eq!(v["runs"][0]["executed"], 3);
    assert_eq!(v["runs"][0]["failed"], 0);
    assert_eq!(v["files_changed"], json!(["stats.py"]));
    assert_eq!(&context["metadata"]["verification"], v);
    assert_eq!(context["metadata"]["keel_exit_code"], 0);

    // keel's logs and transcript are in Harbor's agent logs folder.
    let logs: Vec<&str> = report["agent_logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for expected in [
        "trajectory.json",
        "keel-result.json",
        "keel-stderr.log",
        "instruction.md",
    ] {
        assert!(logs.contains(&expected), "{expected} missing from {logs:?}");
    }
    let session = context["metadata"]["keel_session_id"].as_str().unwrap();
    assert!(
        logs.iter()
            .any(|l| l.starts_with("keel-home/projects/") && l.ends_with(&format!("{session}.jsonl"))),
        "{logs:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_fix_earns_reward_0_and_keel_reports_the_failed_run() {
    let python = or_skip!(harbor::python());
    or_skip!(harbor::namespaces());
    let env = Env::new();
    let server = ModelServer::start().await;
    script(&server, WRONG);
    // The stop gate sends the model back once after the failed run; it stops again.
    server.push(answer("Done."));
    let report = harbor::trial(&python, &env.work, "fix-median", &server.url()).await;

    assert_eq!(report["exception"], Value::Null, "{report:#}");
    assert_eq!(report["rewards"], json!({"reward": 0.0}), "{report:#}");
    assert_eq!(server.requests().len(), 5);
    let t = &report["trajectory"];
    let bash = &calls_with_results(t)[2].1;
    assert!(bash.contains("FAILED"), "{bash}");
    let v = &t["extra"]["verification"];
    assert_eq!(v["status"], "failed", "{v:#}");
    assert_eq!(v["runs"][0]["failed"], 1);
    // The gate's note is keel's, not the user's.
    let gate: Vec<&Value> = steps(t)
        .iter()
        .filter(|s| {
            s["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("[keel: verification]"))
        })
        .collect();
    assert_eq!(gate.len(), 1);
    assert_eq!(gate[0]["source"], "system");
}

/// keel run against one scripted failure: its exit status and result object.
async fn failed_run(replies: Vec<crate::support::Reply>, extra: &[&str], base_url: Option<&str>) -> Value {
    let env = Env::new();
    let server = ModelServer::start().await;
    for r in replies {
        server.push(r);
    }
    let mut keel = env.keel(&server);
    keel.args(["-p", "go", "--output-format", "json"])
        .args(extra)
        .env("KEEL_MAX_RETRIES", "0");
    if let Some(url) = base_url {
        keel.env("ANTHROPIC_BASE_URL", url);
    }
    let out = keel.run().await;
    json!({"exit_code": out.code, "result": out.json()})
}

#[tokio::test(flavor = "multi_thread")]
async fn keel_failures_become_harbors_error_classes_from_the_result_object() {
    let python = or_skip!(harbor::python());
    let too_long = || {
        api_error(
            400,
            "invalid_request_error",
            "prompt is too long: 300000 tokens > 200000 maximum",
        )
    };
    let cases: Vec<(&str, Value)> = vec![
        ("null", failed_run(vec![answer("fine")], &[], None).await),
        // The message speaks of a rate limit; the status says the key was refused.
        (
            "AgentAuthenticationError",
            failed_run(
                vec![api_error(401, "authentication_error", "rate limit exceeded")],
                &[],
                None,
            )
            .await,
        ),
        (
            "ApiRateLimitError",
            failed_run(vec![api_error(429, "rate_limit_error", "slow down")], &[], None).await,
        ),
        (
            "ApiOverloadedError",
            failed_run(vec![api_error(529, "overloaded_error", "Overloaded")], &[], None).await,
        ),
        (
            "ApiInternalServerError",
            failed_run(vec![api_error(500, "api_error", "Internal server error")], &[], None).await,
        ),
        // keel compacts once and tries again before it gives up.
        (
            "ContextWindowExceededError",
            failed_run(vec![too_long(), too_long()], &[], None).await,
        ),
        (
            "ModelNotFoundError",
            failed_run(vec![api_error(404, "not_found_error", "model: nope")], &[], None).await,
        ),
        (
            "NetworkConnectionError",
            failed_run(vec![], &[], Some("http://127.0.0.1:1")).await,
        ),
        (
            "NonZeroAgentExitCodeError",
            failed_run(
                vec![calls(vec![tool("g1", "Glob", json!({"pattern": "*"}))])],
                &["--max-turns", "1"],
                None,
            )
            .await,
        ),
    ];
    let input: String = cases.iter().map(|(_, run)| format!("{run}\n")).collect();
    let home = tempfile::tempdir().unwrap();
    let classes = harbor::run(&python, home.path(), "classify", &[], &input).await;
    let got: Vec<&str> = classes.iter().map(|c| c["name"].as_str().unwrap_or("null")).collect();
    let expected: Vec<&str> = cases.iter().map(|(name, _)| *name).collect();
    let runs: Vec<&Value> = cases.iter().map(|(_, run)| run).collect();
    assert_eq!(got, expected, "keel runs: {runs:#?}");
    // Harbor's policy follows: a refused key is not retried; a rate limit is, and is graded.
    assert_eq!(classes[1]["should_retry"], false);
    assert_eq!(classes[2]["should_retry"], true);
    assert_eq!(classes[2]["should_grade"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn harbors_model_flags_become_keels_provider_model_and_environment() {
    let python = or_skip!(harbor::python());
    let cases = [
        json!({"model_name": "anthropic/claude-sonnet-4-5", "base_url": "http://127.0.0.1:9", "extra_env": {"ANTHROPIC_API_KEY": "a"}}),
        json!({"model_name": "openai/gpt-4.1", "extra_env": {"OPENAI_API_KEY": "o"}, "max_turns": 7}),
        json!({"model_name": "openai/gpt-5", "model_api_format": "openai_responses", "extra_env": {"OPENAI_API_KEY": "o"}}),
        // A local OpenAI-compatible server, its key in a variable of the user's choosing.
        json!({"model_name": "hosted_vllm/qwen3-coder", "base_url": "http://127.0.0.1:8000/v1", "model_api_key_name": "VLLM_KEY",
               "model_api_format": "openai_chat_completions", "extra_env": {"VLLM_KEY": "v"},
               "permission_mode": "acceptEdits", "verification_gate": "require"}),
    ];
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    let home = tempfile::tempdir().unwrap();
    let got = harbor::run(&python, home.path(), "connection", &[], &input).await;
    let flag = |i: usize, name: &str| -> Option<String> {
        let argv = got[i]["argv"].as_array().unwrap();
        let at = argv.iter().position(|a| a == name)?;
        argv.get(at + 1).and_then(Value::as_str).map(str::to_string)
    };
    let env = |i: usize| got[i]["env"].clone();
    assert_eq!(flag(0, "--provider").as_deref(), Some("anthropic"));
    assert_eq!(flag(0, "--model").as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(flag(0, "--permission-mode").as_deref(), Some("bypassPermissions"));
    assert_eq!(
        env(0),
        json!({"ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "KEEL_HOME": "/logs/agent/keel-home"})
    );
    assert_eq!(flag(1, "--provider").as_deref(), Some("openai"));
    assert_eq!(flag(1, "--model").as_deref(), Some("gpt-4.1"));
    assert_eq!(flag(1, "--max-turns").as_deref(), Some("7"));
    assert_eq!(
        env(1),
        json!({"OPENAI_API_KEY": "o", "KEEL_HOME": "/logs/agent/keel-home"})
    );
    assert_eq!(flag(2, "--provider").as_deref(), Some("openai-responses"));
    assert_eq!(flag(3, "--provider").as_deref(), Some("openai"));
    assert_eq!(flag(3, "--model").as_deref(), Some("qwen3-coder"));
    assert_eq!(flag(3, "--permission-mode").as_deref(), Some("acceptEdits"));
    assert_eq!(
        env(3),
        json!({"OPENAI_API_KEY": "v", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1",
               "KEEL_HOME": "/logs/agent/keel-home", "KEEL_VERIFICATION_GATE": "require"})
    );
}
