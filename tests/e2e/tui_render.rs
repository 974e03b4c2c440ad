//! How the real TUI draws results in tmux: failed output keeps its indentation, tables that do
//! not fit wrap inside their cells.

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::tmux::Tmux;
use crate::support::{Env, ModelServer};

/// Lets the model's Bash calls run without a dialog (the folder is trusted, so the project's
/// allow rule applies without the trust question).
fn allow_bash(env: &Env) {
    env.write(
        ".claude/settings.json",
        &json!({"permissions": {"allow": ["Bash"]}}).to_string(),
    );
    env.trust_work();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_traceback_keeps_its_indentation() {
    let env = Env::new();
    allow_bash(&env);
    let server = ModelServer::start().await;
    let script = "printf 'Traceback (most recent call last):\\n  File \"/srv/app/billing/orders.py\", line 12, in <module>\\n    main()\\n      ^^^^\\nValueError: negative total\\n' >&2; exit 1";
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": script}))]))
        .push(answer("The script fails."));
    let t = Tmux::start(&env, &server, &[], 60, 30);
    t.wait_for_text("Ask keel").await;
    t.type_text("run it");
    t.press(&["Enter"]);
    let s = t.wait_for_text("The script fails.").await;
    let lines: Vec<&str> = s.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{s}"))
            .to_string()
    };
    // The cell's body is indented 4 columns; the output's own indentation follows.
    assert!(
        at("File \"/srv/app").starts_with("      File \"/srv/app/billing/orders.py\","),
        "{s}"
    );
    assert!(at("main()").starts_with("        main()"), "{s}");
    assert!(at("^^^^").starts_with("          ^^^^"), "{s}");
    assert!(at("ValueError").starts_with("    ValueError: negative total"), "{s}");
    // The long File line wrapped at its own indentation.
    let file_row = lines.iter().position(|l| l.contains("File \"/srv/app")).unwrap();
    assert!(
        lines[file_row + 1].starts_with("      ") && lines[file_row + 1].trim_start().contains("<module>"),
        "{s}"
    );
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_wider_than_the_terminal_wraps_inside_its_cells() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer(
        "Summary:\n\n| module | responsibility | status |\n|---|---|---|\n| parser | reads the configuration file and validates every key against the schema | done |\n| runner | starts the worker processes and restarts them when they crash | open |\n\nEnd of table.",
    ));
    let t = Tmux::start(&env, &server, &[], 50, 30);
    t.wait_for_text("Ask keel").await;
    t.type_text("summarise");
    t.press(&["Enter"]);
    let s = t.wait_for_text("End of table.").await;
    let rows: Vec<&str> = s
        .lines()
        .filter(|l| (l.contains('│') || l.contains('┼')) && !l.starts_with('│'))
        .collect();
    assert!(rows.len() >= 8, "the cells wrapped onto several lines:\n{s}");
    // Every table line has both column separators at the same places: the grid holds.
    let columns = |l: &str| -> Vec<usize> {
        l.chars()
            .enumerate()
            .filter(|(_, c)| *c == '│' || *c == '┼')
            .map(|(i, _)| i)
            .collect()
    };
    let first = columns(rows[0]);
    assert_eq!(first.len(), 2, "{s}");
    for r in &rows {
        assert_eq!(columns(r), first, "{r}\n{s}");
    }
    // Nothing was cut: the last words of the long cells are there.
    for word in ["schema", "crash", "done", "open"] {
        assert!(s.contains(word), "{word} missing:\n{s}");
    }
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// A command that runs for a while shows its latest output lines and a line count in its cell
/// while it runs; its result replaces them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_running_command_shows_live_output_and_a_line_count() {
    let env = Env::new();
    allow_bash(&env);
    let server = ModelServer::start().await;
    let script = "for i in $(seq 1 25); do echo step-$i; sleep 0.2; done";
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": script}))]))
        .push(answer("All steps ran."));
    let t = Tmux::start(&env, &server, &[], 100, 30);
    t.wait_for_text("Ask keel").await;
    t.type_text("run the steps");
    t.press(&["Enter"]);
    // A loop is asked about even with the allow rule.
    t.wait_for_text("Enter to choose").await;
    t.press(&["1"]);
    let s = t
        .wait_for("live output with a count", |s| {
            s.contains("lines so far") && s.contains("step-")
        })
        .await;
    assert!(s.contains("running…"), "{s}");
    assert!(!s.contains("All steps ran."), "{s}");
    // The count grows while it runs.
    let count = |s: &str| -> usize {
        s.lines()
            .find_map(|l| {
                l.trim()
                    .split(" line")
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|_| l.contains("so far"))
            })
            .unwrap_or(0)
    };
    let first = count(&s);
    let later = t.wait_for("more lines", |s| count(s) > first + 2).await;
    assert!(count(&later) > first, "{later}");
    let s = t.wait_for_text("All steps ran.").await;
    assert!(!s.contains("lines so far"), "{s}");
    assert!(s.contains("step-1"), "{s}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// A session compacted in an earlier run, resumed in the TUI: the earlier conversation is on
/// screen, the hand-off is a folded marker (Ctrl+O shows it), never a prompt of the user's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_compacted_session_shows_the_earlier_conversation_and_folds_the_handoff() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("The parser rejects dates before 1970."));
    let out = env
        .keel(&server)
        .args(["-p", "why do the date tests fail?"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.push(answer(
        "## Decisions\nNone.\n## Open verification items\nNone.\n## Current work\nDates.\n## Next step\nFix the parser.",
    ));
    let out = env.keel(&server).args(["-p", "/compact", "-c"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    let t = Tmux::start(&env, &server, &["--continue"], 100, 30);
    let s = t.wait_for_text("Conversation compacted").await;
    assert!(s.contains("› why do the date tests fail?"), "{s}");
    assert!(s.contains("The parser rejects dates before 1970."), "{s}");
    assert!(s.contains("(Ctrl+O to show it)"), "{s}");
    assert!(!s.contains("This session continues"), "the hand-off is folded:\n{s}");
    assert!(
        !s.lines().any(|l| l.starts_with("› This session")),
        "the hand-off is not shown as typed by the user:\n{s}"
    );
    assert!(!s.contains("Fix the parser."), "{s}");
    t.press(&["C-o"]);
    // Expanded: the hand-off's summary (its end, at the bottom of the screen).
    let s = t.wait_for_text("Fix the parser.").await;
    assert!(!s.lines().any(|l| l.starts_with("› This session")), "{s}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// After `keel -c` the stop gate's note of the earlier run is the notice it was live, not a
/// prompt of the user's, and the status line has the session's tokens, cost and context at
/// once, before any request of the new run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_shows_the_gates_note_as_a_notice_and_its_figures() {
    const SENT_BACK: &str = "verification: the model was sent back to verify its changes";
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": env.path("added.txt"), "content": "new\n"}),
        )]))
        .push(answer("Added the file."))
        .push(answer("No tests cover it; not verified."));
    let gate = [("KEEL_VERIFICATION_GATE", "nudge".to_string())];
    let t = Tmux::start_with(&env, &server, &["--permission-mode", "acceptEdits"], 100, 30, &gate);
    t.wait_for_text("Ask keel").await;
    t.type_text("add a file");
    t.press(&["Enter"]);
    let live = t.wait_for_text("not verified.").await;
    assert!(live.contains(SENT_BACK), "{live}");
    assert!(!live.contains("[keel: verification]"), "{live}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
    assert_eq!(server.requests().len(), 3);

    // Wide enough for every figure of the status line.
    let t = Tmux::start_with(&env, &server, &["-c"], 140, 30, &gate);
    let s = t.wait_for_text("not verified.").await;
    assert!(s.contains("› add a file"), "{s}");
    assert!(s.contains(SENT_BACK), "the note is keel's notice again:\n{s}");
    assert!(
        !s.lines().any(|l| l.contains("› [keel: verification]")),
        "the note is not shown as typed by the user:\n{s}"
    );
    // Three requests of 100 input tokens; 30 + 20 + 20 output; the last one occupied 120.
    let status = s.lines().rev().find(|l| l.contains("mode ")).unwrap_or_default();
    assert!(status.contains("300 in / 70 out"), "{s}");
    assert!(status.contains("$0.00"), "{s}");
    assert!(status.contains("ctx <1%"), "{s}");
    assert_eq!(server.requests().len(), 3, "no request of the new run yet");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// The figures of a resumed session count the requests that left no answer in the
/// conversation too: here the summary request of a `/compact`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_sessions_figures_include_its_compaction_request() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(answer("The parser rejects dates before 1970."))
        .push(answer(
            "## Decisions\nNone.\n## Open verification items\nNone.\n## Current work\nDates.\n## Next step\nFix it.",
        ));
    let out = env
        .keel(&server)
        .args(["-p", "why do the date tests fail?"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = env.keel(&server).args(["-p", "/compact", "-c"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let t = Tmux::start(&env, &server, &["--continue"], 140, 30);
    let s = t.wait_for_text("Conversation compacted").await;
    let status = s.lines().rev().find(|l| l.contains("mode ")).unwrap_or_default();
    // The answer and the summary: 100 input and 20 output tokens each.
    assert!(status.contains("200 in / 40 out"), "{s}");
    assert_eq!(server.requests().len(), 2);
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}
