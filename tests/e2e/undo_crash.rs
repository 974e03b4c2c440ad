//! A rewind killed at any moment (`kill -9`) is completed or rolled back by the next start:
//! every file is at its content before the rewind or after it, all of them alike and as the
//! undo record says; the next rewind and the undo of the rewind work; no temporary file of
//! the killed process stays in the workspace.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, Keel, ModelServer};

const FILES: usize = 12;

fn name(i: usize) -> String {
    format!("src/f{i:02}.txt")
}

/// Distinct content of `size` bytes for file `i` in `version`.
fn content(i: usize, version: &str, size: usize) -> Vec<u8> {
    let line = format!("{version} of file {i}: the quick brown fox jumps over the lazy dog\n");
    line.as_bytes().iter().copied().cycle().take(size).collect()
}

/// A session whose second prompt changed twelve files (through one shell command); returns the
/// files' contents before and after that prompt. Point 2 is the prompt that changed them.
async fn twelve_changed(env: &Env, size: usize) -> (BTreeMap<PathBuf, Vec<u8>>, BTreeMap<PathBuf, Vec<u8>>) {
    let mut before = BTreeMap::new();
    for i in 0..FILES {
        let p = env.path(&name(i));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content(i, "original", size)).unwrap();
        before.insert(p, content(i, "original", size));
    }
    let server = ModelServer::start().await;
    server
        .push(answer("one"))
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": "for f in src/f*.txt; do sed -i 's/^original/EDITED/' \"$f\"; done"}),
        )]))
        .push(answer("edited"));
    for (text, resume) in [("alpha", false), ("edit all", true)] {
        let mut k = env.keel(&server);
        if resume {
            k.arg("-c");
        }
        let out = k
            .args(["-p", text, "--permission-mode", "bypassPermissions"])
            .run()
            .await;
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let after: BTreeMap<PathBuf, Vec<u8>> = before.keys().map(|p| (p.clone(), std::fs::read(p).unwrap())).collect();
    for (p, b) in &before {
        assert_ne!(&after[p], b, "the prompt changed {}", p.display());
    }
    (before, after)
}

/// The state of the files: `Some(true)` all as before the prompt (rewound), `Some(false)` all
/// as after it, `None` a mix (or anything else).
fn state(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> (Option<bool>, Vec<String>) {
    let mut report = Vec::new();
    let (mut rewound, mut kept) = (0, 0);
    for p in before.keys() {
        match std::fs::read(p) {
            Ok(b) if b == before[p] => rewound += 1,
            Ok(b) if b == after[p] => kept += 1,
            Ok(_) => report.push(format!("{}: other content", p.display())),
            Err(e) => report.push(format!("{}: {e}", p.display())),
        }
    }
    let whole = match (rewound, kept) {
        (n, 0) if n == FILES => Some(true),
        (0, n) if n == FILES => Some(false),
        _ => None,
    };
    report.push(format!("{rewound} rewound, {kept} as after the prompt"));
    (whole, report)
}

/// keel's temporary files anywhere in the workspace.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(leftovers(&p));
        } else if e.file_name().to_string_lossy().starts_with(".keel-") {
            out.push(p);
        }
    }
    out
}

/// The rewind points `keel rewind --list` shows (a start of keel: it finishes what a crash
/// interrupted), with its stderr.
async fn rewind_points(env: &Env) -> (Vec<u32>, String) {
    let out = env.keel_offline().args(["rewind", "--list"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let points = out
        .stdout
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("rewind"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    (points, out.stderr)
}

async fn killed(k: &mut Keel) -> bool {
    let out = k.spawn().wait_with_output().await.expect("wait for keel");
    out.status.signal() == Some(9)
}

/// After a crash and the next start: files and record agree, and the rewind can be taken back
/// (its record in the transcript included: the undo restores the conversation too). Returns
/// whether the rewind was completed (else it was rolled back).
async fn check_and_reset(
    env: &Env,
    what: &str,
    rewinds_before: &mut Vec<u32>,
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
) -> bool {
    let (points, stderr) = rewind_points(env).await;
    let (whole, report) = state(before, after);
    let left = leftovers(&env.work);
    assert!(
        left.is_empty(),
        "{what}: temporary files left in the workspace: {left:?}"
    );
    let new: Vec<u32> = points.iter().copied().filter(|p| !rewinds_before.contains(p)).collect();
    match (whole, new.as_slice()) {
        // Rolled back: no record of the rewind, every file as it was.
        (Some(false), []) => false,
        // Completed: the record has the rewind, every file restored; its undo works.
        (Some(true), [point]) => {
            let undo = env
                .keel_offline()
                .args(["rewind", "--to", &point.to_string()])
                .run()
                .await;
            assert_eq!(undo.code, 0, "{what}: undoing rewind {point}: {}", undo.stderr);
            assert_eq!(state(before, after).0, Some(false), "{what}: undone");
            rewinds_before.push(*point);
            rewinds_before.push(point + 1);
            true
        }
        _ => panic!("{what}: files and record disagree: {report:?}; new rewind points {new:?}\n{stderr}"),
    }
}

#[tokio::test]
async fn a_rewind_killed_at_any_step_is_completed_or_rolled_back_by_the_next_start() {
    let env = Env::new();
    let (before, after) = twelve_changed(&env, 64 * 1024).await;
    let mut steps: Vec<String> = vec!["rewind-journaled".into()];
    steps.extend((1..=FILES + 1).map(|n| format!("write-rename:{n}")));
    steps.extend((1..=FILES).map(|n| format!("rewind-file:{n}")));
    steps.extend(["rewind-logged", "rewind-event", "rewind-boundary"].map(String::from));
    let mut rewinds = Vec::new();
    let mut completed = Vec::new();
    for step in &steps {
        let mut k = env.keel_offline();
        k.args(["rewind", "--to", "2"]).env("KEEL_CRASH_AT", step);
        assert!(killed(&mut k).await, "{step}: the rewind was not killed there");
        if check_and_reset(&env, step, &mut rewinds, &before, &after).await {
            completed.push(step.as_str());
        }
    }
    // Killed before its commit a rewind rolls back; after it, it is completed.
    assert_eq!(completed, ["rewind-logged", "rewind-event", "rewind-boundary"]);

    // A rewind after all that still works, and the conversation is whole: the resumed request
    // has each prompt once, and nothing had to be repaired.
    let out = env.keel_offline().args(["rewind", "--to", "2"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(state(&before, &after).0, Some(true));
    let server = ModelServer::start().await;
    server.push(answer("fine"));
    let out = env
        .keel(&server)
        .args(["-c", "-p", "next", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.json().get("warnings").is_none(),
        "nothing to repair or report: {}",
        out.stdout
    );
    let text = serde_json::to_string(server.requests()[0].messages()).unwrap();
    assert_eq!(text.matches("alpha").count(), 1, "{text}");
    assert!(
        !text.contains("edit all"),
        "the conversation is back before point 2: {text}"
    );
}

/// The next `keel -c` is such a start too: it says what it found and continues from a
/// consistent session.
#[tokio::test]
async fn the_next_session_start_finishes_an_interrupted_rewind_and_says_so() {
    let env = Env::new();
    let (before, after) = twelve_changed(&env, 16 * 1024).await;
    for (step, rewound) in [("rewind-file:6", false), ("rewind-event", true)] {
        let mut k = env.keel_offline();
        k.args(["rewind", "--to", "2"]).env("KEEL_CRASH_AT", step);
        assert!(killed(&mut k).await, "{step}");
        let server = ModelServer::start().await;
        server.push(answer("fine"));
        let out = env
            .keel(&server)
            .args(["-c", "-p", "next", "--output-format", "json"])
            .run()
            .await;
        assert_eq!(out.code, 0, "{step}: {}", out.stderr);
        let warnings = out.json()["warnings"].to_string();
        let said = if rewound {
            "its record is now complete"
        } else {
            "it was rolled back"
        };
        assert!(warnings.contains(said), "{step}: {warnings}");
        assert_eq!(state(&before, &after).0, Some(rewound), "{step}");
        let text = serde_json::to_string(server.requests()[0].messages()).unwrap();
        assert_eq!(text.contains("edit all"), !rewound, "{step}: {text}");
        assert!(leftovers(&env.work).is_empty(), "{step}");
        if rewound {
            // Take the rewind back for the next round (its point is the newest rewind).
            let (points, _) = rewind_points(&env).await;
            let undo = env
                .keel_offline()
                .args([
                    "rewind",
                    "--to",
                    &points.last().unwrap().to_string(),
                    "--restore",
                    "code",
                ])
                .run()
                .await;
            assert_eq!(undo.code, 0, "{}", undo.stderr);
        }
    }
}

/// Real kills, no injection: a twelve-file rewind killed at moments spread over its run.
#[tokio::test]
async fn a_rewind_killed_at_random_moments_never_leaves_a_mix() {
    let env = Env::new();
    let (before, after) = twelve_changed(&env, 1024 * 1024).await;
    // How long a whole rewind takes here (and its undo, to start again).
    let started = Instant::now();
    let out = env.keel_offline().args(["rewind", "--to", "2"]).run().await;
    let took = started.elapsed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (points, _) = rewind_points(&env).await;
    let mut rewinds = points.clone();
    let out = env
        .keel_offline()
        .args(["rewind", "--to", &points[0].to_string()])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    rewinds.push(points[0] + 1);
    for i in 0..12u32 {
        let mut child = env.keel_offline().args(["rewind", "--to", "2"]).spawn();
        tokio::time::sleep(took * i / 12).await;
        let _ = child.start_kill();
        let _ = child.wait().await;
        check_and_reset(&env, &format!("kill {i}"), &mut rewinds, &before, &after).await;
    }
}
