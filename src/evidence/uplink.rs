//! A sub-agent's evidence: its own copy of the parent's ledger, with its own verification turn,
//! and one channel up. Each change and run the child records is handed to the parent as it
//! happens ([`Evidence::absorb`]): the parent's ledger numbers them in its own versions, so the
//! parent's stop gate judges the child's work, while the child's turn never touches the
//! parent's turn start.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{Evidence, State};

/// What a child has handed up so far, and what it last saw of its parent.
pub(super) struct Uplink {
    parent: Arc<Evidence>,
    /// Changes and runs of the child's ledger already handed up.
    changes: usize,
    runs: usize,
    /// The child's ledger versions and the parent's versions they became.
    versions: BTreeMap<u64, u64>,
    /// The weakened-test entries as last handed up (an entry that changed or disappeared
    /// since is handed up; the parent's own entries are left alone).
    weakened: BTreeMap<String, super::ledger::Weakened>,
    /// The child's fingerprint count when it last handed one up.
    last_taken: u64,
    /// The parent's fingerprint count when the child last took the parent's.
    parent_taken: u64,
}

impl Evidence {
    /// The evidence of a sub-agent working in the same tree as this engine: a copy of the
    /// ledger and the latest fingerprint, a turn of its own, nothing saved to disk; what it
    /// records reaches this ledger through [`Evidence::absorb`].
    pub fn for_subagent(parent: &Arc<Evidence>, session_dir: &Path) -> Evidence {
        let p = parent.lock();
        let versions = BTreeMap::from([(p.ledger.version, p.ledger.version)]);
        let state = State {
            ledger: p.ledger.clone(),
            command_changes: None,
            last: p.last.clone(),
            touched: p.touched.clone(),
            turn_start: p.ledger.version,
            sends: 0,
            write_error: None,
            saved: super::store::Saved {
                baselines: p.ledger.baselines.len(),
                ..Default::default()
            },
            uplink: Some(Uplink {
                parent: parent.clone(),
                changes: p.ledger.changes.len(),
                runs: p.ledger.runs.len(),
                versions,
                weakened: p.ledger.weakened.clone(),
                last_taken: 0,
                parent_taken: p.last_taken,
            }),
            last_taken: 0,
            heads_asked: p.heads_asked.clone(),
            head_stamp: p.head_stamp.clone(),
            digest_unchecked: false,
        };
        drop(p);
        Evidence {
            cwd: parent.cwd.clone(),
            // The parent's watcher: one set of watches and one first walk per tree.
            watcher: parent.watcher.clone(),
            config: parent.config.clone(),
            store: None,
            log_dir: session_dir.join("evidence"),
            blobs: parent.blobs.clone(),
            state: Mutex::new(state),
        }
    }

    /// Hands what the child recorded since the last call to its parent, and on up the chain
    /// (nothing for a ledger that is no sub-agent's).
    pub(super) fn hand_up(s: &mut State) {
        let Some(mut up) = s.uplink.take() else {
            return;
        };
        let parent = up.parent.clone();
        parent.absorb(s, &mut up);
        s.uplink = Some(up);
    }

    /// Before a sub-agent's command: the parent's newer fingerprint (its own or a sibling's
    /// command) and the paths keel's tools touched since stand for the tree here too, so
    /// their changes are not counted as changes from outside. Locks child, then parent.
    pub(super) fn pull_down(s: &mut State) {
        let Some(up) = s.uplink.as_mut() else {
            return;
        };
        let p = up.parent.lock();
        if p.last_taken != up.parent_taken {
            up.parent_taken = p.last_taken;
            s.last = p.last.clone();
            s.touched = p.touched.clone();
        } else {
            s.touched.extend(p.touched.iter().map(|(k, v)| (k.clone(), *v)));
        }
    }

    /// Saves the ledger of the engine at the top of a sub-agent chain (a sub-agent's own is
    /// kept in memory only).
    pub(super) fn flush_up(s: &State) {
        if let Some(up) = &s.uplink {
            up.parent.flush();
        }
    }

    /// Takes a child's new changes and runs into this ledger, in the order they happened, with
    /// this ledger's versions; its fingerprint and the paths its tools touched come along, so
    /// the next command here does not count the child's work as changes from outside. Then
    /// hands them on up, when this ledger is a sub-agent's too.
    fn absorb(&self, child: &State, up: &mut Uplink) {
        let mut s = self.lock();
        for c in &child.ledger.changes[up.changes.min(child.ledger.changes.len())..] {
            let v = s.ledger.change(c.paths.clone(), c.source.clone(), c.uncertain);
            up.versions.insert(c.version, v);
        }
        up.changes = child.ledger.changes.len();
        for r in &child.ledger.runs[up.runs.min(child.ledger.runs.len())..] {
            let mut run = r.clone();
            // A run against the child's tree as it is now tested this tree as it is now (with
            // whatever the parent changed meanwhile); an older version maps as recorded.
            run.version = if r.version == child.ledger.version {
                s.ledger.version
            } else {
                up.versions.get(&r.version).copied().unwrap_or(s.ledger.version)
            };
            s.ledger.push_run(run);
        }
        up.runs = child.ledger.runs.len();
        for (file, w) in &child.ledger.weakened {
            if up.weakened.get(file) != Some(w) {
                s.ledger.weakened.insert(file.clone(), w.clone());
            }
        }
        for gone in up.weakened.keys().filter(|f| !child.ledger.weakened.contains_key(*f)) {
            s.ledger.weakened.remove(gone);
        }
        up.weakened = child.ledger.weakened.clone();
        for (file, text) in &child.ledger.baselines {
            s.ledger.baselines.entry(file.clone()).or_insert_with(|| text.clone());
        }
        // A command in the child took a new fingerprint: it stands for the tree here too, with
        // the paths the child's tools touched since.
        if child.last_taken != up.last_taken {
            up.last_taken = child.last_taken;
            s.last = child.last.clone();
            s.last_taken += 1;
            s.touched = child.touched.clone();
            if child.ledger.digest.is_some() {
                s.ledger.digest = child.ledger.digest;
            }
            // The fingerprint just handed up is the child's own, not news to pull down.
            up.parent_taken = s.last_taken;
        } else {
            s.touched.extend(child.touched.iter().map(|(k, v)| (k.clone(), *v)));
        }
        Evidence::hand_up(&mut s);
    }
}

#[cfg(test)]
#[path = "uplink_tests.rs"]
mod tests;
