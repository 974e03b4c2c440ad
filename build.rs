//! Release link layout: the code that sessions run is placed together at the start of `.text`.
//!
//! The kernel maps 64 KB of a binary around every code page a process touches, so code a session
//! runs, scattered over 13 MB, keeps most of the binary resident. `build/hot-code.txt` lists the
//! functions the benchmark sessions executed, hottest first (written by
//! `scripts/hot-code-order.py`); lld lays those sections out in that order. A name the order
//! file has and the build does not (a dependency updated since) is skipped, so a stale file only
//! costs memory, never correctness. The link map (`keel.map` in the build script's output
//! directory) is what the script reads to name the code a profiler saw.
//!
//! Only for release builds of the binary on x86_64 Linux with rustc 1.90 or later, which links
//! with its own lld there; a build that names another linker in `RUSTFLAGS` gets no order file,
//! and `KEEL_NO_CODE_ORDER=1` turns it off for one configured elsewhere (`.cargo/config.toml`).

use std::env;
use std::path::PathBuf;
use std::process::Command;

const ORDER_FILE: &str = "build/hot-code.txt";

fn main() {
    cargo(&format!("rerun-if-changed={ORDER_FILE}"));
    cargo("rerun-if-changed=build.rs");
    cargo("rerun-if-env-changed=KEEL_NO_CODE_ORDER");

    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let x86_64_linux = env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    let opted_out = env::var_os("KEEL_NO_CODE_ORDER").is_some_and(|v| !v.is_empty() && v != "0");
    if !release || !x86_64_linux || opted_out || !links_with_rust_lld() {
        return;
    }

    let (Some(manifest), Some(out)) = (env::var_os("CARGO_MANIFEST_DIR"), env::var_os("OUT_DIR")) else {
        return;
    };
    let order = PathBuf::from(manifest).join(ORDER_FILE);
    let map = PathBuf::from(out).join("keel.map");
    cargo(&format!("rustc-link-arg-bin=keel=-Wl,-Map={}", map.display()));
    if order.is_file() {
        cargo(&format!(
            "rustc-link-arg-bin=keel=-Wl,--symbol-ordering-file={}",
            order.display()
        ));
        cargo("rustc-link-arg-bin=keel=-Wl,--no-warn-symbol-ordering");
    }
}

/// One instruction to cargo, which reads a build script's standard output (not a person).
#[allow(clippy::disallowed_macros)]
fn cargo(instruction: &str) {
    println!("cargo:{instruction}");
}

/// Whether the link will be rustc's own lld: the default on x86_64 Linux since 1.90, unless the
/// flags choose a linker.
fn links_with_rust_lld() -> bool {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let chooses_linker = ["linker", "link-self-contained"].iter().any(|k| flags.contains(k));
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-V").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&out.stdout);
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    !chooses_linker && minor.is_some_and(|m| m >= 90)
}
