//! One command hook as a process: its own process group, the event on stdin, stdout and stderr
//! read concurrently into bounded buffers while keel waits for the process to *exit*.
//!
//! The decision is the hook's, not its children's: a hook that starts a background child
//! (`sleep 60 &`, a daemon) hands it its pipes, so end-of-file may never come. Once the hook
//! has exited, the pipes get a short grace to deliver what it wrote; then reading stops and the
//! hook's process group is killed, so nothing it left behind lingers holding them.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

use crate::tools::bash::process::ProcessGroup;

/// Most output kept from one hook stream; the rest is read (so the hook never blocks on a full
/// pipe) and counted, not kept.
pub const MAX_CAPTURE: usize = 4 << 20;
/// How long the pipes may still deliver after the hook exited. What the hook wrote is already
/// in the pipe buffers by then; only a child it left holding them keeps them open longer.
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// What was read from one stream.
#[derive(Debug, Default)]
pub struct Captured {
    pub bytes: Vec<u8>,
    /// Bytes read past [`MAX_CAPTURE`] and dropped.
    pub dropped: u64,
}

impl Captured {
    async fn fill<R: AsyncRead + Unpin>(&mut self, pipe: Option<R>) {
        let Some(mut pipe) = pipe else { return };
        let mut chunk = vec![0u8; 64 * 1024];
        // A read error ends the stream like end-of-file: what came before still counts.
        while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
            let kept = n.min(MAX_CAPTURE.saturating_sub(self.bytes.len()));
            self.bytes.extend_from_slice(&chunk[..kept]);
            self.dropped += (n - kept) as u64;
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

#[derive(Debug)]
pub enum Ending {
    Exited(ExitStatus),
    /// The hook was started but waiting for it failed.
    WaitFailed(std::io::Error),
    /// It ran past its timeout and was killed with its process group.
    TimedOut,
}

#[derive(Debug)]
pub struct Finished {
    pub ending: Ending,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// Starts `cmd` (program, arguments, environment and directory already set) with `stdin` as
/// its input and runs it to its end. `Err`: it could not be started.
pub async fn run(mut cmd: Command, stdin: &[u8], timeout: Duration) -> std::io::Result<Finished> {
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    // Dropped (a cancelled turn) or disarmed below: either way the group is killed.
    let mut group = ProcessGroup::of(&child);
    let pipe_in = child.stdin.take();
    let pipe_out = child.stdout.take();
    let pipe_err = child.stderr.take();
    let mut stdout = Captured::default();
    let mut stderr = Captured::default();
    let ending = {
        let reading = async {
            tokio::join!(stdout.fill(pipe_out), stderr.fill(pipe_err));
        };
        watch(&mut child, timeout, reading, feed(pipe_in, stdin)).await
        // The pipes are closed here: a child still writing to them gets EPIPE.
    };
    // A hook that exited was waited for: nothing descends from it any more, only its group is
    // left to signal.
    if matches!(ending, Ending::Exited(_)) {
        group.kill_members_and_disarm();
    } else {
        group.kill_and_disarm();
    }
    if matches!(ending, Ending::TimedOut) {
        // The hook itself too, should it have left its group before the kill.
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    Ok(Finished { ending, stdout, stderr })
}

/// Writes the event to the hook's stdin and closes it. A hook that ignores its input may exit
/// before reading it; that is not an error.
async fn feed(pipe: Option<ChildStdin>, payload: &[u8]) {
    if let Some(mut pipe) = pipe {
        let _ = pipe.write_all(payload).await;
    }
}

/// Waits for the hook to exit (or time out) while its pipes are read and its stdin written;
/// after the exit, lets the readers finish for at most [`DRAIN_GRACE`].
async fn watch(
    child: &mut Child,
    timeout: Duration,
    reading: impl Future<Output = ()>,
    feeding: impl Future<Output = ()>,
) -> Ending {
    tokio::pin!(reading, feeding);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let (mut read, mut fed) = (false, false);
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            () = &mut deadline => return Ending::TimedOut,
            () = &mut reading, if !read => read = true,
            () = &mut feeding, if !fed => fed = true,
        }
    };
    if !read {
        let _ = tokio::time::timeout(DRAIN_GRACE, &mut reading).await;
    }
    match status {
        Ok(s) => Ending::Exited(s),
        Err(e) => Ending::WaitFailed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[tokio::test]
    async fn the_exit_decides_not_the_end_of_the_pipes() {
        // The background child holds stdout and stderr open for a minute.
        let f = run(
            sh("cat >/dev/null; sleep 60 & echo decided; echo why >&2; exit 2"),
            b"{}",
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        let Ending::Exited(status) = f.ending else {
            panic!("{:?}", f.ending)
        };
        assert_eq!(status.code(), Some(2));
        assert_eq!(f.stdout.text(), "decided\n");
        assert_eq!(f.stderr.text(), "why\n");
    }

    #[tokio::test]
    async fn output_past_the_cap_is_counted_and_does_not_block_the_hook() {
        let size = MAX_CAPTURE + 100_000;
        let f = run(
            sh(&format!("head -c {size} /dev/zero; echo done >&2")),
            b"",
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        assert!(matches!(f.ending, Ending::Exited(s) if s.success()), "{:?}", f.ending);
        assert_eq!(f.stdout.bytes.len(), MAX_CAPTURE);
        assert_eq!(f.stdout.dropped, 100_000);
        assert_eq!(f.stderr.text(), "done\n");
    }

    #[tokio::test]
    async fn a_hook_past_its_timeout_is_killed() {
        let f = run(sh("echo started; sleep 60"), b"", Duration::from_millis(300))
            .await
            .unwrap();
        assert!(matches!(f.ending, Ending::TimedOut), "{:?}", f.ending);
    }

    #[tokio::test]
    async fn a_large_event_reaches_a_hook_that_reads_it() {
        let payload = vec![b'x'; 1 << 20];
        let f = run(sh("wc -c"), &payload, Duration::from_secs(30)).await.unwrap();
        assert_eq!(f.stdout.text().trim(), (1 << 20).to_string());
    }
}
