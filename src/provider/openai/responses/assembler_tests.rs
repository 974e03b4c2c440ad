//! The Responses assembler against keel's own streams (tests/fixtures/openai-responses).

use super::*;
use serde_json::json;

fn run(name: &str) -> (Result<ModelResponse, StreamFailure>, Vec<ProviderEvent>) {
    let path = format!("{}/tests/fixtures/openai-responses/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut asm = Assembler::new();
    let mut events = Vec::new();
    for e in crate::provider::sse::parse_all(&bytes, 11).unwrap() {
        match asm.handle(&e.event, &e.data) {
            Ok(out) => events.extend(out),
            Err(f) => return (Err(f), events),
        }
        if asm.is_done() {
            break;
        }
    }
    (asm.finish(), events)
}

#[test]
fn text_and_usage_with_cached_input() {
    let (resp, events) = run("text.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.content, vec![ContentBlock::text("All 12 tests pass.")]);
    assert_eq!(resp.stop_reason, StopReason::EndTurn);
    assert_eq!(
        (resp.id.as_str(), resp.model.as_str()),
        ("resp_keel1", "gpt-5-2025-08-07")
    );
    assert_eq!(
        resp.usage,
        Usage {
            input_tokens: 176,
            cache_read_input_tokens: 1024,
            output_tokens: 90,
            cache_creation_input_tokens: 0,
            cache_creation_1h_input_tokens: 0,
            web_search_requests: 0,
        }
    );
    assert_eq!(events.len(), 3);
}

#[test]
fn reasoning_is_kept_with_its_encrypted_content_before_the_calls() {
    let (resp, events) = run("reasoning_then_calls.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::ToolUse);
    assert_eq!(
        resp.content,
        vec![
            ContentBlock::Thinking {
                thinking: "**Looking at files**\n\nRead then search.".into(),
                signature: reasoning::responses_signature(Some("gAAAAABkeel-opaque-reasoning==")),
            },
            ContentBlock::ToolUse {
                id: "call_k1".into(),
                name: "Read".into(),
                input: json!({"file_path": "/srv/app.py"})
            },
            ContentBlock::ToolUse {
                id: "call_k2".into(),
                name: "Grep".into(),
                input: json!({"pattern": "TODO"})
            },
        ]
    );
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "**Looking at files**\n\nRead then search.");
    assert!(events.contains(&ProviderEvent::ToolUseStarted {
        id: "call_k2".into(),
        name: "Grep".into()
    }));
}

#[test]
fn an_incomplete_response_cuts_the_open_call() {
    let (resp, _) = run("incomplete_cuts_call.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::MaxTokens);
    assert_eq!(resp.content, vec![ContentBlock::text("Writing it.")]);
    assert_eq!(
        resp.broken_tool_calls,
        vec![BrokenToolCall {
            id: "call_cut".into(),
            name: "Write".into(),
            reason: BrokenReason::Truncated
        }]
    );
}

#[test]
fn failures_are_retried_when_transient_and_reported_otherwise() {
    let f = run("failed_server_error.sse").0.unwrap_err();
    assert!(f.retryable, "{f:?}");
    assert!(f.message.contains("server_error"));
    let f = run("error_invalid_prompt.sse").0.unwrap_err();
    assert!(!f.retryable);
    assert_eq!(
        f.message,
        "invalid_prompt: Invalid prompt: the input violates the usage policy."
    );
}

#[test]
fn a_refusal_stops_as_refusal() {
    let (resp, _) = run("refusal.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::Refusal);
    assert_eq!(resp.content, vec![ContentBlock::text("I can't do that.")]);
}

#[test]
fn a_stream_that_stops_early_is_retried() {
    let mut asm = Assembler::new();
    asm.handle(
        "response.output_text.delta",
        r#"{"type":"response.output_text.delta","output_index":0,"delta":"hal"}"#,
    )
    .unwrap();
    assert!(!asm.is_done());
    assert!(asm.finish().unwrap_err().retryable);
}
