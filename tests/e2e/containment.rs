//! Shell processes are contained and bounded: nothing a command starts — `setsid`,
//! double-forked — outlives it, and its output cannot fill the disk.

use serde_json::json;

use crate::support::sse::tool;
use crate::support::{Env, run_steps};

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).replace('\0', " ").contains(needle)
        {
            out.push(pid);
        }
    }
    out
}

/// Processes whose whole command line is `cmdline` (a `bash -c` line that merely mentions it
/// does not count: it shows before the command itself has started).
fn processes_running(cmdline: &str) -> Vec<i32> {
    processes_with(cmdline)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim() == cmdline)
        })
        .collect()
}

#[tokio::test]
async fn detached_and_double_forked_processes_die_with_the_command() {
    let env = Env::new();
    // Unique durations identify this test's processes.
    let (out, last) = run_steps(
        &env,
        vec![
            vec![tool(
                "detach",
                "Bash",
                json!({"command": "setsid -f sleep 4243; (setsid sleep 4244 &); nohup sleep 4245 >/dev/null 2>&1 & echo started"}),
            )],
            vec![tool(
                "check",
                "Bash",
                json!({"command": "sleep 0.3; ps -eo args | grep -c '^sleep 424[345]' || true"}),
            )],
            vec![tool(
                "bg",
                "Bash",
                json!({"command": "setsid -f sleep 4246; sleep 300", "run_in_background": true}),
            )],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = last.tool_result_text("detach");
    assert!(!is_error && text.contains("started"), "{text}");
    let (text, _) = last.tool_result_text("check");
    assert_eq!(text.trim(), "0", "processes outlived their command");
    // The background shell and what it detached are gone once the session ended.
    for n in ["sleep 4243", "sleep 4244", "sleep 4245", "sleep 4246"] {
        assert!(processes_with(n).is_empty(), "`{n}` survived the session");
    }
}

#[tokio::test]
async fn output_is_capped_with_head_tail_and_a_note() {
    let env = Env::new();
    env.write(".keel/settings.json", r#"{"shellOutputMaxBytes": 2097152}"#);
    let (out, last) = run_steps(
        &env,
        vec![vec![tool(
            "flood",
            "Bash",
            json!({"command": "echo FIRST; head -c 300000000 /dev/zero | tr '\\0' x; echo; echo LAST"}),
        )]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = last.tool_result_text("flood");
    assert!(!is_error, "{}", &text[..text.len().min(500)]);
    // The result (or the file it was spilled to) has both ends and says what was dropped.
    let full = match text
        .lines()
        .find_map(|l| l.split_whitespace().find(|w| w.ends_with(".txt") && w.starts_with('/')))
    {
        Some(path) => std::fs::read_to_string(path.trim_end_matches(['.', ','])).unwrap_or(text.clone()),
        None => text.clone(),
    };
    assert!(full.starts_with("FIRST"), "{}", &full[..200.min(full.len())]);
    assert!(full.trim_end().ends_with("LAST"));
    assert!(full.contains("bytes of output were dropped"));
    // Nothing near the 300 MB the command printed is on disk.
    let used: u64 = walk_size(&env.home);
    assert!(used < 20 * 1024 * 1024, "{used} bytes kept");
}

fn walk_size(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(m) = e.metadata() else { continue };
        total += if m.is_dir() { walk_size(&e.path()) } else { m.len() };
    }
    total
}

#[test]
fn the_output_cap_setting_is_checked() {
    let env = Env::new();
    env.write(".keel/settings.json", r#"{"shellOutputMaxBytes": 12}"#);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["-p", "x", "--provider", "script", "--script", "/nonexistent"])
        .current_dir(&env.work)
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(err.contains("shellOutputMaxBytes"), "{err}");
}

/// Where the cgroup v2 hierarchy is writable, each command also gets a cgroup of its own, so
/// keel kills what it left even when the helper itself was killed first (its orphans then
/// leave the helper's tree).
#[tokio::test]
async fn the_cgroup_catches_orphans_of_a_killed_helper() {
    // Durations unique to this run: other test runs on the machine must not be mistaken for ours.
    let base = 40_000 + 2 * (std::process::id() % 20_000);
    let (orphan, child) = (format!("sleep {base}"), format!("sleep {}", base + 1));
    let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args([
            "__sandbox-exec",
            "--cap",
            "1048576",
            "--kind",
            "none",
            "--",
            "bash",
            "-c",
        ])
        .arg(format!("setsid {orphan} & {child}"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = helper.id() as i32;
    let dir = keel::sandbox::contain::cgroup_dir(pid);
    let mut waited = 0;
    while waited < 500 && (processes_running(&orphan).is_empty() || processes_running(&child).is_empty()) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        waited += 1;
    }
    if !dir.as_ref().is_some_and(|d| d.exists()) {
        let _ = helper.kill();
        let _ = helper.wait();
        keel::sandbox::contain::kill_descendants(pid, false);
        for n in [&orphan, &child] {
            for p in processes_with(n) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
            }
        }
        // The subreaper alone contains commands here.
        return crate::support::skip::skip(crate::support::skip::Lack::host(
            "no writable cgroup v2 hierarchy for keel's commands",
        ));
    }
    helper.kill().unwrap();
    helper.wait().unwrap();
    assert!(
        !processes_running(&orphan).is_empty(),
        "the orphan should still run before the cgroup is killed"
    );
    keel::sandbox::contain::remove_cgroup(pid);
    // Killing is asynchronous: give a loaded machine time before calling a process a survivor.
    let removed = || !dir.as_ref().is_some_and(|d| d.exists());
    for _ in 0..500 {
        if processes_with(&orphan).is_empty() && processes_with(&child).is_empty() && removed() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for n in [&orphan, &child] {
        assert!(processes_with(n).is_empty(), "`{n}` survived");
    }
    assert!(removed(), "the cgroup was removed");
}
