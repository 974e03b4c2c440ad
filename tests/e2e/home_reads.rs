//! Reads are private by default outside the workspace: a hostile repository's links into the
//! home directory (`vendor/cfg -> ~/.config`) lead a command keel approved on its own, or any
//! sandboxed command, to nothing but toolchains and plain configuration. Each test plants fake
//! secrets in a throwaway HOME (and, as root, in `/root`, another user's home here), lets a
//! scripted model read through the links, and checks that no secret reaches a tool result or
//! any request sent to the model.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::support::host;
use crate::support::skip::{Lack, or_skip, skip_part};
use crate::support::sse::{Block, answer, calls, tool};
use crate::support::{Env, ModelServer, Out, Recorded};

fn bash(id: &str, command: &str) -> Block {
    tool(id, "Bash", json!({ "command": command }))
}

/// One headless session; the run and every request the model server received.
async fn session(env: &Env, args: &[&str], steps: Vec<Block>) -> (Out, Vec<Recorded>) {
    let server = ModelServer::start().await;
    server.push(calls(steps)).push(answer("done"));
    let out = env.keel(&server).args(["-p", "go"]).args(args).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    (out, server.requests())
}

fn put(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Fake secrets in the test's HOME, where the issue found real ones: `(path in the home,
/// marker)`. Every marker holds `SECRET`, so a recursive grep for it would print them all.
const HOME_SECRETS: &[(&str, &str)] = &[
    (".config/git/credentials", "https://u:SECRET-GITCRED@example.com"),
    (".keel/projects/-other-project/old.jsonl", "SECRET-TRANSCRIPT-KEEL"),
    (".claude/projects/-other-project/old.jsonl", "SECRET-TRANSCRIPT-CLAUDE"),
    (".python_history", "SECRET-PYHISTORY"),
    (".local/share/fish/fish_history", "SECRET-FISHHISTORY"),
    (
        ".config/pip/pip.conf",
        "index-url = https://__token__:SECRET-PIPCONF@pypi.example/simple",
    ),
    (".yarnrc.yml", "npmAuthToken: SECRET-YARNRC"),
    (".my.cnf", "password=SECRET-MYCNF"),
    (".cache/huggingface/token", "SECRET-HFTOKEN"),
    (".config/glab-cli/config.yml", "token: SECRET-GLAB"),
    // Not on any list: the home itself is private.
    ("notes.txt", "SECRET-HOMENOTES"),
    // Inside a toolchain location the jail opens: its credential file stays hidden.
    (".cargo/credentials.toml", "token = \"SECRET-CARGOCRED\""),
];

/// The provider key keel keeps in its own user settings.
const KEEL_API_KEY: &str = "SECRET-KEELSETTINGSKEY";

/// A throwaway HOME holding the fake secrets, a repository whose `vendor/` links into it, and
/// a file the commands may read (so a test sees that they ran).
fn hostile_repository(env: &Env) -> Vec<String> {
    for (rel, secret) in HOME_SECRETS {
        put(&env.home.join(rel), &format!("{secret}\n"));
    }
    put(
        &env.home.join(".keel/settings.json"),
        &json!({"providers": {"other": {"type": "openai", "baseUrl": "https://llm.example/v1", "apiKey": KEEL_API_KEY}}})
            .to_string(),
    );
    // Plain configuration git reads from the home: its config and its global ignore file.
    put(
        &env.home.join(".gitconfig"),
        "[format]\n\tpretty = format:from-gitconfig %s\n",
    );
    put(&env.home.join(".config/git/ignore"), "*.ignored-globally\n");
    env.write("visible/readme.txt", "SECRET-VISIBLE-IN-WORKSPACE\n");
    std::fs::create_dir_all(env.path("vendor")).unwrap();
    std::fs::create_dir_all(env.path("empty")).unwrap();
    for (link, target) in [
        ("vendor/cfg", ".config"),
        ("vendor/keel", ".keel"),
        ("vendor/claude", ".claude"),
        ("vendor/cache", ".cache"),
        ("vendor/cargo", ".cargo"),
        ("vendor/home", ""),
    ] {
        std::os::unix::fs::symlink(env.home.join(target), env.path(link)).unwrap();
    }
    let mut secrets: Vec<String> = HOME_SECRETS.iter().map(|(_, s)| s.to_string()).collect();
    secrets.push(KEEL_API_KEY.into());
    secrets
}

/// As root: a secret in `/root`, another user's home while the test's HOME is elsewhere, and
/// `vendor/root` linking to it. `None` (a skipped part) where `/root` is not writable.
fn other_users_home(env: &Env) -> Option<(tempfile::TempDir, String)> {
    let dir = match tempfile::Builder::new().prefix("keel-e2e-home-").tempdir_in("/root") {
        Ok(d) => d,
        Err(e) => {
            let lack = Lack::host(format!("/root is not writable: the tests do not run as root ({e})"));
            skip_part(lack, "another user's home");
            return None;
        }
    };
    let secret = "SECRET-OTHER-USERS-HOME".to_string();
    put(&dir.path().join("notes"), &format!("{secret}\n"));
    std::os::unix::fs::symlink(dir.path(), env.path("vendor/root")).unwrap();
    Some((dir, secret))
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(["-c", "user.email=t@t", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?}");
}

/// No secret in any request to the model (tool results, the system prompt, everything).
fn assert_no_secret(requests: &[Recorded], secrets: &[String], what: &str) {
    assert!(!requests.is_empty());
    for r in requests {
        let body = r.body.to_string();
        for s in secrets {
            assert!(!body.contains(s.as_str()), "{what}: {s} reached the model: {body}");
        }
    }
}

/// The issue's attack on commands keel approves on its own: a recursive grep and diff through
/// the repository's links, and plain reads of what they lead to, in default, plan and dontAsk
/// mode. The jail leaves the workspace and plain configuration readable.
#[tokio::test]
async fn links_into_homes_lead_jailed_commands_to_no_secret() {
    or_skip!(host::jail());
    for mode in ["default", "plan", "dontAsk"] {
        let env = Env::new();
        let mut secrets = hostile_repository(&env);
        let other = other_users_home(&env);
        secrets.extend(other.iter().map(|(_, s)| s.clone()));
        git(&env.work, &["init", "-q"]);
        git(&env.work, &["add", "visible"]);
        git(&env.work, &["commit", "-qm", "import"]);
        env.write("scratch.ignored-globally", "x\n");
        env.write("untracked.txt", "x\n");
        let mut steps = vec![
            bash("grep", "grep -R SECRET vendor visible"),
            bash("diff", "diff -rN vendor empty"),
            bash("notes", "cat vendor/home/notes.txt"),
            bash("settings", "cat vendor/keel/settings.json"),
            bash(
                "transcripts",
                "grep -r SECRET vendor/keel/projects vendor/claude/projects",
            ),
            bash("log", "git log -1"),
            bash("status", "git status --short"),
        ];
        if let Some((dir, _)) = &other {
            steps.push(bash("root", &format!("cat {}/notes", dir.path().display())));
        }
        let (_, requests) = session(&env, &["--permission-mode", mode], steps).await;
        assert_no_secret(&requests, &secrets, mode);
        let last = requests.last().unwrap();
        // The commands ran (approved as read-only) and met the jail, not the check.
        let (text, _) = last.tool_result_text("grep");
        assert!(
            text.contains("SECRET-VISIBLE-IN-WORKSPACE"),
            "{mode}: the workspace stays readable: {text}"
        );
        // A toolchain location is open, its credential file is not; the rest of the home is
        // closed (its names can be listed, their contents not read).
        for blocked in [
            "vendor/cargo/credentials.toml: Permission denied",
            "vendor/home/notes.txt: Permission denied",
            "vendor/keel/settings.json: Permission denied",
        ] {
            assert!(text.contains(blocked), "{mode}: {blocked}: {text}");
        }
        // Plain configuration a tool needs is still read.
        let (text, is_error) = last.tool_result_text("log");
        assert!(!is_error && text.contains("from-gitconfig import"), "{mode}: {text}");
        let (text, is_error) = last.tool_result_text("status");
        assert!(
            !is_error && text.contains("untracked.txt") && !text.contains("ignored-globally"),
            "{mode}: {text}"
        );
    }
}

/// The write sandbox in bypassPermissions mode runs anything, so a plain `cat` or a script
/// reads what it likes — but for the home directories, keel's state and credentials.
#[tokio::test]
async fn links_into_homes_lead_sandboxed_commands_to_no_secret() {
    or_skip!(host::write_sandbox());
    let env = Env::new();
    let mut secrets = hostile_repository(&env);
    let other = other_users_home(&env);
    secrets.extend(other.iter().map(|(_, s)| s.clone()));
    git(&env.work, &["init", "-q"]);
    git(&env.work, &["add", "visible"]);
    git(&env.work, &["commit", "-qm", "import"]);
    env.write(
        "show.py",
        "import os, sys\nfor p in sys.argv[1:]:\n    try:\n        print(open(os.path.expanduser(p)).read())\n    except OSError as e:\n        print('blocked', p, e)\n",
    );
    let mut steps = vec![
        bash("grep", "grep -R SECRET vendor visible"),
        bash("cat", "cat vendor/home/notes.txt vendor/keel/settings.json"),
        bash("cred", "cat vendor/cfg/git/credentials"),
        bash(
            "script",
            &format!(
                "python3 show.py {}",
                HOME_SECRETS
                    .iter()
                    .map(|(rel, _)| format!("~/{rel}"))
                    .chain(["~/.keel/settings.json".to_string()])
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ),
        bash("log", "git log -1"),
    ];
    if let Some((dir, _)) = &other {
        steps.push(bash("root", &format!("cat {}/notes", dir.path().display())));
    }
    let (_, requests) = session(&env, &["--sandbox", "--dangerously-skip-permissions"], steps).await;
    assert_no_secret(&requests, &secrets, "bypassPermissions --sandbox");
    let last = requests.last().unwrap();
    let (text, _) = last.tool_result_text("grep");
    assert!(text.contains("SECRET-VISIBLE-IN-WORKSPACE"), "{text}");
    let (text, _) = last.tool_result_text("script");
    assert!(text.contains("blocked"), "the script ran and met the sandbox: {text}");
    let (text, is_error) = last.tool_result_text("cat");
    assert!(is_error && text.contains("cannot be read"), "the note says why: {text}");
    let (text, is_error) = last.tool_result_text("log");
    assert!(!is_error && text.contains("from-gitconfig import"), "{text}");
}

/// `sandbox.filesystem.allowRead` opens what the user names (a credential location too, when
/// named itself), `denyRead` closes what it names even inside the workspace, and a deny wins.
#[tokio::test]
async fn settings_add_readable_and_hidden_locations() {
    or_skip!(host::write_sandbox());
    let env = Env::new();
    put(&env.home.join("shared/data.txt"), "ALLOWED-DATA\n");
    put(&env.home.join("shared/private/key.txt"), "DENIED-INSIDE-ALLOWED\n");
    put(
        &env.home.join(".yarnrc.yml"),
        "npmRegistryServer: https://registry.example\n",
    );
    put(&env.home.join("other/file.txt"), "STILL-PRIVATE\n");
    env.write("build/secret.txt", "DENIED-IN-WORKSPACE\n");
    env.write("build/ok.txt", "WORKSPACE-OK\n");
    let secret_in_work = env.path("build/secret.txt");
    put(
        &env.home.join(".keel/settings.json"),
        &json!({"sandbox": {"filesystem": {
            "allowRead": ["~/shared", "~/.yarnrc.yml"],
            "denyRead": ["~/shared/private/**", secret_in_work.display().to_string()]
        }}})
        .to_string(),
    );
    env.write(
        "show.py",
        "import os, sys\nprint(open(os.path.expanduser(sys.argv[1])).read())\n",
    );
    let steps = vec![
        bash("allowed", "cat ~/shared/data.txt"),
        // A build tool reading its configuration (the check cannot see what a script reads).
        bash("named", "python3 show.py ~/.yarnrc.yml"),
        bash("inside", "cat ~/shared/private/key.txt"),
        bash("other", "cat ~/other/file.txt"),
        bash("work", "cat build/ok.txt build/secret.txt"),
    ];
    let (_, requests) = session(&env, &["--sandbox", "--dangerously-skip-permissions"], steps).await;
    let last = requests.last().unwrap();
    assert!(last.tool_result_text("allowed").0.contains("ALLOWED-DATA"));
    assert!(last.tool_result_text("named").0.contains("registry.example"));
    for (id, secret) in [
        ("inside", "DENIED-INSIDE-ALLOWED"),
        ("other", "STILL-PRIVATE"),
        ("work", "DENIED-IN-WORKSPACE"),
    ] {
        let (text, is_error) = last.tool_result_text(id);
        assert!(is_error && !text.contains(secret), "{id}: {text}");
    }
    assert!(last.tool_result_text("work").0.contains("WORKSPACE-OK"));
}

/// `keel doctor` shows the read policy in force: the private homes, what is readable in them,
/// and the settings' additions.
#[test]
fn doctor_shows_the_read_policy() {
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".cargo")).unwrap();
    put(
        &env.home.join(".keel/settings.json"),
        r#"{"sandbox": {"filesystem": {"allowRead": ["/opt/extra-sdk"], "denyRead": ["~/.cargo/registry"]}}}"#,
    );
    let out = Command::new(env!("CARGO_BIN_EXE_keel"))
        .arg("doctor")
        .current_dir(&env.work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let home = env.home.display().to_string();
    let line = |start: &str| {
        text.lines()
            .find(|l| l.contains(start))
            .unwrap_or_else(|| panic!("no line with {start:?}: {text}"))
            .to_string()
    };
    assert!(line("home directories private").contains(&home), "{text}");
    assert!(line("home directories private").contains("/root"), "{text}");
    assert!(line("readable in them").contains(&format!("{home}/.cargo")), "{text}");
    assert!(line("allowRead").contains("/opt/extra-sdk"), "{text}");
    assert!(line("denyRead").contains(&format!("{home}/.cargo/registry")), "{text}");
}

/// What the session itself hands its commands stays readable in the sandbox although it lies
/// in keel's private state: the hook environment file (the shell reads it first), a spilled
/// tool result, the project's memory, a loaded skill's script. The rest of keel's state — the
/// session's transcript, another session's — does not.
#[tokio::test]
async fn what_the_session_hands_its_commands_stays_readable() {
    or_skip!(host::write_sandbox());
    let env = Env::new();
    let hook = env.write(
        ".claude/hooks/env.sh",
        "#!/usr/bin/env bash\ncat >/dev/null; echo 'export FROM_HOOK=handed-over' >> \"$CLAUDE_ENV_FILE\"\n",
    );
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": hook.display().to_string()}]}]}})
            .to_string(),
    );
    let id = "7d3f5a2e-1b4c-4e8f-9a6d-2c5b8e1f0a37";
    let project = env.project_dir();
    put(&project.join("memory/MEMORY.md"), "- memory-note-readable\n");
    put(&project.join("0ther-session.jsonl"), "SECRET-SAME-PROJECT-TRANSCRIPT\n");
    let skill = env.home.join(".claude/skills/probe");
    put(
        &skill.join("SKILL.md"),
        "---\nname: probe\ndescription: Prints a marker.\n---\nRun run.sh.\n",
    );
    put(&skill.join("run.sh"), "echo skill-script-readable\n");
    let spill = project.join(id).join("tool-results/big.txt");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            bash("hook", "echo \"$FROM_HOOK\""),
            bash("big", "seq 1 20000"),
        ]))
        .push(calls(vec![
            bash("spill", &format!("grep -c . {}", spill.display())),
            bash("memory", &format!("cat {}", project.join("memory/MEMORY.md").display())),
            bash("skill", &format!("sh {}", skill.join("run.sh").display())),
            bash("own", &format!("cat {}", project.join(format!("{id}.jsonl")).display())),
            bash(
                "other",
                &format!("cat {}", project.join("0ther-session.jsonl").display()),
            ),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "go",
            "--session-id",
            id,
            "--sandbox",
            "--dangerously-skip-permissions",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    let last = requests.last().unwrap();
    for (step, expect) in [
        ("hook", "handed-over"),
        ("spill", "20000"),
        ("memory", "memory-note-readable"),
        ("skill", "skill-script-readable"),
    ] {
        let (text, is_error) = last.tool_result_text(step);
        assert!(!is_error && text.contains(expect), "{step}: {text}");
    }
    // The commands ran (bypass mode) and met the sandbox.
    for step in ["own", "other"] {
        let (text, is_error) = last.tool_result_text(step);
        assert!(
            is_error && text.contains("cat: ") && text.contains("Permission denied"),
            "{step}: {text}"
        );
    }
    assert_no_secret(&requests, &["SECRET-SAME-PROJECT-TRANSCRIPT".into()], "same project");
}
