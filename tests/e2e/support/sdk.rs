//! The real Python Agent SDK (`claude-agent-sdk`, pinned) driving keel: the SDK is installed
//! from the registry into a virtual environment outside the repository on first use (or by
//! `.ci/run`), and each test runs a small Python program that points `cli_path` at keel.
//! Only a machine without Python skips these tests (`skip`: a missing tool, a failure under
//! `KEEL_TESTS_REQUIRE_ALL=1`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use serde_json::Value;

use super::skip::Lack;
use super::{Env, ModelServer, RUN_TIMEOUT};

/// The pinned SDK (`claude-agent-sdk==X`); `.ci/run` installs the same file.
const REQUIREMENT: &str = include_str!("../sdk/requirements.txt");

/// The SDK release the tests speak to.
fn sdk_version() -> &'static str {
    REQUIREMENT
        .trim()
        .strip_prefix("claude-agent-sdk==")
        .expect("tests/e2e/sdk/requirements.txt pins claude-agent-sdk==VERSION")
}

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// Where the virtual environment lives: `$KEEL_TEST_CACHE` or `~/.cache/keel-tests`.
pub fn venv_dir() -> PathBuf {
    let base = std::env::var_os("KEEL_TEST_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/keel-tests")))
        .unwrap_or_else(|| std::env::temp_dir().join("keel-tests"));
    base.join(format!("claude-agent-sdk-{}", sdk_version()))
}

fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
}

/// The venv's Python with the SDK installed, or why not: this machine has no Python. A failed
/// install is a test failure, not a skip.
pub fn python() -> Result<PathBuf, Lack> {
    let mut slot = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        let Some(system) = python3() else {
            return Err(Lack::tool("python3 is not installed"));
        };
        *slot = Some(install(&system));
    }
    match slot.as_ref().expect("set above") {
        Ok(p) => Ok(p.clone()),
        Err(e) => panic!("cannot install {}: {e}", REQUIREMENT.trim()),
    }
}

fn install(system: &Path) -> Result<PathBuf, String> {
    let dir = venv_dir();
    let python = dir.join("bin/python");
    let ready = dir.join(".keel-ready");
    if ready.is_file() && python.is_file() {
        return Ok(python);
    }
    let run = |cmd: &mut std::process::Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{cmd:?} failed:\n{}", String::from_utf8_lossy(&out.stderr)))
        }
    };
    run(std::process::Command::new(system).args(["-m", "venv"]).arg(&dir))?;
    run(std::process::Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        REQUIREMENT.trim(),
    ]))?;
    std::fs::write(&ready, sdk_version()).map_err(|e| e.to_string())?;
    Ok(python)
}

/// What one SDK program reported: the JSON objects it printed, one per line.
#[derive(Debug)]
pub struct Report {
    pub code: i32,
    pub lines: Vec<Value>,
    pub stderr: String,
}

impl Report {
    /// The single object with `"kind": kind`.
    pub fn get(&self, kind: &str) -> &Value {
        let found: Vec<&Value> = self.lines.iter().filter(|l| l["kind"] == kind).collect();
        assert_eq!(
            found.len(),
            1,
            "expected one `{kind}` report, got {found:?}\nstderr:\n{}",
            self.stderr
        );
        found[0]
    }

    /// Every message the SDK yielded, in order.
    pub fn messages(&self) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["kind"] == "message").collect()
    }
}

/// Runs `tests/e2e/sdk/<name>.py` against keel (the real binary) and `server`; `Err` when
/// Python is missing.
pub async fn run(env: &Env, server: &ModelServer, name: &str) -> Result<Report, Lack> {
    run_with(env, server, name, &[]).await
}

/// [`run`] with extra environment variables for the program.
pub async fn run_with(env: &Env, server: &ModelServer, name: &str, vars: &[(&str, &str)]) -> Result<Report, Lack> {
    let python = python()?;
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/sdk");
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(scripts.join(format!("{name}.py")))
        .current_dir(&env.work)
        .env_clear()
        // The stop gate is tested in evidence.rs; these programs end right after their edits.
        .env("KEEL_VERIFICATION_GATE", "off")
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .env("LANG", "C.UTF-8")
        .env("PYTHONPATH", &scripts)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("KEEL_BIN", env!("CARGO_BIN_EXE_keel"))
        .env("KEEL_WORK", &env.work)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(RUN_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("the SDK program {name} did not finish within the test timeout"))
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad report line ({e}): {l}\nstderr:\n{stderr}")))
        .collect();
    let report = Report {
        code: out.status.code().unwrap_or(-1),
        lines,
        stderr,
    };
    assert_eq!(report.code, 0, "the SDK program {name} failed:\n{}", report.stderr);
    Ok(report)
}
