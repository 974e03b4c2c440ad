//! Permission updates the real Python Agent SDK sends with a `can_use_tool` approval.

use serde_json::{Value, json};

use crate::support::sdk;
use crate::support::skip::or_skip;
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

#[tokio::test]
async fn permission_updates_from_can_use_tool_apply_at_once_and_are_saved() {
    let env = Env::new();
    let extra = tempfile::tempdir().unwrap();
    let extra_dir = extra.path().canonicalize().unwrap();
    let outside = extra_dir.join("notes.txt");
    std::fs::write(&outside, "kept outside\n").unwrap();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("b1", "Bash", json!({"command": "touch one.txt"}))]))
        .push(calls(vec![
            tool("b2", "Bash", json!({"command": "touch two.txt"})),
            tool("b3", "Bash", json!({"command": "touch three.txt"})),
            tool("r1", "Read", json!({"file_path": outside.display().to_string()})),
        ]))
        .push(answer("done"));
    let r = or_skip!(
        sdk::run_with(
            &env,
            &server,
            "permission_updates",
            &[("EXTRA_DIR", &extra_dir.display().to_string())],
        )
        .await
    );
    // Asked once; the updates decided the rest.
    let asked: Vec<&Value> = r.lines.iter().filter(|l| l["kind"] == "asked").collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["input"]["command"], "touch one.txt");
    assert!(env.path("one.txt").exists());
    let reqs = server.requests();
    let (two, is_error) = reqs[2].tool_result_text("b2");
    assert!(is_error && two.contains("touch two.txt"), "{two}");
    assert!(!env.path("two.txt").exists());
    let (three, is_error) = reqs[2].tool_result_text("b3");
    assert!(!is_error, "{three}");
    assert!(env.path("three.txt").exists());
    let (read, is_error) = reqs[2].tool_result_text("r1");
    assert!(!is_error && read.contains("kept outside"), "{read}");
    // Saved where the program asked.
    let user: Value =
        serde_json::from_str(&std::fs::read_to_string(env.home.join(".keel/settings.json")).unwrap()).unwrap();
    assert_eq!(user["permissions"]["deny"], json!(["Bash(touch two.txt)"]));
    let local: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path(".keel/settings.local.json")).unwrap()).unwrap();
    assert_eq!(local["permissions"]["allow"], json!(["Bash(touch three.txt)"]));
    assert!(
        local["permissions"].get("additionalDirectories").is_none(),
        "the directory was for the session only"
    );
}
