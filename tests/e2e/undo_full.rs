//! A full KEEL_HOME (a small tmpfs in a private mount namespace) while keel edits: a change
//! whose undo record could not be kept is named in the run's `warnings`, in `keel rewind
//! --list`, and by the rewind, which never claims there was nothing to restore.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::host;
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, Out, finish};

async fn in_namespace(env: &Env, server: &ModelServer, out: &Path, script: &str) -> Out {
    let child = tokio::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .current_dir(&env.work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .env("LANG", "C.UTF-8")
        .env("KEEL_VERIFICATION_GATE", "off")
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("KEEL", env!("CARGO_BIN_EXE_keel"))
        .env("OUT", out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn unshare");
    finish(child).await
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[tokio::test]
async fn changes_keel_could_not_record_are_named_in_the_result_the_list_and_the_rewind() {
    or_skip!(host::private_mounts());
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".keel")).unwrap();
    // Larger than any slack in a page of KEEL_HOME, so their copies cannot be stored.
    let filler = "keep this line\n".repeat(3000);
    let a = env.write("a.txt", &format!("alpha\n{filler}"));
    let b = env.write("b.txt", &format!("beta\n{filler}"));
    let out_dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("ra", "Read", json!({"file_path": a}))]))
        .push(calls(vec![tool(
            "fill",
            "Bash",
            json!({"command": "cat /dev/zero > \"$KEEL_HOME/fill\" 2>/dev/null; true"}),
        )]))
        .push(calls(vec![tool(
            "ea",
            "Edit",
            json!({"file_path": a, "old_string": "alpha\n", "new_string": "ALPHA\n"}),
        )]))
        .push(answer("edited a"))
        // Inside the second session, after its start-up (which may tidy what the first one left
        // and so free a page): the home full again, the undo log's last page too.
        .push(calls(vec![tool(
            "refill",
            "Bash",
            json!({"command": "cat /dev/zero >> \"$KEEL_HOME/fill\" 2>/dev/null; for f in \"$KEEL_HOME\"/projects/*/*/checkpoints/log.jsonl; do yes '' >>\"$f\" 2>/dev/null; done; true"}),
        )]))
        .push(calls(vec![tool("rb", "Read", json!({"file_path": b}))]))
        .push(calls(vec![tool(
            "eb",
            "Edit",
            json!({"file_path": b, "old_string": "beta\n", "new_string": "BETA\n"}),
        )]))
        .push(answer("edited b"));
    let script = r#"
        set -e
        mount -t tmpfs -o size=2m tmpfs "$KEEL_HOME"
        "$KEEL" -p one --output-format json --permission-mode bypassPermissions >"$OUT/1.json" 2>"$OUT/1.err" || true
        # Even the undo log's last page is full now: its lines cannot be written either.
        for f in "$KEEL_HOME"/projects/*/*/checkpoints/log.jsonl; do yes '' >>"$f" 2>/dev/null || true; done
        "$KEEL" -c -p two --output-format json --permission-mode bypassPermissions >"$OUT/2.json" 2>"$OUT/2.err" || true
        "$KEEL" rewind --list >"$OUT/list-full.out" 2>&1 || true
        rm -f "$KEEL_HOME/fill"
        "$KEEL" rewind --to 1 --restore code >"$OUT/rewind.out" 2>&1 || true
        "$KEEL" rewind --list >"$OUT/list.out" 2>&1 || true
    "#;
    let out = in_namespace(&env, &server, out_dir.path(), script).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let file = |n: &str| read(&out_dir.path().join(n));

    // Both edits were made; the results say which change has no undo record and why.
    assert!(read(&a).starts_with("ALPHA\n") && read(&b).starts_with("BETA\n"));
    let first: Value = serde_json::from_str(&file("1.json")).unwrap();
    let warnings = first["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "undo: the change of {} by Edit (point 1) could not be recorded",
            a.display()
        )) && warnings.contains("No space left on device"),
        "{first}\n{}",
        file("1.err")
    );
    assert!(file("1.err").contains("keel: undo: the change of"), "{}", file("1.err"));
    let second: Value = serde_json::from_str(&file("2.json")).unwrap();
    let warnings = second["warnings"].to_string();
    assert!(
        warnings.contains(&format!("undo: the change of {} by Edit", b.display()))
            && warnings.contains(&format!("undo: the record of the change of {} by Edit", b.display()))
            && warnings.contains("unrecorded.json"),
        "{second}\n{}",
        file("2.err")
    );

    // The list names both, the one whose line waits beside the log included, full disk or not.
    for list in ["list-full.out", "list.out"] {
        let text = file(list);
        let named = text
            .split("Changes a rewind cannot restore")
            .nth(1)
            .unwrap_or_else(|| panic!("{list}: {text}"));
        for p in [&a, &b] {
            assert!(
                named.contains(&format!(
                    "Edit    {} — keel could not store its previous content",
                    p.display()
                )),
                "{list}: {text}"
            );
        }
    }

    // The rewind says it cannot restore them, instead of "no files needed restoring".
    let rewind = file("rewind.out");
    assert!(!rewind.contains("no files needed restoring"), "{rewind}");
    for p in [&a, &b] {
        assert!(
            rewind.contains(&format!(
                "not restorable (changed by Edit; keel could not record it), left as it is: {}",
                p.display()
            )),
            "{rewind}"
        );
    }
    assert!(read(&a).starts_with("ALPHA\n") && read(&b).starts_with("BETA\n"));
}
