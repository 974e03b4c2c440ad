//! The OS sandbox for shell commands (Linux): writes limited to the working directories,
//! added directories and temp dirs (Landlock), network off unless allowed (a fresh network
//! namespace, plus Landlock's TCP rules where the kernel has them).
//!
//! Sandboxed commands run through keel itself: `keel __sandbox-exec [options] -- program args`
//! applies the restrictions in a fresh single-threaded process and then execs the command, so
//! nothing unsafe happens between fork and exec in the multi-threaded agent.

pub mod helper;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::settings::{Settings, SettingsError};

pub const HELPER_ARG: &str = "__sandbox-exec";

/// What one sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub writable: Vec<PathBuf>,
    /// Existing paths inside `writable` that stay read-only: git's config and hooks, the
    /// agents' configuration (a change there would run code later, outside the sandbox).
    pub protected: Vec<PathBuf>,
    pub allow_network: bool,
    /// The commands' private temporary directory, given to them as `TMPDIR`.
    pub tmp_dir: Option<PathBuf>,
}

/// The `sandbox` settings and `--sandbox`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    pub enabled: bool,
    /// Refuse to run commands when the sandbox cannot be enforced (default), instead of
    /// running them unsandboxed with a warning.
    pub fail_if_unavailable: bool,
    pub allow_network: bool,
    pub extra_writable: Vec<PathBuf>,
}

impl SandboxConfig {
    pub fn from_settings(settings: &Settings, cli_enabled: bool) -> Result<Self, SettingsError> {
        let mut extra = Vec::new();
        for (p, layer) in settings.strings(&["sandbox", "additionalWritePaths"])? {
            extra.push(crate::tools::paths::resolve(&layer.base_dir, &p));
        }
        Ok(SandboxConfig {
            enabled: cli_enabled || settings.flag(&["sandbox", "enabled"])?.unwrap_or(false),
            fail_if_unavailable: settings.flag(&["sandbox", "failIfUnavailable"])?.unwrap_or(true),
            allow_network: settings.flag(&["sandbox", "allowNetwork"])?.unwrap_or(false),
            extra_writable: extra,
        })
    }

    /// The policy for a session with these working directories.
    /// `tmp_dir` is the commands' private temporary directory (their `TMPDIR`): the shared
    /// `/tmp` stays read-only, so nothing leaks between sessions or escapes through it.
    pub fn policy(&self, working_dirs: &[PathBuf], tmp_dir: Option<&std::path::Path>) -> Policy {
        let mut writable: Vec<PathBuf> = working_dirs.to_vec();
        writable.extend(self.extra_writable.iter().cloned());
        writable.extend(device_files());
        writable.extend(tmp_dir.map(std::path::Path::to_path_buf));
        writable.sort();
        writable.dedup();
        let protected = working_dirs
            .iter()
            .flat_map(|d| PROTECTED.iter().map(move |p| d.join(p)))
            .filter(|p| p.exists())
            .collect();
        Policy {
            writable,
            protected,
            allow_network: self.allow_network,
            tmp_dir: tmp_dir.map(std::path::Path::to_path_buf),
        }
    }
}

/// Kept read-only inside each working directory, where they exist.
const PROTECTED: &[&str] = &[".git/config", ".git/hooks", ".claude", ".keel"];

/// The device files ordinary commands write to, and shared memory.
fn device_files() -> Vec<PathBuf> {
    [
        "/dev/shm",
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/pts",
    ]
    .iter()
    .map(PathBuf::from)
    .collect()
}

/// How the session runs shell commands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// No sandbox (not enabled, or enabled with `failIfUnavailable: false` where it cannot work).
    #[default]
    Off,
    Enforced(Policy),
    /// Enabled but not enforceable here: commands are refused with this reason.
    Refuse(String),
}

impl SandboxMode {
    /// Decides the mode at startup; the second value is a warning to show once.
    pub fn decide(
        config: &SandboxConfig,
        working_dirs: &[PathBuf],
        tmp_dir: &std::path::Path,
    ) -> (SandboxMode, Option<String>) {
        if !config.enabled {
            return (SandboxMode::Off, None);
        }
        let policy = config.policy(working_dirs, Some(tmp_dir));
        let caps = probe();
        if caps.can_enforce(&policy) {
            return (SandboxMode::Enforced(policy), None);
        }
        let why = if caps.problems.is_empty() {
            "this kernel lacks the needed features".to_string()
        } else {
            caps.problems.join("; ")
        };
        if config.fail_if_unavailable {
            let msg = format!(
                "the sandbox cannot be enforced on this machine ({why}); shell commands will be refused (set sandbox.failIfUnavailable to false to run them unsandboxed)"
            );
            (SandboxMode::Refuse(msg.clone()), Some(msg))
        } else {
            (
                SandboxMode::Off,
                Some(format!(
                    "the sandbox cannot be enforced on this machine ({why}); shell commands run UNSANDBOXED"
                )),
            )
        }
    }
}

/// What the sandbox can enforce on this machine (from a probe in a helper process).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Landlock ABI version, when file-system restriction was enforced.
    pub landlock_abi: Option<i32>,
    pub filesystem: bool,
    /// Network isolation by a fresh network namespace.
    pub network_namespace: bool,
    /// Network isolation of TCP by Landlock (ABI 4+).
    pub network_landlock_tcp: bool,
    /// Why something is unavailable.
    pub problems: Vec<String>,
}

impl Capabilities {
    pub fn network(&self) -> bool {
        self.network_namespace || self.network_landlock_tcp
    }

    /// Whether a policy can be enforced in full.
    pub fn can_enforce(&self, policy: &Policy) -> bool {
        self.filesystem && (policy.allow_network || self.network())
    }
}

/// Runs the probe in a helper process (so the agent itself is never restricted).
/// `KEEL_SANDBOX_ASSUME_UNSUPPORTED=1` makes keel behave as on a kernel without the features,
/// to check how a configuration copes (`sandbox.failIfUnavailable`).
pub fn probe() -> Capabilities {
    if std::env::var_os("KEEL_SANDBOX_ASSUME_UNSUPPORTED").is_some_and(|v| !v.is_empty() && v != "0") {
        return Capabilities {
            problems: vec!["KEEL_SANDBOX_ASSUME_UNSUPPORTED is set".into()],
            ..Capabilities::default()
        };
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return Capabilities {
                problems: vec![format!("cannot locate the keel executable: {e}")],
                ..Capabilities::default()
            };
        }
    };
    match std::process::Command::new(exe).args([HELPER_ARG, "--probe"]).output() {
        Ok(out) => serde_json::from_slice(&out.stdout).unwrap_or_else(|e| Capabilities {
            problems: vec![format!(
                "the sandbox probe gave no answer ({e}): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )],
            ..Capabilities::default()
        }),
        Err(e) => Capabilities {
            problems: vec![format!("cannot run the sandbox probe: {e}")],
            ..Capabilities::default()
        },
    }
}

/// The program and arguments that run `argv` inside the sandbox.
pub fn wrap(policy: &Policy, argv: &[String]) -> std::io::Result<(PathBuf, Vec<String>)> {
    let exe = std::env::current_exe()?;
    let mut args = vec![HELPER_ARG.to_string()];
    for w in &policy.writable {
        args.push("--write".into());
        args.push(w.display().to_string());
    }
    for p in &policy.protected {
        args.push("--protect".into());
        args.push(p.display().to_string());
    }
    if policy.allow_network {
        args.push("--net".into());
    }
    args.push("--".into());
    args.extend(argv.iter().cloned());
    Ok((exe, args))
}

/// A note for the model when a failed sandboxed command looks blocked by the sandbox.
pub fn explain_failure(output: &str, policy: &Policy) -> Option<String> {
    const FS: &[&str] = &["Permission denied", "Read-only file system", "Operation not permitted"];
    const NET: &[&str] = &[
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
        "getaddrinfo",
        "Connection refused",
    ];
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
    }
    if net_hit {
        if fs_hit {
            note.push_str("; ");
        }
        note.push_str("network access is off");
    }
    note.push_str(". Work within these limits, or tell the user which access the task needs.");
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_notes_name_the_limit() {
        let p = Policy {
            writable: vec!["/work/repo".into(), "/tmp".into(), "/dev/null".into()],
            protected: Vec::new(),
            allow_network: false,
            tmp_dir: None,
        };
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
}
