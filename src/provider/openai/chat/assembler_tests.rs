//! The Chat Completions assembler against keel's own streams (tests/fixtures/openai), written to
//! show the quirks real servers were recorded with.

use super::*;
use serde_json::json;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/openai/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Feeds a fixture through the client's SSE parser in small chunks.
fn run(name: &str) -> (Result<ModelResponse, StreamFailure>, Vec<ProviderEvent>) {
    let mut asm = Assembler::new();
    let mut events = Vec::new();
    for e in crate::provider::sse::parse_all(&fixture(name), 5).unwrap() {
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

fn texts(events: &[ProviderEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn text_and_a_usage_trailer_with_cached_tokens() {
    let (resp, events) = run("text_with_usage_trailer.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.content, vec![ContentBlock::text("The build passes on main.")]);
    assert_eq!(resp.stop_reason, StopReason::EndTurn);
    assert_eq!(resp.id, "chatcmpl-keel1");
    assert_eq!(resp.model, "gpt-4.1-2025-04-14");
    assert_eq!(
        resp.usage,
        Usage {
            input_tokens: 20,
            cache_read_input_tokens: 32,
            output_tokens: 6,
            cache_creation_input_tokens: 0,
            cache_creation_1h_input_tokens: 0,
            web_search_requests: 0,
        }
    );
    assert_eq!(texts(&events), vec!["The build", " passes", " on", " main."]);
}

#[test]
fn parallel_calls_are_assembled_by_index() {
    let (resp, events) = run("parallel_calls_split_args.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::ToolUse);
    assert_eq!(
        resp.content,
        vec![
            ContentBlock::ToolUse {
                id: "call_keelA1".into(),
                name: "Read".into(),
                input: json!({"file_path": "/srv/app/main.rs"})
            },
            ContentBlock::ToolUse {
                id: "call_keelB2".into(),
                name: "Grep".into(),
                input: json!({"pattern": "fn main", "output_mode": "count"})
            },
        ]
    );
    assert!(resp.broken_tool_calls.is_empty());
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::ToolUseStarted { id, name } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(started, vec![("call_keelA1", "Read"), ("call_keelB2", "Grep")]);
    assert_eq!(resp.usage.output_tokens, 41);
}

#[test]
fn a_call_cut_by_length_is_truncated_not_run() {
    let (resp, _) = run("length_cuts_call.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::MaxTokens);
    assert_eq!(resp.content, vec![ContentBlock::text("Writing the file now.")]);
    assert_eq!(
        resp.broken_tool_calls,
        vec![BrokenToolCall {
            id: "call_keelCut".into(),
            name: "Write".into(),
            reason: BrokenReason::Truncated
        }]
    );
}

/// llama.cpp at a `length` stop with calls that were finished: one reads fine, the other's
/// arguments are complete but broken. Neither was cut: the broken one is malformed.
#[test]
fn finished_calls_with_broken_arguments_at_a_length_stop_are_malformed_not_cut() {
    let (resp, _) = run("llamacpp_length_broken_finished_calls.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::MaxTokens);
    assert_eq!(resp.content.len(), 2, "{:?}", resp.content);
    assert!(matches!(&resp.content[0], ContentBlock::ToolUse { name, input, .. }
        if name == "Read" && input["file_path"] == "notes.txt"));
    assert_eq!(resp.broken_tool_calls.len(), 1);
    let broken = &resp.broken_tool_calls[0];
    assert_eq!((broken.id.as_str(), broken.name.as_str()), ("call_lcppB", "Write"));
    assert!(
        matches!(&broken.reason, BrokenReason::Malformed { raw, .. } if raw.contains("\"out.txt\" \"content\"")),
        "{:?}",
        broken.reason
    );
}

/// llama.cpp's slot running out of context part-way: a failure that is sent again once only,
/// with what it means.
#[test]
fn llama_cpp_context_full_mid_stream_is_explained_and_marked() {
    let (resp, events) = run("llamacpp_context_full_midstream.sse");
    assert!(!texts(&events).is_empty(), "output had started");
    let f = resp.unwrap_err();
    assert!(f.retryable && f.context_full && !f.overloaded, "{f:?}");
    assert!(
        f.message.starts_with("Context size has been exceeded. (code 500)"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("-np 1") && f.message.contains("larger -c"),
        "{}",
        f.message
    );
    // Other in-stream errors are not.
    let other = stream_error(&json!({"error": {"code": 500, "message": "boom"}}));
    assert!(other.retryable && !other.context_full);
}

#[test]
fn refusal_deltas_become_the_answer_with_a_refusal_stop() {
    let (resp, events) = run("refusal.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::Refusal);
    assert_eq!(resp.content, vec![ContentBlock::text("I can't help with that.")]);
    assert_eq!(texts(&events).concat(), "I can't help with that.");
}

#[test]
fn reasoning_content_is_thinking_and_the_last_usage_counts() {
    let (resp, events) = run("reasoning_content_usage_every_chunk.sse");
    let resp = resp.unwrap();
    assert_eq!(
        resp.content,
        vec![
            ContentBlock::Thinking {
                thinking: "The user wants the test count.".into(),
                signature: String::new()
            },
            ContentBlock::text("There are 42 tests."),
        ]
    );
    assert_eq!(resp.usage.cache_read_input_tokens, 640);
    assert_eq!(resp.usage.input_tokens, 260);
    assert_eq!(resp.usage.output_tokens, 60);
    assert!(events.contains(&ProviderEvent::ThinkingDelta {
        text: " wants the".into()
    }));
}

#[test]
fn comments_are_skipped_reasoning_is_not_doubled_and_a_midstream_error_is_reported() {
    let (resp, events) = run("comments_reasoning_midstream_error.sse");
    let failure = resp.unwrap_err();
    assert!(!failure.retryable, "a 400 inside the stream is not transient");
    assert_eq!(
        failure.message,
        "Provider returned error: input too long for this provider (code 400)"
    );
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Check the config.", "reasoning_details repeat `reasoning`");
}

#[test]
fn a_transient_midstream_error_is_retried() {
    let (resp, _) = run("midstream_rate_limit.sse");
    let f = resp.unwrap_err();
    assert!(f.retryable);
    assert!(f.message.contains("Rate limit reached"), "{}", f.message);
}

#[test]
fn null_tool_calls_empty_ids_and_reasoning_details() {
    let (resp, _) = run("null_tool_calls_reasoning_details.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::EndTurn);
    assert_eq!(
        resp.content,
        vec![
            ContentBlock::Thinking {
                thinking: "6 * 7 = 42".into(),
                signature: String::new()
            },
            ContentBlock::text("It is **42**."),
        ]
    );
    assert_eq!(resp.id, "");
    assert_eq!(resp.usage.output_tokens, 12);
}

#[test]
fn one_index_reused_for_several_calls_and_object_arguments() {
    let (resp, _) = run("index_reused_whole_arguments.sse");
    let resp = resp.unwrap();
    assert_eq!(
        resp.stop_reason,
        StopReason::ToolUse,
        "finish_reason stop despite calls"
    );
    assert_eq!(
        resp.content,
        vec![
            ContentBlock::ToolUse {
                id: "call_o1".into(),
                name: "Glob".into(),
                input: json!({"pattern": "**/*.rs"})
            },
            ContentBlock::ToolUse {
                id: "call_o2".into(),
                name: "Read".into(),
                input: json!({"file_path": "/srv/lib.rs"})
            },
        ]
    );
}

#[test]
fn missing_index_and_ids_get_distinct_calls_and_fresh_ids() {
    let (resp, _) = run("no_index_no_ids.sse");
    let resp = resp.unwrap();
    let calls: Vec<_> = resp
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].2, json!({"command": "ls"}));
    assert_eq!(calls[1].2, json!({"command": "pwd"}));
    assert_ne!(calls[0].0, calls[1].0);
    assert!(
        calls
            .iter()
            .all(|c| c.0.len() == 9 && c.0.chars().all(|ch| ch.is_ascii_alphanumeric()))
    );
    assert_eq!(resp.usage, Usage::default(), "no usage sent: none invented");
}

#[test]
fn content_filter_stops_as_refusal_and_says_so() {
    let (resp, events) = run("content_filter.sse");
    let resp = resp.unwrap();
    assert_eq!(resp.stop_reason, StopReason::Refusal);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ProviderEvent::Notice(m) if m.contains("content filter")))
    );
}

#[test]
fn broken_and_unfinished_streams() {
    let mut asm = Assembler::new();
    asm.handle("", r#"{"choices":[{"index":0,"delta":{"content":"half"}}]}"#)
        .unwrap();
    assert!(!asm.can_finish());
    let f = asm.finish().unwrap_err();
    assert!(f.retryable, "a stream cut before its finish_reason is retried");

    let mut asm = Assembler::new();
    assert!(asm.handle("", "{not json").unwrap_err().retryable);

    let mut asm = Assembler::new();
    asm.handle(
        "",
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"Read","arguments":"{\"a\":"}}]},"finish_reason":"tool_calls"}]}"#,
    )
    .unwrap();
    let resp = asm.finish().unwrap();
    assert!(
        matches!(&resp.broken_tool_calls[0].reason, BrokenReason::Malformed { raw, .. } if raw == "{\"a\":"),
        "{:?}",
        resp.broken_tool_calls
    );
    assert!(
        matches!(&resp.content[0], ContentBlock::ToolUse { input, .. } if input == &json!({})),
        "the malformed call stays in the history with empty input, never run"
    );

    // An `error` event with an overloaded server counts towards the fallback model.
    let mut asm = Assembler::new();
    let f = asm
        .handle("error", r#"{"error":{"message":"Overloaded","code":529}}"#)
        .unwrap_err();
    assert!(f.retryable && f.overloaded);
}
