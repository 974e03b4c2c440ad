//! The one place where keel builds a shell child process.
//!
//! Every Bash command, foreground or background, is started from [`shell_command`], so
//! process-level policy (own session and process group, closed stdin, output to a file, and
//! later the OS sandbox as another `pre_exec` step) lives here and nowhere else.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;

use crate::sandbox::SandboxMode;

/// Runs the command with `eval` so `cd`, heredocs and `exit` behave as typed, then reports the
/// final working directory (for `cd` to persist) and passes the command's status through. The
/// command travels as an argument, never spliced into the script, so no quoting can break it.
///
/// The environment SessionStart hooks exported (`CLAUDE_ENV_FILE`) is read first, when there is
/// one, so what they set reaches every command.
const WRAPPER: &str = r#"__keel_cmd=$1; __keel_cwd_file=$2; __keel_env_file=$3; shift 3
if [ -n "$__keel_env_file" ] && [ -s "$__keel_env_file" ]; then . "$__keel_env_file"; fi
eval "$__keel_cmd"
__keel_status=$?
pwd -P >| "$__keel_cwd_file" 2>/dev/null
exit $__keel_status"#;

/// The shell that runs commands: bash where it exists (what models write for), else POSIX sh.
pub fn shell_program() -> &'static str {
    first_existing(&["/bin/bash", "/usr/bin/bash"]).unwrap_or("/bin/sh")
}

/// util-linux `setsid`, which starts the shell in a new session without a `pre_exec` hook.
fn setsid_program() -> Option<&'static str> {
    first_existing(&["/usr/bin/setsid", "/bin/setsid"])
}

fn first_existing(candidates: &[&'static str]) -> Option<&'static str> {
    candidates.iter().copied().find(|p| Path::new(p).exists())
}

/// Builds (does not start) the process for `command`:
/// - runs in `cwd` with stdin closed (`/dev/null`), so nothing waits for input;
/// - stdout and stderr both go to `output`, one file description, so their order is kept;
/// - leads a new session and process group, so the whole tree can be killed with one signal
///   to the group whose id is the child's pid, and no terminal is attached (a program asking
///   for a password fails instead of stopping the command);
/// - writes its final working directory to `cwd_report`;
/// - first reads the hook environment file `env_file`, when given and not empty.
///
/// The new session comes from exec'ing through `setsid(1)` rather than a `pre_exec` hook: without
/// a hook the standard library spawns with `posix_spawn` (vfork-like), where a hook forces a full
/// `fork` of keel, which costs milliseconds per command. The child is not a group leader when it
/// calls setsid(2), so `setsid(1)` does not fork again and the shell keeps the child's pid.
/// Where `setsid(1)` is missing the child gets its own process group instead (terminal still
/// attached). A sandbox that must run code in the child adds its `pre_exec` step here.
///
/// With the OS sandbox on, the shell runs through keel's sandbox helper (`keel __sandbox-exec`),
/// which confines itself and then execs the shell; the working-directory report is the one file
/// outside the policy the shell may write.
pub fn shell_command(
    command: &str,
    cwd: &Path,
    output: &File,
    cwd_report: &Path,
    env_file: Option<&Path>,
    sandbox: &SandboxMode,
) -> std::io::Result<tokio::process::Command> {
    let shell_argv: Vec<String> = vec![
        shell_program().to_string(),
        "-c".into(),
        WRAPPER.into(),
        "bash".into(),
        command.into(),
        cwd_report.display().to_string(),
        env_file.map(|p| p.display().to_string()).unwrap_or_default(),
    ];
    let (program, args): (String, Vec<String>) = match sandbox {
        SandboxMode::Off => (shell_argv[0].clone(), shell_argv[1..].to_vec()),
        SandboxMode::Refuse(reason) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                reason.clone(),
            ));
        }
        SandboxMode::Enforced(policy) => {
            // Landlock grants rights on existing files only.
            File::create(cwd_report)?;
            if let Some(tmp) = &policy.tmp_dir {
                std::fs::create_dir_all(tmp)?;
            }
            let mut policy = policy.clone();
            policy.writable.push(cwd_report.to_path_buf());
            let (exe, args) = crate::sandbox::wrap(&policy, &shell_argv)?;
            (exe.display().to_string(), args)
        }
    };
    let mut cmd = match setsid_program() {
        Some(setsid) => {
            let mut c = tokio::process::Command::new(setsid);
            c.arg(&program);
            c
        }
        None => {
            let mut c = tokio::process::Command::new(&program);
            c.process_group(0);
            c
        }
    };
    if let SandboxMode::Enforced(policy) = sandbox
        && let Some(tmp) = &policy.tmp_dir
    {
        cmd.env("TMPDIR", tmp);
    }
    cmd.args(&args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output.try_clone()?)
        .kill_on_drop(true);
    Ok(cmd)
}
