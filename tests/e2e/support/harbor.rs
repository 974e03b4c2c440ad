//! The real Harbor (`harbor`, pinned in `tests/e2e/harbor/requirements.txt`) running keel:
//! installed by `scripts/harbor-venv.sh` (which `.ci/run` calls) into a virtual environment
//! outside the repository, with a Python 3.12 or newer. The tests never install it themselves
//! (a first install takes minutes): without the environment they skip (`skip`: a missing tool,
//! a failure under `KEEL_TESTS_REQUIRE_ALL=1`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::skip::Lack;

/// The pin; the script reads the same file.
const REQUIREMENT: &str = include_str!("../harbor/requirements.txt");

/// A Harbor trial installs keel, runs it and the verifier: longer than one keel run.
pub const TRIAL_TIMEOUT: Duration = Duration::from_secs(300);

fn version() -> &'static str {
    REQUIREMENT
        .trim()
        .strip_prefix("harbor==")
        .expect("tests/e2e/harbor/requirements.txt pins harbor==VERSION")
}

/// Where the environment lives: `$KEEL_TEST_CACHE` or `~/.cache/keel-tests`, `harbor-<version>`.
pub fn venv_dir() -> PathBuf {
    let base = std::env::var_os("KEEL_TEST_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/keel-tests")))
        .unwrap_or_else(|| std::env::temp_dir().join("keel-tests"));
    base.join(format!("harbor-{}", version()))
}

/// The environment's Python with Harbor installed, or why the calling test cannot run.
pub fn python() -> Result<PathBuf, Lack> {
    let dir = venv_dir();
    let python = dir.join("bin/python");
    if dir.join(".keel-ready").is_file() && python.is_file() {
        return Ok(python);
    }
    Err(Lack::tool(format!(
        "Harbor {} is not installed in {} (scripts/harbor-venv.sh, which needs a Python 3.12 or newer)",
        version(),
        dir.display()
    )))
}

/// Whether this host gives the local environment what it builds on (mount namespaces,
/// as `keel_harbor/local_env.py` asks for them): a property of the kernel, not an install.
pub fn namespaces() -> Result<(), Lack> {
    let mut cmd = std::process::Command::new("unshare");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        cmd.args(["--user", "--map-root-user"]);
    }
    let ok = cmd
        .args(["--mount", "--propagation", "private", "--fork", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok(())
    } else {
        Err(Lack::host("no mount namespaces here for Harbor's local environment"))
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/e2e/harbor/<program>.py` with the Harbor Python, `keel_harbor` importable, no
/// network (LiteLLM's price table is the packaged one) and a private HOME; `stdin` is fed to
/// it. Returns the JSON lines it printed; a failed program fails the test.
pub async fn run(python: &Path, home: &Path, program: &str, args: &[&str], stdin: &str) -> Vec<Value> {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(repo().join("tests/e2e/harbor").join(format!("{program}.py")))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .env("PYTHONPATH", repo().join("integrations/harbor"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("start the Harbor python");
    let mut pipe = child.stdin.take().expect("stdin");
    pipe.write_all(stdin.as_bytes()).await.expect("write stdin");
    drop(pipe);
    let out = tokio::time::timeout(TRIAL_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{program}.py did not finish within {TRIAL_TIMEOUT:?}"))
        .expect("wait for python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{program}.py failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad report line ({e}): {l}\nstderr:\n{stderr}")))
        .collect()
}

/// One trial of `integrations/harbor/tasks/<task>` with keel's agent, the model at `url`.
pub async fn trial(python: &Path, work: &Path, task: &str, url: &str) -> Value {
    let trials = work.join("trials");
    let scratch = work.join("scratch");
    let home = work.join("home");
    for d in [&trials, &scratch, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let task_dir = repo().join("integrations/harbor/tasks").join(task);
    let lines = run(
        python,
        &home,
        "run_trial",
        &[
            task_dir.to_str().unwrap(),
            trials.to_str().unwrap(),
            env!("CARGO_BIN_EXE_keel"),
            url,
            scratch.to_str().unwrap(),
        ],
        "",
    )
    .await;
    // The environment removes its scratch root when the trial stops.
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "scratch roots left behind: {left:?}");
    lines
        .into_iter()
        .find(|l| l["kind"] == "trial")
        .expect("a trial report")
}
