//! One writer per session. A process that writes a session (its transcript, its checkpoints)
//! holds an exclusive `flock` on `<session dir>/lock`; the kernel releases it when the process
//! ends, however it ends, so a `kill -9` never leaves a stale lock. The file also names the
//! holder's process id, for the message another process gives.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// How long a second process waits for a session before giving up on it
/// (`KEEL_SESSION_LOCK_WAIT_MS`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(2);
const WAIT_VAR: &str = "KEEL_SESSION_LOCK_WAIT_MS";
const POLL: Duration = Duration::from_millis(25);

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("session {id} is in use by another keel process{}", holder_text(*.holder))]
    Busy { id: String, holder: Option<u32> },
    #[error("cannot lock session {id} ({path}): {source}")]
    Io {
        id: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn holder_text(holder: Option<u32>) -> String {
    holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
}

/// The held lock of one session; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct SessionLock {
    _lock: Flock<File>,
}

/// The wait set in the environment; a value that is not a whole number of milliseconds is an
/// error, never a silent default.
pub fn wait_from_env() -> Result<Duration, String> {
    match std::env::var_os(WAIT_VAR) {
        None => Ok(DEFAULT_WAIT),
        Some(raw) => raw
            .to_string_lossy()
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| {
                format!(
                    "{WAIT_VAR} must be a whole number of milliseconds, got `{}`",
                    raw.to_string_lossy()
                )
            }),
    }
}

/// Takes the lock of the session `id` whose directory is `session_dir` (made if missing),
/// waiting up to `wait` for another process to let go of it.
pub fn acquire(session_dir: &Path, id: &str, wait: Duration) -> Result<SessionLock, LockError> {
    let path = session_dir.join("lock");
    let io = |source| LockError::Io {
        id: id.to_string(),
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(session_dir).map_err(io)?;
    let deadline = Instant::now() + wait;
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io)?;
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut lock) => {
                // Who holds it, for the other process's message (best effort).
                let _ = lock
                    .set_len(0)
                    .and_then(|_| lock.seek(SeekFrom::Start(0)))
                    .and_then(|_| writeln!(lock, "{}", std::process::id()));
                return Ok(SessionLock { _lock: lock });
            }
            Err((back, Errno::EWOULDBLOCK)) => {
                file = back;
                if Instant::now() >= deadline {
                    return Err(LockError::Busy {
                        id: id.to_string(),
                        holder: holder(&mut file),
                    });
                }
                std::thread::sleep(POLL);
            }
            Err((_, e)) => return Err(io(e.into())),
        }
    }
}

fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_then_is_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire(dir.path(), "s", Duration::ZERO).unwrap();
        let started = Instant::now();
        let err = acquire(dir.path(), "s", Duration::from_millis(100)).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(100), "it waited");
        let me = std::process::id();
        assert!(
            matches!(&err, LockError::Busy { holder: Some(pid), .. } if *pid == me),
            "{err}"
        );
        assert!(err.to_string().contains(&format!("(pid {me})")), "{err}");
        drop(first);
        acquire(dir.path(), "s", Duration::ZERO).expect("free once the holder let go");
    }
}
