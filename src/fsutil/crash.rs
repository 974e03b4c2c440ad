//! Fault injection for crash-safety tests: `KEEL_CRASH_AT=<point>:<n>` kills this process with
//! SIGKILL the n-th time it passes the named point (`<point>` alone: the first time), exactly
//! as a `kill -9` at that moment would. Unset (always, outside such tests) it costs one look
//! at a cached value.
//!
//! The points are the steps of operations that must survive a crash at any moment:
//! `write-rename` (an atomic write's temporary file is complete, not yet renamed over its
//! target), and a rewind's `rewind-journaled`, `rewind-file`, `rewind-logged`,
//! `rewind-event` and `rewind-boundary` (see `checkpoint::journal`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable that names the point.
pub const VAR: &str = "KEEL_CRASH_AT";

static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
static PASSED: AtomicU64 = AtomicU64::new(0);

fn target() -> Option<&'static (String, u64)> {
    TARGET
        .get_or_init(|| {
            let raw = std::env::var(VAR).ok()?;
            let (name, n) = match raw.rsplit_once(':') {
                Some((name, n)) => (name.to_string(), n.trim().parse().ok()?),
                None => (raw, 1),
            };
            Some((name, n))
        })
        .as_ref()
}

/// Passes the point `name`; dies there when `KEEL_CRASH_AT` names it (and this is its n-th pass).
pub fn point(name: &str) {
    let Some((wanted, n)) = target() else {
        return;
    };
    if wanted != name {
        return;
    }
    if PASSED.fetch_add(1, Ordering::SeqCst) + 1 == *n {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}
