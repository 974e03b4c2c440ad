//! The real TypeScript Agent SDK (`@anthropic-ai/claude-agent-sdk`, pinned with its peers in
//! `tests/e2e/ts-sdk/package.json`) driving keel: installed from the npm registry into the test
//! cache on first use (or by `.ci/run` through `scripts/ts-sdk-install.sh`), each test runs a
//! small Node program that points `pathToClaudeCodeExecutable` at keel. Only a machine without
//! node and npm skips (`skip`: a missing tool, a failure under `KEEL_TESTS_REQUIRE_ALL=1`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use serde_json::Value;

use super::skip::Lack;
use super::{Env, ModelServer, RUN_TIMEOUT};

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/ts-sdk")
}

/// The installed `node_modules`, or why not: no node or npm here. A failed install is a test
/// failure, not a skip.
fn modules() -> Result<PathBuf, Lack> {
    let mut slot = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        for program in ["node", "npm"] {
            if !on_path(program) {
                return Err(Lack::tool(format!("{program} is not installed")));
            }
        }
        let out = std::process::Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ts-sdk-install.sh"))
            .output()
            .map_err(|e| e.to_string());
        *slot = Some(out.and_then(|o| {
            if !o.status.success() {
                return Err(String::from_utf8_lossy(&o.stderr).into_owned());
            }
            installed_dir().ok_or_else(|| "the install script finished but left no ready folder".into())
        }));
    }
    match slot.as_ref().expect("set above") {
        Ok(p) => Ok(p.clone()),
        Err(e) => panic!("cannot install the TypeScript Agent SDK: {e}"),
    }
}

/// The cache folder the install script uses for the current pins.
fn installed_dir() -> Option<PathBuf> {
    let base = std::env::var_os("KEEL_TEST_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/keel-tests")))?;
    let out = std::process::Command::new("sha256sum")
        .arg(scripts().join("package.json"))
        .output()
        .ok()?;
    let hash: String = String::from_utf8_lossy(&out.stdout).chars().take(12).collect();
    let dir = base.join(format!("ts-agent-sdk-{hash}"));
    dir.join(".keel-ready").is_file().then(|| dir.join("node_modules"))
}

/// The JSON lines a program printed.
pub struct Report {
    pub lines: Vec<Value>,
    pub stderr: String,
}

impl Report {
    pub fn of(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["kind"] == kind).collect()
    }
}

/// Runs `tests/e2e/ts-sdk/<name>.mjs` against keel and `server`; `Err` without node and npm.
pub async fn run(env: &Env, server: &ModelServer, name: &str) -> Result<Report, Lack> {
    let modules = modules()?;
    let entry = |rel: &str| format!("file://{}", modules.join(rel).display());
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(scripts().join(format!("{name}.mjs")))
        .current_dir(&env.work)
        .env_clear()
        .env("KEEL_VERIFICATION_GATE", "off")
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .env("LANG", "C.UTF-8")
        .env("TS_SDK_ENTRY", entry("@anthropic-ai/claude-agent-sdk/sdk.mjs"))
        .env("TS_ZOD_ENTRY", entry("zod/index.js"))
        .env("KEEL_BIN", env!("CARGO_BIN_EXE_keel"))
        .env("KEEL_WORK", &env.work)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(RUN_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("the TypeScript SDK program {name} did not finish within the test timeout"))
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "the TypeScript SDK program {name} failed:\n{stderr}\n{stdout}"
    );
    let lines = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad report line ({e}): {l}\nstderr:\n{stderr}")))
        .collect();
    Ok(Report { lines, stderr })
}
