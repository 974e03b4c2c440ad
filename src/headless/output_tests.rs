//! Golden tests of every stream-json line class keel prints: the exact keys, their order and
//! values, with the per-line `uuid` and `timestamp` checked for form and then fixed.

use serde_json::{Value, json};

use super::*;
use crate::engine::session::{Denial, Totals};
use crate::engine::{ResultSubtype, TerminalReason, TurnOutcome};
use crate::types::message::{ContentBlock, Message, ToolResultContent, Usage};

/// The line with `uuid` and `timestamp` replaced after checking their form; the key order is
/// kept (serde_json preserves it), so comparing the serialized text checks it too.
fn golden(mut v: Value) -> String {
    if let Value::Object(m) = &mut v {
        if let Some(u) = m.get_mut("uuid") {
            assert!(uuid::Uuid::parse_str(u.as_str().unwrap()).is_ok(), "uuid {u}");
            *u = "<uuid>".into();
        }
        if let Some(t) = m.get_mut("timestamp") {
            let s = t.as_str().unwrap();
            assert!(
                chrono::DateTime::parse_from_rfc3339(s).is_ok() && s.ends_with('Z'),
                "timestamp {s}"
            );
            *t = "<ts>".into();
        }
    }
    v.to_string()
}

fn expect(line: Value, expected: Value) {
    assert_eq!(golden(line), expected.to_string());
}

#[test]
fn system_init() {
    let line = init_line(&InitInfo {
        session_id: "s1",
        cwd: "/w",
        tools: vec!["Read".to_string(), "Bash".to_string()],
        mcp_servers: Vec::new(),
        model: "claude-sonnet-4-5",
        permission_mode: "default",
        api_key_source: "ANTHROPIC_API_KEY",
        agents: vec!["general-purpose"],
        slash_commands: vec!["compact"],
        skills: vec!["release"],
        plugins: vec![json!({"name": "tools", "path": "/p/tools"})],
        safe_mode: false,
        facts: serde_json::Map::from_iter([("original_cwd".to_string(), json!("/w"))]),
    });
    let v = env!("CARGO_PKG_VERSION");
    expect(
        line,
        json!({"type":"system","subtype":"init","cwd":"/w","session_id":"s1","tools":["Read","Bash"],
               "mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"default",
               "slash_commands":["compact"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":v,
               "keel_version":v,"output_style":"default","agents":["general-purpose"],"skills":["release"],
               "plugins":[{"name":"tools","path":"/p/tools"}],"uuid":"<uuid>","original_cwd":"/w"}),
    );
}

#[test]
fn assistant_one_line_per_block() {
    let message = Message::assistant(vec![
        ContentBlock::text("Looking."),
        ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "Read".into(),
            input: json!({"file_path": "/w/a"}),
        },
    ]);
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Usage::default()
    };
    let lines = assistant_lines("msg_1", "claude-sonnet-4-5", &message, &usage, "s1");
    assert_eq!(lines.len(), 2);
    let usage = json!({"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,
                       "output_tokens":5,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},
                       "service_tier":"standard",
                       "cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}});
    expect(
        lines[1].clone(),
        json!({"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant",
               "model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Read",
               "input":{"file_path":"/w/a"}}],"stop_reason":null,"stop_sequence":null,"usage":usage,
               "context_management":null},
               "parent_tool_use_id":null,"session_id":"s1","uuid":"<uuid>","timestamp":"<ts>"}),
    );
}

#[test]
fn user_tool_results_success_and_failure() {
    let ok = ContentBlock::tool_result("toolu_1", ToolResultContent::Text("fine".into()), false);
    let structured = json!({"stdout": "fine", "stderr": "", "interrupted": false, "isImage": false});
    expect(
        tool_result_line(&ok, Some(&structured), "s1"),
        json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
               "content":"fine","is_error":false}]},"parent_tool_use_id":null,"session_id":"s1","uuid":"<uuid>",
               "timestamp":"<ts>","tool_use_result":structured}),
    );
    // A failed command: the reference's "Error: …" string, whatever the structured form.
    let failed = ContentBlock::tool_result("toolu_2", ToolResultContent::Text("Exit code 3\nboom".into()), true);
    let line = tool_result_line(&failed, Some(&json!({"exitCode": 3})), "s1");
    assert_eq!(line["tool_use_result"], "Error: Exit code 3\nboom");
    let refused = ContentBlock::tool_result(
        "toolu_3",
        ToolResultContent::Text("<tool_use_error>Permission needed</tool_use_error>".into()),
        true,
    );
    assert_eq!(
        tool_result_line(&refused, None, "s1")["tool_use_result"],
        "Error: Permission needed"
    );
}

#[test]
fn system_lines() {
    expect(
        status_line("acceptEdits", "s1"),
        json!({"type":"system","subtype":"status","status":null,"permissionMode":"acceptEdits","session_id":"s1","uuid":"<uuid>"}),
    );
    expect(
        session_state_line("idle", "s1"),
        json!({"type":"system","subtype":"session_state_changed","state":"idle","sdk_host_only":true,"session_id":"s1","uuid":"<uuid>"}),
    );
    expect(
        permission_denied_line("Write", "toolu_1", "<tool_use_error>not allowed</tool_use_error>", "s1"),
        json!({"type":"system","subtype":"permission_denied","tool_name":"Write","tool_use_id":"toolu_1","message":"not allowed","session_id":"s1","uuid":"<uuid>"}),
    );
    expect(
        hook_started_line("h1", "PreToolUse:Bash", "PreToolUse", "s1"),
        json!({"type":"system","subtype":"hook_started","hook_id":"h1","hook_name":"PreToolUse:Bash","hook_event":"PreToolUse","session_id":"s1","uuid":"<uuid>"}),
    );
    let run = crate::hooks::HookRun {
        hook_id: "h1".into(),
        hook_name: "PreToolUse:Bash".into(),
        event: "PreToolUse".into(),
        handler: "./check.sh".into(),
        exit_code: Some(0),
        duration_ms: 7,
        outcome: "success".into(),
        decision: Some("allow".into()),
        stdout: "out\n".into(),
        stderr: "err\n".into(),
    };
    expect(
        hook_response_line(&run, "s1"),
        json!({"type":"system","subtype":"hook_response","hook_id":"h1","hook_name":"PreToolUse:Bash",
               "hook_event":"PreToolUse","output":"out\nerr\n","stdout":"out\n","stderr":"err\n","exit_code":0,
               "outcome":"success","decision":"allow","duration_ms":7,"session_id":"s1","uuid":"<uuid>"}),
    );
    expect(
        retry_line(1, 10, 500, Some(529), "overloaded", "s1"),
        json!({"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,
               "error_status":529,"error":"overloaded","session_id":"s1","uuid":"<uuid>"}),
    );
    expect(
        compact_boundary_line("auto", 150000, "s1"),
        json!({"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":150000},"session_id":"s1","uuid":"<uuid>"}),
    );
    expect(
        notice_line("warning", "careful", "s1"),
        json!({"type":"system","subtype":"notice","level":"warning","message":"careful","session_id":"s1","uuid":"<uuid>"}),
    );
}

#[test]
fn stream_event_and_replay() {
    expect(
        stream_event_line(&json!({"type": "ping"}), "s1"),
        json!({"type":"stream_event","event":{"type":"ping"},"parent_tool_use_id":null,"session_id":"s1","uuid":"<uuid>"}),
    );
    expect(
        replay_line(&json!({"role": "user", "content": "hi"}), "s1"),
        json!({"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":"s1",
               "uuid":"<uuid>","timestamp":"<ts>","isReplay":true}),
    );
}

fn totals() -> Totals {
    let mut t = Totals::default();
    t.record(
        "claude-sonnet-4-5",
        &Usage {
            input_tokens: 100,
            output_tokens: 20,
            ..Usage::default()
        },
    );
    t
}

#[test]
fn result_success_with_structured_output() {
    let outcome = TurnOutcome {
        result: "{\"n\":3}".into(),
        stop_reason: Some("tool_use".into()),
        num_turns: 2,
        duration_ms: 12,
        duration_api_ms: 9,
        structured_output: Some(json!({"n": 3})),
        ..TurnOutcome::default()
    };
    let denials = vec![Denial {
        tool_name: "Bash".into(),
        tool_use_id: "toolu_9".into(),
        tool_input: json!({"command": "rm -rf x"}),
    }];
    let stats = crate::headless::turn_stats::TurnStats::new();
    let t = totals();
    let r = result_object(&outcome, "s1", &t, &denials, &ctx(&stats, &t));
    // The reference's keys first, in its order; the turn's measurements after.
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        &keys[..16],
        &[
            "type",
            "subtype",
            "is_error",
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "result",
            "stop_reason",
            "session_id",
            "total_cost_usd",
            "usage",
            "modelUsage",
            "permission_denials",
            "api_error_status",
            "structured_output",
            "terminal_reason"
        ]
    );
    assert_eq!(r["total_cost_usd"], 0.0006);
    assert_eq!(r["usage"]["output_tokens_details"], json!({"thinking_tokens": 0}));
    assert_eq!(r["usage"]["iterations"], json!([]));
    let m = &r["modelUsage"]["claude-sonnet-4-5"];
    assert_eq!(m["inputTokens"], 100);
    assert_eq!(m["costUSD"], 0.0006);
    assert_eq!(m["contextWindow"], 200_000);
    assert_eq!(m["canonicalModel"], "claude-sonnet-4-5");
    assert_eq!(m["costBasis"], "list");
    assert_eq!(r["model_usage_since_last_result"], r["modelUsage"]);
    assert_eq!(r["api_error_status"], Value::Null);
    assert_eq!(r["subagent_stats"]["spawned"], 0);
    assert_eq!(r["result_index"], 0);
    assert!(
        r.get("ttft_ms").is_none(),
        "no request was measured, so no time to the first token"
    );
    assert_eq!(r["permission_denials"][0]["tool_name"], "Bash");
}

fn ctx<'a>(stats: &'a crate::headless::turn_stats::TurnStats, t: &'a Totals) -> ResultContext<'a> {
    ResultContext {
        stats,
        since_last: &t.by_model,
        result_index: 0,
        queued_turns: 0,
        provider: "anthropic",
    }
}

#[test]
fn result_errors() {
    let outcome = TurnOutcome {
        subtype: ResultSubtype::ErrorMaxTurns,
        is_error: true,
        result: "reached the limit".into(),
        errors: vec!["reached the limit".into()],
        num_turns: 1,
        terminal_reason: TerminalReason::MaxTurns,
        ..TurnOutcome::default()
    };
    let mut stats = crate::headless::turn_stats::TurnStats::new();
    stats.assistant("m1", "claude-sonnet-4-5", &Message::assistant(vec![]), "tool_use", 0);
    let t = Totals::default();
    let r = result_object(&outcome, "s1", &t, &[], &ctx(&stats, &t));
    assert_eq!(r["subtype"], "error_max_turns");
    // Cut by --max-turns: the stop reason of the model's last answer, a string.
    assert_eq!(r["stop_reason"], "tool_use");
    assert!(r.get("result").is_none(), "error subtypes carry errors, not result");
    assert_eq!(r["errors"], json!(["reached the limit"]));
    assert_eq!(r["terminal_reason"], "max_turns");
    let startup = startup_error_object("unknown permission mode `x`", None);
    assert_eq!(startup["type"], "result");
    assert_eq!(startup["is_error"], true);
    assert_eq!(startup["result"], "unknown permission mode `x`");
    assert_eq!(startup["errors"], json!(["unknown permission mode `x`"]));
    assert_eq!(startup["terminal_reason"], "turn_setup_failed");
    assert_eq!(startup["session_id"], Value::Null);
}
