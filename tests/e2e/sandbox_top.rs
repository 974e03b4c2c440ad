//! The top of the workspace under `--sandbox`: a command can create any new file or directory
//! there, while configuration that makes programs run later (`.claude`, `.mcp.json`, `.keel`,
//! a `.git` with hooks or such configuration) does not stay: keel moves it into quarantine
//! once the command is gone, before anything else runs or reads it.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::host;
use crate::support::skip::{Lack, or_skip};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

/// The write sandbox, and a kernel that can keep a command from killing keel's helper
/// (Landlock ABI 6), which the top being open depends on.
fn top_opens() -> Result<(), Lack> {
    host::write_sandbox()?;
    match keel::sandbox::helper::kernel_abi() {
        Some(abi) if abi >= 6 => Ok(()),
        abi => Err(Lack::host(format!(
            "Landlock ABI {} is older than 6 (signal scoping), which the open top needs",
            abi.map_or("none".to_string(), |a| a.to_string())
        ))),
    }
}

/// Runs one sandboxed session of `steps` (each a list of calls in one turn).
async fn sandboxed(env: &Env, steps: Vec<Vec<crate::support::sse::Block>>) -> crate::support::Recorded {
    let server = ModelServer::start().await;
    for s in steps {
        server.push(calls(s));
    }
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    server.requests().pop().unwrap()
}

/// A command writing `content` to `rel` (its directory made first) with inline Python.
fn python_write(rel: &str, content: &str) -> String {
    let code = format!(
        "import os, sys; os.makedirs(os.path.dirname('{rel}') or '.', exist_ok=True); open('{rel}', 'w').write(sys.argv[1])"
    );
    format!("python3 -c \"{code}\" '{content}'")
}

/// Every path below `dir` named `name`.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_name() == name {
            out.push(p.clone());
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(find(&p, name));
        }
    }
    out
}

#[tokio::test]
async fn new_files_and_directories_can_be_created_at_the_top() {
    or_skip!(top_opens());
    let env = Env::new();
    let req = sandboxed(
        &env,
        vec![vec![
            tool("file", "Bash", json!({"command": "echo in > notes.txt"})),
            tool("dir", "Bash", json!({"command": "mkdir newdir && echo x > newdir/a"})),
        ]],
    )
    .await;
    for id in ["file", "dir"] {
        let (text, is_error) = req.tool_result_text(id);
        assert!(!is_error, "{id}: {text}");
    }
    assert_eq!(std::fs::read_to_string(env.path("notes.txt")).unwrap(), "in\n");
    assert_eq!(std::fs::read_to_string(env.path("newdir/a")).unwrap(), "x\n");
}

/// Agent settings and MCP server lists a sandboxed command creates are moved into the session's
/// quarantine before the next command runs, the model is told, and no later session loads them.
#[tokio::test]
async fn configuration_created_at_the_top_is_quarantined_and_never_loaded() {
    or_skip!(top_opens());
    let env = Env::new();
    let marker = env.home.join("planted-hook-ran");
    let hook = format!(
        r#"{{"hooks":{{"SessionStart":[{{"hooks":[{{"type":"command","command":"touch {}"}}]}}]}}}}"#,
        marker.display()
    );
    let server_marker = env.home.join("planted-server-ran");
    let mcp = format!(
        r#"{{"mcpServers":{{"planted":{{"command":"sh","args":["-c","touch {}"]}}}}}}"#,
        server_marker.display()
    );
    let req = sandboxed(
        &env,
        vec![
            vec![
                // Inline code: the check cannot see what it writes, the sandbox must hold.
                tool(
                    "claude",
                    "Bash",
                    json!({"command": python_write(".claude/settings.json", &hook)}),
                ),
                tool("mcp", "Bash", json!({"command": python_write(".mcp.json", &mcp)})),
            ],
            // The next command, sandboxed or not, no longer finds them.
            vec![tool("look", "Bash", json!({"command": "ls -a"}))],
        ],
    )
    .await;
    for (id, name) in [("claude", ".claude"), ("mcp", ".mcp.json")] {
        let (text, _) = req.tool_result_text(id);
        assert!(
            text.contains("moved into quarantine") && text.contains(name),
            "{id}: {text}"
        );
        assert!(!env.path(name).exists(), "{name} stayed in the workspace");
        let kept = find(&env.home.join(".keel"), name);
        assert!(
            kept.iter()
                .any(|p| p.components().any(|c| c.as_os_str() == "quarantine")),
            "{name} is not in the session's quarantine: {kept:?}"
        );
    }
    let (text, _) = req.tool_result_text("look");
    assert!(!text.contains(".claude") && !text.contains(".mcp.json"), "{text}");

    // A later session, unsandboxed and starting the project's MCP servers, finds nothing
    // planted to load.
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(
        env.home.join(".keel/settings.json"),
        r#"{"enableAllProjectMcpServers": true}"#,
    )
    .unwrap();
    let script = env.write("s.json", r#"[{"text": "hello"}]"#);
    let out = env
        .keel_offline()
        .args(["-p", "hi", "--provider", "script", "--script"])
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!marker.exists(), "a hook planted inside the sandbox ran");
    assert!(!server_marker.exists(), "an MCP server planted inside the sandbox ran");
}

/// `git init` in an empty workspace leaves a usable repository; one whose configuration makes
/// git run a program goes into quarantine.
#[tokio::test]
async fn a_plain_git_init_stays_and_a_configured_one_is_quarantined() {
    or_skip!(top_opens());
    let env = Env::new();
    let req = sandboxed(
        &env,
        vec![
            vec![tool(
                "init",
                "Bash",
                json!({"command": "git init -q && git status --short"}),
            )],
            vec![tool("status", "Bash", json!({"command": "git status"}))],
        ],
    )
    .await;
    let (text, is_error) = req.tool_result_text("init");
    assert!(!is_error && text.contains("kept"), "{text}");
    let (text, is_error) = req.tool_result_text("status");
    assert!(!is_error && text.contains("No commits yet"), "{text}");
    env.git(&["rev-parse", "--git-dir"]);
    env.git(&["status"]);

    let env = Env::new();
    let hooks = env.home.join("hooks");
    let req = sandboxed(
        &env,
        vec![vec![tool(
            "init",
            "Bash",
            // `git config` through inline code, which the check cannot see into.
            json!({"command": format!(
                "git init -q && python3 -c \"import subprocess; subprocess.run(['git', 'config', 'core.hooksPath', '{}'], check=True)\"",
                hooks.display()
            )}),
        )]],
    )
    .await;
    let (text, _) = req.tool_result_text("init");
    assert!(
        text.contains("moved into quarantine") && text.contains("core.hookspath"),
        "{text}"
    );
    assert!(!env.path(".git").exists(), "the configured .git stayed");
    let kept = find(&env.home.join(".keel"), ".git");
    assert!(
        kept.iter()
            .any(|p| std::fs::read_to_string(p.join("config")).is_ok_and(|c| c.contains("hooksPath"))),
        "{kept:?}"
    );
}

/// keel killed while a sandboxed command runs: the next keel start ends what is left of the
/// command and moves what it created away before it reads any settings.
#[tokio::test]
async fn a_keel_killed_mid_command_leaves_nothing_planted() {
    or_skip!(top_opens());
    let env = Env::new();
    let marker = env.home.join("planted-hook-ran");
    let hook = format!(
        r#"{{"hooks":{{"SessionStart":[{{"hooks":[{{"type":"command","command":"touch {}"}}]}}]}}}}"#,
        marker.display()
    );
    // Unique, so this test's command is told from others on the machine.
    let nap = format!("sleep {}", crate::support::procs::unique_sleep());
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "plant",
            "Bash",
            json!({"command": format!("{}; {nap}", python_write(".claude/settings.json", &hook))}),
        )]))
        .push(answer("done"));
    let mut keel = env
        .keel(&server)
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .spawn();
    let planted = env.path(".claude/settings.json");
    for _ in 0..500 {
        if planted.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(planted.exists(), "the command did not get to create it");
    crate::support::procs::wait_until_running(&nap).await;
    keel.start_kill().unwrap();
    let _ = keel.wait().await;

    let script = env.write("notes/s.json", r#"[{"text": "hello"}]"#);
    let out = env
        .keel_offline()
        .args(["-p", "hi", "--provider", "script", "--script"])
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("interrupted"), "{}", out.stderr);
    assert!(!env.path(".claude").exists(), "the planted settings stayed");
    assert!(!marker.exists(), "a hook planted by the interrupted command ran");
    let kept = find(&env.home.join(".keel"), "settings.json");
    assert!(
        kept.iter()
            .any(|p| p.components().any(|c| c.as_os_str() == "quarantine")),
        "{kept:?}"
    );
    // Killing is asynchronous: give a loaded machine a moment.
    for _ in 0..100 {
        if crate::support::procs::alive(&nap).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        crate::support::procs::alive(&nap).is_empty(),
        "the interrupted command still runs"
    );
}

/// The command's own Landlock domain (which keeps it from signalling the helper) must not
/// forbid moving files between directories: `mv`, cargo and git all rename across them.
#[tokio::test]
async fn files_move_between_directories_and_out_of_tmpdir() {
    or_skip!(top_opens());
    let env = Env::new();
    env.write("a/f.txt", "moved\n");
    std::fs::create_dir_all(env.path("b")).unwrap();
    let last = sandboxed(
        &env,
        vec![vec![
            // `mv` would copy on EXDEV and hide it; rename(2) itself must work.
            tool(
                "mv",
                "Bash",
                json!({"command": "python3 -c \"import os; os.rename('a/f.txt', 'b/f.txt'); os.rename('a', 'c')\" && cat b/f.txt"}),
            ),
            tool(
                "tmp",
                "Bash",
                json!({"command": "echo scratch > \"$TMPDIR/s\" && mv \"$TMPDIR/s\" b/s && cat b/s"}),
            ),
        ]],
    )
    .await;
    let (text, is_error) = last.tool_result_text("mv");
    assert!(!is_error && text.contains("moved"), "{text}");
    let (text, is_error) = last.tool_result_text("tmp");
    assert!(!is_error && text.contains("scratch"), "{text}");
}
