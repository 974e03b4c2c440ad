//! WebSearch through OpenAI Responses' own `web_search` tool: the side request offers it with
//! the call's allowed domains, the answer's `url_citation` annotations become the results, and
//! a search the server reports as failed is the call's error, never an empty result.

use serde_json::{Value, json};

use crate::support::openai::responses_reply;
use crate::support::sse::{text, tool};
use crate::support::{Env, ModelServer, Recorded, Reply};
use crate::web::user_settings;

fn frame(data: Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())
}

/// A Responses stream: a `web_search_call` item with `status`, then (when it completed) a
/// message whose text cites `citations` (url, title).
fn search_reply(status: &str, answer: &str, citations: &[(&str, &str)]) -> Reply {
    let search = json!({"id": "ws_e2e", "type": "web_search_call", "status": status,
        "action": {"type": "search", "query": "keel agent"}});
    let notes: Vec<Value> = citations
        .iter()
        .map(|(url, title)| json!({"type": "url_citation", "start_index": 0, "end_index": 4, "url": url, "title": title}))
        .collect();
    let message = json!({"id": "msg_ws", "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": answer, "annotations": notes}]});
    let mut chunks = vec![frame(json!({"type": "response.created", "sequence_number": 0,
        "response": {"id": "resp_ws", "status": "in_progress", "model": "gpt-5", "output": []}}))];
    chunks.push(frame(json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "ws_e2e", "type": "web_search_call", "status": "in_progress"}})));
    chunks.push(frame(
        json!({"type": "response.output_item.done", "output_index": 0, "item": search}),
    ));
    if status == "completed" {
        chunks.push(frame(json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"id": "msg_ws", "type": "message", "status": "in_progress", "role": "assistant", "content": []}})));
        chunks.push(frame(
            json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0,
            "item_id": "msg_ws", "delta": answer}),
        ));
        chunks.push(frame(
            json!({"type": "response.output_item.done", "output_index": 1, "item": message}),
        ));
    }
    chunks.push(frame(
        json!({"type": "response.completed", "response": {"id": "resp_ws", "status": "completed",
        "model": "gpt-5", "usage": {"input_tokens": 40, "output_tokens": 12}}}),
    ));
    Reply::Sse {
        chunks,
        pace: std::time::Duration::ZERO,
    }
}

/// The `function_call_output` keel sent for `call_id`.
fn output_sent(r: &Recorded, call_id: &str) -> String {
    r.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == call_id)
        .and_then(|i| i["output"].as_str())
        .unwrap_or_else(|| panic!("no output for {call_id}: {:#}", r.body["input"]))
        .to_string()
}

#[tokio::test]
async fn web_search_through_the_responses_search_tool_reads_its_citations() {
    let env = Env::new();
    user_settings(&env, json!({"webSearch": {"provider": true}}));
    let server = ModelServer::start().await;
    server
        .push(responses_reply(
            "gpt-5",
            None,
            vec![tool(
                "call_s",
                "WebSearch",
                json!({"query": "keel agent", "allowed_domains": ["docs.rs"]}),
            )],
        ))
        .push(search_reply(
            "completed",
            "keel is a terminal coding agent.",
            &[
                ("https://docs.rs/keel", "keel on docs.rs"),
                ("https://docs.rs/keel", "keel on docs.rs"),
                ("https://elsewhere.example/keel", "Elsewhere"),
            ],
        ))
        .push(responses_reply("gpt-5", None, vec![text("found it")]));
    let out = env
        .keel_openai(&server, "openai-responses")
        .args(["-p", "search", "--output-format", "json", "--allowedTools", "WebSearch"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "main, search, main");
    // The search request offers only the provider's tool, with the allowed domains.
    assert_eq!(
        reqs[1].body["tools"],
        json!([{"type": "web_search", "filters": {"allowed_domains": ["docs.rs"]}}])
    );
    let result = output_sent(&reqs[2], "call_s");
    assert!(
        result.contains("(openai-responses's web search): 1 results"),
        "{result}"
    );
    assert!(result.contains("keel is a terminal coding agent."), "{result}");
    assert!(result.contains("keel on docs.rs\n   https://docs.rs/keel"), "{result}");
    // Outside the allowed domains, keel's own filter leaves the citation out.
    assert!(!result.contains("elsewhere.example"), "{result}");
    assert!(result.contains("<untrusted-content source=\"WebSearch\">"), "{result}");
    // The search request counts: its tokens (40 in, 12 out) beside the two main requests'
    // (100 uncached, 400 cached, 40 out each), and its one search call.
    let json: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON result");
    let usage = &json["usage"];
    assert_eq!(usage["input_tokens"], 240, "{usage}");
    assert_eq!(usage["cache_read_input_tokens"], 800, "{usage}");
    assert_eq!(usage["output_tokens"], 92, "{usage}");
    assert_eq!(usage["server_tool_use"]["web_search_requests"], 1, "{usage}");
    assert_eq!(json["modelUsage"]["gpt-5"]["webSearchRequests"], 1, "{json}");
}

#[tokio::test]
async fn a_failed_responses_search_is_the_calls_error() {
    let env = Env::new();
    user_settings(&env, json!({"webSearch": {"provider": true}}));
    let server = ModelServer::start().await;
    server
        .push(responses_reply(
            "gpt-5",
            None,
            vec![tool(
                "call_f",
                "WebSearch",
                json!({"query": "keel agent", "blocked_domains": ["spam.example"]}),
            )],
        ))
        .push(search_reply("failed", "", &[]))
        .push(responses_reply("gpt-5", None, vec![text("no luck")]));
    let out = env
        .keel_openai(&server, "openai-responses")
        .args(["-p", "search", "--output-format", "json", "--allowedTools", "WebSearch"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    // Blocked domains are not a filter of this API: the request names them to the model.
    assert_eq!(reqs[1].body["tools"], json!([{"type": "web_search"}]));
    assert!(
        reqs[1]
            .body
            .to_string()
            .contains("Do not use results from these domains: spam.example"),
        "{}",
        reqs[1].body
    );
    let result = output_sent(&reqs[2], "call_f");
    assert!(result.contains("search failed"), "{result}");
}
