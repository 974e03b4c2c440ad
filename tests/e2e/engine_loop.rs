//! The agent loop end to end: real binary, real tools, scripted model server.

use serde_json::json;

use crate::support::sse::{answer, calls, text, tool};
use crate::support::{Env, ModelServer};

#[tokio::test]
async fn multi_turn_tool_loop_feeds_real_results_back() {
    let env = Env::new();
    env.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    env.write("src/main.rs", "fn main() {}\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            text("Let me look."),
            tool("t1", "Glob", json!({"pattern": "**/*.rs"})),
        ]))
        .push(calls(vec![tool(
            "t2",
            "Grep",
            json!({"pattern": "fn answer", "output_mode": "content"}),
        )]))
        .push(calls(vec![tool(
            "t3",
            "Read",
            json!({"file_path": env.path("src/lib.rs")}),
        )]))
        .push(answer("answer() returns 42."));
    let out = env.keel(&server).args(["-p", "what does answer return?"]).run().await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "answer() returns 42.");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].header("x-api-key"), Some("test-key"));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(reqs[0].body["stream"], true);
    let tool_names = reqs[0].tool_names();
    assert!(
        ["Read", "Glob", "Grep"]
            .iter()
            .all(|n| tool_names.iter().any(|t| t == n)),
        "{tool_names:?}"
    );

    let (glob, err) = reqs[1].tool_result_text("t1");
    assert!(!err);
    assert!(glob.contains(&env.path("src/lib.rs").display().to_string()), "{glob}");
    assert!(glob.contains(&env.path("src/main.rs").display().to_string()), "{glob}");
    let (grep, err) = reqs[2].tool_result_text("t2");
    assert!(!err);
    assert!(grep.contains("lib.rs:1:pub fn answer() -> u32 {"), "{grep}");
    let (read, err) = reqs[3].tool_result_text("t3");
    assert!(!err);
    assert!(read.contains("     2\t    42"), "{read}");
    // The assistant's tool_use travels back verbatim, followed by its result.
    let msgs = reqs[3].messages();
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"][1]["input"], json!({"pattern": "**/*.rs"}));
}

#[tokio::test]
async fn parallel_read_only_calls_answer_in_model_order() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");
    env.write("c.txt", "gamma\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("r1", "Read", json!({"file_path": env.path("a.txt")})),
            tool("r2", "Grep", json!({"pattern": "beta", "output_mode": "content"})),
            tool("r3", "Read", json!({"file_path": env.path("c.txt")})),
        ]))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "read them"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests()[1].tool_results();
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["r1", "r2", "r3"]);
    assert!(results[0]["content"].as_str().unwrap().contains("alpha"));
    assert!(results[1]["content"].as_str().unwrap().contains("b.txt:1:beta"));
    assert!(results[2]["content"].as_str().unwrap().contains("gamma"));
}

#[tokio::test]
async fn unknown_tool_gets_error_listing_valid_names() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("u1", "ReadFile", json!({"path": "x"}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("u1");
    assert!(is_error);
    assert!(text.contains("ReadFile"), "{text}");
    for name in ["Read", "Glob", "Grep"] {
        assert!(text.contains(name), "{text}");
    }
}

#[tokio::test]
async fn schema_violation_names_each_field_and_does_not_run() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "s1",
            "Read",
            json!({"offset": "ten", "filepath": "/etc/hostname"}),
        )]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("s1");
    assert!(is_error);
    assert!(text.contains("`file_path` is required"), "{text}");
    assert!(text.contains("`offset`"), "{text}");
    assert!(text.contains("`filepath`"), "{text}");
    assert!(text.contains("not run"), "{text}");
}

#[tokio::test]
async fn invalid_regex_is_an_error_not_no_matches() {
    let env = Env::new();
    env.write("x.rs", "fn main() {}\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g1", "Grep", json!({"pattern": "fn main("}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("g1");
    assert!(is_error, "{text}");
    assert!(text.contains("invalid regular expression"), "{text}");
    assert!(!text.contains("No files found"), "{text}");
}

#[tokio::test]
async fn max_turns_stops_with_error_subtype() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    let server = ModelServer::start().await;
    for i in 0..3 {
        server.push(calls(vec![tool(&format!("m{i}"), "Glob", json!({"pattern": "*.txt"}))]));
    }
    let out = env
        .keel(&server)
        .args(["-p", "loop", "--max-turns", "2", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    let result = out.json();
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["num_turns"], 2);
    assert!(result.get("result").is_none());
    assert_eq!(server.requests().len(), 2);
    // The text form names the limit.
    let server = ModelServer::start().await;
    for i in 0..2 {
        server.push(calls(vec![tool(&format!("n{i}"), "Glob", json!({"pattern": "*.txt"}))]));
    }
    let out = env.keel(&server).args(["-p", "loop", "--max-turns", "1"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("Reached max turns (1)"), "{}", out.stderr);
}

#[tokio::test]
async fn thinking_blocks_are_sent_back_unchanged() {
    use crate::support::Reply;
    let env = Env::new();
    env.write("a.txt", "x\n");
    let server = ModelServer::start().await;
    let mut chunks = vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_th\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n".to_string(),
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n".to_string(),
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"check a.txt\"}}\n\n".to_string(),
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2lnLTE=\"}}\n\n".to_string(),
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n".to_string(),
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"b3BhcXVl\"}}\n\n".to_string(),
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n".to_string(),
    ];
    chunks.extend(
        crate::support::sse::frames(&[tool("th1", "Glob", json!({"pattern": "*.txt"}))], "tool_use", 5, 9)
            .into_iter()
            .filter(|c| !c.contains("message_start"))
            .map(|c| c.replace("\"index\":0", "\"index\":2")),
    );
    server
        .push(Reply::Sse {
            chunks,
            pace: std::time::Duration::ZERO,
        })
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let msgs = server.requests()[1].messages().clone();
    assert_eq!(
        msgs[1]["content"][0],
        json!({"type": "thinking", "thinking": "check a.txt", "signature": "c2lnLTE="})
    );
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "redacted_thinking", "data": "b3BhcXVl"})
    );
    assert_eq!(msgs[1]["content"][2]["type"], "tool_use");
}

#[tokio::test]
async fn malformed_tool_json_reaches_the_model_as_an_error() {
    use crate::support::Reply;
    let env = Env::new();
    let server = ModelServer::start().await;
    let broken = crate::support::sse::Block::RawTool {
        id: "bad1".into(),
        name: "Glob".into(),
        fragments: vec!["{\"pattern\": ".into(), "\"*.rs\",,}".into()],
    };
    let chunks = crate::support::sse::frames(&[broken], "tool_use", 5, 9);
    server
        .push(Reply::Sse {
            chunks,
            pace: std::time::Duration::ZERO,
        })
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("bad1");
    assert!(is_error);
    assert!(text.contains("not valid JSON"), "{text}");
}
