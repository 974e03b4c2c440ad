//! keel's own git processes, seen through a `git` on PATH that notes every call and then runs
//! the real one: how many keel starts, and that a large repository's status does not hold up
//! the first request.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::runners::path_with;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

/// Writes `bin/git`: appends its arguments to `$WRAP_LOG`, holds a `status` until the file
/// `$WRAP_GATE` exists (when set; 30 s at most), then runs the real git; what a `--batch` call
/// is asked on its input is appended to `$WRAP_LOG.in` on the way.
fn git_wrapper(env: &Env) -> PathBuf {
    let real = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("find git");
    let real = String::from_utf8(real.stdout).unwrap().trim().to_string();
    assert!(real.starts_with('/'), "git not found on PATH: {real:?}");
    let bin = env.home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$WRAP_LOG\"\ncase \" $* \" in\n  *\" status \"*)\n    if [ -n \"$WRAP_GATE\" ]; then\n      n=0\n      while [ ! -e \"$WRAP_GATE\" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done\n    fi;;\n  *\" --batch \"*)\n    tee -a \"$WRAP_LOG.in\" | '{real}' \"$@\"\n    exit $?;;\nesac\nexec '{real}' \"$@\"\n"
    );
    let path = bin.join("git");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn calls_logged(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A repository holding `src/lib.rs` (`f` returning 1), committed; keel runs `turns` through
/// the script provider with the noting `git` first on PATH, edits accepted and `extra` flags
/// given. Returns the git calls noted and what the `--batch` calls were asked.
async fn session_noting_git(turns: serde_json::Value, extra: &[&str]) -> (Env, Vec<String>, String) {
    let env = Env::new();
    env.write("src/lib.rs", "pub fn f() -> u32 {\n    1\n}\n");
    env.git_init();
    let bin = git_wrapper(&env);
    let log = env.home.join("git.log");
    let script = env.home.join("script.json");
    std::fs::write(&script, turns.to_string()).unwrap();
    let out = env
        .keel_offline()
        .env("PATH", path_with(&bin))
        .env("WRAP_LOG", &log)
        .args([
            "-p",
            "change f",
            "--provider",
            "script",
            "--permission-mode",
            "acceptEdits",
        ])
        .args(extra)
        .arg("--script")
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let asked = std::fs::read_to_string(env.home.join("git.log.in")).unwrap_or_default();
    (env, calls_logged(&log), asked)
}

/// In a repository with no filter or diff driver configured, the snapshot lists drivers once
/// (`git config` exiting 1 is "none", not a reason to ask again) and shares that list between
/// its status and its log; reading an edited file's committed content (Rust source without
/// tests of its own has no baseline of its own, so git is asked) starts one `git cat-file
/// --batch`, asked once, and no driver query.
#[tokio::test]
async fn keel_starts_one_git_process_per_question() {
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "Read", "input": {"file_path": "src/lib.rs"}}]},
        {"tool_calls": [{"name": "Edit", "input": {"file_path": "src/lib.rs", "old_string": "    1\n}", "new_string": "    2\n}"}}]},
        {"text": "done"}
    ]});
    let (env, logged, asked) = session_noting_git(turns, &[]).await;
    assert!(
        std::fs::read_to_string(env.path("src/lib.rs"))
            .unwrap()
            .contains("    2\n}")
    );
    let count = |what: &str| logged.iter().filter(|l| l.contains(what)).count();
    assert_eq!(count(" config "), 1, "one driver query: {logged:#?}");
    assert_eq!(count(" status "), 1, "{logged:#?}");
    assert_eq!(count(" log "), 1, "{logged:#?}");
    assert_eq!(count(" cat-file --batch"), 1, "{logged:#?}");
    assert_eq!(logged.len(), 4, "nothing else: {logged:#?}");
    assert_eq!(asked, "HEAD:./src/lib.rs\n");
}

/// A file's committed content is asked of git once, and again only after a command moved
/// `HEAD`: a command that leaves the repository alone (`true`) keeps the answer, a commit
/// does not (and the batch process that knew the old `HEAD` is replaced).
#[tokio::test]
async fn committed_contents_are_asked_again_only_after_head_moved() {
    let edit = |from: &str, to: &str| json!({"tool_calls": [{"name": "Edit", "input": {"file_path": "src/lib.rs", "old_string": from, "new_string": to}}]});
    let bash = |command: &str| json!({"tool_calls": [{"name": "Bash", "input": {"command": command}}]});
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "Read", "input": {"file_path": "src/lib.rs"}}]},
        edit("    1\n}", "    2\n}"),
        bash("true"),
        edit("    2\n}", "    3\n}"),
        bash("git -c user.name=t -c user.email=t@t commit -qam step"),
        edit("    3\n}", "    4\n}"),
        {"text": "done"}
    ]});
    let (env, logged, asked) = session_noting_git(turns, &["--allowedTools", "Bash"]).await;
    assert!(
        std::fs::read_to_string(env.path("src/lib.rs"))
            .unwrap()
            .contains("    4\n}")
    );
    assert!(
        logged.iter().any(|l| l.contains("commit -qam step")),
        "the commit ran: {logged:#?}"
    );
    let batches = logged.iter().filter(|l| l.contains(" cat-file --batch")).count();
    assert_eq!(batches, 2, "one before the commit, one after: {logged:#?}");
    assert_eq!(
        asked, "HEAD:./src/lib.rs\nHEAD:./src/lib.rs\n",
        "once at the first edit, once after the commit"
    );
}

/// An index of `n` entries (one empty blob; the files themselves absent), committed.
fn large_repository(env: &Env, n: u32) {
    env.git(&["init", "-q", "-b", "trunk"]);
    env.git(&["config", "user.email", "test@example.com"]);
    env.git(&["config", "user.name", "Test"]);
    let oid = env.git(&["hash-object", "-w", "/dev/null"]).trim().to_string();
    let list = env.home.join("index-info");
    let lines: String = (0..n).map(|i| format!("100644 {oid}\tfiles/f{i}\n")).collect();
    std::fs::write(&list, lines).unwrap();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("git update-index --index-info < \"$1\"")
        .arg("sh")
        .arg(&list)
        .current_dir(&env.work)
        .status()
        .unwrap();
    assert!(status.success());
    env.git(&["commit", "-qm", "many files"]);
}

fn system_text(body: &Value) -> String {
    body["system"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

/// A repository whose index lists more files than keel waits for: the first request goes out
/// while `git status` is still held (the wrapper lets it go only once the model server has the
/// request), its project layer says the snapshot follows, and the snapshot comes with a later
/// message, once.
#[tokio::test]
async fn a_large_repositorys_status_does_not_hold_up_the_first_request() {
    let env = Env::new();
    large_repository(&env, 20_001);
    let bin = git_wrapper(&env);
    let log = env.home.join("git.log");
    let gate = env.home.join("gate");
    let server = ModelServer::start().await;
    let open = gate.clone();
    server.respond_with(move |_| {
        // The first request is in: git may go on.
        let _ = std::fs::write(&open, "");
        None
    });
    server.push(calls(vec![tool("b1", "Bash", json!({"command": "sleep 1"}))]));
    server.push(calls(vec![tool("b2", "Bash", json!({"command": "sleep 1"}))]));
    server.push(answer("done"));
    let out = env
        .keel(&server)
        .env("PATH", path_with(&bin))
        .env("WRAP_LOG", &log)
        .env("WRAP_GATE", &gate)
        .args(["-p", "look", "--allowedTools", "Bash"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = system_text(&requests[0].body);
    assert!(
        first.contains("is still being taken and follows in a later message"),
        "{first}"
    );
    assert!(!first.contains("Recent commits"), "{first}");
    let carrying: Vec<usize> = (1..3)
        .filter(|&i| {
            let last = requests[i].body["messages"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .to_string();
            last.contains("Git (a snapshot from the start of this session") && last.contains("many files")
        })
        .collect();
    assert_eq!(carrying.len(), 1, "the snapshot arrives once, with a later message");
    for r in &requests[1..] {
        assert_eq!(system_text(&r.body), first, "the system prompt stays as it was");
    }
    assert!(calls_logged(&log).iter().any(|l| l.contains(" status ")));
}
