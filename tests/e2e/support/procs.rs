//! Process checks for the shell tests: which processes with a marker in their command line are
//! still alive (zombies count as dead: they have exited and only wait to be reaped).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A `sleep` duration no other process on the machine uses, to find this test's processes.
pub fn unique_sleep() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}.{:09}{:04}", 3000 + n, nanos, std::process::id() % 10_000)
}

/// Live processes whose command line contains `marker`.
pub fn alive(marker: &str) -> Vec<String> {
    let out = std::process::Command::new("ps")
        .args(["-eo", "pid=,stat=,args="])
        .output()
        .expect("run ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(marker))
        .filter(|l| !l.split_whitespace().nth(1).is_some_and(|stat| stat.starts_with('Z')))
        .map(str::to_string)
        .collect()
}

/// Waits (bounded) until a process with `marker` is running.
pub async fn wait_until_running(marker: &str) {
    for _ in 0..500 {
        if !alive(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no process with `{marker}` started");
}

/// Asserts that no process with `marker` is alive. A killed process disappears a moment after
/// the signal is sent, so this waits (bounded) for that before it fails; a survivor of a missing
/// kill lives for an hour and fails it.
pub async fn assert_gone(marker: &str) {
    let mut left = alive(marker);
    for _ in 0..250 {
        if left.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = alive(marker);
    }
    panic!("processes survived: {left:#?}");
}
