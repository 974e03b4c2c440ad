//! `--task-budget`: the run stops with `error_max_task_budget` once its tokens are spent, and
//! a model whose API takes a task budget is sent the budget and what is left of it.

use serde_json::{Value, json};

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

fn echo(id: &str) -> crate::support::server::Reply {
    calls(vec![tool(id, "Bash", json!({"command": format!("echo {id}")}))])
}

#[tokio::test]
async fn a_spent_task_budget_stops_the_run_with_its_own_subtype() {
    let env = Env::new();
    let server = ModelServer::start().await;
    // Each tool turn writes 30 output tokens, the answer 20; the context stays at 100.
    server.push(echo("one")).push(echo("two")).push(answer("never reached"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "work",
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--model",
            "claude-opus-4-7",
            "--task-budget",
            "50",
        ])
        .run()
        .await;
    let result: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    assert_eq!(result["subtype"], "error_max_task_budget", "{result}");
    assert_eq!(result["is_error"], true);
    let text = result.to_string();
    assert!(text.contains("task budget of 50 tokens"), "{text}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "the run stopped once 60 of 50 tokens were spent");
    // The API's task budget, counting down, with its beta header.
    assert_eq!(
        reqs[0].body["output_config"]["task_budget"],
        json!({"type": "tokens", "total": 50, "remaining": 50})
    );
    assert_eq!(reqs[1].body["output_config"]["task_budget"]["remaining"], 20);
    assert!(
        reqs[0]
            .header("anthropic-beta")
            .is_some_and(|b| b.contains("task-budgets-2026-03-13")),
        "{:?}",
        reqs[0].headers
    );
}

#[tokio::test]
async fn models_without_the_api_field_are_held_to_keels_count() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(echo("one")).push(answer("done in budget"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "work",
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--model",
            "claude-sonnet-4-5",
            "--task-budget",
            "1000",
        ])
        .run()
        .await;
    let result: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "done in budget");
    let reqs = server.requests();
    assert!(reqs[0].body.get("output_config").is_none(), "{}", reqs[0].body);
    assert!(
        !reqs[0]
            .header("anthropic-beta")
            .is_some_and(|b| b.contains("task-budgets"))
    );

    let server = ModelServer::start().await;
    server.push(echo("one")).push(echo("two"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "work",
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--task-budget",
            "40",
        ])
        .run()
        .await;
    let result: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_task_budget", "{result}");
    assert_eq!(server.requests().len(), 2);
}
