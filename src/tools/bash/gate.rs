//! Keeps two kinds of commands apart: sandboxed commands that may create entries at the top of
//! the workspace (where configuration that runs programs lives: keel looks at what they made
//! once they are gone, see `sandbox::quarantine`) and commands that run outside the sandbox,
//! which would run such configuration. A command of one kind never runs while one of the
//! other does — sub-agents of one session run commands at the same time, so order alone does
//! not ensure it.
//!
//! An unsandboxed command waits until the open sandboxed ones are done (they are foreground
//! commands with a timeout); a sandboxed command starting while an unsandboxed one runs or
//! waits keeps the top of the workspace closed instead of waiting.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Debug, Default)]
pub struct CommandGate {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Sandboxed commands running with the top of the workspace open.
    open: usize,
    /// Unsandboxed commands running or waiting to start.
    unconfined: usize,
}

/// A sandboxed command may create at the top of the workspace while this is held.
#[derive(Debug)]
pub struct OpenLease(Arc<CommandGate>);

/// An unsandboxed command runs while this is held.
#[derive(Debug)]
pub struct UnconfinedLease(Arc<CommandGate>);

/// A command's place, either kind.
#[derive(Debug)]
pub enum Lease {
    Open(OpenLease),
    Unconfined(UnconfinedLease),
}

impl CommandGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the top of the workspace for one sandboxed command, unless an unsandboxed one
    /// runs or waits.
    pub fn try_open(self: &Arc<Self>) -> Option<OpenLease> {
        let mut s = self.lock();
        if s.unconfined > 0 {
            return None;
        }
        s.open += 1;
        Some(OpenLease(self.clone()))
    }

    /// Waits until no sandboxed command has the top open; from the call on, none opens it.
    pub async fn unconfined(self: &Arc<Self>) -> UnconfinedLease {
        self.lock().unconfined += 1;
        // Held from here, so a cancelled wait gives its place back.
        let lease = UnconfinedLease(self.clone());
        loop {
            let notified = self.changed.notified();
            if self.lock().open == 0 {
                return lease;
            }
            notified.await;
        }
    }
}

impl Drop for OpenLease {
    fn drop(&mut self) {
        self.0.lock().open -= 1;
        self.0.changed.notify_waiters();
    }
}

impl Drop for UnconfinedLease {
    fn drop(&mut self) {
        self.0.lock().unconfined -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn unsandboxed_commands_wait_for_open_ones_and_close_the_top_meanwhile() {
        let gate = Arc::new(CommandGate::default());
        let open = gate.try_open().unwrap();
        let waiter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.unconfined().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "it waits while the top is open");
        assert!(
            gate.try_open().is_none(),
            "a waiting unsandboxed command closes the top"
        );
        drop(open);
        let lease = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(gate.try_open().is_none());
        drop(lease);
        assert!(gate.try_open().is_some(), "open again once it is done");
    }

    #[tokio::test]
    async fn a_cancelled_wait_gives_its_place_back() {
        let gate = Arc::new(CommandGate::default());
        let _open = gate.try_open().unwrap();
        let wait = tokio::time::timeout(Duration::from_millis(10), gate.unconfined()).await;
        assert!(wait.is_err());
        assert!(gate.try_open().is_some());
    }
}
