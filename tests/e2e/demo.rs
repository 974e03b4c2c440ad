//! The offline demo (`./run.sh` without a key) works end to end: the scripted model finds the
//! bug, fixes it with Edit and proves the fix with a real test run.

use crate::support::Env;

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn demo_script_fixes_the_bug_and_the_tests_pass() {
    let env = Env::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_dir(&root.join("examples/demo-repo"), &env.work);
    let script = root.join("examples/demo/script.json");
    let out = env
        .keel_offline()
        .args([
            "-p",
            "fix the failing test",
            "--provider",
            "script",
            "--output-format",
            "stream-json",
            "--verbose",
            // The same permissions as ./run.sh gives the demo.
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash(python3 -m unittest:*)",
        ])
        .arg("--script")
        .arg(&script)
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results: Vec<_> = out
        .lines()
        .into_iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().cloned().unwrap_or_default())
        .collect();
    assert!(
        results.iter().all(|r| r["is_error"] != true),
        "every demo step succeeds: {results:#?}"
    );
    let pricing = std::fs::read_to_string(env.path("inventory/pricing.py")).unwrap();
    assert!(pricing.contains("(1 - discount)"), "{pricing}");
    let test_run = results
        .iter()
        .map(|r| r["content"].to_string())
        .find(|c| c.contains("Ran 2 tests"))
        .expect("the demo runs the tests");
    assert!(test_run.contains("OK"), "{test_run}");
}
