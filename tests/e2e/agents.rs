//! Custom sub-agents and the machinery around them: definitions from files, the tool filter
//! enforced by the registry, modes never widened, unknown types, spawn budgets, concurrent
//! children, git worktree isolation, background runs, the verifier's brief, failures and
//! cancellation.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::server::{Meeting, Reply};
use crate::support::sse::{answer, calls, frames, text, tool};
use crate::support::{Env, ModelServer, Recorded, finish};

/// The first user message of a request, as text (which conversation it belongs to).
fn opening(body: &Value) -> String {
    body["messages"][0]["content"].to_string()
}

fn turns(body: &Value) -> usize {
    body["messages"].as_array().map(Vec::len).unwrap_or(0)
}

fn system_text(body: &Value, i: usize) -> String {
    body["system"][i]["text"].as_str().unwrap_or("").to_string()
}

/// Requests of the conversation whose first message contains `marker`.
fn conversation<'a>(reqs: &'a [Recorded], marker: &str) -> Vec<&'a Recorded> {
    reqs.iter().filter(|r| opening(&r.body).contains(marker)).collect()
}

/// An answer streamed slowly: about `secs` seconds.
fn slow_answer(s: &str, secs: u64) -> Reply {
    let words: String = (0..30).map(|i| format!("{s}-{i:02} ")).collect();
    let chunks = frames(&[text(&words)], "end_turn", 100, 20);
    let pace = Duration::from_millis(secs * 1000 / chunks.len() as u64);
    Reply::Sse { chunks, pace }
}

#[tokio::test]
async fn a_custom_agents_prompt_and_tools_come_from_its_file_and_its_mode_is_never_wider() {
    let env = Env::new();
    env.install_fixture("agents", ".claude/agents");
    env.write("src/parser.rs", "pub fn parse() {}\n");
    let parser = env.path("src/parser.rs");
    let widened = env.path("widened.txt");
    let target = widened.clone();
    let server = ModelServer::start().await;
    server.respond_with(move |body| {
        let first = opening(body);
        let n = turns(body);
        if first.contains("Review src/parser.rs") {
            return Some(if n == 1 {
                // Not among its tools: the registry refuses it whatever the prompt says.
                calls(vec![tool(
                    "w1",
                    "Write",
                    json!({"file_path": parser, "content": "overwritten\n"}),
                )])
            } else {
                answer("src/parser.rs:1 is fine. Verdict: approve.")
            });
        }
        if first.contains("Run the tests") {
            return Some(if n == 1 {
                calls(vec![tool(
                    "t1",
                    "Bash",
                    json!({"command": format!("touch {}", target.display())}),
                )])
            } else {
                answer("Could not run commands here.")
            });
        }
        None
    });
    server
        .push(calls(vec![
            tool(
                "a1",
                "Agent",
                json!({"description": "review", "prompt": "Review src/parser.rs", "subagent_type": "code-reviewer"}),
            ),
            tool(
                "a2",
                "Agent",
                json!({"description": "tests", "prompt": "Run the tests", "subagent_type": "test-runner"}),
            ),
        ]))
        .push(answer("Reviewed and tested."));
    let out = env
        .keel(&server)
        .args(["-p", "review my parser", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let parent = conversation(&reqs, "review my parser");
    let reviewer = conversation(&reqs, "Review src/parser.rs");
    let runner = conversation(&reqs, "Run the tests");

    // The parent is told about the project's types.
    let parent_system = system_text(&parent[0].body, 1);
    assert!(
        parent_system.contains("- code-reviewer: Use this agent when code has been written"),
        "{parent_system}"
    );
    assert!(parent_system.contains("- test-runner:"), "{parent_system}");

    // The reviewer: the file's body is its system prompt, its tools those the file lists.
    assert!(system_text(&reviewer[0].body, 0).starts_with("You are a senior code reviewer."));
    assert_eq!(reviewer[0].tool_names(), vec!["Read", "Glob", "Grep"]);
    let (refused, is_error) = reviewer[1].tool_result_text("w1");
    assert!(is_error && refused.contains("No tool named `Write`"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(env.path("src/parser.rs")).unwrap(),
        "pub fn parse() {}\n"
    );
    let (report, is_error) = parent[1].tool_result_text("a1");
    assert!(
        !is_error && report.starts_with("src/parser.rs:1 is fine. Verdict: approve."),
        "{report}"
    );

    // The test runner asks for bypassPermissions; it runs in the session's default mode, where
    // nobody can approve a command in -p.
    assert_eq!(runner[0].tool_names(), vec!["Read", "Bash"]);
    let (denied, is_error) = runner[1].tool_result_text("t1");
    assert!(is_error, "{denied}");
    assert!(!widened.exists(), "a child must not widen the permission mode");
    let (report, _) = parent[1].tool_result_text("a2");
    assert!(
        report.contains("asks for permissionMode bypassPermissions; it ran in default"),
        "{report}"
    );
}

#[tokio::test]
async fn an_unknown_type_is_an_error_listing_the_types() {
    let env = Env::new();
    env.install_fixture("agents", ".claude/agents");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "x", "prompt": "x", "subagent_type": "code-reveiwer"}),
        )]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "go"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (msg, is_error) = server.requests()[1].tool_result_text("a1");
    assert!(is_error, "{msg}");
    for t in [
        "code-reveiwer",
        "general-purpose",
        "Explore",
        "verifier",
        "code-reviewer",
        "test-runner",
    ] {
        assert!(msg.contains(t), "{t} missing: {msg}");
    }
    assert_eq!(server.requests().len(), 2, "no sub-agent ran");
}

#[tokio::test]
async fn spawn_budgets_refuse_calls_beyond_them_in_the_order_issued() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"agents": {"maxChildren": 2, "maxTotal": 3, "maxDepth": 1}}).to_string(),
    );
    let server = ModelServer::start().await;
    server.respond_with(|body| {
        let first = opening(body);
        first.contains("Child task").then(|| answer("child report"))
    });
    let agent = |id: &str, n: u32| {
        tool(
            id,
            "Agent",
            json!({"description": format!("task {n}"), "prompt": format!("Child task {n}")}),
        )
    };
    server
        .push(calls(vec![agent("a1", 1), agent("a2", 2), agent("a3", 3)]))
        .push(calls(vec![agent("a4", 4), agent("a5", 5)]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "fan out", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let parent = conversation(&reqs, "fan out");
    for id in ["a1", "a2"] {
        let (r, is_error) = parent[1].tool_result_text(id);
        assert!(!is_error, "{id}: {r}");
    }
    let (r, is_error) = parent[1].tool_result_text("a3");
    assert!(is_error && r.contains("agents.maxChildren = 2"), "{r}");
    let (r, is_error) = parent[2].tool_result_text("a4");
    assert!(!is_error, "{r}");
    let (r, is_error) = parent[2].tool_result_text("a5");
    assert!(is_error && r.contains("agents.maxTotal = 3"), "{r}");
    // Three children ran; at depth 1 of agents.maxDepth 1 none is offered Agent.
    let children: Vec<&Recorded> = reqs
        .iter()
        .filter(|r| opening(&r.body).contains("Child task"))
        .collect();
    assert_eq!(children.len(), 3);
    assert!(children.iter().all(|c| !c.tool_names().iter().any(|t| t == "Agent")));
    assert!(
        !reqs
            .iter()
            .any(|r| opening(&r.body).contains("Child task 3") || opening(&r.body).contains("Child task 5"))
    );
}

#[tokio::test]
async fn agent_calls_of_one_message_run_at_the_same_time() {
    let env = Env::new();
    let server = ModelServer::start().await;
    // Each child's answer waits until both children's requests are in flight at once: run one
    // after the other, the first would wait alone and the meeting would never happen.
    let meeting = Meeting::new(2);
    let seats = meeting.clone();
    server.respond_with(move |body| {
        opening(body).contains("Survey part").then(|| Reply::Meet {
            meeting: seats.clone(),
            then: Box::new(answer("finding")),
        })
    });
    server
        .push(calls(vec![
            tool(
                "a1",
                "Agent",
                json!({"description": "left", "prompt": "Survey part one", "subagent_type": "Explore"}),
            ),
            tool(
                "a2",
                "Agent",
                json!({"description": "right", "prompt": "Survey part two", "subagent_type": "Explore"}),
            ),
        ]))
        .push(answer("both done"));
    let out = env.keel(&server).args(["-p", "survey"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        meeting.happened(),
        "the two children were never in flight at the same time"
    );
    let reqs = server.requests();
    assert_eq!(conversation(&reqs, "Survey part one").len(), 1);
    assert_eq!(conversation(&reqs, "Survey part two").len(), 1);
    let parent = conversation(&reqs, "survey");
    let last = parent.last().unwrap();
    for id in ["a1", "a2"] {
        let (text, is_error) = last.tool_result_text(id);
        assert!(!is_error && text.contains("finding"), "{id}: {text}");
    }
}

#[tokio::test]
async fn worktree_isolation_leaves_the_parents_tree_unchanged() {
    let env = Env::new();
    env.write("src/a.txt", "one\n");
    env.git_init();
    let parent_b = env.path("src/b.txt");
    let escape = parent_b.clone();
    let server = ModelServer::start().await;
    server.respond_with(move |body| {
        let first = opening(body);
        if !first.contains("Try the change") && !first.contains("Just look") {
            return None;
        }
        let system = body["system"][1]["text"].as_str().unwrap_or("").to_string();
        let cwd = system
            .lines()
            .find_map(|l| l.strip_prefix("- Working directory: "))
            .unwrap_or("")
            .to_string();
        let n = turns(body);
        Some(match (first.contains("Try the change"), n) {
            (true, 1) => calls(vec![
                tool(
                    "w1",
                    "Write",
                    json!({"file_path": format!("{cwd}/new.txt"), "content": "from the child\n"}),
                ),
                tool("w2", "Write", json!({"file_path": escape, "content": "escaped\n"})),
            ]),
            (true, _) => answer(&format!("Worked in {cwd}.")),
            (false, _) => answer("Nothing to change."),
        })
    });
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "try", "prompt": "Try the change", "isolation": "worktree"}),
        )]))
        .push(calls(vec![tool(
            "a2",
            "Agent",
            json!({"description": "look", "prompt": "Just look", "isolation": "worktree"}),
        )]))
        .push(answer("done"));
    // Even in bypassPermissions the child cannot write the parent's tree.
    let out = env
        .keel(&server)
        .args(["-p", "experiment", "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let child = conversation(&reqs, "Try the change");
    let (escaped, is_error) = child[1].tool_result_text("w2");
    assert!(is_error && escaped.contains("worktree isolation"), "{escaped}");
    assert!(!parent_b.exists(), "the parent's tree was written");
    assert!(!env.path("src/new.txt").exists() && !env.path("new.txt").exists());
    assert_eq!(
        env.git(&["status", "--porcelain"]),
        "",
        "the parent's tree is untouched"
    );

    // The changed worktree is kept and reported with its branch; the unchanged one is gone.
    let parent = conversation(&reqs, "experiment");
    let (report, is_error) = parent[1].tool_result_text("a1");
    assert!(!is_error, "{report}");
    let path = report
        .split("git worktree ")
        .nth(1)
        .and_then(|s| s.split(" on the branch").next())
        .unwrap_or_else(|| panic!("no worktree path in: {report}"));
    assert_eq!(
        std::fs::read_to_string(format!("{path}/new.txt")).unwrap(),
        "from the child\n"
    );
    let branch = report.split('`').nth(1).unwrap();
    assert!(branch.starts_with("keel/agent-"), "{report}");
    assert!(report.contains("1 uncommitted change(s)"), "{report}");
    let (report2, _) = parent[2].tool_result_text("a2");
    assert!(report2.contains("worktree was removed"), "{report2}");
    let worktrees = env.git(&["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 2, "{worktrees}");
    let branches = env.git(&["branch", "--list", "keel/*"]);
    assert_eq!(branches.lines().count(), 1, "{branches}");
}

#[tokio::test]
async fn a_background_agents_report_arrives_at_a_later_turn() {
    let env = Env::new();
    let server = ModelServer::start().await;
    // The child answers only once the parent's next request (with the call's result) has
    // arrived, so that result cannot have waited for the child.
    let meeting = Meeting::new(2);
    let seats = meeting.clone();
    server.respond_with(move |body| {
        opening(body).contains("Scan the logs").then(|| Reply::Meet {
            meeting: seats.clone(),
            then: Box::new(slow_answer("log-finding", 2)),
        })
    });
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "scan", "prompt": "Scan the logs", "run_in_background": true, "subagent_type": "Explore"}),
        )]))
        .push(Reply::Meet {
            meeting: meeting.clone(),
            then: Box::new(answer("Started the scan; waiting for it.")),
        })
        .push(answer("The scan reported its findings."));
    let out = env
        .keel(&server)
        .args(["-p", "check the logs", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["result"], "The scan reported its findings.");
    assert!(meeting.happened(), "the call's result waited for the background child");
    let reqs = server.requests();
    let parent = conversation(&reqs, "check the logs");
    assert_eq!(parent.len(), 3);
    // The call returned at once, before the child had answered.
    let (launched, is_error) = parent[1].tool_result_text("a1");
    assert!(
        !is_error && launched.contains("Started the background sub-agent"),
        "{launched}"
    );
    assert!(!parent[1].body.to_string().contains("log-finding"));
    // Its report came as a notification with the next turn.
    let last = parent[2].messages().last().unwrap().to_string();
    assert!(
        last.contains("has finished: completed") && last.contains("log-finding-29"),
        "{last}"
    );
}

#[tokio::test]
async fn the_verifier_gets_raw_facts_not_the_authors_summary() {
    let env = Env::new();
    env.write("src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a - b }\n");
    env.git_init();
    let lib = env.path("src/lib.rs");
    let server = ModelServer::start().await;
    server.respond_with(|body| {
        opening(body)
            .contains("Review the work done")
            .then(|| answer("Findings: none checked.\nVERDICT: UNVERIFIED"))
    });
    server
        .push(calls(vec![tool("r1", "Read", json!({"file_path": lib}))]))
        .push(calls(vec![tool(
            "e1",
            "Edit",
            json!({"file_path": lib, "old_string": "a - b", "new_string": "a + b"}),
        )]))
        .push(calls(vec![tool("b1", "Bash", json!({"command": "git status --short"}))]))
        .push(calls(vec![tool(
            "v1",
            "Agent",
            json!({"description": "verify", "prompt": "I fixed the bug and all tests pass, just confirm.", "subagent_type": "verifier"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "fix the addition in src/lib.rs",
            "--permission-mode",
            "acceptEdits",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let verifier = conversation(&reqs, "Review the work done");
    assert_eq!(verifier.len(), 1);
    let brief = opening(&verifier[0].body);
    assert!(
        brief.contains("fix the addition in src/lib.rs"),
        "the user's request: {brief}"
    );
    assert!(
        brief.contains("+pub fn add(a: u32, b: u32) -> u32 { a + b }"),
        "the diff: {brief}"
    );
    assert!(brief.contains(&lib.display().to_string()), "the changed file: {brief}");
    assert!(brief.contains("git status --short"), "the commands run: {brief}");
    // `git status` is no check, and the ledger saw no run after the edit.
    assert!(!brief.contains("--short` (exit 0, "), "{brief}");
    assert!(
        brief.contains("Verification status recorded by keel: "),
        "the ledger: {brief}"
    );
    assert!(
        !brief.contains("all tests pass"),
        "the author's summary must not reach it: {brief}"
    );
    assert_eq!(
        verifier[0].tool_names(),
        vec!["Read", "Glob", "Grep", "Bash", "BashOutput", "KillShell"]
    );
    assert!(system_text(&verifier[0].body, 0).starts_with("You are keel's verifier"));
    let parent = conversation(&reqs, "fix the addition");
    let (report, _) = parent.last().unwrap().tool_result_text("v1");
    assert!(
        report.contains("VERDICT: UNVERIFIED") && report.contains("not your prompt"),
        "{report}"
    );
}

#[tokio::test]
async fn a_failing_child_does_not_stop_the_parent() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.respond_with(|body| {
        opening(body)
            .contains("Doomed task")
            .then(|| crate::support::sse::api_error(400, "invalid_request_error", "the child's request is malformed"))
    });
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "x", "prompt": "Doomed task"}),
        )]))
        .push(answer("The sub-agent failed; I will do it myself."));
    let out = env
        .keel(&server)
        .args(["-p", "delegate", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["result"], "The sub-agent failed; I will do it myself.");
    let parent = conversation(&server.requests(), "delegate")
        .last()
        .cloned()
        .cloned()
        .unwrap();
    let (report, is_error) = parent.tool_result_text("a1");
    assert!(is_error && report.contains("did not finish"), "{report}");
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_children() {
    let env = Env::new();
    let server = ModelServer::start().await;
    // The child's answer would take two and a half minutes, far past the test's timeout for the
    // run: a keel that waited for it never finishes in time. Its chunks come a quarter of a
    // second apart, so the server soon notices when the child goes away.
    let words: String = (0..600).map(|i| format!("slow-{i:03} ")).collect();
    let long = Reply::Sse {
        chunks: frames(&[text(&words)], "end_turn", 100, 20),
        pace: Duration::from_millis(250),
    };
    server.respond_with(move |body| opening(body).contains("Long survey").then(|| long.clone()));
    server.push(calls(vec![tool(
        "a1",
        "Agent",
        json!({"description": "x", "prompt": "Long survey"}),
    )]));
    let child = env.keel(&server).args(["-p", "start"]).spawn();
    let pid = child.id().expect("pid") as i32;
    // The parent's request, then the child's, whose stream has begun.
    server.wait_requests(2).await;
    server.wait_chunks_sent(server.chunks_sent() + 1).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = finish(child).await;
    assert_eq!(out.code, 130, "{}", out.stderr);
    // The server notices on its next chunk.
    assert_eq!(server.wait_abandoned(1).await, 1, "the child's stream was dropped");
    // The child recorded its interruption in its own transcript.
    let subagents = env.project_dir();
    let transcript = std::fs::read_dir(&subagents)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("subagents"))
        .find(|p| p.is_dir())
        .and_then(|d| {
            std::fs::read_dir(d)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        })
        .expect("the child's transcript");
    let text = std::fs::read_to_string(transcript).unwrap();
    assert!(text.contains("[Request interrupted by user]"), "{text}");
}

/// `worktree.baseRef` names the commit a worktree sub-agent starts from: here a branch
/// without the local commit, so the child reads the published text.
#[tokio::test]
async fn worktree_base_ref_chooses_where_the_childs_tree_starts() {
    let env = Env::new();
    env.write("src/a.txt", "published\n");
    env.git_init();
    env.git(&["branch", "published"]);
    env.write("src/a.txt", "unpushed\n");
    env.git(&["commit", "-qam", "local work"]);
    let server = ModelServer::start().await;
    server.respond_with(move |body| {
        if !opening(body).contains("Read the file") {
            return None;
        }
        let system = system_text(body, 1);
        let cwd = system
            .lines()
            .find_map(|l| l.strip_prefix("- Working directory: "))
            .unwrap_or("")
            .to_string();
        Some(match turns(body) {
            1 => calls(vec![tool(
                "r1",
                "Read",
                json!({"file_path": format!("{cwd}/src/a.txt")}),
            )]),
            _ => answer("read it"),
        })
    });
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "read", "prompt": "Read the file", "isolation": "worktree"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "check",
            "--permission-mode",
            "bypassPermissions",
            "--settings",
            r#"{"worktree": {"baseRef": "published"}}"#,
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let child = conversation(&reqs, "Read the file");
    let (read, is_error) = child[1].tool_result_text("r1");
    assert!(
        !is_error && read.contains("published") && !read.contains("unpushed"),
        "{read}"
    );

    // A ref the repository lacks: the Agent call fails and says which setting.
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "read", "prompt": "Read the file", "isolation": "worktree"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "check",
            "--permission-mode",
            "bypassPermissions",
            "--settings",
            r#"{"worktree": {"baseRef": "no-such-branch"}}"#,
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let (report, is_error) = reqs[1].tool_result_text("a1");
    assert!(is_error && report.contains("worktree.baseRef"), "{report}");
}
