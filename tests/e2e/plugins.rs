//! Plugins (`--plugin-dir`, the `plugins` setting) and project memory, end to end.

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test]
async fn a_plugin_brings_skills_commands_agents_hooks_and_mcp_servers() {
    let env = Env::new();
    let root = env.install_fixture("plugin/ops", "vendor/ops-plugin");
    let server = ModelServer::start().await;
    server.respond_with(|body| {
        let first = body["messages"][0]["content"].to_string();
        first
            .contains("List risky settings")
            .then(|| answer("No risky settings."))
    });
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "audit", "prompt": "List risky settings", "subagent_type": "ops:auditor"}),
        )]))
        .push(answer("Status summarised."));
    let out = env
        .keel(&server)
        .args([
            "-p",
            "/ops:status checkout",
            "--plugin-dir",
            "vendor/ops-plugin",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    let init = lines.iter().find(|l| l["subtype"] == "init").expect("system/init");
    assert_eq!(
        init["plugins"],
        json!([{"name": "ops", "path": root.display().to_string()}])
    );
    assert!(names(&init["skills"]).contains(&"ops:lint".to_string()), "{init}");
    assert!(names(&init["agents"]).contains(&"ops:auditor".to_string()), "{init}");
    let commands = names(&init["slash_commands"]);
    assert!(
        commands.contains(&"ops:status".to_string()) && commands.contains(&"compact".to_string()),
        "{init}"
    );

    // The plugin's command expanded into the prompt.
    let reqs = server.requests();
    let first = reqs[0].body["messages"][0]["content"].to_string();
    assert!(
        first.contains("Summarise the status of the service named checkout."),
        "{first}"
    );
    // Its agent type, namespaced, with the tools its file lists.
    let child = reqs
        .iter()
        .find(|r| {
            r.body["messages"][0]["content"]
                .to_string()
                .contains("List risky settings")
        })
        .expect("the plugin's agent ran");
    assert_eq!(child.tool_names(), vec!["Read", "Grep"]);
    assert!(
        child.body["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You audit infrastructure")
    );
    // Its hook ran, found through ${CLAUDE_PLUGIN_ROOT}.
    let log = std::fs::read_to_string(env.path("prompts.log")).expect("the plugin's hook wrote its log");
    assert!(log.contains("\"hook_event_name\":\"UserPromptSubmit\""), "{log}");
    // Its MCP server is handed to the MCP client as `ops:inventory` (the fixture names no real
    // program, so it is reported as failing to start).
    let servers = init["mcp_servers"].to_string();
    assert!(servers.contains("ops:inventory"), "{init}");

    // The `plugins` setting loads it too (relative to the settings file's project).
    env.write(
        ".claude/settings.json",
        &json!({"plugins": ["vendor/ops-plugin"]}).to_string(),
    );
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let init = out.lines().into_iter().find(|l| l["subtype"] == "init").unwrap();
    assert_eq!(init["plugins"][0]["name"], "ops");
    let sys = server.requests()[0].body["system"].to_string();
    assert!(sys.contains("- ops:lint: Lints shell scripts"), "{sys}");

    // A missing plugin folder is a clear startup error.
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--plugin-dir", "nowhere"])
        .run()
        .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("plugin") && out.stderr.contains("nowhere"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn project_memory_loads_at_start_and_the_model_keeps_it_with_the_file_tools() {
    let env = Env::new();
    let memory_dir = env.project_dir().join("memory");
    std::fs::create_dir_all(&memory_dir).unwrap();
    let lines: String = (0..210).map(|i| format!("- memory line {i:03}\n")).collect();
    std::fs::write(memory_dir.join("MEMORY.md"), lines).unwrap();
    let topic = memory_dir.join("feedback_tests.md");
    let settings = env.home.join(".keel/settings.json");
    let server = ModelServer::start().await;
    server.respond_with(|body| {
        body["messages"][0]["content"]
            .to_string()
            .contains("Look around")
            .then(|| answer("Looked."))
    });
    server
        .push(calls(vec![
            tool(
                "w1",
                "Write",
                json!({"file_path": topic, "content": "---\ntype: feedback\n---\nRun the slow tests too. Why: they caught a regression on 2025-03-14.\n"}),
            ),
            tool("w2", "Write", json!({"file_path": settings, "content": "{}\n"})),
        ]))
        .push(calls(vec![tool("a1", "Agent", json!({"description": "look", "prompt": "Look around"}))]))
        .push(answer("Noted."));
    let out = env
        .keel(&server)
        .args(["-p", "remember this", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let sys = reqs[0].body["system"].to_string();
    assert!(
        sys.contains("- memory line 000") && sys.contains("- memory line 199"),
        "{sys}"
    );
    assert!(!sys.contains("- memory line 200"), "only the first 200 lines load");
    assert!(sys.contains("10 more line(s) not loaded"), "{sys}");
    assert!(sys.contains("absolute dates"), "the memory rules are stated");
    // Writing in the memory folder needs no approval, even in default mode with nobody to ask;
    // keel's settings beside it stay protected.
    let (w1, is_error) = reqs[1].tool_result_text("w1");
    assert!(!is_error, "{w1}");
    assert!(
        std::fs::read_to_string(&topic)
            .unwrap()
            .contains("Run the slow tests too.")
    );
    let (w2, is_error) = reqs[1].tool_result_text("w2");
    assert!(is_error, "{w2}");
    assert!(!settings.exists());
    // Sub-agents do not get the memory.
    let child = reqs
        .iter()
        .find(|r| r.body["messages"][0]["content"].to_string().contains("Look around"))
        .unwrap();
    assert!(!child.body["system"].to_string().contains("memory line 000"));

    // autoMemoryEnabled: false leaves it out.
    env.write(
        ".claude/settings.json",
        &json!({"autoMemoryEnabled": false}).to_string(),
    );
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!server.requests()[0].body["system"].to_string().contains("memory line"));
}

/// A plugin's hook scripts find their files through `CLAUDE_PLUGIN_ROOT` in their environment,
/// as the reference's plugins do (not only through `${CLAUDE_PLUGIN_ROOT}` in hooks.json).
#[tokio::test]
async fn a_plugins_hooks_run_with_its_root_in_the_environment() {
    let env = Env::new();
    let root = env.path("vendor/where-plugin");
    std::fs::create_dir_all(root.join("hooks")).unwrap();
    std::fs::write(
        root.join("hooks/hooks.json"),
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/hooks/where.sh"}]}]}}"#,
    )
    .unwrap();
    std::fs::write(
        root.join("hooks/where.sh"),
        "printf '%s' \"$CLAUDE_PLUGIN_ROOT\" > \"$CLAUDE_PROJECT_DIR/plugin-root.txt\"\n",
    )
    .unwrap();
    // A hook of the user's settings is not a plugin's: no root for it.
    std::fs::create_dir_all(env.home.join(".claude")).unwrap();
    std::fs::write(
        env.home.join(".claude/settings.json"),
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "printf '%s' \"${CLAUDE_PLUGIN_ROOT-unset}\" > \"$CLAUDE_PROJECT_DIR/user-root.txt\""}]}]}}"#,
    )
    .unwrap();
    let server = ModelServer::start().await;
    server.push(answer("ok"));
    let out = env
        .keel(&server)
        .args(["-p", "hi", "--plugin-dir", "vendor/where-plugin"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(env.path("plugin-root.txt")).unwrap(),
        root.display().to_string()
    );
    assert_eq!(std::fs::read_to_string(env.path("user-root.txt")).unwrap(), "unset");
}
