//! `!command`: runs a shell command for the user (no model, no permission prompt) and turns
//! its output into context for the conversation.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// Output kept in memory for display.
const MAX_KEPT: usize = 1024 * 1024;
/// Output put into the conversation: head and tail of this much, the middle is cut (and said so).
const MAX_CONTEXT: usize = 30_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellResult {
    /// stdout and stderr, interleaved as the command wrote them.
    pub output: String,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub interrupted: bool,
    /// Bytes of output beyond what was kept.
    pub dropped: usize,
    /// Why the command could not be started.
    pub spawn_error: Option<String>,
}

fn shell_program() -> &'static str {
    if Path::new("/bin/bash").exists() || Path::new("/usr/bin/bash").exists() {
        "bash"
    } else {
        "sh"
    }
}

/// Runs `command` in `cwd` in its own process group; cancellation kills the whole group.
pub async fn run(command: &str, cwd: &Path, cancel: &CancellationToken) -> ShellResult {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(shell_program());
    // `exec 2>&1` merges stderr into stdout inside the shell, keeping their order.
    cmd.arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return ShellResult {
                output: String::new(),
                exit_code: None,
                duration_ms: 0,
                interrupted: false,
                dropped: 0,
                spawn_error: Some(format!("cannot start {}: {e}", shell_program())),
            };
        }
    };
    let pid = child.id();
    let mut stdout = child.stdout.take();
    let mut kept: Vec<u8> = Vec::new();
    let mut dropped = 0usize;
    let read_all = async {
        let Some(out) = stdout.as_mut() else {
            return;
        };
        let mut buf = [0u8; 8192];
        loop {
            match out.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = MAX_KEPT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    dropped += n.saturating_sub(room);
                }
            }
        }
    };
    let mut interrupted = false;
    let status = tokio::select! {
        _ = cancel.cancelled() => {
            interrupted = true;
            None
        }
        (_, status) = async { read_all.await; (0, child.wait().await) } => status.ok(),
    };
    if interrupted && let Some(pid) = pid {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = child.wait().await;
    }
    ShellResult {
        output: String::from_utf8_lossy(&kept).into_owned(),
        exit_code: status.and_then(|s| s.code()),
        duration_ms: started.elapsed().as_millis() as u64,
        interrupted,
        dropped,
        spawn_error: None,
    }
}

/// What the conversation gets: the command and its output (cut in the middle when long).
pub fn context_text(command: &str, r: &ShellResult) -> String {
    let mut out = r.output.clone();
    if out.len() > MAX_CONTEXT {
        let head_end = floor_boundary(&out, MAX_CONTEXT / 2);
        let tail_start = ceil_boundary(&out, out.len() - MAX_CONTEXT / 2);
        let cut = tail_start - head_end + r.dropped;
        out = format!(
            "{}\n[… {cut} bytes of output omitted …]\n{}",
            &out[..head_end],
            &out[tail_start..]
        );
    } else if r.dropped > 0 {
        out.push_str(&format!("\n[… {} more bytes of output omitted …]", r.dropped));
    }
    let status = if let Some(e) = &r.spawn_error {
        e.clone()
    } else if r.interrupted {
        "interrupted by the user".to_string()
    } else {
        match r.exit_code {
            Some(c) => format!("exit code {c}"),
            None => "killed by a signal".to_string(),
        }
    };
    format!(
        "{CONTEXT_LEAD} ({status}):\n<bash-input>{command}</bash-input>\n<bash-stdout>{}</bash-stdout>",
        out.trim_end()
    )
}

const CONTEXT_LEAD: &str = "The user ran a shell command in the terminal";

/// Reads back what [`context_text`] wrote (for showing a resumed session): command, output
/// and the status note.
pub fn parse_context_text(text: &str) -> Option<(String, String, String)> {
    let rest = text.strip_prefix(CONTEXT_LEAD)?;
    let status = rest.strip_prefix(" (")?.split_once("):\n")?.0.to_string();
    let command = text
        .split_once("<bash-input>")?
        .1
        .split_once("</bash-input>")?
        .0
        .to_string();
    let output = text
        .split_once("<bash-stdout>")?
        .1
        .rsplit_once("</bash-stdout>")?
        .0
        .to_string();
    Some((command, output, status))
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_in_the_workspace_and_merges_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker.txt"), "").unwrap();
        let r = run("ls; echo err >&2; exit 3", dir.path(), &CancellationToken::new()).await;
        assert_eq!(r.exit_code, Some(3));
        assert_eq!(r.output, "marker.txt\nerr\n");
        let ctx = context_text("ls", &r);
        assert_eq!(
            parse_context_text(&ctx),
            Some(("ls".into(), "marker.txt\nerr".into(), "exit code 3".into()))
        );
        assert!(ctx.contains("exit code 3"));
        assert!(ctx.contains("<bash-input>ls</bash-input>"));
        assert!(ctx.contains("<bash-stdout>marker.txt\nerr</bash-stdout>"));
    }

    #[tokio::test]
    async fn cancellation_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            c2.cancel();
        });
        // The background child would keep the pipe open if the group survived.
        let r = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            run("sleep 30 & sleep 30; echo never", dir.path(), &cancel),
        )
        .await
        .expect("cancellation must end the command");
        assert!(r.interrupted);
        assert!(!r.output.contains("never"));
        assert!(context_text("x", &r).contains("interrupted by the user"));
    }

    #[test]
    fn long_output_is_cut_in_the_middle_with_a_note() {
        let r = ShellResult {
            output: "a".repeat(20_000) + &"b".repeat(20_000),
            exit_code: Some(0),
            duration_ms: 1,
            interrupted: false,
            dropped: 0,
            spawn_error: None,
        };
        let ctx = context_text("gen", &r);
        assert!(ctx.contains("[… 10000 bytes of output omitted …]"), "{}", &ctx[..200]);
        assert!(ctx.len() < 31_000);
    }
}
