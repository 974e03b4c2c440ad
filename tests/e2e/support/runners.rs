//! The pinned test runners the evidence tests run for real (pytest, tox:
//! `tests/e2e/runners/requirements.txt`), installed by `scripts/runners-venv.sh` (which `.ci/run`
//! calls) into a virtual environment outside the repository. The tests never install anything
//! themselves: without the environment they skip (`skip`: a missing tool, a failure under
//! `KEEL_TESTS_REQUIRE_ALL=1`).

use std::path::{Path, PathBuf};

use super::skip::Lack;

/// The pins, one `name==version` a line; the script reads the same file.
const REQUIREMENTS: &str = include_str!("../runners/requirements.txt");

/// `pytest-9.2.0-tox-4.32.0`, as the script names the environment.
fn pins() -> String {
    REQUIREMENTS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.replacen("==", "-", 1))
        .collect::<Vec<_>>()
        .join("-")
}

/// Where the environment lives: `$KEEL_TEST_CACHE` or `~/.cache/keel-tests`, `runners-<pins>`.
pub fn venv_dir() -> PathBuf {
    let base = std::env::var_os("KEEL_TEST_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/keel-tests")))
        .unwrap_or_else(|| std::env::temp_dir().join("keel-tests"));
    base.join(format!("runners-{}", pins()))
}

/// The environment's `bin` directory (put it first on the PATH keel's commands see), or why
/// the calling test cannot run.
pub fn runners_venv() -> Result<PathBuf, Lack> {
    let dir = venv_dir();
    let bin = dir.join("bin");
    if dir.join(".keel-ready").is_file() && bin.join("pytest").is_file() {
        return Ok(bin);
    }
    Err(Lack::tool(format!(
        "the pinned pytest/tox are not installed in {} (scripts/runners-venv.sh)",
        dir.display()
    )))
}

/// `bin` in front of the test process's own PATH.
pub fn path_with(bin: &Path) -> String {
    match std::env::var("PATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", bin.display()),
        _ => bin.display().to_string(),
    }
}
