//! Process-wide shutdown: the process groups keel's children run in, and the forced exit when
//! a termination signal comes a second time.
//!
//! The first SIGINT/SIGTERM/SIGHUP cancels the turn through the async runtime (see
//! `headless::watch_signals`; the TUI's event loop), which records the interruption and prints
//! the result. If keel is stuck where that cannot happen (a blocking read, a full stdout pipe,
//! a child it waits for), the second signal ends the process from the signal handler itself:
//! the terminal is put back (when the TUI registered how), every registered process group is
//! killed and the process exits at once, without waiting for any thread.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// Slots for live process groups (a free slot holds 0). More concurrent groups than this are
/// still killed by their owners; only the forced exit would miss them.
const SLOTS: usize = 256;

static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// A process group registered for the forced exit; unregistered on drop.
#[derive(Debug)]
pub struct GroupGuard(Option<usize>);

impl GroupGuard {
    /// Registers the process group `pgid` (a child started with its own group).
    pub fn register(pgid: i32) -> GroupGuard {
        if pgid <= 1 {
            return GroupGuard(None);
        }
        let slot = GROUPS
            .iter()
            .position(|s| s.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst).is_ok());
        GroupGuard(slot)
    }

    pub fn none() -> GroupGuard {
        GroupGuard(None)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            GROUPS[slot].store(0, Ordering::SeqCst);
        }
    }
}

/// SIGKILL to every registered group. Async-signal-safe: atomics and `kill(2)` only.
pub fn kill_registered_groups() {
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 1 {
            // SAFETY: kill(2) is async-signal-safe; a group that is gone yields ESRCH.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

static SIGNALS_SEEN: AtomicUsize = AtomicUsize::new(0);

/// How to put the terminal back from a signal handler (set by the TUI; async-signal-safe).
static TERMINAL_RESTORE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Registers the TUI's async-signal-safe terminal restore for the forced exit.
pub fn set_terminal_restore(f: fn()) {
    let _ = TERMINAL_RESTORE.set(f);
}

/// Whether something handles the first signal gracefully (the headless run's watcher). Until it
/// does (during setup), the first signal already ends the process, as the default action would.
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// Says that the first signal from now on is handled by cancelling the turn.
pub fn set_graceful(on: bool) {
    GRACEFUL.store(on, Ordering::SeqCst);
}

/// The signal that asked keel to stop (0: none), so an interrupted turn says who stopped it.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Records the signal a graceful handler acted on.
pub fn note_stop_signal(sig: i32) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// What stopped the turn, in words, when it was a signal other than the user's Ctrl+C
/// (SIGINT): a supervisor's SIGTERM, a closed terminal's SIGHUP.
pub fn stopped_by() -> Option<&'static str> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        libc::SIGTERM => Some("SIGTERM (a request to end keel, from a supervisor, a CI timeout or kill)"),
        libc::SIGHUP => Some("SIGHUP (the terminal or connection keel ran in closed)"),
        _ => None,
    }
}

/// Installs the forced exit: on the second of SIGINT, SIGTERM or SIGHUP (any mix), or on the
/// first while no graceful handler is set, kill every registered process group and exit with
/// 128 + the signal number at once.
pub fn install_forced_exit() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the action only touches atomics and calls kill(2) and _exit(2), which are
        // async-signal-safe.
        unsafe {
            signal_hook_registry::register(sig, move || {
                let seen = SIGNALS_SEEN.fetch_add(1, Ordering::SeqCst);
                if seen >= 1 || !GRACEFUL.load(Ordering::SeqCst) {
                    if let Some(restore) = TERMINAL_RESTORE.get() {
                        restore();
                    }
                    kill_registered_groups();
                    libc::_exit(128 + sig);
                }
            })?;
        }
    }
    Ok(())
}
