//! Committed contents through one `git cat-file --batch` kept running for a repository, so a
//! file's content at `HEAD` costs a line and an answer instead of a process (about 2.5 ms of
//! CPU each). The answers are those of [`super::committed`]: the object as stored, no filter,
//! no textconv, no lazy fetch.
//!
//! The process is started at the first question and again after `HEAD` moved (a fresh process
//! has nothing of the old `HEAD` in mind); every answer must arrive within the git timeout, or
//! the process is killed and the next question starts another. Where `HEAD` cannot be stamped,
//! or a path cannot be written on one line, each question runs its own `git cat-file blob`.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use super::runner::{GIT_TIMEOUT, plain};

/// The session's reader of committed contents for one working directory.
#[derive(Debug)]
pub struct Blobs {
    cwd: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    batch: Option<Batch>,
    /// `HEAD` when `batch` was started.
    stamp: Option<Vec<u8>>,
    /// git could not be started this way: every question runs its own process.
    unavailable: bool,
}

#[derive(Debug)]
struct Batch {
    child: Child,
    input: ChildStdin,
    output: ChildStdout,
    /// Bytes read past the last answer.
    pending: Vec<u8>,
}

/// Longest answer line (`<object id> blob <size>`) taken as one.
const MAX_HEADER: usize = 512;
/// Longest path asked through the batch (a longer one gets a call of its own, so the question
/// always fits the pipe and its write cannot block).
const MAX_PATH: usize = 4096;
/// An unwanted object larger than this is not read to its end: the process is replaced.
const MAX_DISCARD: usize = 1 << 20;

/// Why a question got no answer from the batch.
enum Failure {
    /// Out of step, gone or too slow: ask again elsewhere.
    Broken,
    /// The answer is "none" (an object over the cap), but the process is left mid-object.
    Abandoned,
}

impl Blobs {
    pub fn new(cwd: &Path) -> Blobs {
        Blobs {
            cwd: cwd.to_path_buf(),
            state: Mutex::new(State::default()),
        }
    }

    /// The committed content of `rel` (relative to the working directory) at `HEAD`; `None`
    /// outside a repository, for a file `HEAD` does not have, one over `cap` bytes, or any
    /// failure — as [`super::committed`].
    pub fn committed(&self, rel: &str, cap: usize) -> Option<Vec<u8>> {
        if rel.contains(['\n', '\r', '\0']) || rel.len() > MAX_PATH {
            return super::committed(&self.cwd, rel, cap);
        }
        let stamp = super::head_stamp(&self.cwd);
        {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if !s.unavailable && stamp.is_some() {
                if s.stamp != stamp {
                    s.batch = None;
                    s.stamp = stamp;
                }
                // A process that failed (killed by a command, cut off) is replaced and asked
                // once more; only then does the question get a call of its own.
                for _ in 0..2 {
                    if s.batch.is_none() {
                        s.batch = Batch::start(&self.cwd);
                        if s.batch.is_none() {
                            s.unavailable = true;
                            break;
                        }
                    }
                    let Some(batch) = s.batch.as_mut() else { break };
                    match batch.ask(rel, cap, Instant::now() + GIT_TIMEOUT) {
                        Ok(answer) => return answer,
                        Err(Failure::Abandoned) => {
                            s.batch = None;
                            return None;
                        }
                        Err(Failure::Broken) => s.batch = None,
                    }
                }
            }
        }
        super::committed(&self.cwd, rel, cap)
    }
}

impl Batch {
    fn start(cwd: &Path) -> Option<Batch> {
        let mut cmd = plain(cwd);
        cmd.args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().ok()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        };
        Some(Batch {
            child,
            input,
            output,
            pending: Vec::new(),
        })
    }

    /// One question. `Ok(None)`: git has no such blob (or it is over `cap`); `Err`: the
    /// process cannot be trusted to answer the next question in step.
    fn ask(&mut self, rel: &str, cap: usize, deadline: Instant) -> Result<Option<Vec<u8>>, Failure> {
        self.input
            .write_all(format!("HEAD:./{rel}\n").as_bytes())
            .and_then(|()| self.input.flush())
            .map_err(|_| Failure::Broken)?;
        let header = self.line(deadline).map_err(|()| Failure::Broken)?;
        let header = std::str::from_utf8(&header).map_err(|_| Failure::Broken)?;
        // `<name> missing`, `<name> ambiguous`: an answer without content (the name is the
        // question, whatever spaces the path holds; an object's line ends with its size).
        if header.ends_with(" missing") || header.ends_with(" ambiguous") {
            return Ok(None);
        }
        let mut parts = header.split(' ');
        let (Some(_id), Some(kind), Some(size), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(Failure::Broken);
        };
        let size: usize = size.parse().map_err(|_| Failure::Broken)?;
        // The content and its closing line end are read whole even when not wanted, so the
        // next answer starts where it should; a large unwanted one is left with its process.
        let keep = kind == "blob" && size <= cap;
        if !keep && size > MAX_DISCARD {
            return Err(Failure::Abandoned);
        }
        let length = size.checked_add(1).ok_or(Failure::Broken)?;
        let mut body = self.exactly(length, keep, deadline).map_err(|()| Failure::Broken)?;
        if !keep {
            return Ok(None);
        }
        if body.pop() != Some(b'\n') {
            return Err(Failure::Broken);
        }
        Ok(Some(body))
    }

    /// The next line of output, without its end.
    fn line(&mut self, deadline: Instant) -> Result<Vec<u8>, ()> {
        loop {
            if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.pending.drain(..=i).collect();
                line.pop();
                return Ok(line);
            }
            if self.pending.len() > MAX_HEADER {
                return Err(());
            }
            self.fill(deadline)?;
        }
    }

    /// The next `n` bytes of output (kept only when `keep`).
    fn exactly(&mut self, n: usize, keep: bool, deadline: Instant) -> Result<Vec<u8>, ()> {
        let mut out = Vec::with_capacity(if keep { n } else { 0 });
        let mut left = n;
        while left > 0 {
            if self.pending.is_empty() {
                self.fill(deadline)?;
            }
            let take = left.min(self.pending.len());
            if keep {
                out.extend_from_slice(&self.pending[..take]);
            }
            self.pending.drain(..take);
            left -= take;
        }
        Ok(out)
    }

    /// Reads what git has written, waiting at most until `deadline`.
    fn fill(&mut self, deadline: Instant) -> Result<(), ()> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fd = libc::pollfd {
                fd: self.output.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
            // SAFETY: one valid pollfd for the duration of the call.
            let ready = unsafe { libc::poll(&mut fd, 1, ms) };
            if ready > 0 {
                break;
            }
            // A signal (a child of keel's ending) only interrupts the wait.
            let interrupted = ready < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
            if !interrupted || left.is_zero() {
                return Err(());
            }
        }
        let mut buf = [0u8; 64 * 1024];
        match self.output.read(&mut buf) {
            Ok(0) | Err(_) => Err(()),
            Ok(n) => {
                self.pending.extend_from_slice(&buf[..n]);
                Ok(())
            }
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{committed_repo, git};
    use super::*;

    /// The batch answers as the one-off call does: contents, a missing file, one over the cap
    /// (and the answer after it still in step), a path that cannot be one line, and the new
    /// content after a commit moved `HEAD`.
    #[test]
    fn answers_as_the_one_off_call_does() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let (big, huge) = ("x".repeat(10_000), vec![b'h'; 3 << 20]);
        committed_repo(
            dir,
            &[
                ("src/a.rs", b"fn a() {}\n"),
                ("big.txt", big.as_bytes()),
                ("b.txt", b""),
                ("a blob 7", b"spaced\n"),
                ("huge.bin", &huge),
            ],
        );
        let blobs = Blobs::new(dir);
        for rel in [
            "src/a.rs", "b.txt", "nope.txt", "big.txt", "q 5", "a blob 7", "src", "a\0b", "src/a.rs",
        ] {
            assert_eq!(
                blobs.committed(rel, 1000),
                super::super::committed(dir, rel, 1000),
                "{rel}"
            );
        }
        assert_eq!(blobs.committed("src/a.rs", 1000).as_deref(), Some(&b"fn a() {}\n"[..]));
        assert_eq!(blobs.committed("big.txt", 20_000).map(|b| b.len()), Some(10_000));
        assert_eq!(blobs.committed("a\nb", 1000), None);
        // An unwanted object too large to read past is left with its process; the next
        // question gets a new one, in step.
        assert_eq!(blobs.committed("huge.bin", 1000), None);
        assert_eq!(blobs.committed("src/a.rs", 1000).as_deref(), Some(&b"fn a() {}\n"[..]));
        assert_eq!(blobs.committed("huge.bin", 4 << 20).map(|b| b.len()), Some(3 << 20));
        assert_eq!(blobs.committed("a blob 7", 1000).as_deref(), Some(&b"spaced\n"[..]));
        std::fs::write(dir.join("src/a.rs"), "fn a() { 2 }\n").unwrap();
        assert_eq!(
            blobs.committed("src/a.rs", 1000).as_deref(),
            Some(&b"fn a() {}\n"[..]),
            "the working tree is not HEAD"
        );
        git(dir, &["commit", "-q", "-am", "two"]);
        assert_eq!(
            blobs.committed("src/a.rs", 1000).as_deref(),
            Some(&b"fn a() { 2 }\n"[..])
        );
        // From a subdirectory, paths are relative to it.
        let sub = Blobs::new(&dir.join("src"));
        assert_eq!(sub.committed("a.rs", 1000).as_deref(), Some(&b"fn a() { 2 }\n"[..]));
    }

    /// A batch whose process died is replaced by the next question.
    #[test]
    fn a_dead_process_is_replaced() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        committed_repo(dir, &[("a.txt", b"a\n")]);
        let blobs = Blobs::new(dir);
        assert_eq!(blobs.committed("a.txt", 100).as_deref(), Some(&b"a\n"[..]));
        {
            let mut s = blobs.state.lock().unwrap();
            let batch = s.batch.as_mut().expect("a running batch");
            batch.child.kill().unwrap();
            batch.child.wait().unwrap();
        }
        // The question finds the process dead and is asked again of a new one.
        assert_eq!(blobs.committed("a.txt", 100).as_deref(), Some(&b"a\n"[..]));
        assert!(blobs.state.lock().unwrap().batch.is_some(), "a new batch answered");
    }
}
