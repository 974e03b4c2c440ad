//! A test run against an old server is no evidence about the new code. When a test run talks
//! to a local port (its command line or its output names it) and the process listening there
//! started before the latest change to the workspace's files, and that process runs from inside
//! the workspace, the run tested what the server loaded back then: it is marked stale, naming
//! the process and the port. Linux only (`/proc`); elsewhere nothing is found and nothing marked.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use regex::Regex;
use serde::{Deserialize, Serialize};

/// The server a stale run talked to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleTarget {
    pub port: u16,
    pub pid: u32,
    /// The process's command line, cut short.
    pub command: String,
    /// When the process started, and when the newest workspace file changed (RFC 3339).
    pub started_at: String,
    pub changed_at: String,
    /// The newest changed file (relative to the workspace root).
    pub changed_file: String,
}

impl StaleTarget {
    pub fn describe(&self) -> String {
        format!(
            "it talked to port {} served by process {} (`{}`), which started at {}, before the last change \
             to the workspace ({} at {}): it tested the code that process loaded then",
            self.port, self.pid, self.command, self.started_at, self.changed_file, self.changed_at
        )
    }
}

/// Files no server serves: caches the runs themselves write.
pub fn is_cache(rel: &Path) -> bool {
    rel.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("__pycache__" | ".pytest_cache" | ".mypy_cache" | ".ruff_cache" | ".cache" | "coverage")
        )
    }) || rel.extension().is_some_and(|e| e == "pyc")
}

/// Most ports looked at per run (a log full of numbers must not cost a scan each).
const MAX_PORTS: usize = 8;

/// Local ports a command line or its output names: `localhost:8000`, `127.0.0.1:8000`,
/// `[::1]:8000`, `0.0.0.0:8000`, `--port 8000`, `PORT=8000`.
pub fn ports_named(text: &str) -> BTreeSet<u16> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?i)(?:\blocalhost|\b127\.0\.0\.1|\b0\.0\.0\.0|\[::1?\]):(\d{2,5})\b|--port[= ](\d{2,5})\b|\bPORT=(\d{2,5})\b",
        )
        .expect("constant regex")
    });
    re.captures_iter(text)
        .filter_map(|c| {
            c.iter()
                .skip(1)
                .flatten()
                .next()
                .and_then(|m| m.as_str().parse::<u16>().ok())
        })
        .filter(|p| *p > 0)
        .take(MAX_PORTS)
        .collect()
}

/// The socket inodes listening on `port` (TCP, IPv4 and IPv6).
fn listening_inodes(port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let listening = *state == "0A";
            let local_port = local.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
            if listening
                && local_port == Some(port)
                && let Ok(inode) = inode.parse::<u64>()
                && inode != 0
            {
                out.push(inode);
            }
        }
    }
    out
}

/// The process holding one of `inodes` open (the first found), among those keel may inspect.
fn owner(inodes: &[u64]) -> Option<u32> {
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && wanted.iter().any(|w| target.as_os_str() == w.as_str())
            {
                return Some(pid);
            }
        }
    }
    None
}

/// When a process started: its start in clock ticks after boot (`/proc/<pid>/stat`, field
/// 22), against the boot-time clock now.
fn started(pid: u32) -> Option<SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|h| *h > 0)?;
    let since_boot = Duration::from_millis(ticks.saturating_mul(1000) / hz);
    let now_boot = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).ok()?;
    let now_boot = Duration::new(now_boot.tv_sec().try_into().ok()?, now_boot.tv_nsec().try_into().ok()?);
    SystemTime::now().checked_sub(now_boot.checked_sub(since_boot)?)
}

fn command_line(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text: String = String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    super::ledger::clip(&text, 80)
}

fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The first named port served by a process from inside `root` that started before
/// `last_change` (the newest file's change time and its path).
pub fn stale_target(ports: &BTreeSet<u16>, root: &Path, last_change: (SystemTime, &str)) -> Option<StaleTarget> {
    let own = std::process::id();
    for &port in ports {
        let inodes = listening_inodes(port);
        if inodes.is_empty() {
            continue;
        }
        let Some(pid) = owner(&inodes) else { continue };
        if pid == own {
            continue;
        }
        // A server running from elsewhere serves other files (a database, another project).
        let inside = std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(root));
        if !inside {
            continue;
        }
        let Some(start) = started(pid) else { continue };
        if start < last_change.0 {
            return Some(StaleTarget {
                port,
                pid,
                command: command_line(pid),
                started_at: rfc3339(start),
                changed_at: rfc3339(last_change.0),
                changed_file: last_change.1.to_string(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_from_urls_flags_and_variables() {
        let text = "curl http://localhost:8000/health; pytest --port 9001\nPORT=3000 npm test\nGET 127.0.0.1:5000 \
                    [::1]:7000 version 1.2:3456";
        let ports: Vec<u16> = ports_named(text).into_iter().collect();
        assert_eq!(ports, [3000, 5000, 7000, 8000, 9001]);
        assert!(ports_named("ran 12 tests in 0.003s").is_empty());
    }

    #[test]
    fn a_listening_server_started_before_a_change_is_found_and_after_it_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let ports: BTreeSet<u16> = [port].into();
        let root = std::env::current_dir().unwrap();
        let later = SystemTime::now() + Duration::from_secs(60);
        // The listener is keel's own process here: never reported.
        assert_eq!(stale_target(&ports, &root, (later, "a.py")), None);
        assert!(
            !listening_inodes(port).is_empty(),
            "the listening socket is found in /proc/net"
        );
        assert!(started(std::process::id()).is_some_and(|t| t <= SystemTime::now()));
    }
}
