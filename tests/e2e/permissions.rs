//! Permissions end to end: settings layers, rules, modes and headless denials.

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

#[tokio::test]
async fn credential_file_read_is_denied_and_listed() {
    let env = Env::new();
    env.write(".env", "SECRET=hunter2\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("c1", "Read", json!({"file_path": env.path(".env")}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "show env",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("c1");
    assert!(is_error);
    assert!(!text.contains("hunter2"), "secret leaked: {text}");
    assert!(text.contains("credentials"), "{text}");
    let denials = &out.json()["permission_denials"];
    assert_eq!(denials[0]["tool_name"], "Read");
    assert_eq!(denials[0]["tool_use_id"], "c1");
    assert_eq!(
        denials[0]["tool_input"]["file_path"],
        env.path(".env").display().to_string()
    );
}

#[tokio::test]
async fn explicit_allow_rule_unlocks_a_credential_file() {
    let env = Env::new();
    env.write(".env.example", "SECRET=placeholder\n");
    env.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Read(.env.example)"]}}"#,
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "c2",
            "Read",
            json!({"file_path": env.path(".env.example")}),
        )]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "show"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("c2");
    assert!(!is_error, "{text}");
    assert!(text.contains("placeholder"));
}

#[tokio::test]
async fn bare_name_deny_removes_the_tool_from_the_offer() {
    let env = Env::new();
    env.write(".keel/settings.json", r#"{"permissions": {"deny": ["Grep"]}}"#);
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--disallowedTools", "Glob"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let names = server.requests()[0].tool_names();
    assert!(names.contains(&"Read".to_string()));
    assert!(!names.contains(&"Grep".to_string()), "{names:?}");
    assert!(!names.contains(&"Glob".to_string()), "{names:?}");
}

#[tokio::test]
async fn deny_rule_holds_in_bypass_mode() {
    let env = Env::new();
    env.write("src/secret.txt", "classified\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "d1",
            "Read",
            json!({"file_path": env.path("src/secret.txt")}),
        )]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--dangerously-skip-permissions", "--output-format", "json"])
        .args(["--settings", r#"{"permissions": {"deny": ["Read(src/secret.txt)"]}}"#])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("d1");
    assert!(is_error);
    assert!(
        text.contains("Read(src/secret.txt)"),
        "the denial names the rule: {text}"
    );
    assert_eq!(out.json()["permission_denials"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn reads_outside_the_working_directories_need_approval_or_add_dir() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("notes.txt");
    std::fs::write(&file, "outside notes\n").unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("o1", "Read", json!({"file_path": file}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("o1");
    assert!(is_error);
    assert!(text.contains("outside the working directories"), "{text}");
    assert!(
        text.contains("non-interactively"),
        "headless says why nobody approved: {text}"
    );
    assert_eq!(out.json()["permission_denials"][0]["tool_use_id"], "o1");

    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("o2", "Read", json!({"file_path": file}))]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--add-dir"])
        .arg(outside.path())
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("o2");
    assert!(!is_error, "{text}");
    assert!(text.contains("outside notes"));
}

#[tokio::test]
async fn plan_mode_exit_cannot_be_approved_headless() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("p1", "ExitPlanMode", json!({"plan": "1. change x"}))]))
        .push(answer("Plan: change x."));
    let out = env
        .keel(&server)
        .args(["-p", "plan it", "--permission-mode", "plan", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("p1");
    assert!(is_error);
    assert!(text.contains("plan mode stays on"), "{text}");
    assert_eq!(out.json()["permission_denials"][0]["tool_name"], "ExitPlanMode");
}

#[tokio::test]
async fn default_mode_comes_from_settings() {
    let env = Env::new();
    env.write(
        ".claude/settings.local.json",
        r#"{"permissions": {"defaultMode": "plan"}}"#,
    );
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.lines()[0]["permissionMode"], "plan");
}

#[tokio::test]
async fn invalid_settings_json_is_a_startup_error_naming_file_and_line() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        "{\n  \"permissions\": {\n    \"allow\": [\"Read\",]\n  }\n}\n",
    );
    let server = ModelServer::start().await;
    let out = env.keel(&server).args(["-p", "x"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains(".claude/settings.json:3:"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn invalid_rule_is_a_startup_error() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let out = env
        .keel(&server)
        .args(["-p", "x", "--allowedTools", "Bash(ls"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("invalid permission rule `Bash(ls`"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn unknown_setting_keys_are_ignored_with_a_debug_note() {
    let env = Env::new();
    env.write(".keel/settings.json", r#"{"someFutureKey": true}"#);
    let server = ModelServer::start().await;
    server.push(answer("fine"));
    let out = env.keel(&server).args(["-p", "x", "--debug"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("ignoring unknown setting `someFutureKey`"),
        "{}",
        out.stderr
    );
}

fn bash(id: &str, command: &str) -> crate::support::sse::Block {
    tool(id, "Bash", json!({"command": command}))
}

#[tokio::test]
async fn compound_command_with_one_unallowed_part_is_denied() {
    let env = Env::new();
    env.write("x/keep.txt", "precious\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            bash("ok", "echo ok"),
            bash("mixed", "echo ok && rm -rf x"),
            bash("wrapped", "timeout 5 echo fine; nice -n 5 echo nice"),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--allowedTools", "Bash(echo:*)", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    let (text, is_error) = req.tool_result_text("ok");
    assert!(!is_error && text == "ok", "{text}");
    let (text, is_error) = req.tool_result_text("mixed");
    assert!(is_error, "{text}");
    assert!(text.contains("rm -rf x"), "the denial names the unallowed part: {text}");
    assert!(
        env.path("x/keep.txt").exists(),
        "the compound command must not have run"
    );
    let (text, is_error) = req.tool_result_text("wrapped");
    assert!(!is_error, "wrappers are looked through: {text}");
    let denials = out.json()["permission_denials"].as_array().unwrap().clone();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0]["tool_use_id"], "mixed");
}

#[tokio::test]
async fn output_redirection_is_checked_as_a_write() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![bash("r1", "echo hi > out.txt")]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--allowedTools", "Bash(echo:*)"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("r1");
    assert!(is_error && text.contains("out.txt"), "{text}");
    assert!(!env.path("out.txt").exists());
    // acceptEdits allows writes inside the workspace, through redirections too.
    let server = ModelServer::start().await;
    server
        .push(calls(vec![bash("r2", "echo hi > out.txt")]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--allowedTools",
            "Bash(echo:*)",
            "--permission-mode",
            "acceptEdits",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(env.path("out.txt")).unwrap(), "hi\n");
}

#[tokio::test]
async fn modes_decide_edits_and_commands() {
    let env = Env::new();
    env.write("notes.txt", "one\n");
    let steps = |server: &ModelServer| {
        server
            .push(calls(vec![tool(
                "rd",
                "Read",
                json!({"file_path": env.path("notes.txt")}),
            )]))
            .push(calls(vec![
                tool(
                    "ed",
                    "Edit",
                    json!({"file_path": env.path("notes.txt"), "old_string": "one", "new_string": "two"}),
                ),
                bash("sh", "python3 -c 'open(\"made-by-bash\", \"w\")'"),
            ]))
            .push(answer("done"));
    };
    let run = |mode: &'static str| {
        let env = &env;
        async move {
            let server = ModelServer::start().await;
            steps(&server);
            let out = env
                .keel(&server)
                .args(["-p", "x", "--permission-mode", mode, "--output-format", "json"])
                .run()
                .await;
            assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
            let req = server.requests()[2].clone();
            (out.json(), req.tool_result_text("ed"), req.tool_result_text("sh"))
        }
    };
    // default: both need approval; headless denies them.
    let (result, (ed, ed_err), (sh, sh_err)) = run("default").await;
    assert!(ed_err && sh_err, "{ed} / {sh}");
    assert_eq!(result["permission_denials"].as_array().unwrap().len(), 2);
    assert_eq!(std::fs::read_to_string(env.path("notes.txt")).unwrap(), "one\n");
    // plan: changes are refused as plan mode.
    let (_, (ed, ed_err), (sh, sh_err)) = run("plan").await;
    assert!(ed_err && ed.contains("plan mode"), "{ed}");
    assert!(sh_err && sh.contains("plan mode"), "{sh}");
    assert!(!env.path("made-by-bash").exists());
    // acceptEdits: the edit runs, the command still needs approval (only mkdir/touch/mv/cp
    // inside the workspace are approved with edits).
    let (_, (ed, ed_err), (sh, sh_err)) = run("acceptEdits").await;
    assert!(!ed_err, "{ed}");
    assert!(sh_err, "{sh}");
    assert_eq!(std::fs::read_to_string(env.path("notes.txt")).unwrap(), "two\n");
    std::fs::write(env.path("notes.txt"), "one\n").unwrap();
    // bypassPermissions: both run.
    let (_, (ed, ed_err), (sh, sh_err)) = run("bypassPermissions").await;
    assert!(!ed_err && !sh_err, "{ed} / {sh}");
    assert!(env.path("made-by-bash").exists());
    // dontAsk: only what is allowed runs.
    std::fs::write(env.path("notes.txt"), "one\n").unwrap();
    let (_, (ed, ed_err), (_, sh_err)) = run("dontAsk").await;
    assert!(ed_err && ed.contains("dontAsk"), "{ed}");
    assert!(sh_err);
}

#[tokio::test]
async fn destructive_commands_need_an_explicit_rule_even_in_bypass() {
    let env = Env::new();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&env.work)
        .status()
        .unwrap();
    env.write("tracked.txt", "v1\n");
    for args in [
        vec!["add", "."],
        vec!["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "v1"],
    ] {
        std::process::Command::new("git")
            .args(&args)
            .current_dir(&env.work)
            .status()
            .unwrap();
    }
    env.write("tracked.txt", "uncommitted work\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![bash("d1", "git reset --hard")]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--dangerously-skip-permissions", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("d1");
    assert!(is_error && text.contains("destructive"), "{text}");
    assert_eq!(
        std::fs::read_to_string(env.path("tracked.txt")).unwrap(),
        "uncommitted work\n"
    );
    // With an explicit allow rule it runs.
    let server = ModelServer::start().await;
    server
        .push(calls(vec![bash("d2", "git reset --hard")]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--dangerously-skip-permissions",
            "--allowedTools",
            "Bash(git reset --hard:*)",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(env.path("tracked.txt")).unwrap(), "v1\n");
}

#[tokio::test]
async fn discarding_checkout_and_amend_are_refused_even_in_bypass() {
    let env = Env::new();
    env.write("tracked.txt", "v1\n");
    env.git_init();
    let head = env.git(&["rev-parse", "HEAD"]);
    env.write("tracked.txt", "uncommitted work\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            bash("c1", "git checkout -- ."),
            bash("c2", &format!("git -C {} checkout tracked.txt", env.work.display())),
            bash("c3", "(git restore .)"),
            bash("c4", "git commit -qam 'not mine' --amend"),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "json",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    for id in ["c1", "c2", "c3", "c4"] {
        let (text, is_error) = server.requests()[1].tool_result_text(id);
        assert!(is_error && text.contains("destructive"), "{id}: {text}");
    }
    let result = out.json();
    let denied: Vec<&str> = result["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["tool_use_id"].as_str())
        .collect();
    assert_eq!(denied, ["c1", "c2", "c3", "c4"]);
    assert_eq!(
        std::fs::read_to_string(env.path("tracked.txt")).unwrap(),
        "uncommitted work\n"
    );
    assert_eq!(env.git(&["rev-parse", "HEAD"]), head, "the commit was not rewritten");
}

#[tokio::test]
async fn exit_plan_mode_approved_by_a_hook_switches_the_mode() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PermissionRequest": [{"matcher": "ExitPlanMode", "hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionRequest\", \"decision\": {\"behavior\": \"allow\"}}}'"}]}]}})
        .to_string(),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": env.path("a.txt"), "content": "x"}),
        )]))
        .push(calls(vec![tool(
            "p1",
            "ExitPlanMode",
            json!({"plan": "1. write a.txt"}),
        )]))
        .push(calls(vec![tool(
            "w2",
            "Write",
            json!({"file_path": env.path("a.txt"), "content": "x"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "x",
            "--permission-mode",
            "plan",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let (w1, _) = reqs[1].tool_result_text("w1");
    assert!(w1.contains("plan mode"), "{w1}");
    let (p1, p1_err) = reqs[2].tool_result_text("p1");
    assert!(!p1_err && p1.contains("default"), "approval switches to default: {p1}");
    let (w2, w2_err) = reqs[3].tool_result_text("w2");
    assert!(
        w2_err && !w2.contains("plan mode") && w2.contains("non-interactively"),
        "{w2}"
    );
}

#[tokio::test]
async fn grep_never_shows_credential_files() {
    let env = Env::new();
    env.write(".env", "API_KEY=hunter2\n");
    env.write("src/config.rs", "const API_KEY: &str = \"from-env\";\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "g1",
            "Grep",
            json!({"pattern": "API_KEY", "output_mode": "content"}),
        )]))
        .push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = server.requests()[1].tool_result_text("g1");
    assert!(!is_error, "{text}");
    assert!(text.contains("config.rs:1:"), "{text}");
    assert!(
        !text.contains("hunter2"),
        "a credential file leaked through Grep: {text}"
    );
    assert!(
        text.contains("1 file not searched"),
        "the omission is said, not hidden: {text}"
    );
}

#[tokio::test]
async fn settings_rule_forms_glob_commands_and_anchored_paths() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(touch * done)", "Edit(/src/**)"]}}"#,
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            bash("g1", "touch a.txt done"),
            bash("g2", "touch b.txt"),
            tool(
                "e1",
                "Write",
                json!({"file_path": env.path("src/deep/x.rs"), "content": "fn x() {}\n"}),
            ),
            tool(
                "e2",
                "Write",
                json!({"file_path": env.path("other.txt"), "content": "no\n"}),
            ),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    assert!(
        !req.tool_result_text("g1").1,
        "`touch * done` allows `touch a.txt done`"
    );
    assert!(req.tool_result_text("g2").1, "but not `touch b.txt`");
    assert!(
        !req.tool_result_text("e1").1,
        "`Edit(/src/**)` is anchored at the settings file's project"
    );
    assert!(req.tool_result_text("e2").1);
    assert!(env.path("src/deep/x.rs").exists() && !env.path("other.txt").exists() && !env.path("b.txt").exists());
    let denied: Vec<String> = out.json()["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["tool_use_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(denied, vec!["g2", "e2"]);
}

/// The TypeScript Agent SDK passes `--allow-dangerously-skip-permissions` next to
/// `--permission-mode bypassPermissions`; on its own the flag only offers the mode, it never
/// starts a session in it.
#[tokio::test]
async fn allow_dangerously_skip_permissions_offers_bypass_without_starting_in_it() {
    for (args, mode) in [
        (vec!["--allow-dangerously-skip-permissions"], "default"),
        (
            vec![
                "--permission-mode",
                "bypassPermissions",
                "--allow-dangerously-skip-permissions",
            ],
            "bypassPermissions",
        ),
    ] {
        let env = Env::new();
        let server = ModelServer::start().await;
        server.push(answer("ok"));
        let out = env
            .keel(&server)
            .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
            .args(args)
            .run()
            .await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.lines()[0]["permissionMode"], mode);
    }
}
