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

/// Shell commands change files too: what `sed -i`, `rm`, `mv` and a redirect did is rewound
/// byte for byte, and a file keel kept no copy of is named, never skipped quietly.
#[tokio::test]
async fn changes_made_by_shell_commands_are_rewound_and_unkept_ones_are_listed() {
    let env = Env::new();
    std::fs::write(env.path("a.txt"), b"alpha\r\n\xc3\xa9\n").unwrap();
    std::fs::write(env.path("gone.txt"), "keep me\n").unwrap();
    std::fs::write(env.path("old.txt"), "moving\n").unwrap();
    let huge = format!("0123456789{}\n", "z".repeat(1000));
    std::fs::write(env.path("huge.txt"), &huge).unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": "sed -i 's/alpha/ALPHA/' a.txt && rm gone.txt && mv old.txt new.txt"}),
        )]))
        .push(calls(vec![tool(
            "b2",
            "Bash",
            json!({"command": "echo made > made.txt && sed -i 's/0/X/' huge.txt"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        // Room for the small files only: huge.txt is beyond the undo budget.
        .env("KEEL_CHECKPOINT_SHELL_BYTES", "100")
        .args(["-p", "change things", "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let second = server.requests()[2].messages().clone();
    let text = serde_json::to_string(&second).unwrap();
    assert!(
        text.contains("huge.txt") && text.contains("cannot be rewound"),
        "the model is told which change cannot be taken back: {text}"
    );

    // The stash of copies goes with the process that kept it.
    let checkpoints = env.transcripts()[0].with_extension("").join("checkpoints");
    let stashes: Vec<_> = std::fs::read_dir(&checkpoints)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("stash-"))
        .collect();
    assert!(stashes.is_empty(), "{stashes:?}");

    let dry = env
        .keel_offline()
        .args(["rewind", "--to", "1", "--dry-run"])
        .run()
        .await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    for f in ["a.txt", "gone.txt", "old.txt", "new.txt", "made.txt"] {
        assert!(
            dry.stdout.contains(&format!("would restore {}", env.path(f).display())),
            "{f}: {}",
            dry.stdout
        );
    }
    assert!(
        dry.stdout.contains(&format!(
            "not restorable (changed by a shell command): {}",
            env.path("huge.txt").display()
        )),
        "{}",
        dry.stdout
    );
    let list = env.keel_offline().args(["rewind", "--list"]).run().await;
    assert!(list.stdout.contains("(1 not restorable)"), "{}", list.stdout);

    let out = env.keel_offline().args(["rewind", "--to", "1"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read(env.path("a.txt")).unwrap(), b"alpha\r\n\xc3\xa9\n");
    assert_eq!(std::fs::read_to_string(env.path("gone.txt")).unwrap(), "keep me\n");
    assert_eq!(std::fs::read_to_string(env.path("old.txt")).unwrap(), "moving\n");
    assert!(!env.path("new.txt").exists() && !env.path("made.txt").exists());
    assert!(out.stdout.contains("not restorable"), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(env.path("huge.txt")).unwrap(),
        huge.replacen('0', "X", 1),
        "left as the command made it"
    );
}

/// The undo limits come from the environment; a value keel cannot read stops it with the
/// variable's name instead of quietly using the default.
#[tokio::test]
async fn an_unreadable_undo_limit_is_a_startup_error() {
    let env = Env::new();
    let server = ModelServer::start().await;
    for name in [
        "KEEL_CHECKPOINT_MAX_BYTES",
        "KEEL_CHECKPOINT_SHELL_BYTES",
        "KEEL_CHECKPOINT_SHELL_FILES",
    ] {
        let out = env.keel(&server).args(["-p", "x"]).env(name, "lots").run().await;
        assert_ne!(out.code, 0, "{name}: {}", out.stderr);
        assert!(
            out.stderr.contains(name) && out.stderr.contains("`lots`"),
            "{}",
            out.stderr
        );
    }
    assert!(server.requests().is_empty(), "no request before the error");
}
