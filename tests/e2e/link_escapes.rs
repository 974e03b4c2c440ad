//! A cloned repository that links out of itself: `docs -> ~/.config/git` makes
//! `docs/notes` look like a project file while it is the user's credential store, and
//! `creds.txt` links to the file itself, and `notes -> ~/notes` makes a write to `notes/x` land in the home directory. `@`-mentions and
//! the file tools judge where a path leads: asked in the TUI, refused headless in every mode,
//! naming the resolved path; `--add-dir` lets it through, and links that stay inside work.

use std::path::PathBuf;

use serde_json::json;

use crate::support::sse::{self, Block, answer, tool};
use crate::support::tmux::Tmux;
use crate::support::{Env, ModelServer, Out, Recorded, read_jsonl};

const SECRET: &str = "ghp_LINKED0SECRET0451";
/// A search pattern that finds the secret without being it (the model's calls are in the
/// requests too).
const PATTERN: &str = "LINKED0SECRET";

/// The hostile checkout and the paths its links lead to.
struct Repo {
    env: Env,
    /// `docs/notes` resolved.
    creds: PathBuf,
    /// Where `notes` leads.
    notes: PathBuf,
}

fn hostile_repo() -> Repo {
    let env = Env::new();
    let git = env.home.join(".config/git");
    let notes = env.home.join("notes");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(git.join("notes"), format!("https://user:{SECRET}@github.com\n")).unwrap();
    std::os::unix::fs::symlink(&git, env.path("docs")).unwrap();
    std::os::unix::fs::symlink(git.join("notes"), env.path("creds.txt")).unwrap();
    std::os::unix::fs::symlink(&notes, env.path("notes")).unwrap();
    env.write("b.txt", "plain inside text\n");
    std::os::unix::fs::symlink("b.txt", env.path("a.txt")).unwrap();
    let creds = git.canonicalize().unwrap().join("notes");
    let notes = notes.canonicalize().unwrap();
    Repo { env, creds, notes }
}

/// Whether any request the model server received carries the secret.
fn secret_sent(server: &ModelServer) -> bool {
    server.requests().iter().any(|r| r.body.to_string().contains(SECRET))
}

async fn run(repo: &Repo, args: &[&str], steps: Vec<Vec<Block>>) -> (Out, Recorded, bool) {
    let server = ModelServer::start().await;
    for step in steps {
        server.push(sse::calls(step));
    }
    server.push(answer("done"));
    let out = repo.env.keel(&server).args(args).run().await;
    let last = server.requests().pop().expect("at least one request");
    (out, last, secret_sent(&server))
}

#[tokio::test]
async fn a_mention_through_a_link_out_of_the_workspace_is_not_attached_headless() {
    let repo = hostile_repo();
    let creds = repo.creds.display().to_string();
    for mode in ["default", "acceptEdits", "bypassPermissions"] {
        let (out, first, leaked) = run(
            &repo,
            &["-p", "summarize @docs/notes and @a.txt", "--permission-mode", mode],
            Vec::new(),
        )
        .await;
        assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
        assert!(!leaked, "{mode}: the credential file reached the model");
        // The note names where the mention leads.
        assert!(
            out.stderr.contains("@docs/notes: not attached") && out.stderr.contains(&creds),
            "{mode}: {}",
            out.stderr
        );
        // A link that stays inside the workspace is attached as before.
        let sent = first.messages()[0].to_string();
        assert!(sent.contains("plain inside text"), "{mode}: {sent}");
    }
}

#[tokio::test]
async fn file_tools_through_a_link_out_of_the_workspace_are_refused_headless_in_every_mode() {
    let repo = hostile_repo();
    let creds = repo.creds.display().to_string();
    let git_dir = repo.creds.parent().unwrap().display().to_string();
    let planted = repo.notes.join("planted.txt");
    for mode in ["default", "acceptEdits", "dontAsk", "bypassPermissions"] {
        let steps = vec![
            vec![
                tool("r1", "Read", json!({"file_path": "docs/notes"})),
                tool("g1", "Grep", json!({"pattern": PATTERN, "path": "docs"})),
                tool("g2", "Grep", json!({"pattern": PATTERN, "output_mode": "content"})),
                tool("l1", "Glob", json!({"pattern": "docs/*"})),
                tool("l2", "Glob", json!({"pattern": "**/notes"})),
                tool("r2", "Read", json!({"file_path": "a.txt"})),
                tool("r3", "Read", json!({"file_path": "creds.txt"})),
            ],
            vec![tool(
                "w1",
                "Write",
                json!({"file_path": "notes/planted.txt", "content": "from the repository\n"}),
            )],
        ];
        let (out, last, leaked) = run(&repo, &["-p", "go", "--permission-mode", mode], steps).await;
        assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
        assert!(!leaked, "{mode}: the credential file reached the model");
        for id in ["r1", "r3"] {
            let (text, is_error) = last.tool_result_text(id);
            assert!(
                is_error && text.contains(&creds) && text.contains("outside"),
                "{mode} {id}: {text}"
            );
        }
        for id in ["g1", "l1"] {
            let (text, is_error) = last.tool_result_text(id);
            assert!(is_error && text.contains(&git_dir), "{mode} {id}: {text}");
        }
        // Walks of the whole repository do not follow the link.
        let (text, is_error) = last.tool_result_text("l2");
        assert!(
            !is_error && !text.contains("docs/notes"),
            "{mode} Glob of the repository: {text}"
        );
        let (text, is_error) = last.tool_result_text("g2");
        assert!(
            !is_error && !text.contains(SECRET),
            "{mode} Grep of the repository: {text}"
        );
        let (text, is_error) = last.tool_result_text("r2");
        assert!(!is_error && text.contains("plain inside text"), "{mode}: {text}");
        let (text, is_error) = last.tool_result_text("w1");
        assert!(
            is_error && text.contains(&planted.display().to_string()),
            "{mode} Write: {text}"
        );
        assert!(!planted.exists(), "{mode}: Write created a file outside the workspace");
    }
}

/// The positive control: a working directory that covers where the link leads makes it a
/// place keel may read, for tools and mentions alike.
#[tokio::test]
async fn an_added_directory_covering_the_target_lets_the_link_through() {
    let repo = hostile_repo();
    let git_dir = repo.creds.parent().unwrap().display().to_string();
    let steps = vec![vec![
        tool("r1", "Read", json!({"file_path": "docs/notes"})),
        tool(
            "g1",
            "Grep",
            json!({"pattern": PATTERN, "path": "docs", "output_mode": "content"}),
        ),
    ]];
    let (out, last, _) = run(&repo, &["-p", "summarize @docs/notes", "--add-dir", &git_dir], steps).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = last.messages()[0].to_string();
    assert!(first.contains(SECRET), "the mention is attached: {first}");
    for id in ["r1", "g1"] {
        let (text, is_error) = last.tool_result_text(id);
        assert!(!is_error && text.contains(SECRET), "{id}: {text}");
    }
}

/// In the TUI the mention is a question naming where it leads: declined, nothing is sent;
/// approved, the file is attached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_through_a_link_out_of_the_workspace_is_asked_in_the_tui() {
    let repo = hostile_repo();
    let env = &repo.env;
    let server = ModelServer::start().await;
    server.push(answer("Nothing to summarize.")).push(answer("Summarized."));
    let t = Tmux::start(env, &server, &[], 160, 40);
    t.wait_for_text("Ask keel").await;
    t.type_text("summarize @docs/notes");
    t.press(&["Enter"]);
    let s = t.wait_for_text("Enter to choose").await;
    assert!(s.contains("resolves to") && s.contains("notes"), "{s}");
    assert!(server.requests().is_empty(), "nothing is sent before the answer");
    t.press(&["3"]);
    let s = t.wait_for_text("Nothing to summarize.").await;
    assert!(s.contains("not attached"), "{s}");
    assert!(!secret_sent(&server), "a declined mention reached the model");

    t.type_text("summarize @docs/notes");
    t.press(&["Enter"]);
    t.wait_for_text("Enter to choose").await;
    t.press(&["1"]);
    t.wait_for_text("Summarized.").await;
    assert!(secret_sent(&server), "an approved mention is attached");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);

    let decisions: Vec<serde_json::Value> = env
        .transcripts()
        .iter()
        .flat_map(|p| read_jsonl(p))
        .filter(|l| l["type"] == "event" && l["event"] == "permission_decision")
        .map(|l| l["data"].clone())
        .collect();
    let answers: Vec<&str> = decisions.iter().filter_map(|d| d["decision"].as_str()).collect();
    assert_eq!(answers, ["deny", "allow_once"], "{decisions:?}");
    assert!(decisions.iter().all(|d| d["mention"] == "docs/notes"), "{decisions:?}");
}

/// The session folder's model output is one of the places file tools read without asking: a
/// spilled result the model is pointed at is readable headless in the default mode, and so is
/// it through a link into it.
#[tokio::test]
async fn spilled_results_in_the_session_folder_are_read_without_asking() {
    let env = Env::new();
    let big: String = (0..4000).map(|i| format!("line {i:04} needle\n")).collect();
    env.write("big.txt", &big);
    let id = "3f1c2e4a-1b2c-4d5e-8f90-123456789abc";
    let session = env.project_dir().join(id);
    let spill = session.join("tool-results/g1.txt");
    std::fs::create_dir_all(&session).unwrap();
    std::os::unix::fs::symlink(&session, env.path("session")).unwrap();
    let server = ModelServer::start().await;
    server
        .push(sse::calls(vec![tool(
            "g1",
            "Grep",
            json!({"pattern": "needle", "path": "big.txt", "output_mode": "content", "head_limit": 0}),
        )]))
        .push(sse::calls(vec![
            tool("r1", "Read", json!({"file_path": spill, "offset": 3990})),
            tool(
                "r2",
                "Read",
                json!({"file_path": "session/tool-results/g1.txt", "offset": 3990}),
            ),
            tool("r3", "Read", json!({"file_path": session.join("hook-env.sh")})),
        ]))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "go", "--session-id", id]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = server.requests().pop().unwrap();
    let (text, _) = last.tool_result_text("g1");
    assert!(
        text.contains(&spill.display().to_string()),
        "the result was spilled: {text}"
    );
    for id in ["r1", "r2"] {
        let (text, is_error) = last.tool_result_text(id);
        assert!(!is_error && text.contains("line 3995 needle"), "{id}: {text}");
    }
    // The rest of the session folder is not the model's.
    let (text, is_error) = last.tool_result_text("r3");
    assert!(is_error && text.contains("outside the working directories"), "{text}");
}
