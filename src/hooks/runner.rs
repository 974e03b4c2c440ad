//! Runs hook handlers: command hooks as processes (JSON event on stdin, own process group,
//! killed on timeout), HTTP hooks as a POST of the same JSON.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::Handler;

/// Seconds a hook may run when its configuration names no `timeout`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// Most output kept from one hook stream.
const MAX_CAPTURE: usize = 1 << 20;

/// Where and how hooks run.
#[derive(Debug, Clone)]
pub struct HookEnv {
    pub project_dir: PathBuf,
    pub cwd: PathBuf,
    /// `CLAUDE_ENV_FILE` / `KEEL_ENV_FILE` for the events that may set the shell's environment.
    pub env_file: Option<PathBuf>,
}

/// What one handler did.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    /// The handler could not be started at all (not found, not executable, HTTP error).
    pub start_error: Option<String>,
    pub duration_ms: u64,
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
        } => {
            let timeout = timeout_secs.map(Duration::from_secs).unwrap_or(default_timeout);
            run_http(url, headers, allowed_env_vars, stdin, timeout).await
        }
        // Callbacks go through `callback::run`, which has the client to call.
        Handler::Callback { .. } => failed("an SDK callback hook cannot run as a process".into()),
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
    let mut cmd = match (command, args) {
        (program, Some(args)) => {
            let (program, rest) = match program {
                Some(p) => (p.to_string(), args),
                None => match args.split_first() {
                    Some((p, rest)) => (p.clone(), rest),
                    None => return failed("empty `args`".into()),
                },
            };
            let mut c = tokio::process::Command::new(program);
            c.args(rest);
            c
        }
        (Some(line), None) => {
            let mut c = tokio::process::Command::new(shell.unwrap_or("sh"));
            c.arg("-c").arg(line);
            c
        }
        (None, None) => return failed("no command".into()),
    };
    if let Some(file) = &env.env_file {
        cmd.env("CLAUDE_ENV_FILE", file).env("KEEL_ENV_FILE", file);
    }
    if let Some(root) = plugin_root {
        cmd.env("CLAUDE_PLUGIN_ROOT", root);
    }
    cmd.current_dir(&env.cwd)
        .env("CLAUDE_PROJECT_DIR", &env.project_dir)
        .env("KEEL_PROJECT_DIR", &env.project_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start: {e}")),
    };
    let pid = child.id();
    let _registered = pid
        .and_then(|p| i32::try_from(p).ok())
        .map_or_else(crate::shutdown::GroupGuard::none, crate::shutdown::GroupGuard::register);
    let mut pipe_in = child.stdin.take();
    let payload = stdin.to_vec();
    let feed = async move {
        if let Some(p) = pipe_in.as_mut() {
            // A hook that ignores stdin may exit before reading it; that is not an error.
            let _ = p.write_all(&payload).await;
        }
        drop(pipe_in);
    };
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let collect = async {
        let (o, e) = tokio::join!(read_capped(out.as_mut()), read_capped(err.as_mut()));
        let status = child.wait().await;
        (o, e, status)
    };
    let outcome = tokio::time::timeout(timeout, async { tokio::join!(feed, collect).1 }).await;
    match outcome {
        Ok((stdout, stderr, status)) => {
            let code = status.ok().and_then(|s| s.code());
            // The shell reports a missing or non-executable script as 127/126.
            let start_error = match code {
                Some(127) => Some(format!("command not found: {}", first_line(&stderr))),
                Some(126) => Some(format!("command not executable: {}", first_line(&stderr))),
                _ => None,
            };
            RunResult {
                exit_code: code,
                stdout,
                stderr,
                start_error,
                ..RunResult::default()
            }
        }
        Err(_) => {
            if let Some(pid) = pid {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            RunResult {
                timed_out: true,
                stderr: format!("timed out after {}s and was killed", timeout.as_secs()),
                ..RunResult::default()
            }
        }
    }
}

async fn read_capped<R: tokio::io::AsyncRead + Unpin>(r: Option<&mut R>) -> String {
    let Some(r) = r else { return String::new() };
    let mut buf = Vec::new();
    let _ = r.take(MAX_CAPTURE as u64).read_to_end(&mut buf).await;
    // Drain the rest so the hook never blocks on a full pipe.
    let mut sink = tokio::io::sink();
    let _ = tokio::io::copy(r, &mut sink).await;
    String::from_utf8_lossy(&buf).into_owned()
}

async fn run_http(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    allowed: &[String],
    body: &[u8],
    timeout: Duration,
) -> RunResult {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = match reqwest::Client::builder().timeout(timeout).build() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot build an HTTP client: {e}")),
    };
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(k, interpolate(v, allowed));
    }
    match req.send().await {
        Ok(resp) => {
            let status = resp.status();
            let text = resp.text().await.unwrap_or_default();
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
            stderr: format!("no answer within {}s", timeout.as_secs()),
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
}
