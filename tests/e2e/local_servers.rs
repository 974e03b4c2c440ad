//! Local model servers as they behave (llama.cpp's `llama-server`, Ollama) and the failures
//! they show: a slot out of context part-way through an answer, a chat template without
//! tools, a context window other than the model's, retries behind a proxy, broken calls at an
//! output limit, and being stopped by a signal.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::openai::{chat_answer, chat_frames, fixture};
use crate::support::sse::{Block, answer};
use crate::support::{Env, ModelServer, Reply, finish};

/// llama.cpp's `/props` for a template that cannot take tools.
fn props_without_tools(n_ctx: u64) -> Reply {
    Reply::Json {
        status: 200,
        body: json!({
            "default_generation_settings": {"n_ctx": n_ctx},
            "total_slots": 4,
            "chat_template_caps": {"supports_tools": false, "supports_tool_calls": false, "supports_system_role": true}
        }),
        headers: Vec::new(),
    }
}

/// llama.cpp fails a stream part-way with "Context size has been exceeded." when its parallel
/// slots share one context. keel sends the request once more, not ten times, and says what it
/// means.
#[tokio::test]
async fn a_slot_out_of_context_mid_stream_is_retried_once_and_explained() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..5 {
        server.push(fixture("openai", "llamacpp_context_full_midstream.sse"));
    }
    let out = env
        .keel_openai(&server, "openai")
        .env("KEEL_MAX_RETRIES", "4")
        .args(["-p", "plan it", "--model", "qwen2.5-coder-7b-instruct-q4_k_m.gguf"])
        .run()
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(server.requests().len(), 2, "sent twice, no more: {}", out.stderr);
    let error = out.stderr.lines().find(|l| l.starts_with("Error:")).unwrap_or_default();
    assert!(error.contains("Context size has been exceeded."), "{}", out.stderr);
    assert!(error.contains("-np 1") && error.contains("larger -c"), "{}", out.stderr);
}

/// A chat template without tool support (llama.cpp `/props`: `supports_tools: false`) drops
/// every tool from the prompt: keel says so at start and in `keel doctor`.
#[tokio::test]
async fn a_template_without_tools_is_warned_about_at_start_and_in_doctor() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.route("/props", props_without_tools(8192));
    server.push(chat_answer("m.gguf", "hello"));
    let warning = "does not support tools (llama.cpp /props: supports_tools false)";
    let out = env
        .keel_openai(&server, "openai")
        .args(["-p", "hi", "--model", "m.gguf"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains(warning)).collect();
    assert_eq!(lines.len(), 1, "once: {}", out.stderr);
    assert!(lines[0].contains("--jinja"), "{}", lines[0]);
    let doctor = env
        .keel_offline()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("OPENAI_API_KEY", "k")
        .args(["doctor", "--provider", "openai", "--model", "m.gguf"])
        .run()
        .await;
    assert!(
        doctor.stdout.lines().any(|l| l.contains("WARN") && l.contains(warning)),
        "{}",
        doctor.stdout
    );
}

/// An Ollama-like server that serves `qwen3-coder:30b` (262,144 tokens in keel's table) with a
/// 32,768-token context, configured as the settings' model.
async fn ollama_with_small_context(env: &Env) -> ModelServer {
    let server = ModelServer::start().await;
    server.route(
        "/api/ps",
        Reply::Json {
            status: 200,
            body: json!({"models": [{"name": "qwen3-coder:30b", "model": "qwen3-coder:30b", "context_length": 32768}]}),
            headers: Vec::new(),
        },
    );
    let settings = json!({
        "model": "local/qwen3-coder:30b",
        "providers": {"local": {"type": "openai", "baseUrl": format!("{}/v1", server.url())}}
    });
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(env.home.join(".keel/settings.json"), settings.to_string()).unwrap();
    server
}

/// A model keel's table knows, served by a local server, gets the window the server uses (the
/// figure Ollama was started with), not the table's.
#[tokio::test]
async fn a_local_server_is_asked_for_the_window_before_the_table() {
    let env = Env::new();
    let _server = ollama_with_small_context(&env).await;
    // `/context` reports the window the session uses.
    let out = env.keel_offline().args(["-p", "/context"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("model qwen3-coder:30b, window 32768 tokens"),
        "{}",
        out.stdout
    );
}

/// `keel context` shows the model the settings configure, with the window a session would use.
#[tokio::test]
async fn keel_context_honours_the_configured_model() {
    let env = Env::new();
    let _server = ollama_with_small_context(&env).await;
    let context = env.keel_offline().arg("context").run().await;
    assert_eq!(context.code, 0, "{}", context.stderr);
    let first = context.stdout.lines().next().unwrap_or_default();
    assert!(
        first.contains("model qwen3-coder:30b, window 32768 tokens"),
        "{}",
        context.stdout
    );
}

/// Behind a proxy answering 502 for a dead server, each retry after the first few seconds is
/// announced with the total wait so far, not only the first.
#[tokio::test]
async fn a_long_retry_wait_is_announced_at_each_retry() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..4 {
        server.push(Reply::Json {
            status: 502,
            body: json!({"type": "error", "error": {"type": "api_error", "message": "bad gateway"}}),
            headers: vec![("retry-after".into(), "3".into())],
        });
    }
    let out = env
        .keel(&server)
        .env("KEEL_MAX_RETRIES", "3")
        .args(["-p", "x"])
        .run()
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let retries: Vec<&str> = out.stderr.lines().filter(|l| l.contains("retrying in")).collect();
    // Retries at about 0, 3 and 6 s: the third is past five seconds of waiting.
    assert!(retries.iter().any(|l| l.contains("attempt 1 of 3")), "{}", out.stderr);
    let third = retries
        .iter()
        .find(|l| l.contains("attempt 3 of 3"))
        .unwrap_or_else(|| panic!("the third retry is announced: {}", out.stderr));
    assert!(third.contains("since the first attempt"), "{third}");
}

/// The assistant message of the `n`th request's history (OpenAI wire: text content).
fn assistant_text(requests: &[crate::support::Recorded], n: usize) -> String {
    let messages = requests[n].body["messages"].as_array().unwrap();
    let m = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .expect("an assistant message");
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// At a `length` stop, finished calls whose arguments are broken are malformed (the model is
/// told the JSON was wrong), not "cut off"; a call that really was cut leaves no "(no output)"
/// in the history but what happened.
#[tokio::test]
async fn broken_calls_at_a_length_stop_are_told_as_they_are() {
    let env = Env::new();
    env.write("notes.txt", "some notes\n");
    let server = ModelServer::start().await;
    server
        .push(fixture("openai", "llamacpp_length_broken_finished_calls.sse"))
        .push(Reply::Sse {
            chunks: chat_frames(
                "m.gguf",
                &[Block::RawTool {
                    id: "call_cut".into(),
                    name: "Write".into(),
                    fragments: vec!["{\"file_path\": \"big.txt\", \"content\": \"line 1\\nli".into()],
                }],
                "length",
            ),
            pace: Duration::ZERO,
        })
        .push(chat_answer("m.gguf", "done"));
    let out = env
        .keel_openai(&server, "openai")
        .args(["-p", "go", "--model", "m.gguf", "--permission-mode", "acceptEdits"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let result = |n: usize, id: &str| -> String {
        let messages = requests[n].body["messages"].as_array().unwrap();
        let m = messages
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}"));
        m["content"].as_str().unwrap_or_default().to_string()
    };
    let broken = result(1, "call_lcppB");
    assert!(broken.contains("was not valid JSON"), "{broken}");
    assert!(!broken.contains("cut off"), "{broken}");
    assert!(result(1, "call_lcppA").contains("some notes"));
    let placeholder = assistant_text(&requests, 2);
    assert!(!placeholder.contains("(no output)"), "{placeholder}");
    assert!(
        placeholder.contains("output token limit cut this response off while a call to Write"),
        "{placeholder}"
    );
}

/// SIGTERM from a supervisor is not "interrupted by the user".
#[tokio::test]
async fn sigterm_is_reported_as_sigterm() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(Reply::Hang).push(answer("never"));
    let child = env.keel(&server).args(["-p", "x", "--output-format", "json"]).spawn();
    let start = Instant::now();
    while server.requests().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "keel sent no request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = child.id().expect("keel runs") as i32;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = finish(child).await;
    assert_eq!(out.code, 128 + 15, "{}", out.stderr);
    let r = out.json();
    let error = r["errors"][0].as_str().unwrap_or_default();
    assert!(error.contains("SIGTERM"), "{r}");
    assert!(!error.contains("by the user"), "{r}");
}

/// A server that counts 40% more tokens than keel's four bytes per token (as a tokenizer for
/// code can): usage reports its count, and a request over its window is refused the way
/// llama.cpp refuses it.
fn counting_server(server: &ModelServer, window: u64, refused: std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    let turn = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    server.respond_with(move |body: &Value| {
        let count = serde_json::to_vec(body).unwrap().len() as u64 * 14 / 40;
        if count > window {
            refused.fetch_add(1, Ordering::SeqCst);
            return Some(Reply::Json {
                status: 400,
                body: json!({"error": {"code": 400, "type": "exceed_context_size_error",
                    "message": format!("the request exceeds the available context size, try increasing it ({count} > {window})")}}),
                headers: Vec::new(),
            });
        }
        let summary = body["messages"].to_string().contains("[keel: compaction]");
        let blocks = if summary {
            vec![Block::Text("## Current work\nReading big.txt.\n## Next step\nAnswer.".into())]
        } else {
            match turn.fetch_add(1, Ordering::SeqCst) {
                0 => vec![Block::Tool {
                    id: "r1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "a.txt"}),
                }],
                1 => vec![Block::Tool {
                    id: "r2".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "b.txt"}),
                }],
                _ => vec![Block::Text("done".into())],
            }
        };
        let finish = if matches!(blocks[0], Block::Tool { .. }) { "tool_calls" } else { "stop" };
        let mut chunks = chat_frames("m.gguf", &blocks, finish);
        let usage = chunks.len() - 2;
        chunks[usage] = format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-count", "object": "chat.completion.chunk", "created": 1767000000, "model": "m.gguf",
                "choices": [], "usage": {"prompt_tokens": count, "completion_tokens": 30, "total_tokens": count + 30}})
        );
        Some(Reply::Sse { chunks, pace: Duration::ZERO })
    });
}

/// keel's estimate runs short of this server's count; it learns by how much from the first
/// answer, and a request that would pass the window with that shortfall is made smaller first
/// (the view tiers, then compaction) instead of being sent and refused. With Read the only
/// tool (a small fixed prefix) the third request is about 9,800 tokens by keel's plain
/// estimate, under the 10,744 the 11,000-token window leaves for input, and about 12,000 by
/// the server's count: sent as it is, it would be refused.
#[tokio::test]
async fn a_request_the_server_would_count_past_its_window_is_not_sent() {
    const WINDOW: u64 = 11_000;
    let env = Env::new();
    let line = "x".repeat(91);
    env.write("a.txt", &format!("{line}\n").repeat(105));
    env.write("b.txt", &format!("{line}\n").repeat(200));
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = ModelServer::start().await;
    counting_server(&server, WINDOW, refused.clone());
    let out = env
        .keel_openai(&server, "openai")
        .env("KEEL_CONTEXT_WINDOW", WINDOW.to_string())
        .env("KEEL_AUTOCOMPACT_PCT", "100")
        .args([
            "-p",
            "read a.txt and b.txt",
            "--model",
            "m.gguf",
            "--tools",
            "Read",
            "--settings",
        ])
        .arg(json!({"models": {"m.gguf": {"maxOutputTokens": 256}}}).to_string())
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        refused.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a request was sent past the window: {}",
        out.stderr
    );
}
