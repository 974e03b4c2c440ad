//! Control requests that change the session under `--input-format stream-json`.

use serde_json::{Value, json};

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

const STREAM: [&str; 5] = [
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

fn user(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": text}}).to_string()
}

fn request(id: &str, body: Value) -> String {
    json!({"type": "control_request", "request_id": id, "request": body}).to_string()
}

#[tokio::test]
async fn set_model_reaches_sub_agents_started_afterwards() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "look", "prompt": "Look around.", "subagent_type": "general-purpose"}),
        )]))
        .push(answer("nothing here"))
        .push(answer("the helper found nothing"));
    let input = [
        request("m1", json!({"subtype": "set_model", "model": "haiku"})),
        user("delegate"),
    ]
    .join("\n")
        + "\n";
    let out = env
        .keel(&server)
        .args(STREAM)
        .args(["--model", "opus"])
        .stdin(&input)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let models: Vec<&Value> = reqs.iter().map(|r| &r.body["model"]).collect();
    assert_eq!(models, vec!["claude-haiku-4-5"; 3], "parent, sub-agent, parent");
}
