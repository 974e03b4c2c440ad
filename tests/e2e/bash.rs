//! Bash, BashOutput and KillShell through the real binary, checked against the real process
//! table: nothing a command started survives a timeout, an interruption or the session.

use serde_json::json;

use crate::support::procs::{assert_gone, unique_sleep, wait_until_running};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, finish, read_jsonl, run_steps};

fn bash(id: &str, command: &str) -> crate::support::sse::Block {
    tool(id, "Bash", json!({"command": command}))
}

#[tokio::test]
async fn exit_code_and_merged_output_and_nonzero_is_an_error() {
    let env = Env::new();
    let (out, last) = run_steps(
        &env,
        vec![
            vec![bash("ok", "echo to-stdout; echo to-stderr >&2; echo again")],
            vec![bash("fail", "echo partial; echo broken >&2; exit 3")],
            vec![bash("quiet", "true")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("ok");
    assert!(!err);
    assert_eq!(text, "to-stdout\nto-stderr\nagain", "stdout and stderr merged in order");
    let (text, err) = last.tool_result_text("fail");
    assert!(err, "a non-zero exit is an error result: {text}");
    assert!(
        text.starts_with("Exit code 3\n") && text.contains("partial\nbroken"),
        "{text}"
    );
    let (text, err) = last.tool_result_text("quiet");
    assert!(!err && text.contains("printed nothing"), "{text}");
}

#[tokio::test]
async fn stdin_is_closed_and_the_command_leads_its_own_process_group() {
    let env = Env::new();
    let (out, last) = run_steps(
        &env,
        vec![vec![bash(
            "p",
            "readlink /proc/self/fd/0; cat; \
             [ \"$(ps -o pgid= -p $$ | tr -d ' ')\" = \"$PPID\" ] && echo own-group; \
             [ \"$(ps -o sid= -p $$ | tr -d ' ')\" = \"$PPID\" ] && echo own-session; pwd",
        )]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("p");
    assert!(!err, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "/dev/null");
    assert_eq!(lines[1], "own-group");
    assert_eq!(lines[2], "own-session", "no controlling terminal to hang on");
    assert_eq!(
        lines[3],
        env.work.display().to_string(),
        "runs in the session's working directory"
    );
}

#[tokio::test]
async fn cd_persists_inside_the_workspace_and_resets_outside() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("sub/deeper")).unwrap();
    let (out, last) = run_steps(
        &env,
        vec![
            vec![bash("cd1", "cd sub/deeper")],
            vec![bash("pwd1", "pwd")],
            vec![bash("out", "cd /")],
            vec![bash("pwd2", "pwd")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, _) = last.tool_result_text("pwd1");
    assert_eq!(text, env.path("sub/deeper").display().to_string());
    let (text, _) = last.tool_result_text("out");
    assert!(
        text.contains("reset to") && text.contains("outside the workspace"),
        "{text}"
    );
    let (text, _) = last.tool_result_text("pwd2");
    assert_eq!(text, env.work.display().to_string());
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let env = Env::new();
    let (a, b) = (unique_sleep(), unique_sleep());
    let (out, last) = run_steps(
        &env,
        vec![vec![tool(
            "slow",
            "Bash",
            json!({"command": format!("echo begun; (sleep {a} &); sleep {b}; echo never"), "timeout": 1000}),
        )]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("slow");
    assert!(err, "{text}");
    assert!(
        text.contains("Timed out after 1.0 s") && text.contains("killed"),
        "{text}"
    );
    assert!(text.contains("begun") && !text.contains("never"), "{text}");
    assert_gone(&a).await;
    assert_gone(&b).await;
}

#[tokio::test]
async fn processes_a_command_leaves_running_are_stopped_when_it_ends() {
    let env = Env::new();
    let leftover = unique_sleep();
    let (out, last) = run_steps(
        &env,
        vec![vec![bash("bg", &format!("(sleep {leftover} &); echo started"))]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(last.tool_result_text("bg"), ("started".to_string(), false));
    assert_gone(&leftover).await;
}

#[tokio::test]
async fn interrupt_kills_the_running_command_tree_and_says_so() {
    let env = Env::new();
    let (a, b) = (unique_sleep(), unique_sleep());
    let server = ModelServer::start().await;
    server
        .push(calls(vec![bash("long", &format!("(sleep {a} &); sleep {b}"))]))
        .push(answer("unreachable"));
    let child = env
        .keel(&server)
        .args(["-p", "run it", "--permission-mode", "bypassPermissions"])
        .spawn();
    let pid = child.id().expect("pid") as i32;
    wait_until_running(&b).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = finish(child).await;
    assert_eq!(out.code, 130, "stderr: {}", out.stderr);
    assert_gone(&a).await;
    assert_gone(&b).await;
    let transcript = read_jsonl(&env.transcripts()[0]);
    let result = transcript
        .iter()
        .find(|l| l["type"] == "user" && l["message"].to_string().contains("tool_result"))
        .expect("the call got a result");
    let text = result["message"].to_string();
    assert!(
        text.contains("Interrupted by the user") && text.contains("every process it started were killed"),
        "{text}"
    );
}

#[tokio::test]
async fn background_shell_lifecycle() {
    let env = Env::new();
    let lingering = unique_sleep();
    let (out, last) = run_steps(
        &env,
        vec![
            vec![tool(
                "start",
                "Bash",
                json!({
                    "command": "echo $$ > pid; echo first; echo noise; touch ready; while [ ! -f go ]; do sleep 0.02; done; echo second; exit 4",
                    "run_in_background": true
                }),
            )],
            vec![bash("wait1", "while [ ! -f ready ]; do sleep 0.02; done")],
            vec![tool("poll1", "BashOutput", json!({"bash_id": "bash_1", "filter": "^f"}))],
            // Let it finish and wait until it has exited (a zombie until keel reaps it).
            vec![bash(
                "wait2",
                "touch go; p=$(cat pid); while [ \"$(ps -o stat= -p $p | cut -c1)\" != Z ] && kill -0 $p 2>/dev/null; do sleep 0.02; done",
            )],
            vec![tool("poll2", "BashOutput", json!({"bash_id": "bash_1"}))],
            vec![tool("kill_done", "KillShell", json!({"shell_id": "bash_1"}))],
            vec![tool(
                "start2",
                "Bash",
                json!({"command": format!("sleep {lingering}"), "run_in_background": true}),
            )],
            vec![tool("kill2", "KillShell", json!({"shell_id": "bash_2"}))],
            vec![tool("poll3", "BashOutput", json!({"bash_id": "bash_2"}))],
            vec![tool("unknown", "BashOutput", json!({"bash_id": "bash_9"}))],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("start");
    assert!(!err && text.contains("bash_1") && text.contains("BashOutput"), "{text}");
    let new_output = |text: &str| text.split("New output:\n").nth(1).unwrap_or("").to_string();
    let (text, _) = last.tool_result_text("poll1");
    assert!(text.contains(": running."), "{text}");
    let shown = new_output(&text);
    assert!(
        shown.starts_with("first\n") && !shown.contains("noise"),
        "filter keeps matching lines: {text}"
    );
    assert!(shown.contains("1 line did not match"), "{text}");
    let (text, _) = last.tool_result_text("poll2");
    assert!(text.contains("failed (exit code 4)"), "{text}");
    assert_eq!(new_output(&text), "second", "only new output: {text}");
    let (text, err) = last.tool_result_text("kill_done");
    assert!(!err && text.contains("no longer running"), "{text}");
    let (text, err) = last.tool_result_text("kill2");
    assert!(!err && text.contains("Stopped background shell bash_2"), "{text}");
    let (text, _) = last.tool_result_text("poll3");
    assert!(text.contains("killed"), "{text}");
    let (text, err) = last.tool_result_text("unknown");
    assert!(err && text.contains("bash_1, bash_2"), "{text}");
    assert_gone(&lingering).await;
}

#[tokio::test]
async fn background_shells_die_with_the_session() {
    let env = Env::new();
    let (a, b) = (unique_sleep(), unique_sleep());
    let (out, last) = run_steps(
        &env,
        vec![vec![tool(
            "server",
            "Bash",
            json!({"command": format!("(sleep {a} &); sleep {b}"), "run_in_background": true}),
        )]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!last.tool_result_text("server").1);
    assert_gone(&a).await;
    assert_gone(&b).await;
}

#[tokio::test]
async fn large_output_is_spilled_whole_and_the_model_sees_head_tail_and_path() {
    let env = Env::new();
    let (out, last) = run_steps(
        &env,
        vec![vec![bash("big", "seq 1 200000; echo FAILED AT THE END >&2; exit 1")]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("big");
    assert!(err, "the exit code still counts");
    assert!(text.len() < 30_000, "{} chars in context", text.len());
    assert!(text.contains("Exit code 1\n1\n2\n3\n"), "head: {}", &text[..300]);
    assert!(text.contains("200000\nFAILED AT THE END"), "tail");
    let path = text
        .split("saved in ")
        .nth(1)
        .and_then(|rest| rest.split(" — ").next())
        .expect("the result names the spill file");
    let full = std::fs::read_to_string(path).unwrap();
    let expected: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, format!("Exit code 1\n{expected}FAILED AT THE END"));
}

#[tokio::test]
async fn todo_list_is_kept_in_the_transcript_and_restored_on_resume() {
    let env = Env::new();
    let list = json!([
        {"content": "Fix the bug", "status": "completed", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}
    ]);
    let (out, last) = run_steps(&env, vec![vec![tool("t1", "TodoWrite", json!({"todos": list}))]]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("t1");
    assert!(!err && text.contains("2 items"), "{text}");
    let transcript = read_jsonl(&env.transcripts()[0]);
    assert!(
        transcript
            .iter()
            .any(|l| l["type"] == "event" && l["event"] == "todos" && l["data"]["todos"] == list)
    );

    // A resumed session starts from the saved list: the next TodoWrite reports it as the old one.
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("t2", "TodoWrite", json!({"todos": []}))]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "continue", "-c", "--output-format", "stream-json", "--verbose"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out
        .lines()
        .into_iter()
        .find(|l| l["type"] == "user" && l["tool_use_result"].get("oldTodos").is_some())
        .expect("TodoWrite result line");
    assert_eq!(result["tool_use_result"]["oldTodos"], list);
}
