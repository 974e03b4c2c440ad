//! The cgroups of one shell command. The helper moves itself, before it confines itself, into
//! `<keel's cgroup>/keel-<helper pid>` of each hierarchy it may write: the cgroup v2 one (so
//! keel can kill every process of the command with `cgroup.kill`, even once the helper is gone)
//! and, where the v2 hierarchy does not offer the `pids` and `memory` controllers (a hybrid
//! layout, where they are bound to v1 hierarchies), the v1 `pids` and `memory` ones. There the
//! command's limits are written (`pids.max`, `memory.max` or `memory.limit_in_bytes`), and keel
//! reads back after the command whether it hit them.
//!
//! keel and its helpers share the same parent cgroups, so both sides find the same directories
//! from the helper's pid.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::limits::Limits;

/// Where this process sits in the cgroup hierarchies it can see.
#[derive(Debug, Default)]
struct Bases {
    /// The cgroup v2 directory.
    unified: Option<PathBuf>,
    /// The v1 `pids` and `memory` directories.
    pids_v1: Option<PathBuf>,
    memory_v1: Option<PathBuf>,
}

fn bases() -> &'static Bases {
    static BASES: OnceLock<Bases> = OnceLock::new();
    BASES.get_or_init(|| {
        let (Ok(mountinfo), Ok(own)) = (
            std::fs::read_to_string("/proc/self/mountinfo"),
            std::fs::read_to_string("/proc/self/cgroup"),
        ) else {
            return Bases::default();
        };
        read_bases(&mountinfo, &own)
    })
}

/// The cgroup directories of this process, from `/proc/self/mountinfo` and `/proc/self/cgroup`.
fn read_bases(mountinfo: &str, own: &str) -> Bases {
    // Own cgroup per hierarchy: "0::/path" (v2) or "4:memory:/path" (v1, several controllers
    // may share one line: "3:cpu,cpuacct:/path").
    let own_path = |controller: Option<&str>| {
        own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
            let hit = match controller {
                None => ctrls.is_empty(),
                Some(c) => ctrls.split(',').any(|x| x == c),
            };
            hit.then(|| path.to_string())
        })
    };
    let mut bases = Bases::default();
    for line in mountinfo.lines() {
        // Fields: id parent dev root mountpoint options ... " - " fstype source superoptions.
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split_whitespace().collect();
        let right: Vec<&str> = right.split_whitespace().collect();
        let (Some(root), Some(mount), Some(fstype)) = (left.get(3), left.get(4), right.first()) else {
            continue;
        };
        let dir = |own: Option<String>| {
            let own = own?;
            // A mount of a cgroup other than the hierarchy's root (a container's) shows that
            // cgroup at its mount point.
            let rel = Path::new(&own).strip_prefix(root).ok()?.to_path_buf();
            Some(Path::new(mount).join(rel))
        };
        match *fstype {
            "cgroup2" if bases.unified.is_none() => bases.unified = dir(own_path(None)),
            "cgroup" => {
                let opts = right.get(2).copied().unwrap_or("");
                for (name, slot) in [("pids", &mut bases.pids_v1), ("memory", &mut bases.memory_v1)] {
                    if slot.is_none() && opts.split(',').any(|o| o == name) {
                        *slot = dir(own_path(Some(name)));
                    }
                }
            }
            _ => {}
        }
    }
    bases
}

fn leaf(base: &Option<PathBuf>, pid: libc::pid_t) -> Option<PathBuf> {
    base.as_ref().map(|b| b.join(format!("keel-{pid}")))
}

/// The cgroup (v2) directory a command's helper with pid `pid` creates for itself, when the
/// hierarchy is there: `<this process's cgroup>/keel-<pid>`.
pub fn cgroup_dir(pid: libc::pid_t) -> Option<PathBuf> {
    leaf(&bases().unified, pid)
}

/// Every cgroup directory of the command whose helper has pid `pid`: the v2 one first.
pub fn all_dirs(pid: libc::pid_t) -> Vec<PathBuf> {
    let b = bases();
    [leaf(&b.unified, pid), leaf(&b.pids_v1, pid), leaf(&b.memory_v1, pid)]
        .into_iter()
        .flatten()
        .collect()
}

/// What the helper's cgroups bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Joined {
    pub processes: bool,
    pub memory: bool,
}

/// Moves this process (the helper, before it confines itself) into cgroups of its own and
/// applies `limits` there. Best effort: without a writable hierarchy the subreaper alone
/// contains the command, and [`Joined`] says which limits are left to the caller.
pub fn join(limits: Option<&Limits>) -> Joined {
    let pid = std::process::id() as libc::pid_t;
    let b = bases();
    let mut joined = Joined::default();
    if let Some(dir) = leaf(&b.unified, pid)
        && create(&dir)
    {
        if let Some(l) = limits {
            joined.processes = write(&dir, "pids.max", l.max_processes);
            if let Some(m) = l.max_memory {
                joined.memory = write(&dir, "memory.max", m);
                if joined.memory {
                    // What passes the limit is not pushed to swap instead.
                    let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                }
            }
        }
        enter(&dir, pid);
    }
    let Some(l) = limits else { return joined };
    if !joined.processes
        && let Some(dir) = leaf(&b.pids_v1, pid)
        && create(&dir)
    {
        joined.processes = write(&dir, "pids.max", l.max_processes) && enter(&dir, pid);
    }
    if !joined.memory
        && let Some(m) = l.max_memory
        && let Some(dir) = leaf(&b.memory_v1, pid)
        && create(&dir)
    {
        joined.memory = write(&dir, "memory.limit_in_bytes", m) && enter(&dir, pid);
        // With swap accounting, memory and swap together stay at the same bound.
        let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), m.to_string());
    }
    joined
}

fn write(dir: &Path, file: &str, value: u64) -> bool {
    dir.join(file).exists() && std::fs::write(dir.join(file), value.to_string()).is_ok()
}

/// Creates the cgroup `dir`. A directory already there was left by an earlier helper that
/// had the same pid (its keel was killed before removing it; pids are reused): what still
/// runs in it is what that command left behind, so it is killed and the cgroup reused —
/// giving up would run this command with no cgroup at all.
fn create(dir: &Path) -> bool {
    match std::fs::create_dir(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            kill_members(dir);
            true
        }
        Err(_) => false,
    }
}

/// Moves `pid` into the cgroup `dir`; a cgroup it cannot enter is removed again.
fn enter(dir: &Path, pid: libc::pid_t) -> bool {
    if std::fs::write(dir.join("cgroup.procs"), pid.to_string()).is_ok() {
        return true;
    }
    let _ = std::fs::remove_dir(dir);
    false
}

/// Kills every process in the cgroup `dir`: `cgroup.kill` (v2, done when the write returns,
/// nested cgroups included), else a SIGKILL to each member (v1).
fn kill_members(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    for pid in members(dir) {
        // SAFETY: kill(2) on a pid read from the cgroup; a vanished pid only gives ESRCH.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

fn members(dir: &Path) -> Vec<libc::pid_t> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Whether no process is left in the cgroup `dir` (a missing one is empty).
fn is_empty(dir: &Path) -> bool {
    if !dir.exists() {
        return true;
    }
    match std::fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => counter(&events, "populated") == Some(0),
        Err(_) => members(dir).is_empty(),
    }
}

/// The value of `name` in a flat-keyed cgroup file (`name value` lines).
fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok())?
    })
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A limit the command ran with and how often it was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub limit: u64,
    pub count: u64,
}

/// What the command's cgroups say about its limits, read after it ended. `None`: no cgroup
/// held that limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `pids.max`, and how many times starting a process failed because of it.
    pub processes: Option<Hit>,
    /// The memory limit in bytes, and how many processes the kernel killed for it.
    pub memory: Option<Hit>,
}

/// Reads the limits and their counters from the cgroups `dirs`.
fn usage(dirs: &[PathBuf]) -> Usage {
    let mut usage = Usage::default();
    for dir in dirs {
        if usage.processes.is_none()
            && let Some(limit) = read_number(&dir.join("pids.max"))
        {
            let events = std::fs::read_to_string(dir.join("pids.events")).unwrap_or_default();
            usage.processes = Some(Hit {
                limit,
                count: counter(&events, "max").unwrap_or(0),
            });
        }
        if usage.memory.is_none() {
            // v2, then v1 (whose counter is in `memory.oom_control`).
            let found = read_number(&dir.join("memory.max"))
                .map(|l| (l, dir.join("memory.events")))
                .or_else(|| {
                    read_number(&dir.join("memory.limit_in_bytes")).map(|l| (l, dir.join("memory.oom_control")))
                });
            if let Some((limit, events)) = found {
                let events = std::fs::read_to_string(events).unwrap_or_default();
                usage.memory = Some(Hit {
                    limit,
                    count: counter(&events, "oom_kill").unwrap_or(0),
                });
            }
        }
    }
    usage
}

/// The end of a command's cgroups, from keel after the command ended or was stopped: what is
/// left in them is killed, their counters read and the cgroups removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ended {
    pub usage: Usage,
    /// Every cgroup of the command was seen empty (or there was none): no process of it runs.
    pub emptied: bool,
}

/// Kills what is left in the cgroups of helper `pid`, waits up to `wait` for them to be
/// empty, reads their counters and removes them (later, in the background, when the kernel
/// is slow to tear processes down).
pub fn end(pid: libc::pid_t, wait: Duration) -> Ended {
    end_at(&all_dirs(pid), wait)
}

/// [`end`] for the cgroup directories `dirs` (a record of them kept by another keel).
pub fn end_at(dirs: &[PathBuf], wait: Duration) -> Ended {
    let dirs: Vec<PathBuf> = dirs.iter().filter(|d| d.exists()).cloned().collect();
    let started = Instant::now();
    let mut emptied;
    loop {
        for d in &dirs {
            kill_members(d);
        }
        emptied = dirs.iter().all(|d| is_empty(d));
        if emptied || started.elapsed() >= wait {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let usage = usage(&dirs);
    for dir in dirs {
        remove(dir);
    }
    Ended { usage, emptied }
}

/// Kills whatever is left in the cgroups of the command whose helper had pid `pid`, and
/// removes them (from keel, after the command ended or was stopped).
pub fn remove_cgroup(pid: libc::pid_t) {
    let _ = end(pid, Duration::ZERO);
}

/// Removes one cgroup, retrying while its killed processes are torn down.
fn remove(dir: PathBuf) {
    for _ in 0..50 {
        if remove_tree(&dir).is_ok() {
            return;
        }
        kill_members(&dir);
        std::thread::sleep(Duration::from_millis(2));
    }
    // Killed processes leave the cgroup only once the kernel has torn them down, which a loaded
    // machine can delay: keep trying in the background rather than hold up the caller or leak
    // the cgroup.
    let spawned = std::thread::Builder::new()
        .name("keel-cgroup-reaper".into())
        .spawn(move || {
            for _ in 0..500 {
                std::thread::sleep(Duration::from_millis(20));
                kill_members(&dir);
                if remove_tree(&dir).is_ok() {
                    return;
                }
            }
            crate::debug::log(format!("could not remove the cgroup {}", dir.display()));
        });
    if let Err(e) = spawned {
        crate::debug::log(format!("cannot start removing a cgroup later: {e}"));
    }
}

/// Removes a cgroup directory and the cgroups below it (their files go with them).
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&e.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

/// Which cgroup bounds each limit on this machine (for `keel doctor`): made and removed again
/// under a probe name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Support {
    /// "cgroup v2" or "cgroup v1", where a `pids` controller is available to keel.
    pub processes: Option<&'static str>,
    pub memory: Option<&'static str>,
}

pub fn support() -> Support {
    let name = format!("keel-probe-{}", std::process::id());
    let b = bases();
    let mut s = Support::default();
    let probe = |base: &Option<PathBuf>, files: &[&str]| {
        let dir = base.as_ref()?.join(&name);
        std::fs::create_dir(&dir).ok()?;
        let found: Vec<bool> = files.iter().map(|f| dir.join(f).exists()).collect();
        let _ = std::fs::remove_dir(&dir);
        Some(found)
    };
    if let Some(found) = probe(&b.unified, &["pids.max", "memory.max"]) {
        s.processes = found[0].then_some("cgroup v2");
        s.memory = found[1].then_some("cgroup v2");
    }
    if s.processes.is_none() && probe(&b.pids_v1, &["pids.max"]).is_some_and(|f| f[0]) {
        s.processes = Some("cgroup v1");
    }
    if s.memory.is_none() && probe(&b.memory_v1, &["memory.limit_in_bytes"]).is_some_and(|f| f[0]) {
        s.memory = Some("cgroup v1");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchies_are_found_in_pure_and_hybrid_layouts() {
        let hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
            39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let own = "8:pids:/\n4:memory:/box/one\n0::/\n";
        let b = read_bases(hybrid, own);
        assert_eq!(b.unified, Some(PathBuf::from("/sys/fs/cgroup/unified/")));
        assert_eq!(b.pids_v1, Some(PathBuf::from("/sys/fs/cgroup/pids/")));
        assert_eq!(b.memory_v1, Some(PathBuf::from("/sys/fs/cgroup/memory/box/one")));
        // A container's mount of its own cgroup shows it at the mount point.
        let pure = "30 22 0:26 /user.slice/u.scope /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let b = read_bases(pure, "0::/user.slice/u.scope/sub\n");
        assert_eq!(b.unified, Some(PathBuf::from("/sys/fs/cgroup/sub")));
        assert_eq!((b.pids_v1, b.memory_v1), (None, None));
    }

    #[test]
    fn counters_are_read_by_name() {
        let events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n";
        assert_eq!(counter(events, "max"), Some(12));
        assert_eq!(counter(events, "oom_kill"), Some(1));
        assert_eq!(counter(events, "oom_group_kill"), None);
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(counter(v1, "oom_kill"), Some(3));
    }

    /// A cgroup left by a killed keel under the pid a new helper now has: its leftovers die and
    /// the new command still gets the cgroup (before, the helper silently ran without one).
    #[test]
    fn a_stale_cgroup_of_a_reused_pid_is_emptied_and_joined() {
        let mut leftover = std::process::Command::new("sleep").arg("301").spawn().unwrap();
        let mut newcomer = std::process::Command::new("sleep").arg("302").spawn().unwrap();
        let Some(dir) = cgroup_dir(newcomer.id() as libc::pid_t) else {
            let _ = (leftover.kill(), newcomer.kill(), leftover.wait(), newcomer.wait());
            crate::console::err_line!("skipped: no cgroup v2 hierarchy here");
            return;
        };
        let stale = std::fs::create_dir(&dir)
            .and_then(|()| std::fs::write(dir.join("cgroup.procs"), leftover.id().to_string()));
        if let Err(e) = stale {
            let _ = std::fs::remove_dir(&dir);
            let _ = (leftover.kill(), newcomer.kill(), leftover.wait(), newcomer.wait());
            crate::console::err_line!("skipped: the cgroup v2 hierarchy is not writable here ({e})");
            return;
        }
        assert!(create(&dir) && enter(&dir, newcomer.id() as libc::pid_t));
        let status = leftover.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL),
            "the leftover was killed"
        );
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
        assert_eq!(
            procs.trim(),
            newcomer.id().to_string(),
            "only the newcomer is in the cgroup"
        );
        assert!(newcomer.try_wait().unwrap().is_none(), "the newcomer still runs");
        newcomer.kill().unwrap();
        newcomer.wait().unwrap();
        remove_cgroup(newcomer.id() as libc::pid_t);
    }
}
