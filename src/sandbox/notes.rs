//! Notes for the model when a confined command failed, probably because of its confinement.

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
}
