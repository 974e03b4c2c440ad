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

pub use super::cgroup::{cgroup_dir, remove_cgroup};
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
///
/// `guard_helper`: the child gets a Landlock domain of its own, nested in this process's, that
/// only scopes signals, so nothing the command runs can kill this process and leave its
/// descendants to run on outside the subtree (keel relies on that before it looks at what a
/// command created, see `quarantine`).
pub fn run(program: &str, args: &[String], cap: u64, guard_helper: bool) -> ExitCode {
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
        (Ok(out), Ok(err)) => {
            let mut cmd = std::process::Command::new(program);
            cmd.args(args).stdout(out).stderr(err);
            if guard_helper {
                // SAFETY: this process has a single thread, and the hook only makes system
                // calls on the child itself.
                unsafe {
                    cmd.pre_exec(scope_signals);
                }
            }
            cmd.spawn()
        }
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

/// Kills and reaps whatever is left below this process, until nothing is. Being a subreaper,
/// it has no descendants at all once it has no children, which `waitpid` tells without reading
/// `/proc`; the orphans of killed processes become its children, so it waits for each kill to
/// land and looks again.
fn kill_leftovers() {
    let me = std::process::id() as libc::pid_t;
    loop {
        while reap_any() {}
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer; ECHILD means no children remain.
        if unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } < 0 {
            return;
        }
        for pid in descendants(me) {
            // SAFETY: kill(2) on a pid read from /proc; a vanished pid only gives ESRCH.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        // SAFETY: as above; blocks until a killed child is gone.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Puts the calling process (the command, between fork and exec) in a Landlock domain of its
/// own that scopes signals: it can signal itself and what it starts, not the helper.
fn scope_signals() -> std::io::Result<()> {
    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
        handled_access_net: u64,
        scoped: u64,
    }
    #[repr(C, packed)]
    struct PathBeneathAttr {
        allowed_access: u64,
        parent_fd: i32,
    }
    const LANDLOCK_SCOPE_SIGNAL: u64 = 1 << 1;
    const LANDLOCK_ACCESS_FS_REFER: u64 = 1 << 13;
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    // Every domain denies moving and linking files between directories (REFER) unless it
    // handles and grants it: this one grants it everywhere, leaving the decision to the
    // confinement's own domain, or renames across directories would fail with EXDEV.
    let attr = RulesetAttr {
        handled_access_fs: LANDLOCK_ACCESS_FS_REFER,
        handled_access_net: 0,
        scoped: LANDLOCK_SCOPE_SIGNAL,
    };
    // SAFETY: prctl with constant arguments; landlock_create_ruleset and landlock_add_rule read
    // attributes of the sizes their types have; open takes a C string literal; restrict_self
    // and close take the descriptors returned.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let root = libc::open(c"/".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if root < 0 {
            let e = std::io::Error::last_os_error();
            libc::close(fd as libc::c_int);
            return Err(e);
        }
        let rule = PathBeneathAttr {
            allowed_access: LANDLOCK_ACCESS_FS_REFER,
            parent_fd: root,
        };
        let added = libc::syscall(
            libc::SYS_landlock_add_rule,
            fd,
            LANDLOCK_RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0,
        );
        libc::close(root);
        if added != 0 {
            let e = std::io::Error::last_os_error();
            libc::close(fd as libc::c_int);
            return Err(e);
        }
        let r = libc::syscall(libc::SYS_landlock_restrict_self, fd, 0);
        libc::close(fd as libc::c_int);
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
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
}
