//! Context engineering end to end: a long scripted session through the real binary with a
//! small context window, manual `/compact` and resume, and `keel context`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::sse::{Block, frames, text, tool};
use crate::support::{Env, ModelServer, Recorded, Reply};

/// The failing test at the end of a 40 KB test log.
const FAILING_LINE: &str = "test parser::tests::parses_iso_dates ... FAILED";
const PANIC_LINE: &str = "thread 'parser::tests::parses_iso_dates' panicked at src/parser.rs:88:9";
const SUMMARY_MARK: &str = "[keel: compaction]";

/// What the scripted summariser says: deliberately silent about the failing test.
const SUMMARY: &str = "## Decisions\nNothing decided yet.\n## Open verification items\nNone noted.\n\
                       ## Current work\nSurveying the data files.\n## Next step\nGrep the next data file.";

fn test_log() -> String {
    let mut s = String::from("running 400 tests\n");
    for i in 0..400 {
        s.push_str(&format!(
            "test parser::tests::case_{i:03}_handles_input_variant ... ok\n"
        ));
    }
    s.push_str(&format!(
        "{FAILING_LINE}\n\nfailures:\n\n---- parser::tests::parses_iso_dates stdout ----\n{PANIC_LINE}:\n\
         assertion `left == right` failed\n  left: 2024\n right: 2025\n\nfailures:\n    parser::tests::parses_iso_dates\n\n\
         test result: FAILED. 400 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n"
    ));
    s
}

fn blob(i: usize) -> String {
    (0..800)
        .map(|n| format!("blob {i:02} line {n:04}: payload data for the survey\n"))
        .collect()
}

/// Size of a request as the scripted API counts it: four bytes of body per token.
fn body_tokens(body: &Value) -> u64 {
    serde_json::to_vec(body).unwrap().len() as u64 / 4
}

fn is_summary(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m.to_string().contains(SUMMARY_MARK))
}

/// An SSE reply whose usage reports the request's real size, part of it as a cache read.
fn reply(blocks: &[Block], stop: &str, body: &Value) -> Reply {
    let total = body_tokens(body);
    let cached = total.min(1_000);
    let mut chunks = frames(blocks, stop, total - cached, 30);
    chunks[0] = chunks[0].replace(
        "\"cache_read_input_tokens\":0",
        &format!("\"cache_read_input_tokens\":{cached}"),
    );
    Reply::Sse {
        chunks,
        pace: Duration::ZERO,
    }
}

/// Every text of a request body, for "does it say X" checks.
fn all_text(body: &Value) -> String {
    body["messages"].to_string()
}

#[tokio::test]
async fn long_session_stays_in_the_window_and_keeps_the_failing_test_evidence() {
    // Small enough to force many compactions, large enough for the fixed prefix (about 3,750
    // tokens of tool definitions and system layers, web tools and NotebookEdit included) plus a summary and the
    // kept failing-test evidence.
    const WINDOW: u64 = 10_500;
    const BLOBS: usize = 36;
    let env = Env::new();
    env.write(
        "CLAUDE.md",
        "Project rule: run the tests before claiming success.\nSee @docs/conventions.md\n",
    );
    env.write("docs/conventions.md", "Convention: keep test logs under logs/.\n");
    env.write("logs/test-run.log", &test_log());
    for i in 0..BLOBS {
        env.write(&format!("data/blob{i:02}.txt"), &blob(i));
    }
    let log_path = env.path("logs/test-run.log").display().to_string();

    // The script: grep the whole test log (a failing run at its end), then every data file,
    // each a 40 KB output; summary requests are recognised and answered on the side.
    let mut turns: Vec<Vec<Block>> = vec![vec![
        text("Reading the test log."),
        tool(
            "g00",
            "Grep",
            json!({"pattern": ".", "path": log_path, "output_mode": "content", "-n": true, "head_limit": 0}),
        ),
    ]];
    for i in 0..BLOBS {
        // Notes between calls, as a model writes them: too long to count as a passing remark,
        // so these steps stay in the view (as placeholders) instead of folding away.
        let notes = format!(
            "Notes on blob {i:02}: the payload lines look uniform so far; I am checking each data file in turn \
             for anything that is not payload data, recording line counts, and keeping the failing parser test \
             in mind for the final report. Nothing here changes the plan: the survey goes on file by file, and \
             the summary at the end lists what was found. Next I look at blob {:02} with the same search.",
            i + 1
        );
        turns.push(vec![text(&notes), tool(
            &format!("b{i:02}"),
            "Grep",
            json!({"pattern": "payload", "path": env.path(&format!("data/blob{i:02}.txt")), "output_mode": "content", "head_limit": 0}),
        )]);
    }
    let final_answer = "Surveyed the log and all data files.";
    let next = Arc::new(AtomicUsize::new(0));
    let server = ModelServer::start().await;
    let turns = Arc::new(turns);
    server.respond_with(move |body| {
        if is_summary(body) {
            return Some(reply(&[text(SUMMARY)], "end_turn", body));
        }
        let n = next.fetch_add(1, Ordering::SeqCst);
        Some(match turns.get(n) {
            Some(blocks) => reply(blocks, "tool_use", body),
            None => reply(&[text(final_answer)], "end_turn", body),
        })
    });

    let out = env
        .keel(&server)
        .env("KEEL_CONTEXT_WINDOW", WINDOW.to_string())
        .args([
            "-p",
            "Survey the test log and the data files.",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let lines = out.lines();
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["result"], final_answer);
    let reqs: Vec<Recorded> = server.requests();
    let summaries: Vec<usize> = (0..reqs.len()).filter(|&i| is_summary(&reqs[i].body)).collect();
    assert!(!summaries.is_empty(), "the small window forced compaction");
    assert_eq!(
        reqs.len() - summaries.len(),
        BLOBS + 2,
        "every scripted turn was served"
    );
    let boundaries = lines
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == "compact_boundary")
        .count();
    assert_eq!(boundaries, summaries.len());

    // Every request, summary requests included, stays under the window.
    for (i, r) in reqs.iter().enumerate() {
        assert!(
            body_tokens(&r.body) <= WINDOW,
            "request {i}: {} tokens (summary: {}, {} messages, tools {} bytes, system {} bytes)",
            body_tokens(&r.body),
            is_summary(&r.body),
            r.body["messages"].as_array().map(|m| m.len()).unwrap_or(0),
            r.body["tools"].to_string().len(),
            r.body["system"].to_string().len()
        );
    }

    // The stable prefix (tools, then system) is byte-identical across all requests, and it
    // carries the instruction files with their import. Where the breakpoints sit is no part
    // of the prefix: once a cold part exists, the project block gives its mark to the cold
    // part's end.
    let unmarked = |v: &Value| {
        let mut v = v.clone();
        for b in v.as_array_mut().into_iter().flatten() {
            if let Some(o) = b.as_object_mut() {
                o.remove("cache_control");
            }
        }
        v.to_string()
    };
    let prefix = |r: &Recorded| (unmarked(&r.body["tools"]), unmarked(&r.body["system"]));
    for r in &reqs[1..] {
        assert_eq!(prefix(r), prefix(&reqs[0]));
    }
    let system = reqs[0].body["system"].to_string();
    assert!(system.contains("Project rule: run the tests before claiming success."));
    assert!(system.contains("Convention: keep test logs under logs/."));
    // Cache breakpoints: the core's, then the project block's or the cold part's end, and at
    // most four in all.
    for r in &reqs {
        let marks = r.body.to_string().matches("\"cache_control\"").count();
        assert!((3..=4).contains(&marks), "{marks} breakpoints");
    }
    let usage = &result["usage"];
    assert!(usage["cache_read_input_tokens"].as_u64().unwrap() >= 1_000 * reqs.len() as u64 - 1_000);

    // Spill files hold the full outputs.
    let session = result["session_id"].as_str().unwrap();
    let project = env.transcripts()[0].parent().unwrap().to_path_buf();
    let spill =
        |id: &str| std::fs::read_to_string(project.join(session).join("tool-results").join(format!("{id}.txt")));
    let log_spill = spill("g00").expect("the test log output is spilled");
    assert!(log_spill.contains(FAILING_LINE) && log_spill.contains("case_000_handles"));
    // `.` matches every non-empty line of the log, each one in the spill file.
    assert_eq!(
        log_spill.lines().count(),
        test_log().lines().filter(|l| !l.is_empty()).count()
    );
    for i in 0..BLOBS {
        let full = spill(&format!("b{i:02}")).unwrap();
        assert_eq!(full.lines().count(), 800, "blob {i}");
        assert!(full.contains(&format!("blob {i:02} line 0000:")) && full.contains(&format!("blob {i:02} line 0799:")));
    }

    // After each compaction the next request carries the failing test's evidence and where its
    // full log is, although the summariser never mentioned it: keel filled it in.
    let spill_path = project.join(session).join("tool-results/g00.txt").display().to_string();
    for &s in &summaries {
        let after = &reqs[s + 1].body;
        let first = after["messages"][0]["content"][0]["text"].as_str().unwrap();
        assert!(
            first.starts_with("This session continues from an earlier part"),
            "{first}"
        );
        for needle in [
            FAILING_LINE,
            PANIC_LINE,
            "test result: FAILED. 400 passed; 1 failed",
            &spill_path,
            &log_path,
        ] {
            assert!(
                all_text(after).contains(needle),
                "post-compaction request lacks {needle:?}:\n{first}"
            );
        }
        assert!(first.contains("<user-request>\nSurvey the test log and the data files.\n</user-request>"));
    }
    assert!(!SUMMARY.contains("FAILED"));
}

#[tokio::test]
async fn manual_compact_resumes_from_the_handoff_with_the_recorded_failure() {
    let env = Env::new();
    env.write("logs/ci.log", &test_log());
    let log = env.path("logs/ci.log").display().to_string();
    let server = ModelServer::start().await;
    server
        .push(reply(
            &[tool(
                "g1",
                "Grep",
                json!({"pattern": "FAILED|panicked", "path": log, "output_mode": "content"}),
            )],
            "tool_use",
            &json!({}),
        ))
        .push(reply(&[text("The dates test fails.")], "end_turn", &json!({})));
    let out = env.keel(&server).args(["-p", "Why is CI red?"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    // /compact with instructions on the continued session.
    server.push(reply(&[text(SUMMARY)], "end_turn", &json!({})));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "/compact focus on the failing test",
            "-c",
            "--output-format",
            "json",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    assert_eq!(r["subtype"], "success");
    assert!(
        r["result"].as_str().unwrap().starts_with("Compacted the conversation"),
        "{r}"
    );
    let reqs = server.requests();
    let summary_req = &reqs[2].body;
    assert!(is_summary(summary_req));
    assert!(all_text(summary_req).contains("focus on the failing test"));
    let transcript = std::fs::read_to_string(&env.transcripts()[0]).unwrap();
    assert!(transcript.contains("\"type\":\"compact_boundary\""));

    // The next run starts from the hand-off, with the new prompt in the same message, and the
    // failure recorded in the first run (the tool log survives the restart).
    server.push(reply(&[text("Next: fix the date parsing.")], "end_turn", &json!({})));
    let out = env.keel(&server).args(["-p", "What next?", "-c"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = &server.requests()[3].body;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{body}");
    let text_all = all_text(body);
    assert!(text_all.contains(
        "This session continues from an earlier part that was compacted to fit the context window (manual compaction"
    ));
    assert!(text_all.contains(FAILING_LINE) && text_all.contains(&log), "{text_all}");
    assert!(text_all.contains("<user-request>\\nWhy is CI red?\\n</user-request>"));
    assert!(text_all.contains("What next?"));
}

#[tokio::test]
async fn keel_context_lists_instruction_files_and_sizes() {
    let env = Env::new();
    env.write("CLAUDE.md", "Root rules. @docs/style.md\n```\n@not/an/import.md\n```\n");
    env.write("docs/style.md", "Style rules.\n");
    env.write("CLAUDE.local.md", "My private notes.\n");
    env.write("crates/core/AGENTS.md", "Core rules.\n");
    std::fs::create_dir_all(env.home.join(".claude")).unwrap();
    std::fs::write(env.home.join(".claude/CLAUDE.md"), "User-wide rules.\n").unwrap();
    let out = env
        .keel_offline()
        .env("KEEL_CONTEXT_WINDOW", "50000")
        .arg("context")
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let s = &out.stdout;
    assert!(s.contains("window 50000 tokens"), "{s}");
    let order: Vec<usize> = [
        ".claude/CLAUDE.md",
        "docs/style.md",
        "work/CLAUDE.md",
        "CLAUDE.local.md",
    ]
    .iter()
    .map(|n| s.find(n).unwrap_or_else(|| panic!("{n} missing:\n{s}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{s}");
    assert!(s.contains("user     ") && s.contains("local    "), "{s}");
    assert!(s.contains("(imported by "), "{s}");
    assert!(!s.contains("not/an/import.md"), "{s}");
    assert!(s.contains("Loaded when a tool first works in their directory") && s.contains("crates/core/AGENTS.md"));
    let bad = env
        .keel_offline()
        .env("KEEL_CONTEXT_WINDOW", "lots")
        .arg("context")
        .run()
        .await;
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("KEEL_CONTEXT_WINDOW must be a number of tokens"),
        "{}",
        bad.stderr
    );
}

/// A failing test run through Bash: after compaction the request still carries the command,
/// its exit code and the failing lines, although the summary never mentions them.
#[tokio::test]
async fn a_failing_bash_test_run_survives_compaction_until_it_passes() {
    let env = Env::new();
    env.write(
        "test_calc.py",
        "import unittest\n\nclass Calc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 3)\n\nif __name__ == '__main__':\n    unittest.main()\n",
    );
    let server = ModelServer::start().await;
    server
        .push(reply(
            &[tool("t1", "Bash", json!({"command": "python3 -m unittest test_calc"}))],
            "tool_use",
            &json!({}),
        ))
        .push(reply(&[text("test_add fails.")], "end_turn", &json!({})));
    let out = env
        .keel(&server)
        .args(["-p", "run the tests", "--allowedTools", "Bash(python3 -m unittest:*)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (first, is_error) = server.requests()[1].tool_result_text("t1");
    assert!(is_error && first.starts_with("Exit code 1"), "{first}");

    server.push(reply(&[text(SUMMARY)], "end_turn", &json!({})));
    let out = env.keel(&server).args(["-p", "/compact", "-c"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.push(reply(&[text("Next: fix test_add.")], "end_turn", &json!({})));
    let out = env.keel(&server).args(["-p", "what is open?", "-c"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let after = all_text(&requests.last().unwrap().body);
    assert!(
        after.contains("python3 -m unittest test_calc"),
        "the failed command survives: {after}"
    );
    assert!(
        after.contains("exit code 1") || after.contains("Exit code 1"),
        "{after}"
    );
    assert!(
        after.contains("AssertionError: 2 != 3"),
        "the decisive line survives: {after}"
    );
}
