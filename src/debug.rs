//! Opt-in diagnostics on stderr (`--debug` or `KEEL_DEBUG=1`): things worth knowing when
//! something behaves unexpectedly, but not worth a warning (e.g. an unknown settings key).

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed) || std::env::var_os("KEEL_DEBUG").is_some_and(|v| !v.is_empty() && v != "0")
}

pub fn log(message: impl AsRef<str>) {
    if enabled() {
        eprintln!("keel[debug]: {}", message.as_ref());
    }
}
