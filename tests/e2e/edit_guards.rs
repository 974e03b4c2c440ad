//! Edit and Write through the real binary: every host guard refuses what it must, leaves the
//! file untouched when it refuses, and lets the legitimate path through.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::support::sse::tool;
use crate::support::{Env, run_steps};

fn read(id: &str, env: &Env, file: &str) -> crate::support::sse::Block {
    tool(id, "Read", json!({"file_path": env.path(file)}))
}

fn edit(id: &str, env: &Env, file: &str, old: &str, new: &str) -> crate::support::sse::Block {
    tool(
        id,
        "Edit",
        json!({"file_path": env.path(file), "old_string": old, "new_string": new}),
    )
}

fn bash(id: &str, command: &str) -> crate::support::sse::Block {
    tool(id, "Bash", json!({"command": command}))
}

#[tokio::test]
async fn edit_without_read_is_refused() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\n");
    let (out, last) = run_steps(&env, vec![vec![edit("e1", &env, "a.txt", "two", "2")]]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("e1");
    assert!(err, "{text}");
    assert!(text.contains("has not been read"), "{text}");
    assert_eq!(std::fs::read_to_string(env.path("a.txt")).unwrap(), "one\ntwo\n");
}

#[tokio::test]
async fn write_needs_a_complete_read_of_an_existing_file_but_not_of_a_new_one() {
    let env = Env::new();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    env.write("big.txt", &body);
    let (out, last) = run_steps(
        &env,
        vec![
            vec![tool(
                "w0",
                "Write",
                json!({"file_path": env.path("big.txt"), "content": "unread\n"}),
            )],
            vec![tool(
                "r1",
                "Read",
                json!({"file_path": env.path("big.txt"), "limit": 3}),
            )],
            vec![tool(
                "w1",
                "Write",
                json!({"file_path": env.path("big.txt"), "content": "replaced\n"}),
            )],
            vec![edit("e1", &env, "big.txt", "line 2\n", "line two\n")],
            vec![tool(
                "w2",
                "Write",
                json!({"file_path": env.path("new/dir/n.txt"), "content": "fresh\n"}),
            )],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("w0");
    assert!(err && text.contains("has not been read"), "{text}");
    let (text, err) = last.tool_result_text("r1");
    assert!(!err && text.contains("Partial view"), "{text}");
    let (text, err) = last.tool_result_text("w1");
    assert!(err, "write after a partial read must be refused: {text}");
    assert!(text.contains("only part"), "{text}");
    // The anchor proves local knowledge: Edit after the same partial read goes through.
    let (text, err) = last.tool_result_text("e1");
    assert!(!err, "{text}");
    assert_eq!(
        std::fs::read_to_string(env.path("big.txt")).unwrap(),
        body.replace("line 2\n", "line two\n")
    );
    let (text, err) = last.tool_result_text("w2");
    assert!(!err && text.contains("Created"), "{text}");
    assert_eq!(std::fs::read_to_string(env.path("new/dir/n.txt")).unwrap(), "fresh\n");
}

#[tokio::test]
async fn missing_ambiguous_and_identical_anchors_are_distinct_errors() {
    let env = Env::new();
    let body = "let x = 1;\nlet y = 1;\nlet z = 1;\n";
    env.write("m.rs", body);
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r", &env, "m.rs")],
            vec![edit("missing", &env, "m.rs", "let w = 1;", "let w = 2;")],
            vec![edit("ambiguous", &env, "m.rs", "= 1;", "= 2;")],
            vec![edit("same", &env, "m.rs", "let x = 1;", "let x = 1;")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (missing, err) = last.tool_result_text("missing");
    assert!(
        err && missing.contains("was not found") && missing.contains("let w = 1;"),
        "{missing}"
    );
    let (ambiguous, err) = last.tool_result_text("ambiguous");
    assert!(
        err && ambiguous.contains("occurs 3 times") && ambiguous.contains("replace_all"),
        "{ambiguous}"
    );
    let (same, err) = last.tool_result_text("same");
    assert!(err && same.contains("identical"), "{same}");
    assert_eq!(std::fs::read_to_string(env.path("m.rs")).unwrap(), body);
}

#[tokio::test]
async fn replace_all_changes_every_occurrence() {
    let env = Env::new();
    env.write("r.py", "old_name()\nx = old_name\nold_name_two\n");
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r", &env, "r.py")],
            vec![tool(
                "all",
                "Edit",
                json!({"file_path": env.path("r.py"), "old_string": "old_name", "new_string": "new_name", "replace_all": true}),
            )],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("all");
    assert!(!err && text.contains("all 3 occurrences"), "{text}");
    assert_eq!(
        std::fs::read_to_string(env.path("r.py")).unwrap(),
        "new_name()\nx = new_name\nnew_name_two\n"
    );
}

#[tokio::test]
async fn external_change_is_refused_with_a_diff_and_a_reread_lets_the_edit_through() {
    let env = Env::new();
    env.write("c.txt", "alpha\nbeta\ngamma\n");
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r1", &env, "c.txt")],
            // Someone else changes the file after the model's read.
            vec![bash("human", "sed -i 's/gamma/GAMMA (edited by hand)/' c.txt")],
            vec![edit("e1", &env, "c.txt", "beta", "BETA")],
            vec![tool(
                "w1",
                "Write",
                json!({"file_path": env.path("c.txt"), "content": "clobbered\n"}),
            )],
            vec![read("r2", &env, "c.txt")],
            vec![edit("e2", &env, "c.txt", "beta", "BETA")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("e1");
    assert!(err && text.contains("changed on disk"), "{text}");
    assert!(
        text.contains("-gamma\n+GAMMA (edited by hand)\n"),
        "the diff shows the change: {text}"
    );
    let (text, err) = last.tool_result_text("w1");
    assert!(err && text.contains("changed on disk"), "Write is guarded too: {text}");
    let (text, err) = last.tool_result_text("e2");
    assert!(!err, "{text}");
    // The human's change survives next to the model's.
    assert_eq!(
        std::fs::read_to_string(env.path("c.txt")).unwrap(),
        "alpha\nBETA\nGAMMA (edited by hand)\n"
    );
}

#[tokio::test]
async fn same_size_change_with_restored_mtime_is_still_detected() {
    let env = Env::new();
    env.write("s.txt", "aaa\nbbb\n");
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r1", &env, "s.txt")],
            // Same size, mtime put back: only the content hash can tell.
            vec![bash(
                "sneak",
                "cp -p s.txt ref.txt; sed -i 's/bbb/ccc/' s.txt; touch -r ref.txt s.txt; rm ref.txt",
            )],
            vec![edit("e1", &env, "s.txt", "aaa", "AAA")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("e1");
    assert!(
        err && text.contains("changed on disk") && text.contains("+ccc"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(env.path("s.txt")).unwrap(), "aaa\nccc\n");
}

#[tokio::test]
async fn mtime_only_touch_is_not_a_conflict() {
    let env = Env::new();
    env.write("t.txt", "keep\nchange me\n");
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r1", &env, "t.txt")],
            vec![bash("touch", "touch -d '2001-02-03 04:05:06' t.txt")],
            vec![edit("e1", &env, "t.txt", "change me", "changed")],
            vec![bash("touch2", "touch -d '2002-02-03 04:05:06' t.txt")],
            vec![tool(
                "w1",
                "Write",
                json!({"file_path": env.path("t.txt"), "content": "all new\n"}),
            )],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("e1");
    assert!(!err, "a new mtime with the same content is not a conflict: {text}");
    let (text, err) = last.tool_result_text("w1");
    assert!(!err, "{text}");
    assert_eq!(std::fs::read_to_string(env.path("t.txt")).unwrap(), "all new\n");
}

#[tokio::test]
async fn second_edit_needs_no_reread_and_results_show_numbered_lines() {
    let env = Env::new();
    env.write("two.txt", "a\nb\nc\nd\n");
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r1", &env, "two.txt")],
            vec![edit("e1", &env, "two.txt", "b\n", "B\n")],
            vec![edit("e2", &env, "two.txt", "d\n", "D\n")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("e1");
    assert!(
        !err && text.contains("     2\tB\n") && text.contains("     1\ta\n"),
        "{text}"
    );
    let (text, err) = last.tool_result_text("e2");
    assert!(!err, "the first edit updated the read state: {text}");
    assert!(text.contains("     4\tD\n"), "{text}");
    assert_eq!(std::fs::read_to_string(env.path("two.txt")).unwrap(), "a\nB\nc\nD\n");
}

#[tokio::test]
async fn crlf_bom_and_missing_final_newline_round_trip_byte_exact() {
    let env = Env::new();
    let crlf = "\u{feff}first\r\nsecond\r\nthird\r\nlast line without newline";
    let mixed = "lf one\nlf two\ncrlf one\r\ncrlf two\r\nend";
    env.write("crlf.txt", crlf);
    env.write("mixed.txt", mixed);
    env.write("w.txt", "\u{feff}x\r\ny\r\n");
    let (out, last) = run_steps(
        &env,
        vec![
            vec![
                read("r1", &env, "crlf.txt"),
                read("r2", &env, "mixed.txt"),
                read("r3", &env, "w.txt"),
            ],
            // The model writes `\n`, as it saw the lines in Read.
            vec![edit("e1", &env, "crlf.txt", "second\nthird", "2nd\n3rd\nextra")],
            vec![edit("e2", &env, "crlf.txt", "newline", "final newline")],
            vec![edit(
                "e3",
                &env,
                "mixed.txt",
                "crlf one\ncrlf two",
                "CRLF one\nCRLF two",
            )],
            vec![tool(
                "w1",
                "Write",
                json!({"file_path": env.path("w.txt"), "content": "p\nq\n"}),
            )],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    for id in ["e1", "e2", "e3", "w1"] {
        let (text, err) = last.tool_result_text(id);
        assert!(!err, "{id}: {text}");
    }
    assert_eq!(
        std::fs::read(env.path("crlf.txt")).unwrap(),
        "\u{feff}first\r\n2nd\r\n3rd\r\nextra\r\nlast line without final newline".as_bytes()
    );
    assert_eq!(
        std::fs::read(env.path("mixed.txt")).unwrap(),
        "lf one\nlf two\nCRLF one\r\nCRLF two\r\nend".as_bytes()
    );
    assert_eq!(
        std::fs::read(env.path("w.txt")).unwrap(),
        "\u{feff}p\r\nq\r\n".as_bytes()
    );
}

#[tokio::test]
async fn permissions_are_kept_by_edit_and_write() {
    let env = Env::new();
    let script = env.write("run.sh", "#!/bin/sh\necho old\n");
    let secret = env.write("secret.txt", "token=1\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r1", &env, "run.sh"), read("r2", &env, "secret.txt")],
            vec![edit("e1", &env, "run.sh", "echo old", "echo new")],
            vec![tool(
                "w1",
                "Write",
                json!({"file_path": secret, "content": "token=2\n"}),
            )],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!last.tool_result_text("e1").1 && !last.tool_result_text("w1").1);
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "#!/bin/sh\necho new\n");
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "token=2\n");
    assert_eq!(std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777, 0o600);
}

#[tokio::test]
async fn missing_file_is_an_error_and_an_empty_anchor_creates_one() {
    let env = Env::new();
    env.write("full.txt", "content\n");
    let (out, last) = run_steps(
        &env,
        vec![
            vec![edit("e1", &env, "nope.txt", "x", "y")],
            vec![edit("e2", &env, "made/new.txt", "", "hello\n")],
            vec![read("r", &env, "full.txt")],
            vec![edit("e3", &env, "full.txt", "", "more\n")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("e1");
    assert!(err && text.contains("does not exist"), "{text}");
    assert!(!env.path("nope.txt").exists());
    let (text, err) = last.tool_result_text("e2");
    assert!(!err && text.contains("Created"), "{text}");
    assert_eq!(std::fs::read_to_string(env.path("made/new.txt")).unwrap(), "hello\n");
    let (text, err) = last.tool_result_text("e3");
    assert!(err && text.contains("already has content"), "{text}");
    assert_eq!(std::fs::read_to_string(env.path("full.txt")).unwrap(), "content\n");
}

#[tokio::test]
async fn edit_through_a_symlink_changes_the_target_and_keeps_the_link() {
    let env = Env::new();
    let target = env.write("real.txt", "before\n");
    std::os::unix::fs::symlink(&target, env.path("link.txt")).unwrap();
    let (out, last) = run_steps(
        &env,
        vec![
            vec![read("r", &env, "link.txt")],
            vec![edit("e", &env, "link.txt", "before", "after")],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!last.tool_result_text("e").1);
    assert!(
        std::fs::symlink_metadata(env.path("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "after\n");
}

/// A call that cannot succeed is not put to a PermissionRequest hook or to a program answering
/// `can_use_tool`: it fails with its own reason (PreToolUse and PostToolUseFailure hooks see it
/// as before), and a call that can succeed is still asked.
#[tokio::test]
async fn nobody_is_asked_about_an_edit_that_cannot_succeed() {
    use crate::hooks::{group, script, settings};
    use crate::support::ModelServer;
    use crate::support::sse::{answer, calls};
    let env = Env::new();
    env.write("a.txt", "one\ntwo\n");
    let log = env.path("hooks.log");
    let record = |event: &str| {
        format!(
            "grep -o '\"tool_use_id\":\"[^\"]*\"' | sed 's/^/{event} /' >> '{}'",
            log.display()
        )
    };
    let allow = script(
        &env,
        "allow.sh",
        &format!(
            "{}\necho '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PermissionRequest\", \"decision\": {{\"behavior\": \"allow\"}}}}}}'",
            record("ask")
        ),
    );
    let pre = script(&env, "pre.sh", &record("pre"));
    let failed = script(&env, "failed.sh", &record("failed"));
    settings(
        &env,
        json!({
            "PermissionRequest": [group("Edit", &allow)],
            "PreToolUse": [group("Edit", &pre)],
            "PostToolUseFailure": [group("Edit", &failed)],
        }),
    );
    let server = ModelServer::start().await;
    server
        .push(calls(vec![edit("e1", &env, "a.txt", "two", "2")]))
        .push(calls(vec![
            read("r1", &env, "a.txt"),
            edit("e2", &env, "a.txt", "three", "3"),
        ]))
        .push(calls(vec![edit("e3", &env, "a.txt", "two", "2")]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    let (text, err) = reqs[1].tool_result_text("e1");
    assert!(err && text.contains("has not been read"), "{text}");
    let (text, err) = reqs[2].tool_result_text("e2");
    assert!(err && text.contains("was not found"), "{text}");
    let (text, err) = reqs[3].tool_result_text("e3");
    assert!(!err, "{text}");
    assert_eq!(std::fs::read_to_string(env.path("a.txt")).unwrap(), "one\n2\n");
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines,
        [
            "pre \"tool_use_id\":\"e1\"",
            "failed \"tool_use_id\":\"e1\"",
            "pre \"tool_use_id\":\"e2\"",
            "failed \"tool_use_id\":\"e2\"",
            "pre \"tool_use_id\":\"e3\"",
            "ask \"tool_use_id\":\"e3\"",
        ],
        "{log}"
    );
    let result: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(result["result"], "done");
    assert_eq!(result["permission_denials"], json!([]), "{result}");

    // A program answering `can_use_tool` is not asked either: the call fails with its reason
    // (were it asked, the closed input would deny it).
    env.write("b.txt", "one\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![edit("e4", &env, "b.txt", "one", "1")]))
        .push(answer("could not edit"));
    let message = json!({"type": "user", "message": {"role": "user", "content": "edit b"}, "parent_tool_use_id": null, "session_id": ""});
    let out = env
        .keel(&server)
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .args(["--permission-prompt-tool", "stdio"])
        .stdin(&format!("{message}\n"))
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = server.requests()[1].tool_result_text("e4");
    assert!(err && text.contains("has not been read"), "{text}");
    let lines = out.lines();
    assert!(
        !lines.iter().any(|l| l["type"] == "control_request"),
        "the program was asked: {lines:#?}"
    );
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["permission_denials"], json!([]), "{result}");
}
