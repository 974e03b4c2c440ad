//! The one place where keel builds a shell child process.
//!
//! Every Bash command, foreground or background, is started from [`shell_command`], so
//! process-level policy (own session and process group, closed stdin, output to a file, and
//! later the OS sandbox as another `pre_exec` step) lives here and nowhere else.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;

/// Runs the command with `eval` so `cd`, heredocs and `exit` behave as typed, then reports the
/// final working directory (for `cd` to persist) and passes the command's status through. The
/// command travels as an argument, never spliced into the script, so no quoting can break it.
const WRAPPER: &str = r#"__keel_cmd=$1; __keel_cwd_file=$2; shift 2
eval "$__keel_cmd"
__keel_status=$?
pwd -P >| "$__keel_cwd_file" 2>/dev/null
exit $__keel_status"#;

/// The shell that runs commands: bash where it exists (what models write for), else POSIX sh.
pub fn shell_program() -> &'static str {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("/bin/sh")
}

/// Builds (does not start) the process for `command`:
/// - runs in `cwd` with stdin closed (`/dev/null`), so nothing waits for input;
/// - stdout and stderr both go to `output`, one file description, so their order is kept;
/// - becomes the leader of a new session and process group (`setsid`), so the whole tree can be
///   killed at once and no terminal is attached (a program asking for a password fails instead
///   of hanging);
/// - writes its final working directory to `cwd_report`.
pub fn shell_command(
    command: &str,
    cwd: &Path,
    output: &File,
    cwd_report: &Path,
) -> std::io::Result<tokio::process::Command> {
    let mut cmd = tokio::process::Command::new(shell_program());
    cmd.arg("-c")
        .arg(WRAPPER)
        .arg("bash")
        .arg(command)
        .arg(cwd_report)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output.try_clone()?)
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec; setsid is async-signal-safe and
    // the closure neither allocates nor touches the parent's locks.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
    Ok(cmd)
}
