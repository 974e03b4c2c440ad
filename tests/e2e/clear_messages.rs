//! Messages that say what happened: subcommands that end quietly when their reader goes away,
//! settings mistakes reported wherever settings are read.

use std::process::Stdio;

use serde_json::json;

use crate::support::Env;

/// Every subcommand that prints, as a reader closed before the first line would see it.
const PRINTING: [&[&str]; 7] = [
    &["doctor", "--offline"],
    &["hooks"],
    &["context"],
    &["mcp", "list"],
    &["--help"],
    &["--version"],
    &["doctor", "--offline", "--model", "qwen3-coder:30b"],
];

/// `keel doctor | head -1`: the pipeline's exit status is keel's, and keel ends quietly.
#[tokio::test]
async fn doctor_piped_into_head_ends_quietly() {
    let env = Env::new();
    let keel = env!("CARGO_BIN_EXE_keel");
    let out = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(format!("'{keel}' doctor --offline | head -1; exit ${{PIPESTATUS[0]}}"))
        .current_dir(&env.work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

/// A reader that is gone before keel writes anything: every write fails, none panics.
#[tokio::test]
async fn every_subcommand_ends_quietly_on_a_closed_stdout() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}})
            .to_string(),
    );
    for args in PRINTING {
        let mut child = env.keel_offline().args(args).spawn_with_stdout(Stdio::piped());
        drop(child.stdout.take());
        let out = crate::support::finish(child).await;
        assert!(!out.stderr.contains("panicked"), "keel {args:?}: {}", out.stderr);
        assert_ne!(out.code, 101, "keel {args:?}: {}", out.stderr);
        assert!(
            out.code == 0 || out.code == 141,
            "keel {args:?} ended with {}: {}",
            out.code,
            out.stderr
        );
    }
}

/// A misspelt top-level key and a misspelt hook event are named by every command that reads
/// the settings, with the name that was probably meant.
#[tokio::test]
async fn settings_mistakes_are_reported_by_doctor_hooks_and_a_session() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        &json!({
            "modle": "claude-haiku-4-5",
            "hooks": {"PreToolUze": [{"hooks": [{"type": "command", "command": "true"}]}]}
        })
        .to_string(),
    );
    let script = env.write("script.json", r#"{"turns": [{"text": "hi"}]}"#);
    let key = "ignoring unknown setting `modle`: it is not a setting keel knows (did you mean `model`?)";
    let event = "hooks for `PreToolUze` are ignored: keel has no such event (did you mean `PreToolUse`?)";
    let doctor = env.keel_offline().args(["doctor", "--offline"]).run().await;
    let hooks = env.keel_offline().arg("hooks").run().await;
    let session = env
        .keel_offline()
        .args(["-p", "x", "--provider", "script", "--script"])
        .arg(&script)
        .run()
        .await;
    assert_eq!(session.code, 0, "{}", session.stderr);
    for (what, text) in [
        ("keel doctor", &doctor.stdout),
        ("keel hooks", &hooks.stdout),
        ("keel -p", &session.stderr),
    ] {
        assert!(text.contains(key), "{what} does not name the key:\n{text}");
        assert!(text.contains(event), "{what} does not name the event:\n{text}");
    }
}
