//! Diagnostics after an edit: a deterministic fake language server (python) configured in the
//! project's settings, and pyright for real where `scripts/pyright-install.sh` installed it.

use std::path::PathBuf;

use serde_json::json;

use crate::support::skip::{Lack, or_skip, python3};
use crate::support::sse::tool;
use crate::support::{Env, run_steps};

fn settings(env: &Env, servers: serde_json::Value) {
    env.write(
        ".claude/settings.json",
        &serde_json::to_string(&json!({"languageServers": servers})).unwrap(),
    );
}

fn fake_server(env: &Env) -> PathBuf {
    let script = env.home.join("fake_lsp.py");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/lsp/fake_server.py"),
        &script,
    )
    .unwrap();
    script
}

fn write(id: &str, env: &Env, file: &str, content: &str) -> crate::support::sse::Block {
    tool(id, "Write", json!({"file_path": env.path(file), "content": content}))
}

fn edit(id: &str, env: &Env, file: &str, old: &str, new: &str) -> crate::support::sse::Block {
    tool(
        id,
        "Edit",
        json!({"file_path": env.path(file), "old_string": old, "new_string": new}),
    )
}

#[tokio::test]
async fn edits_carry_the_servers_new_errors_and_warnings() {
    or_skip!(python3());
    let env = Env::new();
    let script = fake_server(&env);
    settings(&env, json!({"servers": {"python": {"command": ["python3", script]}}}));
    let (out, last) = run_steps(
        &env,
        vec![
            vec![write("w", &env, "app.py", "x = 1\nBAD here\ny = MEH\n")],
            vec![edit("fix", &env, "app.py", "BAD here", "fine")],
            vec![edit("clean", &env, "app.py", "MEH", "2")],
            vec![write("txt", &env, "notes.txt", "BAD but not code\n")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("w");
    assert!(!err, "{text}");
    assert!(
        text.contains("python3 reports 1 error and 1 warning in app.py:"),
        "{text}"
    );
    assert!(text.contains("line 2:1 error: found BAD"), "{text}");
    assert!(
        text.contains("\n\n<untrusted-content source=\"lsp\">\npython3 reports"),
        "the diagnostics are marked as outside text: {text}"
    );
    assert!(text.contains("line 3:5 warning: found MEH"), "{text}");
    let (text, _) = last.tool_result_text("fix");
    assert!(
        text.contains("0 errors and 1 warning") && !text.contains("found BAD"),
        "{text}"
    );
    let (text, _) = last.tool_result_text("clean");
    assert!(
        text.contains("python3 reports no errors or warnings in app.py."),
        "{text}"
    );
    let (text, _) = last.tool_result_text("txt");
    assert!(
        !text.contains("reports") && !text.contains("diagnostics"),
        "no language for .txt: {text}"
    );
}

#[tokio::test]
async fn a_starting_server_reports_on_a_later_call_and_settings_turn_it_off() {
    or_skip!(python3());
    let env = Env::new();
    let script = fake_server(&env);
    settings(
        &env,
        json!({"servers": {"python": {"command": ["python3", script, "--slow-init", "3"]}}}),
    );
    let (out, last) = run_steps(
        &env,
        vec![
            vec![write("first", &env, "app.py", "BAD\n")],
            vec![edit("second", &env, "app.py", "BAD", "BAD again")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, _) = last.tool_result_text("first");
    assert!(text.contains("language server (python3) is still starting"), "{text}");
    let (text, _) = last.tool_result_text("second");
    assert!(text.contains("line 1:1 error: found BAD"), "{text}");

    let off = Env::new();
    let script = fake_server(&off);
    settings(
        &off,
        json!({"enabled": false, "servers": {"python": {"command": ["python3", script]}}}),
    );
    let (out, last) = run_steps(&off, vec![vec![write("w", &off, "app.py", "BAD\n")]]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, _) = last.tool_result_text("w");
    assert!(!text.contains("found BAD") && !text.contains("diagnostics"), "{text}");
}

#[tokio::test]
async fn a_server_gets_no_secrets_and_rust_analyzer_runs_no_repository_code() {
    or_skip!(python3());
    let env = Env::new();
    // The fake server under rust-analyzer's name, outside the workspace.
    let program = env.home.join("bin/rust-analyzer");
    std::fs::create_dir_all(program.parent().unwrap()).unwrap();
    let code = std::fs::read_to_string(fake_server(&env)).unwrap();
    std::fs::write(&program, format!("#!/usr/bin/env python3\n{code}")).unwrap();
    std::fs::set_permissions(
        &program,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    let record = env.home.join("record.json");
    settings(
        &env,
        json!({"servers": {"rust": {"command": [program, "--record", record]}}}),
    );
    let server = crate::support::ModelServer::start().await;
    server
        .push(crate::support::sse::calls(vec![write(
            "w",
            &env,
            "lib.rs",
            "fn main() {}\nBAD\n",
        )]))
        .push(crate::support::sse::answer("done"));
    let out = env
        .keel(&server)
        .env("MY_SERVICE_TOKEN", "s3cret-value")
        .env("KEEL_TEST_PLAIN", "plain-value")
        .args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = server.requests().pop().unwrap();
    let (text, _) = last.tool_result_text("w");
    assert!(text.contains("found BAD"), "the server answered: {text}");
    let seen: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(seen["env"]["KEEL_TEST_PLAIN"], "plain-value", "{}", seen["env"]);
    assert!(
        seen["env"].get("MY_SERVICE_TOKEN").is_none(),
        "a secret reached the server: {}",
        seen["env"]
    );
    let options = &seen["initializationOptions"];
    assert_eq!(options["cargo"]["buildScripts"]["enable"], false, "{options}");
    assert_eq!(options["procMacro"]["enable"], false, "{options}");
    assert_eq!(seen["configuration"][0], serde_json::Value::Null, "{seen}");
    assert_eq!(seen["configuration"][1]["procMacro"]["enable"], false, "{seen}");
}

#[tokio::test]
async fn a_language_without_a_server_says_so() {
    let env = Env::new();
    // No gopls where keel looks: PATH holds only the system's directories, and none of them has it.
    let path = "/usr/bin:/bin";
    if std::env::split_paths(path).any(|d| d.join("gopls").exists()) {
        return crate::support::skip::skip(Lack::optional("gopls is installed in /usr/bin or /bin"));
    }
    let server = crate::support::ModelServer::start().await;
    server
        .push(crate::support::sse::calls(vec![write(
            "w",
            &env,
            "main.go",
            "package main\n",
        )]))
        .push(crate::support::sse::answer("done"));
    let out = env
        .keel(&server)
        .env("PATH", path)
        .args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = server.requests().pop().unwrap();
    let (text, err) = last.tool_result_text("w");
    assert!(!err, "{text}");
    assert!(
        text.contains("No go diagnostics: no language server is available (gopls is not on PATH"),
        "{text}"
    );
}

fn pyright() -> Result<PathBuf, Lack> {
    let version = include_str!("lsp/pyright-version.txt").trim();
    let cache = std::env::var_os("KEEL_TEST_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/keel-tests")))
        .unwrap_or_else(|| std::env::temp_dir().join("keel-tests"));
    let bin = cache.join(format!("pyright-{version}/node_modules/.bin/pyright-langserver"));
    crate::support::skip::program("node", "--version")?;
    if bin.exists() {
        Ok(bin)
    } else {
        Err(Lack::tool(format!(
            "pyright {version} is not installed at {} (run scripts/pyright-install.sh)",
            bin.display()
        )))
    }
}

#[tokio::test]
async fn pyright_reports_an_undefined_name() {
    let bin = or_skip!(pyright());
    let env = Env::new();
    settings(&env, json!({"servers": {"python": {"command": [bin, "--stdio"]}}}));
    // pyright may take longer than one edit's wait to start and analyse: later edits report.
    let mut steps = vec![vec![write("w0", &env, "calc.py", "# step 0\nprint(undefined_name)\n")]];
    for i in 1..6 {
        steps.push(vec![edit(
            &format!("w{i}"),
            &env,
            "calc.py",
            &format!("# step {}", i - 1),
            &format!("# step {i}"),
        )]);
    }
    let (out, last) = run_steps(&env, steps).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let texts: Vec<String> = (0..6).map(|i| last.tool_result_text(&format!("w{i}")).0).collect();
    let found = texts
        .iter()
        .position(|t| t.contains("error: \"undefined_name\" is not defined"));
    assert!(found.is_some(), "{texts:#?}");
    // Before the first report only "still starting" or "no diagnostics within 2 s" may show.
    for t in &texts[..found.unwrap_or(0)] {
        assert!(t.contains("still starting") || t.contains("sent no diagnostics"), "{t}");
    }
}
