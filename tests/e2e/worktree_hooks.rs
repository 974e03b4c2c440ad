//! WorktreeCreate and WorktreeRemove hooks: a hook makes a worktree sub-agent's directory
//! instead of git (and the sub-agent works there), a hook removes an unchanged worktree
//! instead of keel, and a hook's bad answer stops the sub-agent with an error naming it.

use serde_json::{Value, json};

use crate::hooks::{script, settings};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, Recorded, read_jsonl};

fn on(command: &str) -> Value {
    json!([{"hooks": [{"type": "command", "command": command}]}])
}

fn opening(body: &Value) -> String {
    body["messages"][0]["content"].to_string()
}

fn agent_call(server: &ModelServer, prompt: &str) {
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "isolated", "prompt": prompt, "isolation": "worktree"}),
        )]))
        .push(answer("done"));
}

/// The parent's request that carries the Agent call's result.
fn agent_result(reqs: &[Recorded]) -> (String, bool) {
    reqs.iter()
        .filter(|r| opening(&r.body).contains("delegate"))
        .nth(1)
        .unwrap_or_else(|| panic!("no parent request after the Agent call"))
        .tool_result_text("a1")
}

async fn run(env: &Env, server: &ModelServer) {
    let out = env
        .keel(server)
        .args(["-p", "delegate", "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[tokio::test]
async fn a_worktree_create_hook_makes_the_directory_the_sub_agent_works_in() {
    let env = Env::new();
    let made = env.home.join("hook-worktrees");
    let hook = script(
        &env,
        "create.sh",
        &format!(
            "INPUT=$(cat)\necho \"$INPUT\" >> \"$CLAUDE_PROJECT_DIR/create.log\"\n\
             D=\"{}/$(echo \"$INPUT\" | jq -r .name)\"\nmkdir -p \"$D\"\necho \"$D\"",
            made.display()
        ),
    );
    settings(&env, json!({"WorktreeCreate": on(&hook)}));
    let escape = env.path("escaped.txt");
    let server = ModelServer::start().await;
    server.respond_with(move |body| {
        if !opening(body).contains("Work over there") {
            return None;
        }
        let n = body["messages"].as_array().map(Vec::len).unwrap_or(0);
        Some(if n == 1 {
            calls(vec![
                tool(
                    "b1",
                    "Bash",
                    json!({"command": "echo from-the-child > here.txt && pwd"}),
                ),
                tool("w1", "Write", json!({"file_path": escape, "content": "escaped\n"})),
            ])
        } else {
            answer("worked there")
        })
    });
    agent_call(&server, "Work over there");
    run(&env, &server).await;

    let log = read_jsonl(&env.path("create.log"));
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["hook_event_name"], "WorktreeCreate");
    let name = log[0]["name"].as_str().unwrap_or_default();
    assert!(name.starts_with("agent-"), "{log:?}");
    let dir = made.join(name);
    assert_eq!(
        std::fs::read_to_string(dir.join("here.txt")).unwrap(),
        "from-the-child\n"
    );
    assert!(!env.path("here.txt").exists(), "the child ran in the project");
    let reqs = server.requests();
    let child: Vec<_> = reqs
        .iter()
        .filter(|r| opening(&r.body).contains("Work over there"))
        .collect();
    let (pwd, is_error) = child[1].tool_result_text("b1");
    let canonical = dir.canonicalize().unwrap();
    assert!(!is_error && pwd.contains(&canonical.display().to_string()), "{pwd}");
    let (escaped, is_error) = child[1].tool_result_text("w1");
    assert!(is_error, "the child wrote the parent's tree: {escaped}");
    assert!(!env.path("escaped.txt").exists());
    // keel ran no git on it, and with no WorktreeRemove hook it stays.
    let (report, is_error) = agent_result(&reqs);
    assert!(!is_error, "{report}");
    assert!(
        report.contains("no WorktreeRemove hook is configured, so it was left in place"),
        "{report}"
    );
    assert!(dir.is_dir());
}

#[tokio::test]
async fn a_worktree_remove_hook_takes_over_removing_an_unchanged_git_worktree() {
    let env = Env::new();
    env.write("src/a.txt", "one\n");
    env.git_init();
    let hook = script(
        &env,
        "remove.sh",
        "cat >> \"$CLAUDE_PROJECT_DIR/remove.log\"\necho >> \"$CLAUDE_PROJECT_DIR/remove.log\"",
    );
    settings(&env, json!({"WorktreeRemove": on(&hook)}));
    let server = ModelServer::start().await;
    server.respond_with(|body| opening(body).contains("Only look").then(|| answer("nothing to change")));
    agent_call(&server, "Only look");
    run(&env, &server).await;

    let log = read_jsonl(&env.path("remove.log"));
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["hook_event_name"], "WorktreeRemove");
    let path = log[0]["worktree_path"].as_str().unwrap_or_default().to_string();
    assert!(path.contains("agent-"), "{log:?}");
    assert!(
        std::path::Path::new(&path).join("src/a.txt").exists(),
        "the hook succeeded, so keel left the worktree to it"
    );
    let (report, is_error) = agent_result(&server.requests());
    assert!(
        !is_error && report.contains("the WorktreeRemove hook") && report.contains("keel left it"),
        "{report}"
    );

    // A failing WorktreeRemove hook: keel removes the worktree itself and warns.
    let failing = script(
        &env,
        "remove-fails.sh",
        "cat > /dev/null\necho 'no such volume' >&2\nexit 1",
    );
    settings(&env, json!({"WorktreeRemove": on(&failing)}));
    let server = ModelServer::start().await;
    server.respond_with(|body| opening(body).contains("Only look").then(|| answer("nothing to change")));
    agent_call(&server, "Only look");
    run(&env, &server).await;
    let (report, is_error) = agent_result(&server.requests());
    assert!(!is_error, "{report}");
    assert!(
        report.contains("Warning")
            && report.contains("remove-fails.sh")
            && report.contains("no such volume")
            && report.contains("keel removed the worktree itself"),
        "{report}"
    );
    // The first worktree (left to the hook) and the main tree remain; the second is gone.
    let worktrees = env.git(&["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 2, "{worktrees}");
}

#[tokio::test]
async fn a_worktree_create_hooks_bad_answer_is_the_agent_calls_error() {
    let env = Env::new();
    let cases = [
        (
            "relative.sh",
            "cat > /dev/null\nmkdir -p made\necho made",
            "is not an absolute path to a directory",
        ),
        ("silent.sh", "cat > /dev/null", "returned no worktree path"),
        (
            "fails.sh",
            "cat > /dev/null\necho 'quota exceeded' >&2\nexit 1",
            "quota exceeded",
        ),
    ];
    for (name, body, expected) in cases {
        let hook = script(&env, name, body);
        settings(&env, json!({"WorktreeCreate": on(&hook)}));
        let server = ModelServer::start().await;
        server.respond_with(|body| opening(body).contains("Never runs").then(|| answer("ran")));
        agent_call(&server, "Never runs");
        run(&env, &server).await;
        let reqs = server.requests();
        let (report, is_error) = agent_result(&reqs);
        assert!(
            is_error && report.contains(name) && report.contains(expected),
            "{name}: {report}"
        );
        assert!(
            !reqs.iter().any(|r| opening(&r.body).contains("Never runs")),
            "{name}: the sub-agent started"
        );
    }
}
