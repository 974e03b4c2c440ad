//! The prompt's stdin part. Many programs start keel with a pipe on stdin that they never write
//! to or close (Node's default `spawn`, Python's `Popen(stdin=PIPE)`, CI runners); reading it to
//! its end would wait forever. So when the prompt is also given as an argument, keel waits a
//! short while for the first byte: nothing by then means nothing is coming, and keel goes on
//! without stdin and says so. Once anything arrives (data, or the end of the input) it reads to
//! the end as before. `--wait-for-stdin` lifts the limit for a slow producer; without a prompt
//! argument stdin is the only prompt, and keel waits for it as long as it takes.

use std::io::{IsTerminal, Read};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::HeadlessError;

/// Largest prompt accepted on stdin.
const MAX_STDIN: u64 = 10 * 1024 * 1024;
/// How long keel waits for the first byte on stdin when a prompt argument is given.
pub const FIRST_BYTE_WAIT: Duration = Duration::from_secs(3);

/// How long stdin may stay silent before keel goes on without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Read to the end, however long it takes.
    Unbounded,
    /// Go on without stdin when nothing arrives within this long.
    FirstByte(Duration),
}

/// What stdin gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A terminal: nothing is read from it.
    Terminal,
    /// Everything up to the end of the input (possibly empty).
    Text(String),
    /// Nothing arrived within the wait; stdin was left unread.
    Silent(Duration),
}

/// Reads stdin as `wait` allows.
pub fn read(wait: Wait) -> Result<Input, HeadlessError> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(Input::Terminal);
    }
    if let Wait::FirstByte(limit) = wait
        && !readable_within(stdin.as_raw_fd(), limit).map_err(HeadlessError::Stdin)?
    {
        return Ok(Input::Silent(limit));
    }
    let mut buf = String::new();
    stdin
        .lock()
        .take(MAX_STDIN + 1)
        .read_to_string(&mut buf)
        .map_err(HeadlessError::Stdin)?;
    if buf.len() as u64 > MAX_STDIN {
        return Err(HeadlessError::Usage("the prompt on stdin is larger than 10 MB".into()));
    }
    Ok(Input::Text(buf))
}

/// The line keel prints when it went on without stdin.
pub fn silent_notice(waited: Duration) -> String {
    format!(
        "keel: nothing arrived on stdin within {} s, so the prompt is the argument alone; pass --wait-for-stdin \
         to wait for a slower program, or give keel </dev/null to skip the wait",
        waited.as_secs_f64()
    )
}

/// Whether `fd` has input (data or its end) within `limit`. A regular file or `/dev/null` is
/// ready at once; an error other than an interruption is returned.
fn readable_within(fd: std::os::fd::RawFd, limit: Duration) -> std::io::Result<bool> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd, for the length given.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n > 0 {
            // Data, the writer's end closed (POLLHUP) or an error the read will report.
            return Ok(true);
        }
        if n == 0 {
            return Ok(false);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_pipe_nobody_writes_is_silent_and_one_with_data_or_closed_is_ready() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        assert!(!readable_within(reader.as_raw_fd(), Duration::from_millis(50)).unwrap());
        writer.write_all(b"x").unwrap();
        assert!(readable_within(reader.as_raw_fd(), Duration::from_millis(50)).unwrap());
        let (reader, writer) = std::io::pipe().unwrap();
        drop(writer);
        assert!(readable_within(reader.as_raw_fd(), Duration::from_secs(5)).unwrap());
    }
}
