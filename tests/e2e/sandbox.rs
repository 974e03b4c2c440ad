//! The OS sandbox: writes outside the allowed directories and network connects are stopped,
//! work inside the workspace is not.

use std::process::Command;

use crate::support::Env;
use crate::support::host;
use crate::support::skip::{or_skip, skip_part};

fn keel() -> Command {
    Command::new(env!("CARGO_BIN_EXE_keel"))
}

/// What this machine's kernel can enforce, as keel's own probe reports it.
fn capabilities() -> serde_json::Value {
    host::probe().clone()
}

fn sandboxed(env: &Env, net: bool, script: &str) -> std::process::Output {
    let mut cmd = keel();
    cmd.arg("__sandbox-exec").arg("--write").arg(&env.work);
    if net {
        cmd.arg("--net");
    }
    cmd.args(["--", "bash", "-c", script])
        .current_dir(&env.work)
        .output()
        .unwrap()
}

#[test]
fn writes_outside_the_workspace_fail_inside_succeed() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let caps = capabilities();
    let out = sandboxed(
        &env,
        false,
        &format!(
            "echo inside > inside.txt && echo out > {}; echo status=$?",
            target.display()
        ),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if caps["filesystem"] == true {
        assert_eq!(std::fs::read_to_string(env.path("inside.txt")).unwrap(), "inside\n");
        assert!(!target.exists(), "the sandbox let a write escape");
        assert!(stdout.contains("status=1"), "{stdout} {stderr}");
        // Landlock refuses the write, or the read-only mount outside the writable paths does.
        assert!(
            stderr.contains("Permission denied") || stderr.contains("Read-only file system"),
            "{stderr}"
        );
    } else {
        assert_eq!(
            out.status.code(),
            Some(125),
            "without Landlock the helper must refuse: {stderr}"
        );
        assert!(!target.exists() && !env.path("inside.txt").exists());
    }
}

#[test]
fn network_connect_to_loopback_is_blocked_unless_allowed() {
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let caps = capabilities();

    let allowed = sandboxed(&env, true, &probe);
    assert!(
        String::from_utf8_lossy(&allowed.stdout).contains("connected"),
        "with --net the connection works: {}",
        String::from_utf8_lossy(&allowed.stderr)
    );

    let blocked = sandboxed(&env, false, &probe);
    let stdout = String::from_utf8_lossy(&blocked.stdout);
    if caps["network_namespace"] == true || caps["network_landlock_tcp"] == true {
        assert!(!stdout.contains("connected"), "the sandbox let a connection through");
        assert_ne!(blocked.status.code(), Some(0));
    } else {
        assert_eq!(blocked.status.code(), Some(125));
    }
}

#[test]
fn doctor_reports_what_the_sandbox_can_enforce() {
    let env = Env::new();
    let out = keel()
        .arg("doctor")
        .current_dir(&env.work)
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("Sandbox"), "{text}");
    let caps = capabilities();
    let fs_line = text.lines().find(|l| l.contains("file-system writes")).unwrap();
    assert_eq!(
        fs_line.trim_start().starts_with("ok"),
        caps["filesystem"] == true,
        "{fs_line}"
    );
}

#[test]
fn doctor_fails_on_broken_settings() {
    let env = Env::new();
    env.write(".keel/settings.json", "{ not json");
    let out = keel()
        .arg("doctor")
        .current_dir(&env.work)
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(".keel/settings.json:1:"), "{text}");
}

/// The sandbox through the Bash tool, as a session with `--sandbox` runs it.
#[tokio::test]
async fn sandboxed_bash_stops_escapes_and_says_why() {
    use crate::support::ModelServer;
    use crate::support::sse::{answer, calls, tool};
    use serde_json::json;

    let env = Env::new();
    env.write("sub/.keep", "");
    // Outside the workspace; the shared /tmp is not writable either (commands get a private
    // TMPDIR instead).
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let caps = capabilities();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool(
                "in",
                "Bash",
                json!({"command": "echo inside > sub/inside.txt && cat sub/inside.txt"}),
            ),
            // No `.keel`, `.claude`, `.git` or `.mcp.json` here: none may stay, yet other new
            // entries can be created at the top of the workspace.
            tool("top", "Bash", json!({"command": "echo top > top.txt"})),
            tool(
                "out",
                "Bash",
                json!({"command": format!("echo out > {}", target.display())}),
            ),
            tool(
                "net",
                "Bash",
                json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")}),
            ),
            tool("cd", "Bash", json!({"command": "mkdir -p sub && cd sub"})),
            tool("pwd", "Bash", json!({"command": "pwd"})),
            tool(
                "tmp",
                "Bash",
                json!({"command": "echo scratch > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""}),
            ),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    if caps["filesystem"] != true || !(caps["network_namespace"] == true || caps["network_landlock_tcp"] == true) {
        // Not enforceable here: keel refuses shell commands (failIfUnavailable defaults to true).
        let (text, is_error) = req.tool_result_text("in");
        assert!(is_error && text.contains("sandbox"), "{text}");
        assert!(out.stderr.contains("cannot be enforced"), "{}", out.stderr);
        return;
    }
    let (text, is_error) = req.tool_result_text("in");
    assert!(!is_error && text == "inside", "{text}");
    let (text, is_error) = req.tool_result_text("top");
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(env.path("top.txt")).unwrap(), "top\n");
    let (text, is_error) = req.tool_result_text("out");
    assert!(is_error, "{text}");
    assert!(!target.exists(), "the sandbox let a write escape");
    assert!(
        text.contains("[keel sandbox]") && text.contains(&env.work.display().to_string()),
        "{text}"
    );
    let (text, is_error) = req.tool_result_text("net");
    assert!(is_error && !text.contains("connected"), "{text}");
    assert!(text.contains("network access is off"), "{text}");
    // `cd` still persists inside the workspace under the sandbox.
    let (text, _) = req.tool_result_text("pwd");
    assert_eq!(text, env.path("sub").display().to_string());
    let (text, is_error) = req.tool_result_text("tmp");
    assert!(!is_error && text == "scratch", "the private TMPDIR is writable: {text}");
}

/// A repository whose configuration names a program (written earlier by some command) must not
/// get to run it through keel's own git snapshot, which runs outside any sandbox.
#[tokio::test]
async fn keels_git_snapshot_does_not_run_repository_programs() {
    let env = Env::new();
    let marker = env.path("fsmonitor-ran");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&env.work)
            .status()
            .unwrap();
    };
    git(&["init", "-q"]);
    git(&["config", "core.fsmonitor", &format!("touch {}", marker.display())]);
    env.write("a.txt", "x\n");
    let script = env.write("s.json", r#"[{"text": "hello"}]"#);
    let out = env
        .keel_offline()
        .args(["-p", "hi", "--provider", "script", "--script"])
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !marker.exists(),
        "keel's git snapshot ran the repository's fsmonitor program"
    );
}

/// Inside the sandbox, git's configuration and the agents' settings stay read-only even though
/// the workspace around them is writable: a change there would run code later, unsandboxed.
#[tokio::test]
async fn sandboxed_bash_cannot_rewrite_configuration_that_runs_code_later() {
    use crate::support::ModelServer;
    use crate::support::sse::{answer, calls, tool};
    use serde_json::json;

    let env = Env::new();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&env.work)
        .status()
        .unwrap();
    env.write(".claude/settings.json", "{}\n");
    env.write("out/.keep", "");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("cfg", "Bash", json!({"command": "python3 -c \"open('.claude/settings.json','w').write('{\\\"hooks\\\":{}}')\""})),
            tool("git", "Bash", json!({"command": "python3 -c \"open('.git/config','a').write('[core]\\\\n\\\\tfsmonitor = touch /tmp/x\\\\n')\""})),
            tool("ok", "Bash", json!({"command": "python3 -c \"open('out/fine.txt','w').write('ok')\""})),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    if let Err(lack) = host::landlock_and_network_namespace() {
        // The refusal path is covered by sandboxed_bash_stops_escapes_and_says_why.
        return skip_part(lack, "the checks of what the sandboxed commands did");
    }
    let req = &server.requests()[1];
    let (text, is_error) = req.tool_result_text("cfg");
    assert!(is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(env.path(".claude/settings.json")).unwrap(),
        "{}\n"
    );
    let (text, is_error) = req.tool_result_text("git");
    assert!(is_error, "{text}");
    assert!(
        !std::fs::read_to_string(env.path(".git/config"))
            .unwrap()
            .contains("fsmonitor")
    );
    let (text, is_error) = req.tool_result_text("ok");
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(env.path("out/fine.txt")).unwrap(), "ok");
}

/// Where the kernel cannot enforce the sandbox, keel says so once and then, per
/// `sandbox.failIfUnavailable`, refuses shell commands (the default) or runs them unsandboxed.
#[tokio::test]
async fn unavailable_sandbox_refuses_or_warns_per_setting() {
    use crate::support::ModelServer;
    use crate::support::sse::{answer, calls, tool};
    use serde_json::json;

    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "touch ran.txt"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .env("KEEL_SANDBOX_ASSUME_UNSUPPORTED", "1")
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("cannot be enforced").count(),
        1,
        "said once: {}",
        out.stderr
    );
    let (text, is_error) = server.requests()[1].tool_result_text("b1");
    assert!(is_error && text.contains("was not run"), "{text}");
    assert!(!env.path("ran.txt").exists());

    // The user's own settings: a project's `failIfUnavailable: false` is ignored.
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    std::fs::write(
        env.home.join(".keel/settings.json"),
        r#"{"sandbox": {"enabled": true, "failIfUnavailable": false}}"#,
    )
    .unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b2", "Bash", json!({"command": "touch ran.txt"}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .env("KEEL_SANDBOX_ASSUME_UNSUPPORTED", "1")
        .args(["-p", "x", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("UNSANDBOXED"), "{}", out.stderr);
    assert!(env.path("ran.txt").exists());
}

/// Configuration that runs code later does not survive the sandbox whether or not it exists
/// when the command starts: a missing `.keel`, `.claude` or `.mcp.json` a command creates is
/// moved into quarantine, a `.git` only stays when it runs nothing, an existing `.git` can be
/// neither changed nor moved away, and a later session runs nothing planted.
#[tokio::test]
async fn sandbox_protects_configuration_that_does_not_exist_yet() {
    use crate::support::ModelServer;
    use crate::support::sse::{answer, calls, tool};
    use serde_json::json;

    or_skip!(host::landlock_and_seccomp());
    let env = Env::new();
    env.write("src/main.txt", "x\n");
    let marker = env.home.join("planted-hook-ran");
    let hook = format!(
        r#"{{"hooks":{{"SessionStart":[{{"hooks":[{{"type":"command","command":"touch {}"}}]}}]}}}}"#,
        marker.display()
    );
    let fresh = vec![
        tool(
            "keel",
            "Bash",
            json!({"command": format!("mkdir -p .keel && echo '{hook}' > .keel/settings.json")}),
        ),
        tool("claude", "Bash", json!({"command": "mkdir .claude"})),
        tool("mcp", "Bash", json!({"command": "echo '{}' > .mcp.json"})),
        tool("init", "Bash", json!({"command": "git init -q"})),
        tool("ok", "Bash", json!({"command": "echo fine > src/new.txt"})),
    ];
    let server = ModelServer::start().await;
    server.push(calls(fresh)).push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    for id in ["keel", "claude", "mcp"] {
        // Refused by the check, or created in the sandbox and moved away after it.
        let (text, is_error) = req.tool_result_text(id);
        assert!(is_error || text.contains("moved into quarantine"), "{id}: {text}");
    }
    for p in [".keel", ".claude", ".mcp.json"] {
        assert!(!env.path(p).exists(), "{p} stayed after a sandboxed command created it");
    }
    // A plain `git init` runs nothing: its repository stays.
    let (text, is_error) = req.tool_result_text("init");
    assert!(!is_error && text.contains("kept"), "{text}");
    assert!(env.path(".git/HEAD").exists());
    let (text, is_error) = req.tool_result_text("ok");
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(env.path("src/new.txt")).unwrap(), "fine\n");

    // An existing repository: its whole `.git` stays as it is.
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&env.work)
        .status()
        .unwrap();
    let config_before = std::fs::read_to_string(env.path(".git/config")).unwrap();
    let existing = vec![
        tool("mv", "Bash", json!({"command": "mv .git .git-old"})),
        tool(
            "commondir",
            "Bash",
            json!({"command": "echo /tmp/evil > .git/commondir"}),
        ),
        tool(
            "config",
            "Bash",
            json!({"command": "git config core.fsmonitor 'touch /tmp/x'"}),
        ),
        tool(
            "hook",
            "Bash",
            json!({"command": "mkdir -p .git/hooks && echo 'touch x' > .git/hooks/pre-commit"}),
        ),
    ];
    let server = ModelServer::start().await;
    server.push(calls(existing)).push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    for id in ["mv", "commondir", "config", "hook"] {
        let (text, is_error) = req.tool_result_text(id);
        assert!(is_error, "{id}: {text}");
    }
    assert!(env.path(".git/config").exists() && !env.path(".git-old").exists());
    assert!(!env.path(".git/commondir").exists());
    assert!(!env.path(".git/hooks/pre-commit").exists());
    assert_eq!(std::fs::read_to_string(env.path(".git/config")).unwrap(), config_before);

    // A later session, unsandboxed, finds nothing planted to run.
    let script = env.write("s.json", r#"[{"text": "hello"}]"#);
    let out = env
        .keel_offline()
        .args(["-p", "hi", "--provider", "script", "--script"])
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!marker.exists(), "a hook planted inside the sandbox ran");
}

/// Landlock governs file contents and names, not metadata: outside the writable paths the
/// sandbox keeps modes, owners and times through read-only mounts (`chmod 777 ~/.ssh/id_rsa`,
/// `touch -d` to fool a build's freshness check), while the workspace's own stay changeable.
#[test]
fn file_metadata_outside_the_workspace_cannot_change() {
    or_skip!(host::landlock_and_mounts());
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("id_rsa");
    std::fs::write(&target, "SECRET\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&target).unwrap();
    env.write("run.sh", "echo hi\n");
    let t = target.display();
    let out = sandboxed(
        &env,
        false,
        &format!(
            "chmod 644 {t}; touch -d 2000-01-01 {t}; chmod +x run.sh && touch -d 2001-01-01 run.sh && echo inside-ok"
        ),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let after = std::fs::metadata(&target).unwrap();
    assert_eq!((after.mode(), after.mtime()), (before.mode(), before.mtime()));
    assert!(
        stdout.contains("inside-ok"),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::metadata(env.path("run.sh")).unwrap().mode() & 0o111, 0o111);
}
