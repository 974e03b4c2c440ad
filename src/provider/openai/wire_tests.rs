//! What the OpenAI-style encoders send, and that reusing earlier encodings changes nothing.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{chat, responses};
use crate::provider::prefix::PrefixCache;
use crate::provider::reasoning;
use crate::provider::{ModelRequest, SystemBlock, ToolDefinition, ToolSet};
use crate::types::message::{ContentBlock, ImageSource, Message, ToolResultBlock, ToolResultContent};

fn tools() -> ToolSet {
    ToolSet::new(vec![ToolDefinition {
        name: "Read".into(),
        description: "Reads a file".into(),
        input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
        cache_control: None,
    }])
}

fn image() -> ImageSource {
    ImageSource {
        kind: "base64".into(),
        media_type: "image/png".into(),
        data: "iVBORw0K".into(),
    }
}

/// A tool loop: question, reasoning + text + call, result (plus an image and a reminder).
fn history() -> Vec<Message> {
    vec![
        Message::user_text("What is in main.rs?"),
        Message::assistant(vec![
            ContentBlock::Thinking {
                thinking: "look first".into(),
                signature: String::new(),
            },
            ContentBlock::Thinking {
                thinking: "anthropic's".into(),
                signature: "EqQBCgIYAh".into(),
            },
            ContentBlock::Thinking {
                thinking: "plan".into(),
                signature: reasoning::responses_signature(Some("gAAAAenc")),
            },
            ContentBlock::text("Reading it."),
            ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "Read".into(),
                input: json!({"file_path": "/w/main.rs"}),
            },
        ]),
        Message {
            role: crate::types::message::Role::User,
            content: vec![
                ContentBlock::tool_result(
                    "call_1",
                    ToolResultContent::Blocks(vec![
                        ToolResultBlock::Text {
                            text: "fn main() {}".into(),
                        },
                        ToolResultBlock::Image { source: image() },
                    ]),
                    false,
                ),
                ContentBlock::text("<system-reminder>nested CLAUDE.md</system-reminder>"),
            ],
        },
    ]
}

fn request(model: &str, messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        max_tokens: 4096,
        system: vec![SystemBlock::text("You are keel."), SystemBlock::text("Project facts.")],
        messages: Arc::new(messages),
        tools: tools(),
        cache_breakpoints: vec![0],
        unchanged: None,
        reasoning: Default::default(),
    }
}

fn chat_body(model: &str, messages: Vec<Message>, cache: &PrefixCache) -> Value {
    let r = request(model, messages);
    let t = chat::wire::tools(&r.tools).unwrap();
    serde_json::from_slice(&chat::wire::body(&r, &t, cache).unwrap()).unwrap()
}

fn responses_body(model: &str, messages: Vec<Message>, cache: &PrefixCache) -> Value {
    let r = request(model, messages);
    let t = responses::wire::tools(&r.tools).unwrap();
    serde_json::from_slice(&responses::wire::body(&r, &t, cache).unwrap()).unwrap()
}

#[test]
fn chat_request_has_the_protocol_shape() {
    let body = chat_body("gpt-4o", history(), &PrefixCache::default());
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], 4096);
    assert!(body.get("max_tokens").is_none());
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "Read", "description": "Reads a file",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are keel.\n\nProject facts."},
            {"role": "user", "content": "What is in main.rs?"},
            {"role": "assistant", "content": "Reading it.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"/w/main.rs\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}[image image/png attached below]"},
            {"role": "user", "content": [
                {"type": "text", "text": "Image from the result of tool call call_1:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                {"type": "text", "text": "<system-reminder>nested CLAUDE.md</system-reminder>"}
            ]}
        ])
    );
}

#[test]
fn chat_follows_the_model_table() {
    // A local model: `max_tokens`, no images (a marker instead), no reasoning sent back.
    let body = chat_body("qwen3-coder:30b", history(), &PrefixCache::default());
    assert_eq!(body["max_tokens"], 4096);
    let msgs = body["messages"].as_array().unwrap();
    assert!(msgs[2].get("reasoning_content").is_none());
    let last = msgs.last().unwrap();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("omitted: this model does not accept images")
    );
    // OpenAI's reasoning models take instructions as `developer`.
    let body = chat_body("o3", history(), &PrefixCache::default());
    assert_eq!(body["messages"][0]["role"], "developer");
    // DeepSeek's thinking mode wants its own reasoning back, and only its own.
    let body = chat_body("deepseek-reasoner", history(), &PrefixCache::default());
    assert_eq!(body["messages"][2]["reasoning_content"], "look first");
    // A model without tools gets none offered.
    let body = chat_body("gemma3:4b", history(), &PrefixCache::default());
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
}

#[test]
fn errors_are_marked_and_an_assistant_without_text_has_null_content() {
    let msgs = vec![
        Message::user_text("go"),
        Message::assistant(vec![ContentBlock::ToolUse {
            id: "c".into(),
            name: "Read".into(),
            input: json!({}),
        }]),
        Message {
            role: crate::types::message::Role::User,
            content: vec![ContentBlock::tool_result(
                "c",
                ToolResultContent::Text("File does not exist.".into()),
                true,
            )],
        },
    ];
    let body = chat_body("gpt-4.1", msgs, &PrefixCache::default());
    assert_eq!(body["messages"][2]["content"], Value::Null);
    assert_eq!(body["messages"][3]["content"], "Error: File does not exist.");
}

#[test]
fn responses_request_has_the_protocol_shape() {
    let body = responses_body("gpt-5", history(), &PrefixCache::default());
    assert_eq!(body["instructions"], "You are keel.\n\nProject facts.");
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_output_tokens"], 4096);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["reasoning"], json!({"summary": "auto"}));
    assert_eq!(body["tools"][0]["name"], "Read");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is in main.rs?"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "gAAAAenc"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}]},
            {"type": "function_call", "call_id": "call_1", "name": "Read", "arguments": "{\"file_path\":\"/w/main.rs\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "fn main() {}[image image/png attached below]"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K"}
            ]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<system-reminder>nested CLAUDE.md</system-reminder>"}]}
        ])
    );
    // `--effort` reaches reasoning models in OpenAI's words.
    let mut r = request("gpt-5", history());
    r.reasoning.effort = Some("max".into());
    let t = responses::wire::tools(&r.tools).unwrap();
    let body: Value = serde_json::from_slice(&responses::wire::body(&r, &t, &PrefixCache::default()).unwrap()).unwrap();
    assert_eq!(body["reasoning"], json!({"summary": "auto", "effort": "high"}));
    let mut r = request("o3", history());
    r.reasoning.effort = Some("low".into());
    let t = chat::wire::tools(&r.tools).unwrap();
    let body: Value = serde_json::from_slice(&chat::wire::body(&r, &t, &PrefixCache::default()).unwrap()).unwrap();
    assert_eq!(body["reasoning_effort"], "low");
    let mut r = request("qwen3-coder", history());
    r.reasoning.effort = Some("low".into());
    let body: Value = serde_json::from_slice(&chat::wire::body(&r, &t, &PrefixCache::default()).unwrap()).unwrap();
    assert!(
        body.get("reasoning_effort").is_none(),
        "only OpenAI's reasoning models take it"
    );
    // Not a reasoning model: no reasoning options.
    let body = responses_body("gpt-4.1", history(), &PrefixCache::default());
    assert!(body.get("include").is_none() && body.get("reasoning").is_none());
}

/// Every protocol's cached encoding equals a fresh one across appends, a grown last message,
/// a replaced history and a model change.
#[test]
fn cached_encodings_equal_fresh_ones() {
    let mut steps: Vec<(String, Vec<Message>)> = Vec::new();
    let mut h = history();
    steps.push(("gpt-4o".into(), h.clone()));
    h.push(Message::assistant(vec![ContentBlock::text("It has a main.")]));
    steps.push(("gpt-4o".into(), h.clone()));
    h.push(Message::user_text("and lib.rs?"));
    steps.push(("gpt-4o".into(), h.clone()));
    h.last_mut().unwrap().content.push(ContentBlock::text("(also tests)"));
    steps.push(("gpt-4o".into(), h.clone()));
    steps.push(("deepseek-reasoner".into(), h.clone()));
    steps.push(("gpt-4o".into(), vec![Message::user_text("compacted hand-off")]));
    let chat_cache = PrefixCache::default();
    let responses_cache = PrefixCache::default();
    let anthropic_cache = PrefixCache::default();
    for (model, msgs) in steps {
        assert_eq!(
            chat_body(&model, msgs.clone(), &chat_cache),
            chat_body(&model, msgs.clone(), &PrefixCache::default()),
            "chat, {model}, {} messages",
            msgs.len()
        );
        assert_eq!(
            responses_body(&model, msgs.clone(), &responses_cache),
            responses_body(&model, msgs.clone(), &PrefixCache::default())
        );
        let mut r = request(&model, msgs);
        r.cache_breakpoints = crate::provider::prefix::tail_breakpoints(&r.messages);
        let cached = crate::provider::anthropic::cached_wire_body(&r, &anthropic_cache).unwrap();
        assert_eq!(cached, crate::provider::anthropic::wire_body(&r).unwrap());
    }
}

#[test]
fn anthropic_never_receives_foreign_reasoning() {
    let r = request("claude-sonnet-4-5", history());
    let body: Value = serde_json::from_slice(&crate::provider::anthropic::wire_body(&r).unwrap()).unwrap();
    let assistant = &body["messages"][1]["content"];
    let thinking: Vec<&Value> = assistant
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "thinking")
        .collect();
    assert_eq!(thinking.len(), 1);
    assert_eq!(thinking[0]["signature"], "EqQBCgIYAh");
}
