//! Checkpoints and `keel rewind`: byte-exact restores of what keel changed, refusal (with a
//! diff) to overwrite changes made outside keel, undoable rewinds, and the conversation cut
//! back to before a prompt.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

/// A file with everything a careless restore would lose: a BOM, CRLF line endings, trailing
/// spaces, no final newline, non-ASCII text, and the executable bit.
const ORIGINAL: &[u8] = b"\xEF\xBB\xBFfn main() {\r\n    println!(\"h\xC3\xA9llo\");  \r\n}";

async fn prompt(env: &Env, server: &ModelServer, text: &str, resume: bool) {
    let mut k = env.keel(server);
    if resume {
        k.arg("-c");
    }
    let out = k
        .args(["-p", text, "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[tokio::test]
async fn rewind_restores_files_byte_exact_and_can_be_undone() {
    let env = Env::new();
    let file = env.path("main.rs");
    std::fs::write(&file, ORIGINAL).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    let created = env.path("notes/new.txt");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("r1", "Read", json!({"file_path": file}))]))
        .push(calls(vec![tool(
            "e1",
            "Edit",
            json!({"file_path": file, "old_string": "h\u{e9}llo", "new_string": "first"}),
        )]))
        .push(calls(vec![tool(
            "w1",
            "Write",
            json!({"file_path": created, "content": "made by keel\n"}),
        )]))
        .push(answer("one"))
        .push(calls(vec![tool("r2", "Read", json!({"file_path": file}))]))
        .push(calls(vec![tool(
            "e2",
            "Edit",
            json!({"file_path": file, "old_string": "first", "new_string": "second"}),
        )]))
        .push(answer("two"));
    prompt(&env, &server, "first prompt", false).await;
    let after_first = std::fs::read(&file).unwrap();
    assert_ne!(after_first, ORIGINAL);
    prompt(&env, &server, "second prompt", true).await;
    let after_second = std::fs::read(&file).unwrap();
    assert!(String::from_utf8_lossy(&after_second).contains("second"));

    let list = env.keel_offline().args(["rewind", "--list"]).run().await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(
        list.stdout.contains("first prompt") && list.stdout.contains("second prompt"),
        "{}",
        list.stdout
    );

    // Back to before the second prompt: the first prompt's changes stay.
    let out = env.keel_offline().args(["rewind", "--to", "2"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), after_first);
    assert!(created.exists());

    // Back to before the first prompt: byte for byte, permissions too, the new file gone.
    let out = env
        .keel_offline()
        .args(["rewind", "--to", "1", "--restore", "code"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), ORIGINAL);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o755);
    assert!(!created.exists(), "the file keel created is removed");
    let undo_point = out
        .stdout
        .split("`keel rewind --to ")
        .nth(1)
        .and_then(|s| s.split('`').next())
        .expect("the rewind names its own point")
        .to_string();

    // The rewind itself can be taken back.
    let out = env.keel_offline().args(["rewind", "--to", &undo_point]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), after_first);
    assert_eq!(std::fs::read_to_string(&created).unwrap(), "made by keel\n");

    // A change made outside keel since is never overwritten: the rewind is refused with a diff.
    std::fs::write(&file, b"my own work\n").unwrap();
    let out = env.keel_offline().args(["rewind", "--to", "1"]).run().await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("changed outside keel"), "{}", out.stderr);
    assert!(
        out.stderr.contains("+my own work"),
        "the diff shows the outside change: {}",
        out.stderr
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"my own work\n");
    assert_eq!(
        std::fs::read_to_string(&created).unwrap(),
        "made by keel\n",
        "all or nothing"
    );
}

#[tokio::test]
async fn rewinding_the_conversation_drops_the_later_prompts() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("one")).push(answer("two")).push(answer("three"));
    prompt(&env, &server, "alpha", false).await;
    prompt(&env, &server, "beta", true).await;
    let out = env
        .keel_offline()
        .args(["rewind", "--to", "2", "--restore", "conversation"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    prompt(&env, &server, "gamma", true).await;
    let sent = server.requests()[2].messages().clone();
    let text = serde_json::to_string(&sent).unwrap();
    assert!(text.contains("alpha") && text.contains("gamma"), "{text}");
    assert!(!text.contains("beta"), "the rewound prompt is gone: {text}");
    // Points keep counting across the rewind: gamma is point 4 (alpha 1, beta 2, rewind 3).
    let list = env.keel_offline().args(["rewind", "--list"]).run().await;
    assert!(list.stdout.contains("   4  prompt"), "{}", list.stdout);
}
