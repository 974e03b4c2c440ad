//! Builders for Anthropic Messages SSE streams, written the way the API writes them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::server::Reply;

#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        input: Value,
    },
    /// A tool call whose input fragments are sent exactly as given (for broken JSON).
    RawTool {
        id: String,
        name: String,
        fragments: Vec<String>,
    },
}

pub fn text(s: &str) -> Block {
    Block::Text(s.to_string())
}

pub fn tool(id: &str, name: &str, input: Value) -> Block {
    Block::Tool {
        id: id.to_string(),
        name: name.to_string(),
        input,
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The SSE events of one complete message, one event per chunk.
pub fn frames(blocks: &[Block], stop_reason: &str, input_tokens: u64, output_tokens: u64) -> Vec<String> {
    let id = format!("msg_test_{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let mut out = vec![event(
        "message_start",
        json!({"type":"message_start","message":{"id":id,"type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":input_tokens,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}),
    )];
    out.push(event("ping", json!({"type": "ping"})));
    for (i, b) in blocks.iter().enumerate() {
        match b {
            Block::Text(t) => {
                out.push(event(
                    "content_block_start",
                    json!({"type":"content_block_start","index":i,"content_block":{"type":"text","text":""}}),
                ));
                for piece in split_words(t) {
                    out.push(event(
                        "content_block_delta",
                        json!({"type":"content_block_delta","index":i,"delta":{"type":"text_delta","text":piece}}),
                    ));
                }
            }
            Block::RawTool { id, name, fragments } => {
                out.push(event(
                    "content_block_start",
                    json!({"type":"content_block_start","index":i,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
                ));
                for piece in fragments {
                    out.push(event(
                        "content_block_delta",
                        json!({"type":"content_block_delta","index":i,"delta":{"type":"input_json_delta","partial_json":piece}}),
                    ));
                }
            }
            Block::Tool { id, name, input } => {
                out.push(event(
                    "content_block_start",
                    json!({"type":"content_block_start","index":i,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
                ));
                let json = input.to_string();
                out.push(event(
                    "content_block_delta",
                    json!({"type":"content_block_delta","index":i,"delta":{"type":"input_json_delta","partial_json":""}}),
                ));
                // Split the JSON at arbitrary byte positions (mid-key), as the API does.
                for piece in split_json(&json) {
                    out.push(event(
                        "content_block_delta",
                        json!({"type":"content_block_delta","index":i,"delta":{"type":"input_json_delta","partial_json":piece}}),
                    ));
                }
            }
        }
        out.push(event(
            "content_block_stop",
            json!({"type":"content_block_stop","index":i}),
        ));
    }
    out.push(event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop_reason,"stop_sequence":null},"usage":{"output_tokens":output_tokens}}),
    ));
    out.push(event("message_stop", json!({"type":"message_stop"})));
    out
}

fn split_words(t: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in t.chars() {
        cur.push(c);
        if c == ' ' && cur.len() > 6 {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn split_json(json: &str) -> Vec<String> {
    let chars: Vec<char> = json.chars().collect();
    chars.chunks(7).map(|c| c.iter().collect()).collect()
}

/// A final answer: one text block, `end_turn`.
pub fn answer(s: &str) -> Reply {
    Reply::Sse {
        chunks: frames(&[text(s)], "end_turn", 100, 20),
        pace: Duration::ZERO,
    }
}

/// A turn that calls tools (optionally after some text), `tool_use`.
pub fn calls(blocks: Vec<Block>) -> Reply {
    Reply::Sse {
        chunks: frames(&blocks, "tool_use", 100, 30),
        pace: Duration::ZERO,
    }
}

/// An API error reply in the real error body shape.
pub fn api_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::Json {
        status,
        body: json!({"type":"error","error":{"type":kind,"message":message},"request_id":"req_test"}),
        headers: vec![("retry-after".into(), "0".into())],
    }
}
