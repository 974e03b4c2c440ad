//! The one place where keel builds a shell child process.
//!
//! Every Bash command, foreground or background, is started from [`shell_command`], so
//! process-level policy (own session and process group, closed stdin, output to a file, and
//! later the OS sandbox as another `pre_exec` step) lives here and nowhere else.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use super::gate::CommandGate;
use crate::sandbox::{Confinement, Confiner, Kind, Limits, Policy, SandboxMode};

/// Runs the command with `eval` so `cd`, heredocs and `exit` behave as typed, then reports the
/// final working directory (for `cd` to persist) and passes the command's status through. The
/// command travels as an argument, never spliced into the script, so no quoting can break it.
///
/// The environment SessionStart hooks exported (`CLAUDE_ENV_FILE`) is read first, when there is
/// one, so what they set reaches every command. `CDPATH` is unset after it, so `cd` goes where
/// the permission check resolved it.
const WRAPPER: &str = r#"__keel_cmd=$1; __keel_cwd_file=$2; __keel_env_file=$3; shift 3
if [ -n "$__keel_env_file" ] && [ -s "$__keel_env_file" ]; then . "$__keel_env_file"; fi
unset CDPATH
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

/// How one command is to be confined: how it was approved, the session's sandbox setting and
/// its confinement state (absent in bare test sessions).
#[derive(Clone, Copy)]
pub struct Confine<'a> {
    pub how: Confinement,
    /// The hook environment file (`CLAUDE_ENV_FILE`) the shell reads first.
    pub env_file: Option<&'a Path>,
    /// The session's id (`CLAUDE_CODE_SESSION_ID` in the command's environment).
    pub session_id: Option<&'a str>,
    /// Most bytes of output kept on disk (head and tail).
    pub output_cap: u64,
    /// The processes and memory the command may use.
    pub limits: Option<&'a Limits>,
    pub sandbox: &'a SandboxMode,
    pub confiner: Option<&'a Confiner>,
    pub gate: &'a Arc<CommandGate>,
    /// Where configuration a sandboxed foreground command created at the top of the workspace
    /// is moved (see `sandbox::quarantine`); without it the top stays closed.
    pub quarantine: Option<&'a Path>,
}

impl Confine<'_> {
    /// Whether the command will run with no confinement at all (as [`Confiner::policy`]
    /// decides), known before its policy is built.
    pub fn unconfined(&self) -> bool {
        match self.sandbox {
            SandboxMode::Enforced(_) | SandboxMode::Refuse(_) => false,
            SandboxMode::Off => {
                !(self.how != Confinement::Approved && self.confiner.is_some_and(|c| c.jail_available()))
            }
        }
    }

    /// The policy for a command whose working-directory report goes to `report`.
    pub fn policy(&self, report: &Path) -> std::io::Result<Option<Policy>> {
        let refused = |r: String| std::io::Error::new(std::io::ErrorKind::PermissionDenied, r);
        match self.confiner {
            Some(c) => c.policy(self.how, self.sandbox, report).map_err(refused),
            None => match self.sandbox {
                SandboxMode::Off => Ok(None),
                SandboxMode::Enforced(p) => {
                    let mut p = p.clone();
                    p.writable.push(report.to_path_buf());
                    Ok(Some(p))
                }
                SandboxMode::Refuse(reason) => Err(refused(reason.clone())),
            },
        }
    }
}

/// Configuration (command-line scope, above any repository's) for the git of commands keel
/// approved on its own, after any the environment already carries: a bare repository
/// committed inside a project (`vendor/x/{HEAD,config,objects,refs}`) is not taken for a
/// repository unless named, and fsmonitor and hooks stay off. Without the jail this is what
/// keeps `git -C vendor/x status` from running the program its config names. A repository's
/// external diff cannot be switched off by configuration (an empty `diff.external` makes git
/// try to run ""), so in the jail, which confines it, it is left alone; without the jail it
/// is replaced by a refusal that tells the model to pass `--no-ext-diff`.
pub fn inert_git_env(jailed: bool) -> Vec<(String, String)> {
    const KEYS: &[(&str, &str)] = &[
        ("safe.bareRepository", "explicit"),
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
    ];
    const NO_EXT_DIFF: (&str, &str) = (
        "diff.external",
        "echo 'keel: external diff programs do not run in commands keel approved on its own; pass --no-ext-diff' >&2; exit 1 #",
    );
    let keys: Vec<(&str, &str)> = KEYS.iter().copied().chain((!jailed).then_some(NO_EXT_DIFF)).collect();
    let base: usize = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut out = Vec::new();
    for (i, (k, v)) in keys.iter().enumerate() {
        out.push((format!("GIT_CONFIG_KEY_{}", base + i), k.to_string()));
        out.push((format!("GIT_CONFIG_VALUE_{}", base + i), v.to_string()));
    }
    out.push(("GIT_CONFIG_COUNT".into(), (base + keys.len()).to_string()));
    out
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
/// attached).
///
/// Every command runs under keel's helper (`keel __sandbox-exec`): it confines itself when
/// the command is confined (see [`crate::sandbox`]; the returned policy says how), starts the
/// shell as its child, passes its output into `output` with a size cap, and — being a child
/// subreaper — kills whatever the shell leaves behind when it ends, `setsid` and
/// double-forked processes included. The working-directory report is the one file outside
/// the policy the shell may write.
///
/// `policy` is what [`Confine::policy`] gave for `cwd_report`; `sweep` the configuration names
/// the command may create, which the caller looks at after it ([`crate::sandbox::policy::open_top`]).
pub fn shell_command(
    command: &str,
    cwd: &Path,
    output: &File,
    cwd_report: &Path,
    confine: &Confine,
    policy: Option<&Policy>,
    sweep: &[PathBuf],
) -> std::io::Result<tokio::process::Command> {
    let shell_argv: Vec<String> = vec![
        shell_program().to_string(),
        "-c".into(),
        WRAPPER.into(),
        "bash".into(),
        command.into(),
        cwd_report.display().to_string(),
        confine.env_file.map(|p| p.display().to_string()).unwrap_or_default(),
    ];
    if let Some(policy) = policy {
        // Landlock grants rights on existing files only.
        File::create(cwd_report)?;
        if let Some(tmp) = &policy.tmp_dir {
            std::fs::create_dir_all(tmp)?;
        }
    }
    let (exe, args) = crate::sandbox::wrap(policy, confine.output_cap, confine.limits, sweep, &shell_argv)?;
    let program = exe.display().to_string();
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
    if let Some(tmp) = policy.and_then(|p| p.tmp_dir.as_ref()) {
        cmd.env("TMPDIR", tmp);
    }
    if let Some(id) = confine.session_id {
        cmd.env("CLAUDE_CODE_SESSION_ID", id);
    }
    // A command keel approved on its own does not get keel's secrets (its API key among them),
    // jail or not, and its git runs no program a repository's configuration names.
    if confine.how != Confinement::Approved || policy.is_some_and(|p| p.kind != Kind::Sandbox) {
        for name in crate::sandbox::confiner::secret_env_names() {
            cmd.env_remove(name);
        }
    }
    if confine.how != Confinement::Approved {
        let jailed = policy.is_some_and(|p| p.kind != Kind::Sandbox);
        for (k, v) in inert_git_env(jailed) {
            cmd.env(k, v);
        }
    }
    cmd.args(&args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output.try_clone()?)
        .kill_on_drop(true);
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Background shells take their place at the gate before their policy is built, so the
    /// prediction must agree with the policy in every case.
    #[test]
    fn whether_a_command_is_unconfined_is_known_before_its_policy() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().canonicalize().unwrap();
        let confiner = Confiner::new(vec![w.clone()], None, w.join("tmp"), |_| false);
        let gate = Arc::default();
        let report = w.join("report");
        let enforced = SandboxMode::Enforced(
            crate::sandbox::SandboxConfig::default().policy(std::slice::from_ref(&w), Some(&w.join("tmp"))),
        );
        for sandbox in [SandboxMode::Off, enforced] {
            for how in [
                Confinement::Approved,
                Confinement::ReadOnly,
                Confinement::WorkspaceWrite { creates_at_top: false },
            ] {
                for confiner in [None, Some(&confiner)] {
                    let c = Confine {
                        how,
                        env_file: None,
                        session_id: None,
                        output_cap: 1 << 20,
                        limits: None,
                        sandbox: &sandbox,
                        confiner,
                        gate: &gate,
                        quarantine: None,
                    };
                    assert_eq!(
                        c.policy(&report).unwrap().is_none(),
                        c.unconfined(),
                        "{how:?} {sandbox:?}"
                    );
                }
            }
        }
    }
}
