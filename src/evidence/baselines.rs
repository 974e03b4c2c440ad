//! What the weakened-test check reads and compares: baselines of test files (kept before a
//! change, or the committed content), the files' text after it, and the comparison that flags
//! a weaker test file. Separate from the watch around each call, which only asks for it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::ledger::{Ledger, Weakened};
use super::{Evidence, weakened};
use crate::fsutil::open::{ReadError, read_file_capped};

/// Test files larger than this are not kept as a baseline (nor compared).
const MAX_BASELINE_BYTES: usize = 512 * 1024;

impl Evidence {
    /// Baselines to keep for `files` (relative path, path): those not kept yet that may hold
    /// tests, read with no lock held. Every Edit and Write comes here: a file that cannot hold
    /// tests is not read at all.
    pub(super) fn baselines_wanted(&self, files: Vec<(String, PathBuf)>) -> Vec<(String, String)> {
        let wanted: Vec<(String, PathBuf)> = {
            let s = self.lock();
            files
                .into_iter()
                .filter(|(rel, path)| !s.ledger.baselines.contains_key(rel) && weakened::may_hold_tests(path))
                .collect()
        };
        wanted
            .into_iter()
            .filter_map(|(rel, path)| baseline_text(&path).map(|t| (rel, t)))
            .collect()
    }

    /// What the weakened-test check of `rels` reads, read with no lock held: each file's text
    /// now, and the committed content of those that may hold tests and have no baseline yet.
    pub(super) async fn prefetch(&self, rels: &[String]) -> Prefetched {
        let now = rels
            .iter()
            .filter(|r| may_weaken(&self.cwd.join(r)))
            .map(|r| (r.clone(), text_now(&self.cwd.join(r))))
            .collect();
        Prefetched {
            now,
            committed: self.committed(rels).await,
            added: HashSet::new(),
        }
    }

    /// The committed contents of those of `rels` that may hold tests and have no baseline yet,
    /// read in a blocking task with no lock held (the weakened-test check compares against them).
    pub(super) async fn committed(&self, rels: &[String]) -> HashMap<String, String> {
        // Outside a repository git has nothing to say (a few stats instead of three processes).
        if !crate::context::git::may_be_repository(&self.cwd, std::env::var_os("GIT_DIR").is_some()) {
            return HashMap::new();
        }
        // Read before the lock is taken (files of the repository, however small).
        let stamp = crate::context::git::head_stamp(&self.cwd);
        let wanted: Vec<String> = {
            let mut s = self.lock();
            let wanted: Vec<String> = rels
                .iter()
                .filter(|r| !s.ledger.baselines.contains_key(r.as_str()) && !s.heads_asked.contains(r.as_str()))
                .filter(|r| {
                    let p = self.cwd.join(r);
                    weakened::is_test_file(&p) || p.extension().is_some_and(|e| e == "rs")
                })
                .cloned()
                .collect();
            if s.heads_asked.is_empty() {
                s.head_stamp = stamp;
            }
            s.heads_asked.extend(wanted.iter().cloned());
            wanted
        };
        if wanted.is_empty() {
            return HashMap::new();
        }
        let blobs = self.blobs.clone();
        tokio::task::spawn_blocking(move || {
            wanted
                .into_iter()
                .filter_map(|r| git_head(&blobs, &r).map(|text| (r, text)))
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Compares a changed test file with its baseline; returns the note for the tool result
    /// when this change made it weaker.
    pub(super) fn check_weakened(
        &self,
        ledger: &mut Ledger,
        rel: &str,
        path: &Path,
        by: &str,
        known: &(dyn Fn(&Path) -> Option<String> + Sync),
        read: &Prefetched,
    ) -> Option<String> {
        if !may_weaken(path) {
            return None;
        }
        let now = read.now.get(rel)?.clone()?;
        let committed = &read.committed;
        let base = match ledger.baselines.get(rel) {
            Some(b) => b.clone(),
            None => {
                // A configuration or snapshot file the command created is measured against its
                // absence.
                let absent = || (read.added.contains(rel) && weakened::is_suite_file(path)).then(String::new);
                let b = known(path).or_else(|| committed.get(rel).cloned()).or_else(absent)?;
                if !weakened::holds_tests(path, &b, &now) {
                    return None;
                }
                ledger.baselines.insert(rel.to_string(), b.clone());
                b
            }
        };
        if !weakened::holds_tests(path, &base, &now) {
            return None;
        }
        let w = weakened::compare(path, &base, &now);
        let previous = ledger.weakened.get(rel).map(|x| x.weakening).unwrap_or_default();
        if w.is_empty() {
            ledger.weakened.remove(rel);
            return None;
        }
        ledger.weakened.insert(
            rel.to_string(),
            Weakened {
                file: rel.to_string(),
                weakening: w,
                by: by.to_string(),
            },
        );
        w.exceeds(&previous).then(|| {
            format!(
                "[keel: weakened tests] {rel} is now weaker than when this session began: {}. keel records this in \
                 its verification ledger; a passing run no longer shows that the original tests pass. Restore them, \
                 or tell the user exactly what you weakened and why.",
                w.describe()
            )
        })
    }
}

/// What the weakened-test check reads of the files of one call.
pub(super) struct Prefetched {
    /// Each file's text now (`None`: unreadable; empty: removed).
    pub(super) now: HashMap<String, Option<String>>,
    pub(super) committed: HashMap<String, String>,
    /// Files the command created (absent from the fingerprint before it).
    pub(super) added: HashSet<String>,
}

/// Whether a change of `path` can weaken tests (a test file, or Rust source with its tests
/// inline).
pub(super) fn may_weaken(path: &Path) -> bool {
    weakened::is_test_file(path) || path.extension().is_some_and(|e| e == "rs")
}

/// A file's text for the weakened-test check: never a FIFO or a device a repository planted
/// (the read would block), never huge; a removed file is empty.
fn text_now(path: &Path) -> Option<String> {
    match read_file_capped(path, MAX_BASELINE_BYTES as u64) {
        Ok(b) => String::from_utf8(b).ok(),
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Some(String::new()),
        Err(_) => None,
    }
}

/// What a file holds now, as a baseline for the weakened-test check, when it holds tests (a
/// configuration or snapshot file that does not exist yet: empty, what it will add counts).
pub(super) fn baseline_text(path: &Path) -> Option<String> {
    let bytes = match read_file_capped(path, MAX_BASELINE_BYTES as u64) {
        Ok(b) => b,
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound && weakened::is_suite_file(path) => {
            return Some(String::new());
        }
        Err(_) => return None,
    };
    let text = String::from_utf8(bytes).ok()?;
    weakened::holds_tests(path, &text, "").then_some(text)
}

/// The committed content of a file, when the workspace is a git repository: the blob as
/// stored, read with no filter or textconv of the repository's run (see
/// `context::git::Blobs`); a file over the baseline cap has none.
fn git_head(blobs: &crate::context::git::Blobs, rel: &str) -> Option<String> {
    String::from_utf8(blobs.committed(rel, MAX_BASELINE_BYTES)?).ok()
}
