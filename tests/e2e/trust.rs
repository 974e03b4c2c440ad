//! Workspace trust through the real binary: an interactive run in a folder whose project
//! settings would run commands asks first; declining keeps those settings off for the session
//! (the project's hooks do not run) and asks again next time; trusting is remembered. Headless
//! runs apply project settings as before.

use serde_json::json;

use crate::support::sse::answer;
use crate::support::tmux::Tmux;
use crate::support::{Env, ModelServer};

const W: u16 = 100;
const H: u16 = 30;

/// A project whose settings make every session write a marker (SessionStart and
/// UserPromptSubmit hooks), as a cloned hostile repository would.
fn hostile_project(env: &Env) -> std::path::PathBuf {
    let marker = env.home.join("hook-ran");
    let cmd = format!("echo ran >> '{}'", marker.display());
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": cmd}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": cmd}]}]
        }})
        .to_string(),
    );
    marker
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_projects_hooks_do_not_run_until_the_user_trusts_it() {
    let env = Env::new();
    let marker = hostile_project(&env);
    let server = ModelServer::start().await;
    server.push(answer("First answer.")).push(answer("Second answer."));

    // First run: the question, before anything of the project runs.
    let t = Tmux::start(&env, &server, &[], W, H);
    let s = t.wait_for_text("Enter to confirm").await;
    assert!(s.contains("Do you trust the files in this folder?"), "{s}");
    assert!(s.contains(env.work.to_str().unwrap()), "{s}");
    assert!(
        s.contains("• .claude/settings.json:") && s.contains("`hooks` (hooks)"),
        "{s}"
    );
    assert!(!marker.exists(), "a project hook ran before the question was answered");
    // Decline: the session works, without the project's hooks.
    t.press(&["2"]);
    let s = t.wait_for_text("Ask keel").await;
    assert!(
        s.contains("not trusted"),
        "the session says why the settings are off:\n{s}"
    );
    t.type_text("hello");
    t.press(&["Enter"]);
    t.wait_for_text("First answer.").await;
    assert!(!marker.exists(), "an untrusted project's hook ran");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
    drop(t);
    assert!(
        !env.home.join(".keel/trusted-folders.json").exists(),
        "declining is not recorded"
    );

    // Second run: asked again; trusting lets the hooks run and is remembered.
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Enter to confirm").await;
    t.press(&["Enter"]);
    t.wait_for_text("Ask keel").await;
    t.type_text("again");
    t.press(&["Enter"]);
    t.wait_for_text("Second answer.").await;
    let runs = std::fs::read_to_string(&marker).unwrap_or_default();
    assert_eq!(
        runs.lines().count(),
        2,
        "SessionStart and UserPromptSubmit ran once each: {runs:?}"
    );
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
    drop(t);
    let record = std::fs::read_to_string(env.home.join(".keel/trusted-folders.json")).unwrap();
    assert!(record.contains(env.work.to_str().unwrap()), "{record}");

    // Third run: no question.
    let t = Tmux::start(&env, &server, &[], W, H);
    let s = t.wait_for_text("Ask keel").await;
    assert!(!s.contains("Do you trust"), "{s}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_at_the_question_starts_nothing() {
    let env = Env::new();
    let marker = hostile_project(&env);
    let server = ModelServer::start().await;
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Enter to confirm").await;
    t.press(&["Escape"]);
    assert_eq!(t.wait_exit().await, 0);
    assert!(!marker.exists());
    assert!(env.transcripts().is_empty(), "no session was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_with_nothing_to_trust_asks_nothing() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"model": "claude-sonnet-4-5"}).to_string(),
    );
    let server = ModelServer::start().await;
    let t = Tmux::start(&env, &server, &[], W, H);
    let s = t.wait_for_text("Ask keel").await;
    assert!(!s.contains("Do you trust"), "{s}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// Headless runs keep applying project settings (CI works unchanged).
#[tokio::test]
async fn headless_runs_apply_project_hooks_without_asking() {
    let env = Env::new();
    let marker = hostile_project(&env);
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runs = std::fs::read_to_string(&marker).unwrap_or_default();
    assert_eq!(runs.lines().count(), 2, "{runs:?}");
}

/// Keys that would weaken a protection raise the question too, each named with what keel does
/// with it; a project's acceptEdits applies only once the folder is trusted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_that_weaken_a_protection_are_listed_and_accept_edits_waits_for_trust() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"disableAllHooks": true, "permissions": {"defaultMode": "acceptEdits"}}).to_string(),
    );
    let server = ModelServer::start().await;
    let t = Tmux::start(&env, &server, &[], W, H);
    let s = t.wait_for_text("Enter to confirm").await;
    assert!(s.contains("`disableAllHooks`"), "{s}");
    assert!(s.contains("only if you trust this folder"), "{s}");
    t.press(&["2"]);
    let s = t.wait_for_text("Ask keel").await;
    assert!(
        s.contains("mode default"),
        "an untrusted folder's acceptEdits applied:\n{s}"
    );
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
    drop(t);
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Enter to confirm").await;
    t.press(&["Enter"]);
    let s = t.wait_for_text("Ask keel").await;
    assert!(
        s.contains("mode acceptEdits"),
        "a trusted folder's acceptEdits applies:\n{s}"
    );
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}
