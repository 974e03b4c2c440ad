//! The official MCP client conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `scripts/mcp-conformance.sh`) against keel: at least 24 of its 26 client scenarios pass.
//! The suite is installed by `scripts/mcp-conformance-install.sh` (which `.ci/run` calls); the
//! test installs nothing itself.

use crate::support::skip::{Lack, or_skip};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/mcp-conformance.sh");

/// The scenarios keel must pass, of the suite's 26 client scenarios.
const AT_LEAST: usize = 24;

fn installed() -> Result<(), Lack> {
    let script = std::fs::read_to_string(SCRIPT).map_err(|e| Lack::tool(format!("cannot read {SCRIPT}: {e}")))?;
    let version = script
        .lines()
        .find_map(|l| l.strip_prefix("version=\""))
        .and_then(|v| v.strip_suffix('"'))
        .ok_or_else(|| Lack::tool(format!("{SCRIPT} names no version")))?;
    let base = std::env::var_os("KEEL_TEST_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/keel-tests")))
        .unwrap_or_else(|| std::env::temp_dir().join("keel-tests"));
    let dir = base.join(format!("conformance-{version}"));
    if dir.join(".keel-ready").is_file() {
        Ok(())
    } else {
        Err(Lack::tool(format!(
            "the pinned MCP conformance suite {version} is not installed in {} (scripts/mcp-conformance-install.sh)",
            dir.display()
        )))
    }
}

#[tokio::test]
async fn the_official_client_conformance_suite_passes_its_target() {
    or_skip!(installed());
    let out_dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new("bash")
        .arg(SCRIPT)
        .arg(env!("CARGO_BIN_EXE_keel"))
        .env("KEEL_CONFORMANCE_MIN", AT_LEAST.to_string())
        .env("KEEL_CONFORMANCE_OUT", out_dir.path())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let passed: usize = stdout
        .lines()
        .find_map(|l| l.strip_suffix(" failed"))
        .and_then(|l| l.split(" passed").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in the suite's output: {stdout}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        out.status.success() && passed >= AT_LEAST,
        "{passed} passed, fewer than {AT_LEAST}: {stdout}\n{}",
        lines[lines.len().saturating_sub(40)..].join("\n")
    );
}
