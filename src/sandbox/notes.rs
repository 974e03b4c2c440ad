//! Notes for the model when a confined command failed, probably because of its confinement,
//! and when a command reached one of its limits.

use super::cgroup::Usage;
use super::limits::{self, Limits};
use super::policy::{Kind, Policy};

const FS: &[&str] = &["Permission denied", "Read-only file system", "Operation not permitted"];
const NET: &[&str] = &[
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "getaddrinfo",
    "Connection refused",
    "Couldn't connect",
    "socket",
];

/// A note for the model when a failed confined command looks blocked by its confinement.
pub fn explain_failure(output: &str, policy: &Policy) -> Option<String> {
    // Landlock refuses a TCP connect with EACCES too, so a "Permission denied" line about a
    // connection counts as the network, not the file system.
    let is_net_line = |l: &str| {
        NET.iter().any(|s| l.contains(s))
            || (l.contains("Permission denied") && (l.contains("connect") || l.contains("/dev/tcp/")))
    };
    let net_hit = !policy.allow_network && output.lines().any(is_net_line);
    let fs_hit = output
        .lines()
        .any(|l| !is_net_line(l) && FS.iter().any(|s| l.contains(s)));
    if policy.kind == Kind::Jail && (fs_hit || net_hit) {
        return Some(
            "[keel] This command was approved automatically as read-only, so it ran in keel's read-only jail: \
             it cannot write files (only $TMPDIR and /dev/null), use the network or unix sockets, read \
             credential files or home directories outside the working directories and toolchains (keel's \
             own state included), or signal other processes. If it failed because it needs any of that, run \
             it again with `dangerouslyDisableSandbox: true` to ask the user for approval."
                .into(),
        );
    }
    if !fs_hit && !net_hit {
        return None;
    }
    let dirs: Vec<String> = policy
        .writable
        .iter()
        .filter(|p| !p.starts_with("/dev"))
        .map(|p| p.display().to_string())
        .collect();
    let mut note =
        String::from("[keel sandbox] This command ran in the OS sandbox and probably failed because of it: ");
    if fs_hit {
        note.push_str(&format!("writes are only allowed below {}", dirs.join(", ")));
        if !policy.protected.is_empty() {
            let names: Vec<String> = policy.protected.iter().map(|p| p.display().to_string()).collect();
            note.push_str(&format!(
                "; {} stay read-only (they configure programs that run later, so git commits and other changes there need the user)",
                names.join(", ")
            ));
        }
        if policy.kind == Kind::Sandbox && !(policy.hidden.is_empty() && policy.private.is_empty()) {
            note.push_str(
                "; credential files (`~/.ssh`, `~/.aws`, …), keel's own state and home directories outside the \
                 working directories and toolchain locations cannot be read (`sandbox.filesystem.allowRead` in the \
                 user's settings adds locations)",
            );
        }
        if !policy.reserved.is_empty() {
            let names: Vec<String> = policy.reserved.iter().map(|p| p.display().to_string()).collect();
            note.push_str(&format!(
                "; no new file or directory can be created next to {} (they must not appear inside the sandbox): create it in an existing subdirectory",
                names.join(", ")
            ));
        }
    }
    if net_hit {
        if fs_hit {
            note.push_str("; ");
        }
        note.push_str("network access is off");
    }
    note.push_str(
        ". Work within these limits, or run it again with `dangerouslyDisableSandbox: true` to ask the user to run it outside the sandbox.",
    );
    Some(note)
}

/// Notes for the model when a command reached a limit: its cgroups' counters say so (`usage`);
/// where `RLIMIT_NPROC` bounded its processes instead, failed forks in its output do.
pub fn limit_notes(usage: &Usage, output: &str, limits: Option<&Limits>) -> Vec<String> {
    let mut notes = Vec::new();
    let processes = |limit: u64| {
        format!(
            "[keel] This command reached its limit of {limit} processes and threads at once (setting \
             sandbox.limits.maxProcesses), so starting more failed (\"Resource temporarily unavailable\"). \
             Run fewer at once (a smaller `-j`, fewer background jobs), or ask the user to raise the limit."
        )
    };
    match (usage.processes, limits) {
        (Some(hit), _) if hit.count > 0 => notes.push(processes(hit.limit)),
        (None, Some(l)) if limits::process_rlimit_applies() && forks_failed(output) => {
            notes.push(processes(l.max_processes).replace("reached", "probably reached"));
        }
        _ => {}
    }
    if let Some(hit) = usage.memory
        && hit.count > 0
    {
        notes.push(format!(
            "[keel] This command reached its memory limit of {} MiB (setting sandbox.limits.maxMemoryMiB): the \
             kernel killed {} of its processes (\"Killed\", exit status 137). Use less memory at once (smaller \
             inputs, streaming instead of loading everything), or ask the user to raise the limit.",
            hit.limit / (1024 * 1024),
            hit.count
        ));
    }
    notes
}

/// Whether the output shows starting a process failing for lack of room (`EAGAIN`).
fn forks_failed(output: &str) -> bool {
    output.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        (l.contains("fork") || l.contains("spawn") || l.contains("thread"))
            && l.contains("resource temporarily unavailable")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(kind: Kind) -> Policy {
        Policy {
            kind,
            writable: vec!["/work/repo".into(), "/tmp".into(), "/dev/null".into()],
            protected: Vec::new(),
            reserved: Vec::new(),
            private: Vec::new(),
            readable: Vec::new(),
            hidden: Vec::new(),
            allow_network: false,
            tmp_dir: None,
            proxy: None,
        }
    }

    #[test]
    fn failure_notes_name_the_limit() {
        let p = policy(Kind::Sandbox);
        let n = explain_failure("touch: cannot touch '/etc/x': Permission denied", &p).unwrap();
        assert!(n.contains("/work/repo, /tmp") && !n.contains("/dev/null"), "{n}");
        let n = explain_failure("curl: (7) Couldn't connect: Network is unreachable", &p).unwrap();
        assert!(n.contains("network access is off"));
        let n = explain_failure(
            "bash: connect: Permission denied\nbash: /dev/tcp/127.0.0.1/80: Permission denied",
            &p,
        )
        .unwrap();
        assert!(n.contains("network access is off") && !n.contains("writes"), "{n}");
        assert!(explain_failure("assertion failed: 1 == 2", &p).is_none());
    }

    #[test]
    fn the_jail_explains_itself_when_it_blocked_something() {
        let n = explain_failure("grep: ./.env: Permission denied", &policy(Kind::Jail)).unwrap();
        assert!(
            n.contains("read-only") && n.contains("dangerouslyDisableSandbox"),
            "{n}"
        );
        assert!(
            explain_failure("", &policy(Kind::Jail)).is_none(),
            "grep finding nothing is no jail matter"
        );
    }

    #[test]
    fn limit_notes_name_the_limit_and_its_value() {
        use super::super::cgroup::Hit;
        let usage = Usage {
            processes: Some(Hit { limit: 20, count: 80 }),
            memory: Some(Hit {
                limit: 100 << 20,
                count: 1,
            }),
        };
        let notes = limit_notes(&usage, "", None);
        assert!(notes[0].contains("limit of 20 processes") && notes[0].contains("maxProcesses"));
        assert!(notes[1].contains("memory limit of 100 MiB") && notes[1].contains("maxMemoryMiB"));
        let quiet = Usage {
            processes: Some(Hit { limit: 20, count: 0 }),
            memory: None,
        };
        assert!(limit_notes(&quiet, "bash: fork: Resource temporarily unavailable", None).is_empty());
        assert!(forks_failed("bash: fork: retry: Resource temporarily unavailable"));
        assert!(!forks_failed("read: Resource temporarily unavailable"));
    }
}
