//! Bounds on what one shell command may take from the machine: how many processes (and
//! threads) it may run at once and how much memory it may use. The kernel enforces them through
//! the command's cgroup where the controllers are available to keel; where no `pids` controller
//! is, `RLIMIT_NPROC` bounds processes (not for root, whom the kernel exempts); memory is then
//! unbounded, which `keel doctor` says.

use crate::config::settings::{Settings, SettingsError};

/// The default for `sandbox.limits.maxProcesses`.
pub const DEFAULT_MAX_PROCESSES: u64 = 4096;
/// Fewest processes a command may be limited to: the helper, the shell and a pipeline.
const MIN_PROCESSES: u64 = 8;
/// Least memory a command may be limited to (a shell and a small program).
const MIN_MEMORY_MIB: u64 = 16;

pub const PROCESSES_KEY: &[&str] = &["sandbox", "limits", "maxProcesses"];
pub const MEMORY_KEY: &[&str] = &["sandbox", "limits", "maxMemoryMiB"];

/// The limits every shell command runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads at once, the helper's included.
    pub max_processes: u64,
    /// Bytes of memory (and no swap beyond it); `None` where the machine's memory is unknown
    /// and no setting gives a value.
    pub max_memory: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_processes: DEFAULT_MAX_PROCESSES,
            max_memory: machine_memory().map(|m| m / 2),
        }
    }
}

impl Limits {
    /// The settings a project may only lower, with their defaults (for `config::precedence`).
    pub fn lower_only() -> Vec<(&'static [&'static str], u64)> {
        let d = Limits::default();
        let mut out = vec![(PROCESSES_KEY, d.max_processes)];
        out.extend(d.memory_mib().map(|m| (MEMORY_KEY, m)));
        out
    }

    /// `sandbox.limits.maxProcesses` (default 4,096) and `sandbox.limits.maxMemoryMiB` (default
    /// half the machine's memory): whole numbers; too small a value is an error, not a command
    /// that cannot start.
    pub fn from_settings(settings: &Settings) -> Result<Self, SettingsError> {
        let mut limits = Limits::default();
        if let Some(n) = whole(settings, PROCESSES_KEY, MIN_PROCESSES)? {
            limits.max_processes = n;
        }
        if let Some(mib) = whole(settings, MEMORY_KEY, MIN_MEMORY_MIB)? {
            limits.max_memory = Some(mib.saturating_mul(1024 * 1024));
        }
        Ok(limits)
    }

    /// The helper's arguments for these limits.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--max-procs".to_string(), self.max_processes.to_string()];
        if let Some(m) = self.max_memory {
            args.extend(["--max-memory".to_string(), m.to_string()]);
        }
        args
    }

    /// The memory limit in MiB, as the settings and notes name it.
    pub fn memory_mib(&self) -> Option<u64> {
        self.max_memory.map(|m| m / (1024 * 1024))
    }
}

fn whole(settings: &Settings, key: &[&str], min: u64) -> Result<Option<u64>, SettingsError> {
    let Some((value, layer)) = settings.nested(key) else {
        return Ok(None);
    };
    match value.as_u64() {
        Some(n) if n >= min => Ok(Some(n)),
        _ => Err(SettingsError::Invalid {
            path: layer.label(),
            key: key.join("."),
            problem: format!("must be a whole number, at least {min}, found {value}"),
        }),
    }
}

/// The machine's memory in bytes (`MemTotal` of `/proc/meminfo`).
pub fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bounds this process's children by `RLIMIT_NPROC`, where no `pids` cgroup does. The kernel
/// counts every process and thread of the real user in the limit's user namespace, so the
/// limit is what already runs there besides this process, plus `max` (this process included,
/// as in a cgroup): in a user namespace the helper made for itself nothing else runs; elsewhere
/// every process of the user does, so the command's share shrinks or grows as they come and
/// go. Root is not bounded this way (the kernel exempts it), which `keel doctor` says.
pub fn bound_processes(max: u64, own_user_namespace: bool) -> Result<(), String> {
    let running = if own_user_namespace { 1 } else { user_tasks() };
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit on this process into a valid struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } != 0 {
        rl.rlim_max = libc::RLIM_INFINITY;
    }
    // A lower hard limit the user already has stays (it cannot be raised anyway).
    let limit = running.saturating_sub(1).saturating_add(max).min(rl.rlim_max);
    let rl = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: setrlimit on this process with a valid struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &rl) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot limit the command's processes: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Tasks (processes and their threads) of this process's real user, from `/proc`.
fn user_tasks() -> u64 {
    // SAFETY: getuid has no failure mode.
    let uid = unsafe { libc::getuid() }.to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0;
    for e in entries.flatten() {
        if !e
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next().map(str::to_string))
        };
        if field("Uid:").as_deref() == Some(uid.as_str()) {
            total += field("Threads:").and_then(|t| t.parse::<u64>().ok()).unwrap_or(1);
        }
    }
    total
}

/// Whether the kernel applies `RLIMIT_NPROC` to this process's user (not to root).
pub fn process_rlimit_applies() -> bool {
    !nix::unistd::getuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: &str) -> (tempfile::TempDir, Settings) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join(".keel")).unwrap();
        std::fs::create_dir_all(home.join(".keel")).unwrap();
        std::fs::write(work.join(".keel/settings.json"), json).unwrap();
        let s = Settings::load(Some(&home), &home.join(".keel"), &work, None).unwrap();
        (dir, s)
    }

    #[test]
    fn limits_come_from_settings_with_defaults() {
        let (_d, s) = settings("{}");
        let l = Limits::from_settings(&s).unwrap();
        assert_eq!(l.max_processes, DEFAULT_MAX_PROCESSES);
        assert_eq!(l.max_memory, machine_memory().map(|m| m / 2));
        let (_d, s) = settings(r#"{"sandbox": {"limits": {"maxProcesses": 20, "maxMemoryMiB": 100}}}"#);
        let l = Limits::from_settings(&s).unwrap();
        assert_eq!((l.max_processes, l.max_memory), (20, Some(100 << 20)));
        assert_eq!(l.memory_mib(), Some(100));
        assert_eq!(
            l.to_args(),
            ["--max-procs", "20", "--max-memory", &(100u64 << 20).to_string()]
        );
    }

    #[test]
    fn bad_limits_are_named() {
        for bad in [
            r#"{"sandbox": {"limits": {"maxProcesses": 2}}}"#,
            r#"{"sandbox": {"limits": {"maxProcesses": "many"}}}"#,
            r#"{"sandbox": {"limits": {"maxMemoryMiB": -1}}}"#,
        ] {
            let (_d, s) = settings(bad);
            let e = Limits::from_settings(&s).unwrap_err().to_string();
            assert!(e.contains("sandbox.limits."), "{e}");
        }
    }

    #[test]
    fn this_users_tasks_are_counted() {
        // This test process alone has at least one thread.
        assert!(user_tasks() >= 1);
    }
}
