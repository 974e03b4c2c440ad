//! Killing a command's whole process tree: every shell runs as the leader of its own process
//! group, so one signal to the group reaches the children it forked too.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process group of a running shell. Dropping an armed group kills it, so a command whose
/// future is dropped (cancellation, a runtime shutting down) leaves nothing behind.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<Pid>,
    /// Lets a forced exit (a second signal) kill the group too.
    _registered: crate::shutdown::GroupGuard,
}

impl ProcessGroup {
    pub fn of(child: &tokio::process::Child) -> ProcessGroup {
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        ProcessGroup {
            pgid: pgid.map(Pid::from_raw),
            _registered: pgid.map_or_else(crate::shutdown::GroupGuard::none, crate::shutdown::GroupGuard::register),
        }
    }

    /// SIGKILL to every process in the group; a group that is already gone is fine.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
    }

    /// Kills the group now and forgets it, so the drop does not signal a group id that may
    /// later be reused.
    pub fn kill_and_disarm(&mut self) {
        self.kill();
        self.pgid = None;
    }

    /// Kills the tree and the group but leaves the command's cgroups to the caller (who reads
    /// them and waits for them to empty, [`crate::sandbox::cgroup::end`]); returns the group id,
    /// which is also the helper's pid the cgroups are named after.
    pub fn kill_tree_and_disarm(&mut self) -> Option<Pid> {
        let pgid = self.pgid.take()?;
        kill_tree(pgid);
        Some(pgid)
    }

    /// As [`Self::kill_tree_and_disarm`], for a leader that has been waited for. No process can
    /// descend from a reaped one (its orphans were given to a subreaper or init when it died),
    /// and its pid may already be another process's, so only the group is signalled: the
    /// members that stayed in it keep its id from being reused. This spares the read of every
    /// process's `/proc` entry that finding descendants costs (about 1.3 ms per command).
    pub fn kill_members_and_disarm(&mut self) -> Option<Pid> {
        let pgid = self.pgid.take()?;
        // ESRCH (no such group) means everything is already gone.
        let _ = killpg(pgid, Signal::SIGKILL);
        Some(pgid)
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills a command's whole tree: first every descendant of its leader (keel's helper, a
/// child subreaper, so processes that left the group with `setsid` are still below it), then
/// the group.
pub fn kill_group(pgid: Pid) {
    kill_tree(pgid);
    // Where the helper could put the command in a cgroup of its own, that catches anything
    // left even if the helper itself was killed before it could clean up.
    crate::sandbox::contain::remove_cgroup(pgid.as_raw());
}

fn kill_tree(pgid: Pid) {
    crate::sandbox::contain::kill_descendants(pgid.as_raw(), false);
    // ESRCH (no such group) means everything is already gone.
    let _ = killpg(pgid, Signal::SIGKILL);
}
