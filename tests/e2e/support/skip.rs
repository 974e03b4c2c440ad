//! Tests that cannot run here say so, and a run never counts them as silently passed.
//!
//! A test that needs something this machine lacks returns through [`skip`] (the whole test) or
//! notes through [`skip_part`] (checks it leaves out). Each prints `SKIPPED: <test>: <reason>` on
//! stderr and is counted; at the end of the run one line on stderr sums the skips up by reason.
//! What is lacking decides whether a skip is allowed at all:
//!
//! - [`Lack::Tool`]: a program or pinned package the tests run (python3, node, npm, make, cargo,
//!   `unshare`, the pinned runners, SDKs and MCP server `.ci/run` installs). Under
//!   `KEEL_TESTS_REQUIRE_ALL=1` (which `.ci/run` sets) such a skip fails the test instead, so
//!   every test CI should run does run.
//! - [`Lack::Host`]: a property of the host: what its kernel gives or withholds (Landlock,
//!   seccomp, namespaces, writable cgroups, a `/dev/shm`) or who runs the tests (root). No
//!   installer can add it, so it never fails a run; it still shows in the summary.
//! - [`Lack::Optional`]: a toolchain some checks exercise where a machine has it and CI does not
//!   promise (go, a system-wide pytest). Never fatal, always listed.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Mutex, Once};

/// The variable under which a missing tool fails its test.
pub const REQUIRE_ALL: &str = "KEEL_TESTS_REQUIRE_ALL";

/// Why a test (or part of one) cannot run on this machine.
#[derive(Debug, Clone)]
pub enum Lack {
    Tool(String),
    Host(String),
    Optional(String),
}

impl Lack {
    pub fn tool(reason: impl Into<String>) -> Lack {
        Lack::Tool(reason.into())
    }

    pub fn host(reason: impl Into<String>) -> Lack {
        Lack::Host(reason.into())
    }

    pub fn optional(reason: impl Into<String>) -> Lack {
        Lack::Optional(reason.into())
    }

    fn reason(&self) -> &str {
        match self {
            Lack::Tool(r) | Lack::Host(r) | Lack::Optional(r) => r,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Lack::Tool(_) => "tool",
            Lack::Host(_) => "host",
            Lack::Optional(_) => "optional",
        }
    }
}

/// `expr` is a `Result<T, Lack>`: its value, or the calling test returns through [`skip`].
macro_rules! or_skip {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(lack) => return $crate::support::skip::skip(lack),
        }
    };
}
pub(crate) use or_skip;

/// The calling test cannot run here: `return skip(lack)`. Under `KEEL_TESTS_REQUIRE_ALL=1` a
/// missing tool panics instead.
#[track_caller]
pub fn skip(lack: Lack) {
    record(lack, None);
}

/// Part of the calling test cannot run here (`what` names the checks left out); the rest goes
/// on. Fatal for a missing tool under `KEEL_TESTS_REQUIRE_ALL=1`, like [`skip`].
#[track_caller]
pub fn skip_part(lack: Lack, what: &str) {
    record(lack, Some(what));
}

/// Runs `program arg` (`--version`, say): `Err` when it cannot be started or fails.
pub fn program(program: &str, arg: &str) -> Result<(), Lack> {
    let ok = std::process::Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok(())
    } else {
        Err(Lack::tool(format!("{program} is not installed")))
    }
}

/// python3, which many tests run for real (unittest traps, the MCP test server).
pub fn python3() -> Result<(), Lack> {
    program("python3", "--version")
}

fn required() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1")
}

fn test_name() -> String {
    // libtest runs each test on a thread named after it.
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("<unnamed test>")
        .to_string()
}

/// One skip: `(kind, reason)` → the tests (with the part left out, if only a part).
type Skips = BTreeMap<(&'static str, String), Vec<String>>;

static SKIPS: Mutex<Skips> = Mutex::new(BTreeMap::new());
static AT_EXIT: Once = Once::new();

#[track_caller]
fn record(lack: Lack, part: Option<&str>) {
    let test = test_name();
    let what = match part {
        Some(p) => format!("{test} (part: {p})"),
        None => test,
    };
    if matches!(lack, Lack::Tool(_)) && required() {
        panic!(
            "{what} cannot run: {}; {REQUIRE_ALL}=1 makes a missing tool a failure (install it: .ci/run lists the \
             set-up scripts)",
            lack.reason()
        );
    }
    eprintln!("SKIPPED: {what}: {} [{}]", lack.reason(), lack.kind());
    SKIPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry((lack.kind(), lack.reason().to_string()))
        .or_default()
        .push(what);
    AT_EXIT.call_once(|| {
        // SAFETY: `summary` is a plain `extern "C"` function that only formats and writes.
        unsafe {
            libc::atexit(summary);
        }
    });
}

/// The one line a run ends with when it skipped anything. libtest captures what tests print,
/// not what the process writes to stderr at exit, so this shows with a plain `cargo test`.
extern "C" fn summary() {
    let skips = SKIPS.lock().unwrap_or_else(|p| p.into_inner());
    let line = summary_line(&skips);
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn summary_line(skips: &Skips) -> String {
    let total: usize = skips.values().map(Vec::len).sum();
    let groups: Vec<String> = skips
        .iter()
        .map(|((kind, reason), tests)| format!("{} × {reason} [{kind}] ({})", tests.len(), tests.join(", ")))
        .collect();
    let note = if required() {
        "whole tests or parts; none for a missing tool, which fails its test here"
    } else {
        "whole tests or parts; a [tool] skip fails its test under KEEL_TESTS_REQUIRE_ALL=1"
    };
    format!("e2e: SKIPPED {total} ({note}): {}\n", groups.join("; "))
}
