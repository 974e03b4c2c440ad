//! Encoding benchmark: the CPU one request body costs as a conversation grows, for each
//! protocol, encoding everything (what keel did before) and reusing the earlier encodings
//! (`provider::prefix`, what each provider does now: compare, encode the new exchange, copy).
//!
//! Run: `cargo run --release --example encode_bench`. The history is uncompacted (each
//! exchange a Read call and a 1.5 KB result), so it shows the encoder alone, at its largest.

// Benchmark code: a failed unwrap is a failed run, reported with its panic message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A benchmark prints its own measurements.
#![allow(clippy::disallowed_macros)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use keel::provider::prefix::PrefixCache;
use keel::provider::{ModelRequest, SystemBlock, ToolSet};
use keel::tools::builtin_tools;
use keel::tools::registry::ToolRegistry;
use keel::types::message::{ContentBlock, Message, Role, ToolResultContent};

fn thread_cpu() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

fn history(exchanges: usize) -> Vec<Message> {
    let mut out = vec![Message::user_text(
        "Survey the repository and fix the failing parser test.",
    )];
    let body: String = (0..30)
        .map(|i| format!("    let value_{i} = compute(input, {i}); // TODO check\n"))
        .collect();
    for n in 0..exchanges {
        out.push(Message::assistant(vec![
            ContentBlock::text(format!("Step {n}: reading the next module.")),
            ContentBlock::ToolUse {
                id: format!("toolu_{n:05}"),
                name: "Read".into(),
                input: json!({"file_path": format!("/srv/repo/src/mod{}/file{n}.rs", n % 5), "offset": 1, "limit": 40}),
            },
        ]));
        out.push(Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(
                format!("toolu_{n:05}"),
                ToolResultContent::Text(body.clone()),
                false,
            )],
        });
    }
    out
}

fn request(messages: &[Message], tools: &ToolSet) -> ModelRequest {
    ModelRequest {
        model: "gpt-4.1".into(),
        max_tokens: 8192,
        system: vec![SystemBlock::text("You are keel, a coding agent.".repeat(200))],
        messages: Arc::new(messages.to_vec()),
        tools: tools.clone(),
        cache_breakpoints: keel::context::assemble::tail_breakpoints(messages),
        reasoning: Default::default(),
        unchanged: None,
    }
}

type Encode = dyn Fn(&ModelRequest, &PrefixCache) -> usize;

/// Median CPU of encoding the request that ends at `len` messages, warm cache (the previous
/// request ended two messages earlier) and cold (everything encoded).
fn measure(all: &[Message], len: usize, tools: &ToolSet, encode: &Encode) -> (Duration, Duration, usize) {
    let before = request(&all[..len - 2], tools);
    let now = request(&all[..len], tools);
    let mut warm = Vec::new();
    let mut cold = Vec::new();
    let mut bytes = 0;
    for _ in 0..15 {
        let cache = PrefixCache::default();
        encode(&before, &cache);
        let t = thread_cpu();
        bytes = encode(&now, &cache);
        warm.push(thread_cpu() - t);
        let t = thread_cpu();
        encode(&now, &PrefixCache::default());
        cold.push(thread_cpu() - t);
    }
    warm.sort();
    cold.sort();
    (warm[warm.len() / 2], cold[cold.len() / 2], bytes)
}

fn main() {
    let registry = ToolRegistry::new(builtin_tools()).expect("registry");
    let tools = registry.tool_set().clone();
    let all = history(1000);
    let chat_tools = keel::provider::openai::chat::wire::tools(&tools).expect("tools");
    let responses_tools = keel::provider::openai::responses::wire::tools(&tools).expect("tools");
    let anthropic =
        |r: &ModelRequest, c: &PrefixCache| keel::provider::anthropic::cached_wire_body(r, c).expect("encode").len();
    let chat = move |r: &ModelRequest, c: &PrefixCache| {
        keel::provider::openai::chat::wire::body(r, &chat_tools, c)
            .expect("encode")
            .len()
    };
    let responses = move |r: &ModelRequest, c: &PrefixCache| {
        keel::provider::openai::responses::wire::body(r, &responses_tools, c)
            .expect("encode")
            .len()
    };
    let protocols: [(&str, &Encode); 3] = [
        ("anthropic", &anthropic),
        ("openai (chat)", &chat),
        ("openai-responses", &responses),
    ];
    println!("| protocol | turn | body | whole body encoded | reusing earlier encodings |");
    println!("|---|---|---|---|---|");
    for (name, encode) in protocols {
        for turns in [10, 100, 500, 1000] {
            let (warm, cold, bytes) = measure(&all, 1 + 2 * turns, &tools, encode);
            println!(
                "| {name} | {turns} | {:.0} KB | {:.3} ms | {:.3} ms |",
                bytes as f64 / 1024.0,
                cold.as_secs_f64() * 1000.0,
                warm.as_secs_f64() * 1000.0
            );
        }
    }
}
