//! The assembler against keel's own recorded-style streams (tests/fixtures/anthropic).

use super::*;
use serde_json::json;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/anthropic/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Splits raw bytes into SSE events with the parser the client uses, feeding the bytes in small
/// chunks to exercise events split across reads.
fn sse_events(bytes: Vec<u8>) -> Vec<(String, String)> {
    crate::provider::sse::parse_all(&bytes, 7)
        .unwrap()
        .into_iter()
        .map(|e| (e.event, e.data))
        .collect()
}

fn run(name: &str) -> (Result<ModelResponse, StreamFailure>, Vec<ProviderEvent>) {
    let mut asm = Assembler::new();
    let mut events = Vec::new();
    for (event, data) in sse_events(fixture(name)) {
        match asm.handle(&event, &data) {
            Ok(out) => events.extend(out),
            Err(f) => return (Err(f), events),
        }
    }
    (asm.finish(), events)
}

#[test]
fn pings_with_odd_spacing_and_trailing_blanks() {
    let (resp, events) = run("text_with_odd_pings.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.content, vec![ContentBlock::text("Three files changed.")]);
    assert_eq!(resp.stop_reason, StopReason::EndTurn);
    assert_eq!(resp.usage.input_tokens, 21);
    assert_eq!(resp.usage.output_tokens, 5);
    let deltas: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, vec!["Three", " files changed."]);
}

#[test]
fn tool_json_split_mid_key_is_assembled() {
    let (resp, events) = run("tool_json_split_mid_key.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::ToolUse);
    assert_eq!(
        resp.content[1],
        ContentBlock::ToolUse {
            id: "toolu_keel_split".into(),
            name: "Read".into(),
            input: json!({"file_path": "/srv/app/config.toml", "limit": 40}),
        }
    );
    assert!(resp.broken_tool_calls.is_empty());
    assert_eq!(resp.usage.cache_read_input_tokens, 200);
    assert!(events.contains(&ProviderEvent::ToolUseStarted {
        id: "toolu_keel_split".into(),
        name: "Read".into()
    }));
}

#[test]
fn tool_without_arguments_gets_empty_object() {
    let (resp, _) = run("tool_without_arguments.sse");
    let resp = resp.unwrap();
    assert_eq!(
        resp.content,
        vec![ContentBlock::ToolUse {
            id: "toolu_keel_noargs".into(),
            name: "ListThings".into(),
            input: json!({}),
        }]
    );
}

#[test]
fn thinking_signature_and_redacted_blocks_are_kept_verbatim() {
    let (resp, _) = run("thinking_redacted_then_tool.sse");
    let resp = resp.unwrap();
    assert_eq!(
        resp.content[0],
        ContentBlock::Thinking {
            thinking: "The user wants the failing test. Grep first.".into(),
            signature: "a2VlbC1vd24tc2lnbmF0dXJl".into(),
        }
    );
    assert_eq!(
        resp.content[1],
        ContentBlock::RedactedThinking {
            data: "RW5jcnlwdGVkIGJ5IHRoZSBwcm92aWRlcg==".into()
        }
    );
    assert!(matches!(&resp.content[3], ContentBlock::ToolUse { name, .. } if name == "Grep"));
}

#[test]
fn in_stream_overloaded_error_is_retryable() {
    let (resp, _) = run("overloaded_error_mid_stream.sse");
    let failure = resp.unwrap_err();
    assert!(failure.retryable);
    assert!(failure.message.contains("overloaded_error"), "{}", failure.message);
}

#[test]
fn max_tokens_mid_tool_call_drops_the_incomplete_call() {
    let (resp, _) = run("max_tokens_mid_tool_call.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::MaxTokens);
    assert_eq!(
        resp.content,
        vec![ContentBlock::text("I will write the whole report now.")]
    );
    assert_eq!(
        resp.broken_tool_calls,
        vec![BrokenToolCall {
            id: "toolu_keel_cut".into(),
            name: "Write".into(),
            reason: BrokenReason::Truncated
        }]
    );
}

#[test]
fn malformed_tool_json_is_flagged_never_silently_empty() {
    let (resp, _) = run("malformed_tool_json.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.broken_tool_calls.len(), 1);
    assert!(matches!(
        &resp.broken_tool_calls[0].reason,
        BrokenReason::Malformed { raw, .. } if raw.contains(",,")
    ));
}

#[test]
fn stream_without_stop_reason_is_a_retryable_cut() {
    let mut asm = Assembler::new();
    asm.handle(
        "message_start",
        r#"{"type":"message_start","message":{"id":"m","model":"x","usage":{}}}"#,
    )
    .unwrap();
    let failure = asm.finish().unwrap_err();
    assert!(failure.retryable);
}

#[test]
fn delta_for_unknown_block_is_an_error() {
    let mut asm = Assembler::new();
    let err = asm
        .handle(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"x"}}"#,
        )
        .unwrap_err();
    assert!(err.message.contains("never started"));
}

#[test]
fn server_tool_blocks_are_kept_for_the_history_and_nothing_is_run() {
    let (resp, events) = run("web_search_server_tool.sse");
    let resp = resp.unwrap();
    assert!(
        !events.iter().any(|e| matches!(e, ProviderEvent::ToolUseStarted { .. })),
        "a server tool is not keel's to run: {events:?}"
    );
    assert_eq!(resp.content.len(), 4, "{:?}", resp.content);
    assert_eq!(
        resp.content[1],
        ContentBlock::ServerToolUse {
            id: "srvtoolu_01Web".into(),
            name: "web_search".into(),
            input: json!({"query": "rust http client"}),
        }
    );
    let ContentBlock::WebSearchToolResult { tool_use_id, content } = &resp.content[2] else {
        panic!("{:?}", resp.content[2]);
    };
    assert_eq!(tool_use_id, "srvtoolu_01Web");
    assert_eq!(content[0]["encrypted_content"], "RW5jcnlwdGVkIHBhZ2Ugb25l");
    assert_eq!(content[1]["page_age"], Value::Null);
    assert_eq!(
        resp.content[3],
        ContentBlock::text("reqwest is an ergonomic HTTP client.")
    );
    assert!(resp.broken_tool_calls.is_empty());
    // Sent back as the API sent them.
    let wire = serde_json::to_value(&resp.content[2]).unwrap();
    assert_eq!(wire["type"], "web_search_tool_result");
    assert_eq!(wire["content"], *content);
}
