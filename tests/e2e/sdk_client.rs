//! The real Python Agent SDK drives keel: `query()`, `ClaudeSDKClient`, permissions and
//! `can_use_tool`, SDK hooks, interrupt, mode and model changes, turn limits, structured output.
//! Each test runs a program from `tests/e2e/sdk/` against the scripted model server.

use serde_json::{Value, json};

use crate::support::procs::{assert_gone, unique_sleep};
use crate::support::sdk::{self, Report};
use crate::support::skip::or_skip;
use crate::support::sse::{answer, api_error, calls, text, tool};
use crate::support::{Env, ModelServer};

fn of_type<'a>(r: &'a Report, t: &str) -> Vec<&'a Value> {
    r.messages()
        .into_iter()
        .filter(|m| m["type"] == t)
        .map(|m| &m["data"])
        .collect()
}

fn results(r: &Report) -> Vec<&Value> {
    of_type(r, "ResultMessage")
}

/// The tool result blocks the SDK yielded, by tool_use_id: (content text, is_error, tool_use_result).
fn tool_result(r: &Report, id: &str) -> (String, bool, Value) {
    for m in of_type(r, "UserMessage") {
        if let Some(blocks) = m["content"].as_array() {
            for b in blocks {
                if b["tool_use_id"] == id {
                    let text = match &b["content"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    return (text, b["is_error"] == true, m["tool_use_result"].clone());
                }
            }
        }
    }
    panic!("no tool result for {id} in {:#?}", r.messages());
}

#[tokio::test]
async fn query_runs_one_prompt_and_reports_keel_as_the_engine() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("Hello from keel."));
    let r = or_skip!(sdk::run(&env, &server, "query_one_shot").await);
    let init = of_type(&r, "SystemMessage");
    let init = init.iter().find(|m| m["subtype"] == "init").expect("an init message");
    assert_eq!(init["data"]["claude_code_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(init["data"]["keel_version"], env!("CARGO_PKG_VERSION"));
    assert!(init["data"]["tools"].as_array().unwrap().iter().any(|t| t == "Edit"));
    let res = results(&r);
    assert_eq!(res.len(), 1);
    assert_eq!(res[0]["result"], "Hello from keel.");
    assert_eq!(res[0]["is_error"], false);
    assert_eq!(res[0]["terminal_reason"], "completed");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].messages()[0]["content"][0]["text"], "Say hello");
    // The SDK passes `--system-prompt ""`: no empty text block may reach the API.
    for block in reqs[0].body["system"].as_array().unwrap() {
        assert!(!block["text"].as_str().unwrap().trim().is_empty(), "{block}");
    }
}

#[tokio::test]
async fn a_client_session_keeps_the_conversation_across_prompts() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("Hello Ada.")).push(answer("Your name is Ada."));
    let r = or_skip!(sdk::run(&env, &server, "multi_turn").await);
    let res = results(&r);
    assert_eq!(res.len(), 2);
    assert_eq!(res[0]["result"], "Hello Ada.");
    assert_eq!(res[1]["result"], "Your name is Ada.");
    assert_eq!(res[0]["session_id"], res[1]["session_id"]);
    let second = &server.requests()[1];
    let texts: Vec<String> = second.messages().iter().map(|m| m["content"].to_string()).collect();
    assert!(texts[0].contains("My name is Ada."), "{texts:?}");
    assert!(texts[1].contains("Hello Ada."), "{texts:?}");
    assert!(texts[2].contains("What is my name?"), "{texts:?}");
}

#[tokio::test]
async fn a_read_edit_bash_turn_changes_the_file_and_reports_the_patch() {
    let env = Env::new();
    let file = env.write("greet.txt", "helo world\n");
    let path = file.display().to_string();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("r1", "Read", json!({"file_path": path}))]))
        .push(calls(vec![tool(
            "e1",
            "Edit",
            json!({"file_path": path, "old_string": "helo", "new_string": "hello"}),
        )]))
        .push(calls(vec![tool("b1", "Bash", json!({"command": "cat greet.txt"}))]))
        .push(answer("Fixed."));
    let r = or_skip!(sdk::run(&env, &server, "read_edit_bash").await);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello world\n");
    let (_, is_error, edit) = tool_result(&r, "e1");
    assert!(!is_error);
    assert_eq!(edit["originalFile"], "helo world\n");
    assert_eq!(
        edit["structuredPatch"],
        json!([{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["-helo world", "+hello world"]}])
    );
    let (bash, is_error, _) = tool_result(&r, "b1");
    assert!(!is_error && bash.contains("hello world"), "{bash}");
    assert_eq!(results(&r)[0]["result"], "Fixed.");
}

#[tokio::test]
async fn permission_modes_decide_what_runs_unasked() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..2 {
        server
            .push(calls(vec![tool(
                "w1",
                "Write",
                json!({"file_path": "note.txt", "content": "remember\n"}),
            )]))
            .push(answer("done"));
    }
    let r = or_skip!(sdk::run(&env, &server, "permission_modes").await);
    let res = results(&r);
    assert_eq!(res.len(), 2);
    // default: nobody can approve, so the Write is denied and reported.
    assert_eq!(res[0]["permission_denials"][0]["tool_name"], "Write");
    let denied: Vec<&Value> = of_type(&r, "SystemMessage")
        .into_iter()
        .filter(|m| m["subtype"] == "permission_denied")
        .collect();
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0]["data"]["tool_name"], "Write");
    // bypassPermissions: it runs.
    assert_eq!(res[1]["permission_denials"], json!([]));
    assert_eq!(std::fs::read_to_string(env.path("note.txt")).unwrap(), "remember\n");
}

#[tokio::test]
async fn allowed_tools_let_only_the_allowed_command_run() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "touch made.txt"}))]))
        .push(calls(vec![tool("b2", "Bash", json!({"command": "rm made.txt"}))]))
        .push(answer("done"));
    let r = or_skip!(sdk::run(&env, &server, "allowed_tools").await);
    assert!(
        env.path("made.txt").exists(),
        "the allowed touch ran and the rm did not"
    );
    let (_, touch_error, _) = tool_result(&r, "b1");
    let (_, rm_error, _) = tool_result(&r, "b2");
    assert!(!touch_error && rm_error);
    assert_eq!(results(&r)[0]["permission_denials"][0]["tool_use_id"], "b2");
}

#[tokio::test]
async fn can_use_tool_allows_denies_and_rewrites_inputs() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "touch allowed.txt"}))]))
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": "denied.txt", "content": "x"}),
        )]))
        .push(calls(vec![tool(
            "b2",
            "Bash",
            json!({"command": "touch original.txt"}),
        )]))
        .push(calls(vec![tool("b3", "Bash", json!({"command": "touch tidy.txt"}))]))
        .push(answer("done"));
    let r = or_skip!(sdk::run(&env, &server, "can_use_tool").await);
    let asked: Vec<&Value> = r.lines.iter().filter(|l| l["kind"] == "asked").collect();
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert_eq!(asked[0]["tool_name"], "Bash");
    assert_eq!(asked[0]["tool_use_id"], "b1");
    assert_eq!(asked[0]["input"]["command"], "touch allowed.txt");
    // Suggestions arrive as permission update objects the SDK can parse.
    let s = &asked[0]["suggestions"][0];
    assert_eq!(s["type"], "addRules", "{asked:?}");
    assert_eq!(s["rules"][0]["tool_name"], "Bash");
    assert_eq!(asked[1]["tool_name"], "Write");

    assert!(env.path("allowed.txt").exists());
    assert!(!env.path("denied.txt").exists());
    let (text, is_error, _) = tool_result(&r, "w1");
    assert!(
        is_error && text.contains("Writing files is not allowed today."),
        "{text}"
    );
    assert!(env.path("rewritten.txt").exists(), "the rewritten input ran");
    assert!(!env.path("original.txt").exists(), "the original input did not");
    // The model was told what the callback said.
    let (sent, _) = server.requests()[2].tool_result_text("w1");
    assert!(sent.contains("Writing files is not allowed today."), "{sent}");
    // An approval that rewrites the call into a denied one does not get past the deny rule.
    assert!(env.path("allowed.txt").exists(), "the rewritten rm was refused");
    let (text, is_error, _) = tool_result(&r, "b3");
    assert!(is_error && text.contains("deny rule"), "{text}");
}

#[tokio::test]
async fn sdk_hooks_deny_a_tool_and_keep_the_turn_going() {
    let env = Env::new();
    env.write("keep.txt", "precious\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "rm keep.txt"}))]))
        .push(answer("Could not delete."))
        .push(answer("Summary: nothing deleted."));
    let r = or_skip!(sdk::run(&env, &server, "hooks").await);
    assert!(env.path("keep.txt").exists(), "the PreToolUse hook's deny held");
    let pre = r.get("pre_tool_use");
    assert_eq!(pre["input"]["hook_event_name"], "PreToolUse");
    assert_eq!(pre["input"]["tool_name"], "Bash");
    assert_eq!(pre["input"]["tool_input"]["command"], "rm keep.txt");
    assert_eq!(pre["tool_use_id"], "b1");
    assert!(pre["input"]["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(pre["input"]["prompt_id"].as_str().is_some_and(|s| !s.is_empty()));
    let (text, is_error, _) = tool_result(&r, "b1");
    assert!(is_error && text.contains("No deleting in this repository."), "{text}");
    // Stop: the first stop is sent back with the hook's reason, the second ends the turn.
    let stops: Vec<&Value> = r.lines.iter().filter(|l| l["kind"] == "stop").collect();
    assert_eq!(stops.len(), 2);
    assert_eq!(stops[0]["input"]["stop_hook_active"], false);
    assert_eq!(stops[1]["input"]["stop_hook_active"], true);
    assert_eq!(stops[0]["input"]["last_assistant_message"], "Could not delete.");
    let third = &server.requests()[2];
    assert!(
        third.messages().last().unwrap()["content"]
            .to_string()
            .contains("Also write the summary line."),
        "the Stop hook's reason reached the model"
    );
    assert_eq!(results(&r)[0]["result"], "Summary: nothing deleted.");
}

#[tokio::test]
async fn interrupt_stops_the_running_command_and_the_session_goes_on() {
    let env = Env::new();
    let server = ModelServer::start().await;
    // The command would run for most of an hour, far past the test's timeout for the program:
    // only an interrupt that stops it lets the program finish in time.
    let marker = unique_sleep();
    server
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": format!("sleep {marker}")}),
        )]))
        .push(answer("Yes, still here."));
    let r = or_skip!(sdk::run(&env, &server, "interrupt").await);
    assert_gone(&marker).await;
    r.get("interrupted");
    let res = results(&r);
    assert_eq!(res.len(), 2);
    assert_eq!(res[0]["subtype"], "error_during_execution");
    assert_eq!(res[0]["terminal_reason"], "aborted_tools");
    assert_eq!(res[1]["result"], "Yes, still here.");
    let last = server.requests().pop().unwrap();
    assert!(
        last.body["messages"].to_string().contains("interrupted"),
        "the next turn's model knows about the interruption"
    );
}

#[tokio::test]
async fn set_permission_mode_applies_to_the_next_turn() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": "a.txt", "content": "a"}),
        )]))
        .push(answer("not allowed"))
        .push(calls(vec![tool(
            "w2",
            "Write",
            json!({"file_path": "b.txt", "content": "b"}),
        )]))
        .push(answer("created"));
    let r = or_skip!(sdk::run(&env, &server, "set_permission_mode").await);
    r.get("mode_set");
    assert!(!env.path("a.txt").exists());
    assert!(env.path("b.txt").exists());
    let status: Vec<&Value> = of_type(&r, "SystemMessage")
        .into_iter()
        .filter(|m| m["subtype"] == "status")
        .collect();
    assert_eq!(status[0]["data"]["permissionMode"], "acceptEdits");
    let inits: Vec<&Value> = of_type(&r, "SystemMessage")
        .into_iter()
        .filter(|m| m["subtype"] == "init")
        .collect();
    assert_eq!(inits.last().unwrap()["data"]["permissionMode"], "acceptEdits");
}

#[tokio::test]
async fn max_turns_ends_the_run_with_its_own_result() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("g1", "Glob", json!({"pattern": "*"}))]))
        .push(answer("never reached"));
    let r = or_skip!(sdk::run(&env, &server, "max_turns").await);
    assert!(
        r.get("raised")["error"]
            .as_str()
            .unwrap()
            .contains("limit of 1 model turns")
    );
    let res = results(&r);
    assert_eq!(res[0]["subtype"], "error_max_turns");
    assert_eq!(res[0]["is_error"], true);
    assert_eq!(res[0]["terminal_reason"], "max_turns");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_model_option_and_set_model_choose_the_model_requested() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("one")).push(answer("two"));
    let r = or_skip!(sdk::run(&env, &server, "model").await);
    let reqs = server.requests();
    assert_eq!(reqs[0].body["model"], "claude-opus-5-5");
    assert_eq!(reqs[1].body["model"], "claude-haiku-5-5");
    assert_eq!(results(&r).len(), 2);
}

#[tokio::test]
async fn the_fallback_model_option_hands_over_after_overloads() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for _ in 0..3 {
        server.push(api_error(529, "overloaded_error", "Overloaded"));
    }
    server.push(answer("answered by the fallback"));
    let r = or_skip!(sdk::run(&env, &server, "fallback_model").await);
    let models: Vec<Value> = server.requests().iter().map(|q| q.body["model"].clone()).collect();
    assert_eq!(
        models,
        [
            "claude-sonnet-5-5",
            "claude-sonnet-5-5",
            "claude-sonnet-5-5",
            "claude-haiku-5-5"
        ]
    );
    let res = results(&r);
    assert_eq!(res.len(), 1);
    assert_eq!(res[0]["result"], "answered by the fallback");
    assert_eq!(res[0]["is_error"], false);
}

#[tokio::test]
async fn json_schema_output_arrives_validated_as_structured_output() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(answer("It is a Rust project."))
        .push(calls(vec![tool(
            "s1",
            "StructuredOutput",
            json!({"files": "many", "language": "Rust"}),
        )]))
        .push(calls(vec![
            text("Here it is."),
            tool("s2", "StructuredOutput", json!({"files": 3, "language": "Rust"})),
        ]));
    let r = or_skip!(sdk::run(&env, &server, "json_schema").await);
    let res = results(&r);
    assert_eq!(res[0]["subtype"], "success");
    assert_eq!(res[0]["structured_output"], json!({"files": 3, "language": "Rust"}));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "the turn ends with the valid answer");
    assert!(reqs[0].tool_names().contains(&"StructuredOutput".to_string()));
    // The plain answer was sent back with a reminder; the invalid one with the schema error.
    assert!(
        reqs[1].messages().last().unwrap()["content"]
            .to_string()
            .contains("StructuredOutput")
    );
    let (err, is_error) = reqs[2].tool_result_text("s1");
    assert!(is_error && err.contains("files"), "{err}");
}

#[tokio::test]
async fn programmatic_agents_become_sub_agent_types() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "a1",
            "Agent",
            json!({"description": "review", "prompt": "Review the change.", "subagent_type": "reviewer"}),
        )]))
        .push(answer("No problems found."))
        .push(answer("The reviewer found no problems."));
    let r = or_skip!(sdk::run(&env, &server, "agents").await);
    let inits: Vec<&Value> = of_type(&r, "SystemMessage")
        .into_iter()
        .filter(|m| m["subtype"] == "init")
        .collect();
    assert!(
        inits[0]["data"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "reviewer"),
        "{inits:?}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    // The sub-agent ran with the definition's prompt and tools.
    let child = &reqs[1];
    assert!(child.body["system"].to_string().contains("You are the code reviewer."));
    let mut tools = child.tool_names();
    tools.sort();
    assert_eq!(tools, vec!["Grep", "Read"]);
    let (report, is_error) = reqs[2].tool_result_text("a1");
    assert!(!is_error && report.contains("No problems found."), "{report}");
    assert_eq!(results(&r)[0]["result"], "The reviewer found no problems.");
}
