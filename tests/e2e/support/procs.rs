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

/// The kernel functions the threads of `pid` are waiting in (`/proc/<pid>/task/*/wchan`).
pub fn waiting_in(pid: i32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .map(|t| std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` exists and has not exited (a zombie has).
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// Waits (bounded) until a thread of `pid` waits in a kernel function whose name contains one
/// of `what` (`pipe_write`: a write to a full pipe): `true` then, `false` if the process ended
/// first; panics if it never gets there.
pub async fn wait_until_waiting_in(pid: i32, what: &[&str]) -> bool {
    for _ in 0..1500 {
        if waiting_in(pid).iter().any(|w| what.iter().any(|x| w.contains(x))) {
            return true;
        }
        if !running(pid) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("process {pid} never waited in any of {what:?}: {:?}", waiting_in(pid));
}

/// Whether `sig` is pending for `pid`: sent, but no thread has taken it yet (its handler has
/// not run).
fn pending(pid: i32, sig: nix::sys::signal::Signal) -> bool {
    let bit = 1u64 << (sig as i32 - 1);
    let masks = |status: &str| -> u64 {
        status
            .lines()
            .filter_map(|l| l.strip_prefix("SigPnd:").or_else(|| l.strip_prefix("ShdPnd:")))
            .filter_map(|m| u64::from_str_radix(m.trim(), 16).ok())
            .fold(0, |a, m| a | m)
    };
    let mut files = vec![format!("/proc/{pid}/status")];
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        files.extend(tasks.flatten().map(|t| t.path().join("status").display().to_string()));
    }
    files
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|s| masks(&s) & bit != 0))
}

/// Sends `sig` to `pid` and waits (bounded) until the process has taken it: its handler ran,
/// so a second signal cannot merge with this one.
pub async fn signal_and_wait_taken(pid: i32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
    for _ in 0..1500 {
        if !pending(pid, sig) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} never took {sig:?}");
}
