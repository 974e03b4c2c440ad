//! The `Elicitation` and `ElicitationResult` hook events around an MCP server's question
//! (real hook scripts, the test server's `ask` tool, a headless run).

use serde_json::{Value, json};

use super::{config, log_path, python, stdio};
use crate::hooks::{group, script, settings};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl};

/// A hook that logs its input to `name`.log, then prints `output` (and exits with `code`).
fn hook(env: &Env, name: &str, output: &Value, code: i32) -> String {
    script(
        env,
        &format!("{name}.sh"),
        &format!(
            "cat >> \"$CLAUDE_PROJECT_DIR/{name}.log\"\necho >> \"$CLAUDE_PROJECT_DIR/{name}.log\"\necho '{output}'\necho 'not this time' >&2\nexit {code}"
        ),
    )
}

fn logged(env: &Env, name: &str) -> Vec<Value> {
    let p = env.path(&format!("{name}.log"));
    if p.exists() { read_jsonl(&p) } else { Vec::new() }
}

/// One headless run in which the model calls the server's `ask` tool; returns what the
/// tool answered and the run's stderr.
async fn ask(env: &Env, model: &ModelServer, cfg: &str, defaults: bool) -> (String, String) {
    model
        .push(calls(vec![tool("a1", "mcp__el__ask", json!({}))]))
        .push(answer("done"));
    let mut keel = env.keel(model);
    if defaults {
        keel.env("KEEL_MCP_ELICITATION", "defaults");
    }
    let out = keel
        .args(["-p", "go", "--allowedTools", "mcp__el", "--mcp-config", cfg])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = model.requests();
    let (text, is_error) = requests[requests.len() - 1].tool_result_text("a1");
    assert!(!is_error, "{text}");
    (text, out.stderr)
}

#[tokio::test]
async fn an_elicitation_hook_answers_and_a_result_hook_sees_and_changes_the_answer() {
    or_skip!(python());
    let env = Env::new();
    let log = log_path(&env, "el");
    let cfg = config(json!({"el": stdio(&log, &["--elicit"])}));
    let model = ModelServer::start().await;

    // An Elicitation hook for this server answers; nobody else is asked (a headless run
    // would have declined). The result hook sees the answer and leaves it.
    let accept = json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"name": "Bo", "count": 7}}});
    let answering = hook(&env, "answer", &accept, 0);
    let watching = hook(&env, "result", &json!({}), 0);
    let elsewhere = hook(
        &env,
        "elsewhere",
        &json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}}),
        0,
    );
    settings(
        &env,
        json!({
            "Elicitation": [group("el", &answering), group("other", &elsewhere)],
            "ElicitationResult": [group("el", &watching)],
        }),
    );
    let (text, stderr) = ask(&env, &model, &cfg, false).await;
    assert_eq!(
        text,
        r#"answer: {"action": "accept", "content": {"count": 7, "name": "Bo"}}"#
    );
    assert!(!stderr.contains("declined"), "{stderr}");
    let asked = logged(&env, "answer");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["hook_event_name"], "Elicitation");
    assert_eq!(asked[0]["mcp_server_name"], "el");
    assert_eq!(asked[0]["message"], "Who are you?");
    assert_eq!(asked[0]["mode"], "form");
    assert_eq!(asked[0]["requested_schema"]["properties"]["name"]["default"], "Ann");
    assert!(logged(&env, "elsewhere").is_empty(), "the matcher names another server");
    let seen = logged(&env, "result");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["hook_event_name"], "ElicitationResult");
    assert_eq!(seen[0]["action"], "accept");
    assert_eq!(seen[0]["content"], json!({"name": "Bo", "count": 7}));

    // Without an answering hook the run declines; a result hook turns that into an answer.
    let change = json!({"hookSpecificOutput": {"hookEventName": "ElicitationResult", "action": "accept", "content": {"name": "Cy", "count": 1}}});
    let changing = hook(&env, "change", &change, 0);
    settings(&env, json!({"ElicitationResult": [group("el", &changing)]}));
    let (text, _) = ask(&env, &model, &cfg, false).await;
    assert_eq!(
        text,
        r#"answer: {"action": "accept", "content": {"count": 1, "name": "Cy"}}"#
    );
    let seen = logged(&env, "change");
    assert_eq!(seen[0]["action"], "decline", "{seen:?}");

    // Exit 2 declines, even where the form's defaults would have answered.
    let refusing = hook(&env, "refuse", &json!({}), 2);
    settings(&env, json!({"Elicitation": [group("el", &refusing)]}));
    let (text, stderr) = ask(&env, &model, &cfg, true).await;
    assert_eq!(text, r#"answer: {"action": "decline"}"#);
    assert!(
        stderr.contains("An Elicitation hook declined MCP server `el`'s request: not this time"),
        "{stderr}"
    );
}
