//! Runs hook handlers: command hooks as processes (see [`super::process`]), with the hook
//! variables in their environment and written into the exec form's program and `args`; HTTP
//! hooks as a POST of the same JSON.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::provider::client::{self, Reach};

use super::config::Handler;
use super::process::{self, Ending};

/// Seconds a hook may run when its configuration names no `timeout`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// Where and how hooks run.
#[derive(Debug, Clone)]
pub struct HookEnv {
    pub project_dir: PathBuf,
    pub cwd: PathBuf,
    /// `CLAUDE_ENV_FILE` / `KEEL_ENV_FILE` for the events that may set the shell's environment.
    pub env_file: Option<PathBuf>,
    /// The session's effort level (`CLAUDE_EFFORT`).
    pub effort: String,
}

/// What one handler did.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The signal that ended the process, when one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The handler could not be started at all (not found, not executable, HTTP error).
    pub start_error: Option<String>,
    pub duration_ms: u64,
    /// Output past the capture limit, read and dropped.
    pub stdout_dropped: u64,
    pub stderr_dropped: u64,
}

pub async fn run(handler: &Handler, stdin: &[u8], env: &HookEnv, default_timeout: Duration) -> RunResult {
    let started = Instant::now();
    let mut result = match handler {
        Handler::Command {
            command,
            args,
            shell,
            timeout_secs,
            plugin_root,
            ..
        } => {
            let timeout = timeout_secs.map(Duration::from_secs).unwrap_or(default_timeout);
            run_command(
                command.as_deref(),
                args.as_deref(),
                shell.as_deref(),
                plugin_root.as_deref(),
                stdin,
                env,
                timeout,
            )
            .await
        }
        Handler::Http {
            url,
            headers,
            allowed_env_vars,
            timeout_secs,
            ..
        } => {
            let timeout = timeout_secs.map(Duration::from_secs).unwrap_or(default_timeout);
            run_http(url, headers, allowed_env_vars, stdin, timeout).await
        }
        // Callbacks go through `callback::run`, which has the client to call.
        Handler::Callback { .. } | Handler::Prompt { .. } | Handler::Agent { .. } | Handler::McpTool { .. } => {
            failed("this hook type does not run as a process".into())
        }
    };
    result.duration_ms = started.elapsed().as_millis() as u64;
    result
}

#[allow(clippy::too_many_arguments)]
async fn run_command(
    command: Option<&str>,
    args: Option<&[String]>,
    shell: Option<&str>,
    plugin_root: Option<&Path>,
    stdin: &[u8],
    env: &HookEnv,
    timeout: Duration,
) -> RunResult {
    let vars = variables(env, plugin_root);
    let (mut cmd, program) = match (command, args) {
        (program, Some(args)) => {
            // No shell expands the exec form, so keel writes the hook variables in itself.
            let (program, rest) = match program {
                Some(p) => (p, args),
                None => match args.split_first() {
                    Some((p, rest)) => (p.as_str(), rest),
                    None => return failed("empty `args`".into()),
                },
            };
            let program = substitute(program, &vars);
            let mut c = tokio::process::Command::new(&program);
            c.args(rest.iter().map(|a| substitute(a, &vars)));
            (c, Some(program))
        }
        (Some(line), None) => {
            // The shell expands them from the environment, quoted as the line quotes them.
            let mut c = tokio::process::Command::new(shell.unwrap_or("sh"));
            c.arg("-c").arg(line);
            (c, None)
        }
        (None, None) => return failed("no command".into()),
    };
    cmd.current_dir(&env.cwd).envs(vars.iter().map(|(k, v)| (k, v)));
    let finished = match process::run(cmd, stdin, timeout).await {
        Ok(f) => f,
        Err(e) => {
            let what = program.map_or_else(String::new, |p| format!(" {}", p.to_string_lossy()));
            return failed(format!("cannot start{what}: {e}"));
        }
    };
    let mut result = RunResult {
        stdout: finished.stdout.text(),
        stderr: finished.stderr.text(),
        stdout_dropped: finished.stdout.dropped,
        stderr_dropped: finished.stderr.dropped,
        ..RunResult::default()
    };
    match finished.ending {
        Ending::Exited(status) => {
            result.exit_code = status.code();
            result.signal = status.signal();
            // The shell reports a missing or non-executable script as 127/126.
            result.start_error = match result.exit_code {
                Some(127) => Some(format!("command not found: {}", first_line(&result.stderr))),
                Some(126) => Some(format!("command not executable: {}", first_line(&result.stderr))),
                _ => None,
            };
        }
        Ending::WaitFailed(e) => result.stderr = format!("keel could not wait for it to end: {e}"),
        Ending::TimedOut => {
            // Output of a hook that did not finish is no decision.
            result = RunResult {
                timed_out: true,
                stderr: format!("timed out after {}s and was killed", timeout.as_secs()),
                ..RunResult::default()
            };
        }
    }
    result
}

/// The variables a command hook finds in its environment: the project (`CLAUDE_PROJECT_DIR`,
/// `KEEL_PROJECT_DIR`), a plugin's folder (`CLAUDE_PLUGIN_ROOT`) and, for SessionStart, the
/// env file (`CLAUDE_ENV_FILE`, `KEEL_ENV_FILE`).
fn variables(env: &HookEnv, plugin_root: Option<&Path>) -> Vec<(&'static str, OsString)> {
    let mut vars = vec![
        ("CLAUDE_PROJECT_DIR", env.project_dir.clone().into_os_string()),
        ("KEEL_PROJECT_DIR", env.project_dir.clone().into_os_string()),
    ];
    if let Some(root) = plugin_root {
        vars.push(("CLAUDE_PLUGIN_ROOT", root.as_os_str().to_owned()));
    }
    vars.push(("CLAUDE_EFFORT", OsString::from(&env.effort)));
    if let Some(file) = &env.env_file {
        vars.push(("CLAUDE_ENV_FILE", file.as_os_str().to_owned()));
        vars.push(("KEEL_ENV_FILE", file.as_os_str().to_owned()));
    }
    vars
}

/// Replaces `$NAME` / `${NAME}` of the hook variables in `s` by their values; anything else,
/// other names included, stays as written. Each argument stays one argument whatever the
/// values hold: nothing is split or interpreted.
fn substitute(s: &str, vars: &[(&str, OsString)]) -> OsString {
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = regex::Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)").expect("static regex");
    let mut out = Vec::with_capacity(s.len());
    let mut copied = 0;
    for c in re.captures_iter(s) {
        let (Some(whole), Some(name)) = (c.get(0), c.get(1).or_else(|| c.get(2))) else {
            continue;
        };
        if let Some((_, value)) = vars.iter().find(|(n, _)| *n == name.as_str()) {
            out.extend_from_slice(&s.as_bytes()[copied..whole.start()]);
            out.extend_from_slice(value.as_bytes());
            copied = whole.end();
        }
    }
    out.extend_from_slice(&s.as_bytes()[copied..]);
    OsString::from_vec(out)
}

async fn run_http(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    allowed: &[String],
    body: &[u8],
    timeout: Duration,
) -> RunResult {
    // One client per process: hooks fire on every tool call, and building a client for an
    // https:// URL reads every certificate the system trusts.
    let client = match client::shared(Reach::of(url)) {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let mut req = client
        .post(url)
        .timeout(timeout)
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(k, interpolate(v, allowed));
    }
    match req.send().await {
        Ok(resp) => {
            let status = resp.status();
            let text = match resp.text().await {
                Ok(t) => t,
                Err(e) if e.is_timeout() => {
                    return RunResult {
                        timed_out: true,
                        stderr: format!("timed out: the answer did not end within {}s", timeout.as_secs()),
                        ..RunResult::default()
                    };
                }
                Err(e) => return failed(format!("HTTP {status}, but reading the answer failed: {e}")),
            };
            if status.is_success() {
                RunResult {
                    exit_code: Some(0),
                    stdout: text,
                    ..RunResult::default()
                }
            } else {
                RunResult {
                    exit_code: Some(1),
                    stderr: format!("HTTP {status}: {}", first_line(&text)),
                    ..RunResult::default()
                }
            }
        }
        Err(e) if e.is_timeout() => RunResult {
            timed_out: true,
            stderr: format!("timed out: no answer within {}s", timeout.as_secs()),
            ..RunResult::default()
        },
        Err(e) => failed(format!("request failed: {e}")),
    }
}

/// Replaces `$VAR` / `${VAR}` with the variable's value when it is in `allowed`; other
/// references become empty, so a header never leaks an environment variable by accident.
pub fn interpolate(s: &str, allowed: &[String]) -> String {
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re = regex::Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)").expect("static regex");
    re.replace_all(s, |c: &regex::Captures<'_>| {
        let name = c.get(1).or_else(|| c.get(2)).map(|m| m.as_str()).unwrap_or("");
        if allowed.iter().any(|a| a == name) {
            std::env::var(name).unwrap_or_default()
        } else {
            String::new()
        }
    })
    .into_owned()
}

fn failed(msg: String) -> RunResult {
    RunResult {
        start_error: Some(msg),
        ..RunResult::default()
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_limited_to_allowed_vars() {
        // SAFETY: test-only, single-threaded access to this variable.
        unsafe { std::env::set_var("KEEL_TEST_TOKEN", "abc") };
        let allowed = vec!["KEEL_TEST_TOKEN".to_string()];
        assert_eq!(interpolate("Bearer $KEEL_TEST_TOKEN", &allowed), "Bearer abc");
        assert_eq!(interpolate("Bearer ${KEEL_TEST_TOKEN}", &allowed), "Bearer abc");
        assert_eq!(interpolate("x=$HOME", &allowed), "x=");
    }

    fn env(dir: &Path) -> HookEnv {
        HookEnv {
            project_dir: dir.to_path_buf(),
            cwd: dir.to_path_buf(),
            env_file: None,
            effort: "high".into(),
        }
    }

    fn exec(args: &[&str]) -> Handler {
        Handler::Command {
            command: None,
            args: Some(args.iter().map(|a| a.to_string()).collect()),
            shell: None,
            timeout_secs: Some(20),
            run_async: false,
            plugin_root: None,
            on_failure: Default::default(),
            continue_on_block: false,
        }
    }

    #[test]
    fn hook_variables_are_substituted_and_nothing_else() {
        let vars = vec![
            ("CLAUDE_PROJECT_DIR", OsString::from("/p q")),
            ("CLAUDE_PLUGIN_ROOT", OsString::from("/plug")),
        ];
        let s = |t: &str| substitute(t, &vars).into_string().unwrap();
        assert_eq!(s("${CLAUDE_PROJECT_DIR}/guard.sh"), "/p q/guard.sh");
        assert_eq!(s("$CLAUDE_PROJECT_DIR"), "/p q");
        assert_eq!(s("${CLAUDE_PLUGIN_ROOT}/a:$CLAUDE_PROJECT_DIR/b"), "/plug/a:/p q/b");
        assert_eq!(
            s("$CLAUDE_PROJECT_DIRX ${HOME} $KEEL_PROJECT_DIR $"),
            "$CLAUDE_PROJECT_DIRX ${HOME} $KEEL_PROJECT_DIR $"
        );
    }

    #[tokio::test]
    async fn the_exec_form_gets_the_project_dir_in_its_program_and_args() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("guard.sh"), "#!/bin/sh\nprintf '%s|' \"$@\"\n").unwrap();
        std::fs::set_permissions(
            root.join("guard.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let h = exec(&[
            "${CLAUDE_PROJECT_DIR}/guard.sh",
            "$KEEL_PROJECT_DIR/x",
            "${CLAUDE_PLUGIN_ROOT}",
        ]);
        let r = run(&h, b"{}", &env(&root), Duration::from_secs(20)).await;
        assert_eq!(r.exit_code, Some(0), "{r:?}");
        assert_eq!(r.stdout, format!("{}/x|${{CLAUDE_PLUGIN_ROOT}}|", root.display()));
    }

    #[tokio::test]
    async fn a_missing_program_and_a_signal_are_reported_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let r = run(
            &exec(&["${CLAUDE_PROJECT_DIR}/absent.sh"]),
            b"{}",
            &env(&root),
            Duration::from_secs(20),
        )
        .await;
        let e = r.start_error.unwrap_or_default();
        assert!(e.contains(&format!("{}/absent.sh", root.display())), "{e}");
        let r = run(
            &exec(&["sh", "-c", "kill -KILL $$"]),
            b"{}",
            &env(&root),
            Duration::from_secs(20),
        )
        .await;
        assert_eq!((r.exit_code, r.signal), (None, Some(9)), "{r:?}");
    }

    #[tokio::test]
    async fn a_background_child_holding_the_pipes_does_not_make_the_hook_time_out() {
        let dir = tempfile::tempdir().unwrap();
        let h = exec(&["sh", "-c", "sleep 60 & echo '{\"decision\": \"block\"}'"]);
        let r = run(&h, b"{}", &env(dir.path()), Duration::from_secs(20)).await;
        assert!(!r.timed_out, "{r:?}");
        assert_eq!(
            (r.exit_code, r.stdout.as_str()),
            (Some(0), "{\"decision\": \"block\"}\n")
        );
    }
}
