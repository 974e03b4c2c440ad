//! Containment of one shell command, run by the helper around the shell it starts: the helper
//! is a child subreaper, so every descendant — `setsid`, double-forked — stays in its tree and
//! is killed when the shell ends; and it copies the command's output into keel's output file
//! with a size cap, keeping the head and the tail with a note, so `cat /dev/zero` cannot fill
//! the disk.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use crate::console::err_line;

/// The default cap on one command's output file.
pub const DEFAULT_OUTPUT_CAP: u64 = 64 * 1024 * 1024;

/// The `shellOutputMaxBytes` setting: a whole number of bytes, at least 1 MiB.
pub fn output_cap(settings: &crate::config::settings::Settings) -> Result<u64, crate::config::settings::SettingsError> {
    let Some((value, layer)) = settings.nested(&["shellOutputMaxBytes"]) else {
        return Ok(DEFAULT_OUTPUT_CAP);
    };
    match value.as_u64() {
        Some(n) if n >= 1024 * 1024 => Ok(n),
        _ => Err(crate::config::settings::SettingsError::Invalid {
            path: layer.label(),
            key: "shellOutputMaxBytes".into(),
            problem: format!("must be a whole number of bytes, at least 1048576, found {value}"),
        }),
    }
}

/// Output kept from the end of a capped output.
fn tail_size(cap: u64) -> usize {
    (cap / 4).min(1024 * 1024) as usize
}

/// Writes output to `out` up to the head budget, then keeps only a tail in memory.
struct CappedWriter<W: Write> {
    out: W,
    head_left: u64,
    tail: VecDeque<u8>,
    tail_max: usize,
    dropped: u64,
    cap: u64,
}

impl<W: Write> CappedWriter<W> {
    fn new(out: W, cap: u64) -> Self {
        let tail_max = tail_size(cap);
        CappedWriter {
            out,
            head_left: cap.saturating_sub(tail_max as u64),
            tail: VecDeque::new(),
            tail_max,
            dropped: 0,
            cap,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        if self.head_left > 0 {
            let n = (data.len() as u64).min(self.head_left) as usize;
            // A failed write (disk full) loses output, never the command.
            let _ = self.out.write_all(&data[..n]);
            self.head_left -= n as u64;
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        self.tail.extend(data);
        if self.tail.len() > self.tail_max {
            let extra = self.tail.len() - self.tail_max;
            self.tail.drain(..extra);
            self.dropped += extra as u64;
        }
    }

    fn finish(mut self) {
        if self.dropped > 0 {
            let note = format!(
                "\n\n... [keel: {} bytes of output were dropped here: the output passed the {} MiB cap for one command \
                 (setting shellOutputMaxBytes); the first and the last part are kept] ...\n\n",
                self.dropped,
                self.cap / (1024 * 1024)
            );
            let _ = self.out.write_all(note.as_bytes());
        }
        let (a, b) = self.tail.as_slices();
        let _ = self.out.write_all(a);
        let _ = self.out.write_all(b);
        let _ = self.out.flush();
    }
}

/// Runs `program args` as a child whose output passes through a pipe into this process's
/// stdout (capped); reaps every process that ends up in this subtree; when the child ends,
/// kills what it left behind. Returns the child's status.
pub fn run(program: &str, args: &[String], cap: u64) -> ExitCode {
    // SAFETY: prctl with constant arguments on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return fail(&format!("cannot create a pipe: {e}")),
    };
    let writer: OwnedFd = writer.into();
    let child = match (writer.try_clone(), writer.try_clone()) {
        (Ok(out), Ok(err)) => std::process::Command::new(program)
            .args(args)
            .stdout(out)
            .stderr(err)
            .spawn(),
        (Err(e), _) | (_, Err(e)) => return fail(&format!("cannot duplicate the pipe: {e}")),
    };
    drop(writer);
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            err_line!("keel sandbox: cannot run {program}: {e}");
            return ExitCode::from(127);
        }
    };
    let shell = child.id() as libc::pid_t;
    // Readable when the shell exits, so one poll waits for output and for the end alike.
    // SAFETY: pidfd_open on our own child's pid; a negative result means no pidfd support.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, shell, 0) } as libc::c_int;
    let stdout = std::io::stdout().lock();
    let mut out = CappedWriter::new(stdout, cap);
    let mut reader = reader;
    let mut status: Option<i32> = None;
    let mut buf = vec![0u8; 64 * 1024];
    let mut open = true;
    while open || status.is_none() {
        if !open {
            // Output is done; wait for the shell itself.
            let mut st = 0;
            loop {
                // SAFETY: waitpid on our child with a valid status pointer.
                let r = unsafe { libc::waitpid(shell, &mut st, 0) };
                let interrupted = r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR);
                if !interrupted {
                    break;
                }
            }
            status = Some(st);
            break;
        }
        let mut fds = [
            libc::pollfd {
                fd: reader.as_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if status.is_none() { pidfd } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let timeout = if pidfd >= 0 { -1 } else { 50 };
        // SAFETY: two valid pollfds for the duration of the call (a negative fd is ignored).
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if ready > 0 && fds[0].revents != 0 {
            match reader.read(&mut buf) {
                Ok(0) => open = false,
                Ok(n) => out.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => open = false,
            }
        }
        if status.is_none() && (pidfd < 0 || fds[1].revents != 0) {
            reap(shell, &mut status);
            if status.is_some() && open {
                // The shell is gone: what it left behind goes with it, which also closes the
                // pipe.
                kill_leftovers();
            }
        }
    }
    kill_leftovers();
    out.finish();
    exit_like(status.unwrap_or(1))
}

/// Kills and reaps whatever is left below this process. Being a subreaper, it has no
/// descendants at all once it has no children, which one `waitpid` tells without reading
/// `/proc`.
fn kill_leftovers() {
    while reap_any() {}
    let mut st = 0;
    // SAFETY: waitpid with a valid status pointer; ECHILD means no children remain.
    let none = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } < 0;
    if !none {
        kill_descendants(std::process::id() as libc::pid_t, true);
        while reap_any() {}
    }
}

/// Reaps every exited child; records the shell's status.
fn reap(shell: libc::pid_t, status: &mut Option<i32>) {
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == shell {
            *status = Some(st);
        }
    }
}

fn reap_any() -> bool {
    let mut st = 0;
    // SAFETY: waitpid with a valid status pointer.
    unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) > 0 }
}

/// Ends this process like the shell ended: the same exit code, or the same signal.
fn exit_like(st: i32) -> ExitCode {
    if libc::WIFEXITED(st) {
        return ExitCode::from(libc::WEXITSTATUS(st) as u8);
    }
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        let _ = std::io::stdout().flush();
        // SAFETY: restoring the default action and raising the signal on this process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return ExitCode::from((128 + sig) as u8);
    }
    ExitCode::from(1)
}

fn fail(msg: &str) -> ExitCode {
    err_line!("keel sandbox: {msg}; the command was not run");
    ExitCode::from(super::helper::SETUP_FAILED)
}

/// The descendants of `root` (not `root` itself), from `/proc`.
pub fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut children: HashMap<libc::pid_t, Vec<libc::pid_t>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The name may hold spaces and parentheses: the fields start after the last ')'.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(p) = queue.pop() {
        if let Some(kids) = children.get(&p) {
            for &k in kids {
                out.push(k);
                queue.push(k);
            }
        }
    }
    out
}

/// SIGKILLs every descendant of `root`, again while new ones appear (a process may fork
/// while the tree is read). `reap`: collect exited children too (only where this process
/// owns every child it has, as the helper does).
pub fn kill_descendants(root: libc::pid_t, reap: bool) {
    for _ in 0..20 {
        let found = descendants(root);
        if found.is_empty() {
            return;
        }
        for pid in found {
            // SAFETY: kill(2) on a pid read from /proc; a vanished pid only gives ESRCH.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        if reap {
            while reap_any() {}
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Execs `program` in place of this process (no containment loop).
pub fn exec(program: &str, args: &[String]) -> ExitCode {
    let err = std::process::Command::new(program).args(args).exec();
    err_line!("keel sandbox: cannot run {program}: {err}");
    ExitCode::from(127)
}

/// The cgroup (v2) directory a command's helper with pid `pid` creates for itself, when the
/// hierarchy is there and writable: `<this process's cgroup>/keel-<pid>`. keel and its helpers
/// share the same parent cgroup.
pub fn cgroup_dir(pid: libc::pid_t) -> Option<std::path::PathBuf> {
    use std::sync::OnceLock;
    static BASE: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    let base = BASE.get_or_init(|| {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        // Fields: ... mount point (5th) ... " - " fstype ...
        let mount = mountinfo.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(str::to_string))?
        })?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?;
        Some(std::path::Path::new(&mount).join(rel.trim_start_matches('/')))
    });
    base.as_ref().map(|b| b.join(format!("keel-{pid}")))
}

/// Moves this process (the helper, before it confines itself) into a cgroup of its own, so
/// keel can kill every process of the command even if the helper itself is gone. Best effort:
/// without a writable cgroup v2 hierarchy the subreaper alone contains the command.
pub fn join_cgroup() {
    let pid = std::process::id() as libc::pid_t;
    if let Some(dir) = cgroup_dir(pid) {
        join(&dir, pid);
    }
}

/// Moves `pid` into the cgroup `dir`, creating it. A directory already there was left by an
/// earlier helper that had the same pid (its keel was killed before removing it; pids are
/// reused): what still runs in it is what that command left behind, so it is killed and the
/// cgroup reused — giving up would run this command with no cgroup at all.
fn join(dir: &std::path::Path, pid: libc::pid_t) -> bool {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        // The kill is done when the write returns; only then does this process join.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let _ = std::fs::write(dir.join("cgroup.kill"), "1");
        }
        Err(_) => return false,
    }
    if std::fs::write(dir.join("cgroup.procs"), pid.to_string()).is_err() {
        let _ = std::fs::remove_dir(dir);
        return false;
    }
    true
}

/// Kills whatever is left in the cgroup of the command whose helper had pid `pid`, and
/// removes the cgroup (from keel, after the command ended or was stopped).
pub fn remove_cgroup(pid: libc::pid_t) {
    let Some(dir) = cgroup_dir(pid) else { return };
    if !dir.exists() {
        return;
    }
    // cgroup.kill takes nested cgroups too (a keel run inside the command).
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    for _ in 0..50 {
        if remove_cgroup_tree(&dir).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // Killed processes leave the cgroup only once the kernel has torn them down, which a loaded
    // machine can delay: keep trying in the background rather than hold up the caller or leak
    // the cgroup.
    let spawned = std::thread::Builder::new()
        .name("keel-cgroup-reaper".into())
        .spawn(move || {
            for _ in 0..500 {
                std::thread::sleep(std::time::Duration::from_millis(20));
                if remove_cgroup_tree(&dir).is_ok() {
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
fn remove_cgroup_tree(dir: &std::path::Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_cgroup_tree(&e.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_output_keeps_head_and_tail_with_a_note() {
        let mut buf = Vec::new();
        {
            let mut w = CappedWriter::new(&mut buf, 4 * 1024 * 1024);
            w.push(b"HEAD\n");
            for _ in 0..10_000 {
                w.push(&[b'x'; 1024]);
            }
            w.push(b"\nTAIL\n");
            w.finish();
        }
        let text = String::from_utf8_lossy(&buf);
        assert!(text.starts_with("HEAD\n") && text.ends_with("\nTAIL\n"));
        assert!(text.contains("bytes of output were dropped"));
        assert!(buf.len() <= 4 * 1024 * 1024 + 400, "{}", buf.len());
        let mut small = Vec::new();
        let mut w = CappedWriter::new(&mut small, 4 * 1024 * 1024);
        w.push(b"all of it");
        w.finish();
        assert_eq!(small, b"all of it");
    }

    /// A cgroup left by a killed keel under the pid a new helper now has: its leftovers die and
    /// the new command still gets the cgroup (before, the helper silently ran without one).
    #[test]
    fn a_stale_cgroup_of_a_reused_pid_is_emptied_and_joined() {
        let mut leftover = std::process::Command::new("sleep").arg("301").spawn().unwrap();
        let mut newcomer = std::process::Command::new("sleep").arg("302").spawn().unwrap();
        let Some(dir) = cgroup_dir(newcomer.id() as libc::pid_t) else {
            let _ = (leftover.kill(), newcomer.kill(), leftover.wait(), newcomer.wait());
            err_line!("skipped: no cgroup v2 hierarchy here");
            return;
        };
        let stale = std::fs::create_dir(&dir)
            .and_then(|()| std::fs::write(dir.join("cgroup.procs"), leftover.id().to_string()));
        if let Err(e) = stale {
            let _ = std::fs::remove_dir(&dir);
            let _ = (leftover.kill(), newcomer.kill(), leftover.wait(), newcomer.wait());
            err_line!("skipped: the cgroup v2 hierarchy is not writable here ({e})");
            return;
        }
        assert!(join(&dir, newcomer.id() as libc::pid_t));
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
