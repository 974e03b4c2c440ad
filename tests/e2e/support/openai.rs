//! Builders for OpenAI-style streams (Chat Completions and Responses), written the way the
//! servers write them, and keel's fixtures served as recorded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::server::Reply;
use super::sse::Block;

static NEXT: AtomicU64 = AtomicU64::new(1);

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// One Chat Completions response: text deltas, then tool calls (id and name in the first
/// fragment, arguments split mid-key), the finish reason, a usage-only chunk and `[DONE]`.
pub fn chat_frames(model: &str, blocks: &[Block], finish: &str) -> Vec<String> {
    let id = format!("chatcmpl-test{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": id, "object": "chat.completion.chunk", "created": 1767000000, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]}),
        )
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    let mut index = 0;
    for b in blocks {
        match b {
            Block::Text(t) => {
                for p in pieces(t, 6) {
                    out.push(chunk(json!({"content": p}), Value::Null));
                }
            }
            Block::Tool { id, name, input } => {
                out.push(chunk(
                    json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for p in pieces(&input.to_string(), 7) {
                    out.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": p}}]}),
                        Value::Null,
                    ));
                }
                index += 1;
            }
            Block::RawTool { id, name, fragments } => {
                out.push(chunk(
                    json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for p in fragments {
                    out.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": p}}]}),
                        Value::Null,
                    ));
                }
                index += 1;
            }
        }
    }
    out.push(chunk(json!({}), json!(finish)));
    out.push(data(json!({"id": id, "object": "chat.completion.chunk", "created": 1767000000, "model": model, "choices": [],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "prompt_tokens_details": {"cached_tokens": 100}}})));
    out.push("data: [DONE]\n\n".to_string());
    out
}

pub fn chat_answer(model: &str, text: &str) -> Reply {
    Reply::Sse {
        chunks: chat_frames(model, &[Block::Text(text.into())], "stop"),
        pace: Duration::ZERO,
    }
}

pub fn chat_calls(model: &str, blocks: Vec<Block>) -> Reply {
    Reply::Sse {
        chunks: chat_frames(model, &blocks, "tool_calls"),
        pace: Duration::ZERO,
    }
}

/// One Responses stream: optional reasoning (summary and encrypted content), text, calls.
pub fn responses_frames(model: &str, reasoning: Option<(&str, &str)>, blocks: &[Block], status: &str) -> Vec<String> {
    let id = format!("resp_test{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let mut seq = 0;
    let mut ev = |kind: &str, mut v: Value| {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(seq);
        seq += 1;
        format!("event: {kind}\ndata: {v}\n\n")
    };
    let response =
        |status: &str| json!({"id": id, "object": "response", "status": status, "model": model, "output": []});
    let mut out = vec![ev("response.created", json!({"response": response("in_progress")}))];
    let mut index = 0;
    if let Some((summary, encrypted)) = reasoning {
        out.push(ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": "rs_t", "type": "reasoning", "summary": []}}),
        ));
        out.push(ev(
            "response.reasoning_summary_text.delta",
            json!({"output_index": index, "item_id": "rs_t", "summary_index": 0, "delta": summary}),
        ));
        out.push(ev(
            "response.output_item.done",
            json!({"output_index": index, "item": {"id": "rs_t", "type": "reasoning",
                "summary": [{"type": "summary_text", "text": summary}], "encrypted_content": encrypted}}),
        ));
        index += 1;
    }
    for b in blocks {
        match b {
            Block::Text(t) => {
                out.push(ev(
                    "response.output_item.added",
                    json!({"output_index": index, "item": {"id": format!("msg_{index}"), "type": "message", "role": "assistant", "content": []}}),
                ));
                for p in pieces(t, 6) {
                    out.push(ev(
                        "response.output_text.delta",
                        json!({"output_index": index, "item_id": format!("msg_{index}"), "content_index": 0, "delta": p}),
                    ));
                }
                out.push(ev(
                    "response.output_item.done",
                    json!({"output_index": index, "item": {"id": format!("msg_{index}"), "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": t}]}}),
                ));
            }
            Block::Tool { id, name, input } => {
                let args = input.to_string();
                out.push(ev(
                    "response.output_item.added",
                    json!({"output_index": index, "item": {"id": format!("fc_{index}"), "type": "function_call", "call_id": id, "name": name, "arguments": ""}}),
                ));
                for p in pieces(&args, 7) {
                    out.push(ev(
                        "response.function_call_arguments.delta",
                        json!({"output_index": index, "item_id": format!("fc_{index}"), "delta": p}),
                    ));
                }
                out.push(ev(
                    "response.output_item.done",
                    json!({"output_index": index, "item": {"id": format!("fc_{index}"), "type": "function_call", "call_id": id,
                        "name": name, "arguments": args, "status": "completed"}}),
                ));
            }
            Block::RawTool { .. } => unimplemented!("not needed by the Responses tests"),
        }
        index += 1;
    }
    let mut done = response(status);
    done["usage"] = json!({"input_tokens": 500, "input_tokens_details": {"cached_tokens": 400}, "output_tokens": 40});
    let kind = if status == "completed" {
        "response.completed"
    } else {
        done["incomplete_details"] = json!({"reason": "max_output_tokens"});
        "response.incomplete"
    };
    out.push(ev(kind, json!({ "response": done })));
    out
}

pub fn responses_reply(model: &str, reasoning: Option<(&str, &str)>, blocks: Vec<Block>) -> Reply {
    Reply::Sse {
        chunks: responses_frames(model, reasoning, &blocks, "completed"),
        pace: Duration::ZERO,
    }
}

/// A recorded-style stream from `tests/fixtures/<dir>/<name>`, one event per chunk.
pub fn fixture(dir: &str, name: &str) -> Reply {
    let path = format!("{}/tests/fixtures/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Reply::Sse {
        chunks: text.split_inclusive("\n\n").map(str::to_string).collect(),
        pace: Duration::ZERO,
    }
}
