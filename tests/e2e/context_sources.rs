//! Where the context comes from, end to end: rule files, plugins placed in skills folders,
//! skills of nested packages, the reference tool's project memory, what the skill listing's
//! budget left out, and safe mode, which turns all of it off.

use serde_json::{Value, json};

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect()
}

fn init_of(out: &crate::support::Out) -> Value {
    out.lines()
        .into_iter()
        .find(|l| l["subtype"] == "init")
        .unwrap_or_else(|| panic!("no system/init: {}", out.stdout))
}

fn encoded(path: &std::path::Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Unscoped rules (the user's and the project's) are in the system prompt from the start; a
/// rule with `paths:` arrives with the result of the first tool call that works on a matching
/// file; a rule linked out of the repository is not read; `keel context` lists them all.
#[tokio::test]
async fn rule_files_load_at_start_or_with_a_matching_file() {
    let env = Env::new();
    env.write("README.md", "a project\n");
    env.git_init();
    std::fs::create_dir_all(env.home.join(".claude/rules")).unwrap();
    std::fs::write(
        env.home.join(".claude/rules/style.md"),
        "USER-RULE: prefer short functions.",
    )
    .unwrap();
    env.write(
        ".claude/rules/testing.md",
        "PROJECT-RULE: run make check before saying done.",
    );
    env.write(
        ".claude/rules/api.md",
        "---\npaths:\n  - \"src/api/**/*.rs\"\n---\nSCOPED-RULE: API handlers return typed errors.",
    );
    env.write("src/api/users.rs", "pub fn users() {}\n");
    let outside = env.home.join("private.md");
    std::fs::write(&outside, "OUTSIDE-SECRET").unwrap();
    std::os::unix::fs::symlink(&outside, env.path(".claude/rules/linked.md")).unwrap();

    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "r1",
            "Read",
            json!({"file_path": env.path("src/api/users.rs").display().to_string()}),
        )]))
        .push(answer("done"));
    let out = env.keel(&server).args(["-p", "look at the users API"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let system = reqs[0].body["system"].to_string();
    assert!(
        system.contains("USER-RULE") && system.contains("PROJECT-RULE"),
        "{system}"
    );
    assert!(
        !system.contains("SCOPED-RULE"),
        "a scoped rule waits for its files: {system}"
    );
    assert!(!system.contains("OUTSIDE-SECRET"), "{system}");
    assert!(
        out.stderr.contains("linked.md"),
        "the skipped link is said: {}",
        out.stderr
    );
    let second = reqs[1].body["messages"].to_string();
    assert!(second.contains("SCOPED-RULE"), "{second}");
    assert!(second.contains("a rule for files matching src/api/**/*.rs"), "{second}");

    let out = env.keel_offline().arg("context").run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(".claude/rules/testing.md  (rule)")
            && out.stdout.contains(".claude/rules/style.md  (rule)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("Rules that load when a tool first works on a matching file")
            && out.stdout.contains("api.md  (paths: src/api/**/*.rs)"),
        "{}",
        out.stdout
    );
}

/// `keel plugin init` scaffolds a plugin in `.claude/skills/`, which then loads without being
/// named anywhere; its manifest's `skills` adds a folder; a second init keeps what exists.
#[tokio::test]
async fn a_plugin_in_the_skills_folder_loads_and_plugin_init_scaffolds_one() {
    let env = Env::new();
    env.write("README.md", "a project\n");
    env.git_init();
    let out = env.keel_offline().args(["plugin", "init", "tools"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let root = env.path(".claude/skills/tools");
    for f in [".claude-plugin/plugin.json", "skills/hello/SKILL.md", "README.md"] {
        assert!(root.join(f).is_file(), "{f}: {}", out.stdout);
    }
    // The user edits the manifest to name another skill folder.
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".claude-plugin/plugin.json")).unwrap()).unwrap();
    manifest["skills"] = json!(["./more"]);
    std::fs::write(root.join(".claude-plugin/plugin.json"), manifest.to_string()).unwrap();
    env.write(
        ".claude/skills/tools/more/format/SKILL.md",
        "---\ndescription: Formats the code of this repository.\n---\nRun the formatter.\n",
    );
    let again = env.keel_offline().args(["plugin", "init", "tools"]).run().await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("kept") && !again.stdout.contains("created"),
        "{}",
        again.stdout
    );
    assert!(
        std::fs::read_to_string(root.join(".claude-plugin/plugin.json"))
            .unwrap()
            .contains("./more"),
        "the edited manifest stays"
    );
    let bad = env.keel_offline().args(["plugin", "init", "../escape"]).run().await;
    assert_eq!(bad.code, 1, "{}", bad.stdout);

    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let init = init_of(&out);
    assert_eq!(init["plugins"][0]["name"], "tools", "{init}");
    let skills = names(&init["skills"]);
    assert!(
        skills.contains(&"tools:hello".to_string()) && skills.contains(&"tools:format".to_string()),
        "{init}"
    );
    let system = server.requests()[0].body["system"].to_string();
    assert!(system.contains("- tools:format: Formats the code"), "{system}");

    // A manifest whose `skills` names a file is a warning naming it; the session still runs.
    manifest["skills"] = json!("./more/format/SKILL.md");
    std::fs::write(root.join(".claude-plugin/plugin.json"), manifest.to_string()).unwrap();
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("which is a file"), "{}", out.stderr);
}

/// Skills of a package below the working directory are found; a name the project already
/// has shows as `<package>:<name>`; among agent definitions the nearest `.claude/` wins.
#[tokio::test]
async fn nested_package_skills_and_the_nearest_agent_definition() {
    let env = Env::new();
    env.write(
        ".claude/skills/deploy/SKILL.md",
        "---\ndescription: Deploys the whole repository.\n---\nroot deploy\n",
    );
    env.write(
        "services/api/.claude/skills/deploy/SKILL.md",
        "---\ndescription: Deploys the API service.\n---\napi deploy\n",
    );
    env.write(
        "services/api/.claude/skills/migrate/SKILL.md",
        "---\ndescription: Runs the API's migrations.\n---\nmigrate\n",
    );
    env.write(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: ROOT-REVIEWER reviews everything.\n---\nYou review.\n",
    );
    env.write(
        "services/.claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: SERVICES-REVIEWER reviews services.\n---\nYou review services.\n",
    );
    env.git_init();
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let skills = names(&init_of(&out)["skills"]);
    for s in ["deploy", "api:deploy", "migrate"] {
        assert!(skills.contains(&s.to_string()), "{s}: {skills:?}");
    }
    let system = server.requests()[0].body["system"].to_string();
    assert!(
        system.contains("- api:deploy: Deploys the API service.") && system.contains("- deploy: Deploys the whole"),
        "{system}"
    );

    // From services/, its reviewer is the nearer one.
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .current_dir(&env.path("services"))
        .args(["-p", "hi"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests()[0].body["system"].to_string();
    assert!(
        system.contains("SERVICES-REVIEWER") && !system.contains("ROOT-REVIEWER"),
        "{system}"
    );
}

/// The reference tool's `MEMORY.md` for the project is read while keel has none of its own,
/// and `keel context` and `keel doctor` say which file is in use.
#[tokio::test]
async fn the_reference_tools_project_memory_is_read_and_named() {
    let env = Env::new();
    env.write("README.md", "a project\n");
    env.git_init();
    let dir = env
        .home
        .join(".claude/projects")
        .join(encoded(&env.work))
        .join("memory");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("MEMORY.md"),
        "- REFERENCE-MEMORY: releases are cut on Tuesdays\n",
    )
    .unwrap();
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests()[0].body["system"].to_string();
    assert!(system.contains("REFERENCE-MEMORY"), "{system}");

    let out = env.keel_offline().arg("context").run().await;
    assert!(
        out.stdout.contains(&format!(
            "reference tool keeps (keel has none of its own here): {}",
            dir.join("MEMORY.md").display()
        )),
        "{}",
        out.stdout
    );
    let out = env.keel_offline().args(["doctor", "--offline"]).run().await;
    assert!(
        out.stdout.contains("Project memory") && out.stdout.contains(&dir.join("MEMORY.md").display().to_string()),
        "{}",
        out.stdout
    );

    // Once keel has its own, keel's is used.
    let own = env.project_dir().join("memory");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("MEMORY.md"), "- KEEL-MEMORY\n").unwrap();
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests()[0].body["system"].to_string();
    assert!(
        system.contains("KEEL-MEMORY") && !system.contains("REFERENCE-MEMORY"),
        "{system}"
    );
}

/// `/context` names the skills whose descriptions the listing's budget cut.
#[tokio::test]
async fn context_says_which_skills_the_listing_budget_left_out() {
    let env = Env::new();
    for name in ["alpha", "bravo", "charlie"] {
        env.write(
            &format!(".claude/skills/{name}/SKILL.md"),
            &format!("---\ndescription: {}\n---\nbody\n", "a long description ".repeat(8)),
        );
    }
    let server = ModelServer::start().await;
    let out = env
        .keel(&server)
        .env("SLASH_COMMAND_TOOL_CHAR_BUDGET", "30")
        .args(["-p", "/context"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Skills the listing's budget left out")
            && out
                .stdout
                .contains("listed by name only, their descriptions left out (3): alpha, bravo, charlie"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("the skill listing has 30 characters"),
        "{}",
        out.stdout
    );
    // With room for them all, nothing is said.
    let out = env.keel(&server).args(["-p", "/context"]).run().await;
    assert!(!out.stdout.contains("left out"), "{}", out.stdout);
}

/// Safe mode (the flag, keel's variable, the reference's variable): no instruction files,
/// rules, skills, plugins, memory, hooks or MCP servers, and the session says so.
#[tokio::test]
async fn safe_mode_runs_without_customisations_and_says_so() {
    let env = Env::new();
    env.write("README.md", "a project\n");
    env.git_init();
    env.write("CLAUDE.md", "CLAUDE-MD-TEXT");
    env.write(".claude/rules/r.md", "RULE-TEXT");
    env.write(
        ".claude/skills/deploy/SKILL.md",
        "---\ndescription: DEPLOY-SKILL\n---\nx\n",
    );
    let out = env.keel_offline().args(["plugin", "init", "tools"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log = env.path("hook.log");
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": format!("echo fired >> {}", log.display())}
        ]}]}})
        .to_string(),
    );
    let mcp = json!({"mcpServers": {"probe": {"command": "true"}}}).to_string();
    let memory = env.project_dir().join("memory");
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(memory.join("MEMORY.md"), "- MEMORY-TEXT\n").unwrap();

    // Without safe mode, everything is there.
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
            &mcp,
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests()[0].body["system"].to_string();
    for s in [
        "CLAUDE-MD-TEXT",
        "RULE-TEXT",
        "DEPLOY-SKILL",
        "MEMORY-TEXT",
        "tools:hello",
    ] {
        assert!(system.contains(s), "{s}: {system}");
    }
    assert!(log.exists(), "the hook ran");
    assert!(init_of(&out)["mcp_servers"].to_string().contains("probe"));
    std::fs::remove_file(&log).unwrap();

    for how in ["flag", "KEEL_SAFE_MODE", "CLAUDE_CODE_SAFE_MODE"] {
        let server = ModelServer::start().await;
        server.push(answer("ok"));
        let mut keel = env.keel(&server);
        keel.args([
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
            &mcp,
        ]);
        match how {
            "flag" => keel.arg("--safe-mode"),
            var => keel.env(var, "1"),
        };
        let out = keel.run().await;
        assert_eq!(out.code, 0, "{how}: {}", out.stderr);
        assert!(out.stderr.contains("safe mode:"), "{how}: {}", out.stderr);
        let init = init_of(&out);
        assert_eq!(init["safe_mode"], true, "{how}: {init}");
        assert_eq!(init["skills"], json!([]), "{how}: {init}");
        assert_eq!(init["plugins"], json!([]), "{how}: {init}");
        assert_eq!(init["mcp_servers"], json!([]), "{how}: {init}");
        let system = server.requests()[0].body["system"].to_string();
        for s in [
            "CLAUDE-MD-TEXT",
            "RULE-TEXT",
            "DEPLOY-SKILL",
            "MEMORY-TEXT",
            "tools:hello",
        ] {
            assert!(!system.contains(s), "{how}: {s} in {system}");
        }
        assert!(!log.exists(), "{how}: no hook runs in safe mode");
    }
    // `keel context` under the variable lists what such a session would load: nothing.
    let out = env.keel_offline().env("KEEL_SAFE_MODE", "1").arg("context").run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let claude_md = env.path("CLAUDE.md").display().to_string();
    assert!(
        out.stdout.contains("note: safe mode:")
            && out.stdout.contains("(none)")
            && !out.stdout.contains(&claude_md)
            && !out.stdout.contains("project memory ("),
        "{}",
        out.stdout
    );
}
