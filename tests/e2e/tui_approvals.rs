//! The approval dialog in the real TUI: type-ahead never answers it, long writes and edits are
//! shown whole and scroll to their end, and every decision is in the transcript.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::server::Reply;
use crate::support::sse::{answer, calls, frames, text, tool};
use crate::support::tmux::Tmux;
use crate::support::{Env, ModelServer, read_jsonl};

const W: u16 = 100;
const H: u16 = 34;
/// Shown once the dialog answers keys (after a pause in typing).
const ARMED: &str = "Enter to choose";

/// The permission decisions recorded in the session's transcript.
fn decisions(env: &Env) -> Vec<Value> {
    env.transcripts()
        .iter()
        .flat_map(|p| read_jsonl(p))
        .filter(|l| l["type"] == "event" && l["event"] == "permission_decision")
        .map(|l| l["data"].clone())
        .collect()
}

/// The text inside the prompt box (the rows between its borders).
fn prompt_box(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(bottom) = lines.iter().rposition(|l| l.starts_with('╰')) else {
        return String::new();
    };
    let Some(top) = lines[..bottom].iter().rposition(|l| l.starts_with('╭')) else {
        return String::new();
    };
    lines[top + 1..bottom]
        .iter()
        .map(|l| l.trim_start_matches('│').trim_end().trim_end_matches('│').trim())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text typed while keel works goes into the prompt box when a dialog opens mid-word: it
/// approves nothing, saves no rule, and is still there after the dialog is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_ahead_across_a_dialog_approves_nothing_and_keeps_the_text() {
    let env = Env::new();
    let server = ModelServer::start().await;
    // Some words, then the call: the dialog opens while the user is still typing.
    let words: String = (0..12).map(|i| format!("thinking-{i} ")).collect();
    server
        .push(Reply::Sse {
            chunks: frames(
                &[
                    text(&words),
                    tool(
                        "b1",
                        "Bash",
                        json!({"command": "touch typeahead.txt", "description": "Create a marker"}),
                    ),
                ],
                "tool_use",
                100,
                20,
            ),
            pace: Duration::from_millis(60),
        })
        .push(answer("Understood, nothing was created."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("go");
    t.press(&["Enter"]);
    t.wait_for_text("thinking-0").await;

    // Type one key every 40 ms (well inside the grace period) until the dialog has been open
    // for a while: the keys that would answer it (`a`, `1`, `2`, `y`) are among them.
    let phrase = "add a test 1 2 y and a note ";
    let mut typed = String::new();
    let mut after_open = 0;
    for c in phrase.chars().cycle() {
        t.type_text(&c.to_string());
        typed.push(c);
        tokio::time::sleep(Duration::from_millis(40)).await;
        if t.screen().contains("Permission needed") {
            after_open += 1;
        }
        if after_open >= 25 {
            break;
        }
        assert!(typed.len() < 2000, "the dialog never opened:\n{}", t.screen());
    }
    let s = t.wait_for_text(ARMED).await;
    assert!(s.contains("Bash · Create a marker"), "{s}");
    assert!(s.contains("$ touch typeahead.txt"), "{s}");
    assert!(!env.path("typeahead.txt").exists(), "type-ahead approved the command");
    assert!(
        !env.path(".claude/settings.local.json").exists(),
        "type-ahead saved a rule"
    );
    assert!(decisions(&env).is_empty(), "{:?}", decisions(&env));
    assert!(server.requests().len() == 1, "the call was answered");
    let words = |x: &str| x.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(&prompt_box(&s)), words(&format!("› {typed}")), "{s}");
    assert!(s.contains("waiting for approval"), "{s}");

    // A deliberate answer once typing has paused: Esc denies.
    t.press(&["Escape"]);
    let s = t.wait_for_text("Understood, nothing was created.").await;
    assert!(!env.path("typeahead.txt").exists());
    assert!(prompt_box(&s).replace('\n', "").contains("add a test 1 2 y"), "{s}");
    let (result, is_error) = server.requests()[1].tool_result_text("b1");
    assert!(is_error && result.contains("declined"), "{result}");
    let d = decisions(&env);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        (d[0]["decision"].as_str(), d[0]["tool"].as_str()),
        (Some("deny"), Some("Bash"))
    );
    assert_eq!(d[0]["decided_by"], "user");
    t.press(&["C-c"]);
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// A long new file is shown with line numbers and scrolls to its last line; approving it
/// once writes it and is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_write_scrolls_to_its_end_in_the_dialog() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let content: String = (1..=200).map(|i| format!("value_{i} = {i} * 2\n")).collect();
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": env.path("table.py"), "content": content}),
        )]))
        .push(answer("Written."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("write the table");
    t.press(&["Enter"]);
    let s = t.wait_for_text(ARMED).await;
    assert!(s.contains("Write table.py · new file · 200 lines"), "{s}");
    assert!(s.contains("  1 │ value_1 = 1 * 2"), "{s}");
    assert!(!s.contains("200 │"), "{s}");
    // Page down to the end: the last line and the position say so.
    for _ in 0..20 {
        t.press(&["PageDown"]);
    }
    let s = t.wait_for_text("200 │ value_200 = 200 * 2").await;
    assert!(s.contains("of 200"), "{s}");
    assert!(!env.path("table.py").exists(), "scrolling approved the write");
    // The prompt box is still below the dialog.
    assert!(s.contains("Ask keel"), "{s}");
    t.press(&["Enter"]);
    t.wait_for_text("Written.").await;
    assert_eq!(std::fs::read_to_string(env.path("table.py")).unwrap(), content);
    let d = decisions(&env);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["decision"], "allow_once");
    let s = t.screen();
    assert!(s.contains("approved once"), "{s}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// A 62-line edit: the dialog shows the diff of the file as it will be, with the file's line
/// numbers and three lines of context, no diff headers, and scrolls to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_62_line_edit_shows_the_files_diff_and_scrolls_to_its_end() {
    let env = Env::new();
    let original: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    let file = env.write("big.txt", &original);
    let old: String = (20..=81).map(|i| format!("line {i}\n")).collect();
    let new: String = (20..=81).map(|i| format!("LINE {i}\n")).collect();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("r1", "Read", json!({"file_path": file}))]))
        .push(calls(vec![tool(
            "e1",
            "Edit",
            json!({"file_path": file, "old_string": old, "new_string": new}),
        )]))
        .push(answer("Edited."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("shout lines 20 to 81");
    t.press(&["Enter"]);
    let s = t.wait_for_text(ARMED).await;
    assert!(s.contains("Edit big.txt +62 -62"), "{s}");
    // Context starts three lines before the change, with the file's numbers.
    assert!(s.contains("17  line 17"), "{s}");
    assert!(s.contains("20 -line 20"), "{s}");
    for l in s.lines() {
        assert!(
            !l.contains("--- ") && !l.contains("+++ ") && !l.contains("No newline"),
            "{s}"
        );
    }
    for _ in 0..15 {
        t.press(&["PageDown"]);
    }
    let s = t.wait_for_text("84  line 84").await;
    assert!(s.contains("81 +LINE 81"), "{s}");
    assert!(!s.contains("85  line 85"), "only three lines of context: {s}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "nothing written yet");
    t.press(&["1"]);
    t.wait_for_text("Edited.").await;
    assert!(std::fs::read_to_string(&file).unwrap().contains("LINE 81\nline 82\n"));
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// `/init` asks the model to study the repository and write AGENTS.md; the file goes through
/// the approval dialog like any Write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_has_the_model_write_agents_md_through_an_approval() {
    let env = Env::new();
    env.write("Makefile", "test:\n\tcargo test\n");
    let server = ModelServer::start().await;
    let guide = "# Agent guide\n\n- Test: `make test`\n";
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": env.path("AGENTS.md"), "content": guide}),
        )]))
        .push(answer("AGENTS.md covers the test command."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("/init");
    t.press(&["Enter"]);
    let s = t.wait_for_text(ARMED).await;
    assert!(s.contains("Write AGENTS.md · new file · 3 lines"), "{s}");
    let first = server.requests()[0].messages().last().unwrap().to_string();
    assert!(
        first.contains("There is no AGENTS.md yet") && first.contains("never invented"),
        "{first}"
    );
    t.press(&["1"]);
    t.wait_for_text("AGENTS.md covers the test command.").await;
    assert_eq!(std::fs::read_to_string(env.path("AGENTS.md")).unwrap(), guide);
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// An Edit of a file never read opens no dialog: the model gets the reason at once, the cell
/// says it, and no decision is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_of_an_unread_file_opens_no_dialog() {
    let env = Env::new();
    let file = env.write("notes.txt", "milk\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "e1",
            "Edit",
            json!({"file_path": file, "old_string": "milk", "new_string": "bread"}),
        )]))
        .push(answer("I need to read it first."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("buy bread instead");
    t.press(&["Enter"]);
    // No key is pressed: a dialog would wait for one and the answer would never come.
    let s = t.wait_for_text("I need to read it first.").await;
    assert!(!s.contains("Permission needed"), "{s}");
    assert!(s.contains("has not been read"), "{s}");
    let (result, is_error) = server.requests()[1].tool_result_text("e1");
    assert!(is_error && result.contains("has not been read"), "{result}");
    assert!(decisions(&env).is_empty(), "{:?}", decisions(&env));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "milk\n");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// A WebFetch approval names the URL and what the model looks for, and "always" saves the
/// rule for that domain, which the next fetch of the host needs no question for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_fetch_dialog_shows_the_url_and_always_saves_the_domain_rule() {
    let env = Env::new();
    let dir = env.home.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        json!({"webFetch": {"allowPrivateNetwork": true}}).to_string(),
    )
    .unwrap();
    let site = crate::support::web::Site::start(vec![
        ("/a", crate::support::web::html("<p>first page</p>")),
        ("/b", crate::support::web::html("<p>second page</p>")),
    ])
    .await;
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "f1",
            "WebFetch",
            json!({"url": site.url("/a"), "prompt": "the release date"}),
        )]))
        .push(calls(vec![tool(
            "f2",
            "WebFetch",
            json!({"url": site.url("/b"), "prompt": "more"}),
        )]))
        .push(answer("Both pages read."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("read the site");
    t.press(&["Enter"]);
    let s = t.wait_for_text(ARMED).await;
    assert!(s.contains(&format!("Fetch {}", site.url("/a"))), "{s}");
    assert!(s.contains("Looking for: the release date"), "{s}");
    assert!(s.contains("Yes, and always allow WebFetch(domain:127.0.0.1)"), "{s}");
    assert!(site.paths().is_empty(), "fetched before the answer");
    t.press(&["2"]);
    t.wait_for_text("Both pages read.").await;
    assert_eq!(site.paths(), vec!["/a", "/b"], "the second fetch needed no question");
    let saved = std::fs::read_to_string(env.path(".keel/settings.local.json")).unwrap();
    assert!(saved.contains("WebFetch(domain:127.0.0.1)"), "{saved}");
    let d = decisions(&env);
    assert_eq!(d.len(), 1, "{d:?}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// An MCP server's elicitation request opens a form in the TUI: the user fills it in and the
/// answer reaches the server (and so the tool result); a second request declined with Esc
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_form_is_filled_in_the_tui_and_its_answer_reaches_the_server() {
    crate::support::skip::or_skip!(crate::mcp::python());
    let env = Env::new();
    let log = crate::mcp::log_path(&env, "el");
    let cfg = crate::mcp::config(json!({"el": crate::mcp::stdio(&log, &["--elicit"])}));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("a1", "mcp__el__ask", json!({}))]))
        .push(answer("Thanks, Bo."))
        .push(calls(vec![tool("a2", "mcp__el__ask", json!({}))]))
        .push(answer("Declined."));
    let t = Tmux::start(
        &env,
        &server,
        &["--allowedTools", "mcp__el", "--mcp-config", &cfg],
        W,
        H,
    );
    t.wait_for_text("Ask keel").await;
    t.type_text("who am I");
    t.press(&["Enter"]);
    let s = t.wait_for_text("MCP server `el` asks").await;
    assert!(s.contains("Who are you?") && s.contains("Ann"), "{s}");
    // The field holds its default; replace it, then change the count.
    tokio::time::sleep(Duration::from_millis(800)).await;
    t.press(&["BSpace", "BSpace", "BSpace"]);
    t.type_text("Bo");
    t.press(&["Tab", "BSpace"]);
    t.type_text("7");
    t.press(&["Enter"]);
    t.wait_for_text("Thanks, Bo.").await;
    assert_eq!(
        server.requests()[1].tool_result_text("a1"),
        (
            r#"answer: {"action": "accept", "content": {"count": 7, "name": "Bo"}}"#.to_string(),
            false
        )
    );
    t.type_text("again");
    t.press(&["Enter"]);
    t.wait_for_text("MCP server `el` asks").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    t.press(&["Escape"]);
    t.wait_for_text("Declined.").await;
    assert_eq!(
        server.requests()[3].tool_result_text("a2"),
        (r#"answer: {"action": "decline"}"#.to_string(), false)
    );
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}
