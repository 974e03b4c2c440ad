//! Undo for shell commands. A command can change any file, and its previous content is gone
//! once it ran, so it must be kept *before*: ahead of each foreground Bash call that may write,
//! keel copies the workspace's files into a per-process *stash* (`checkpoints/stash-<pid>-<n>/`).
//! The copies are made by the kernel (`copy_file_range`, a reflink where the file system has
//! them), nothing is hashed; a file is copied again only when the workspace fingerprint shows it
//! changed, so after the first command the cost is that of what changed. The fingerprint is the
//! evidence ledger's (taken after each command anyway), never a second walk; the kept files
//! alone are looked at again (one `lstat` each), because one edited outside keel after that
//! fingerprint was taken must be copied again before the next command changes it.
//!
//! After the command, the ledger says which files the command changed; for each, the stashed
//! copy becomes the change's `before` in the log (moved into `objects/` by its hash) and the new
//! content its `after`. Created files need no copy (their `before` is "absent"). A file keel
//! holds no copy of — beyond the stash's size and count budget, larger than the per-file cap, a
//! symbolic link or special file, or a command keel judged read-only — is logged as
//! [`Snap::NotKept`], and a rewind lists it as not restorable instead of skipping it quietly.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::entry::{self, Entry};
use super::{Checkpoints, Snap, hex_hash};
use crate::fsutil::open;
use crate::workspace::fingerprint::{Snapshot, Stamp};

/// Most bytes the stash holds (`KEEL_CHECKPOINT_SHELL_BYTES`; 0 turns shell undo off).
pub const DEFAULT_STASH_BYTES: u64 = 128 * 1024 * 1024;
/// Most files the stash holds (`KEEL_CHECKPOINT_SHELL_FILES`).
pub const DEFAULT_STASH_FILES: usize = 10_000;

/// The stash: one copy of each workspace file as the fingerprint last saw it.
#[derive(Debug, Default)]
pub(super) struct Stash {
    entries: HashMap<PathBuf, Kept>,
    bytes: u64,
    seq: u64,
    /// Leftovers of dead processes were removed (once per process).
    swept: bool,
    /// The last stash left files out for lack of budget.
    saturated: bool,
    /// Files that changed while kept: likely to change again, so copied first.
    hot: HashSet<PathBuf>,
}

#[derive(Debug)]
struct Kept {
    stamp: Stamp,
    /// The copy of a file (`None` for a link, whose target is kept instead).
    copy: Option<PathBuf>,
    link: Option<String>,
    size: u64,
    mode: u32,
}

/// A file to copy before the command: its path relative to the root and its fingerprint.
#[derive(Debug)]
pub struct Due {
    rel: PathBuf,
    named: bool,
    hot: bool,
    size: u64,
}

pub(super) fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

impl Checkpoints {
    fn stash_dir(&self) -> PathBuf {
        self.dir.join(format!("stash-{}-{}", std::process::id(), self.instance))
    }

    fn with_stash<R>(&self, f: impl FnOnce(&mut Stash) -> R) -> R {
        let mut guard = self.stash.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Which files need a fresh copy before a command, given the fingerprint that stands for
    /// the workspace now (`None`: not taken yet) and the paths keel's tools changed since it was
    /// taken (their stamps in it are stale). Copies of files that changed or vanished are
    /// dropped. Cheap: map lookups, no file is touched; nothing at all once the stash is full
    /// and nothing in it changed.
    pub fn due_before_shell(
        &self,
        last: Option<&Snapshot>,
        touched: &HashMap<String, Option<Stamp>>,
        named: &[PathBuf],
    ) -> Vec<Due> {
        let Some(last) = last else {
            return Vec::new();
        };
        if self.stash_budget.0 == 0 || self.stash_budget.1 == 0 {
            return Vec::new();
        }
        self.with_stash(|stash| {
            let mut dropped: HashSet<PathBuf> = HashSet::new();
            let mut dead = Vec::new();
            let mut freed = 0u64;
            stash.entries.retain(|rel, kept| {
                let fresh = last.get(rel) == Some(&kept.stamp) && !touched.contains_key(rel.to_string_lossy().as_ref());
                if !fresh {
                    dead.extend(kept.copy.clone());
                    freed += kept.size;
                    dropped.insert(rel.clone());
                }
                fresh
            });
            stash.bytes = stash.bytes.saturating_sub(freed);
            stash.hot.extend(dropped.iter().cloned());
            for copy in dead {
                let _ = std::fs::remove_file(copy);
            }
            let named_due = named
                .iter()
                .any(|n| last.get(n).is_some() && !stash.entries.contains_key(n));
            if stash.saturated && dropped.is_empty() && !named_due {
                return Vec::new();
            }
            last.iter()
                .filter(|(rel, _)| !stash.entries.contains_key(*rel))
                .map(|(rel, stamp)| Due {
                    named: named.iter().any(|n| n == rel),
                    // A file that changed before is likely to change again.
                    hot: stash.hot.contains(rel),
                    rel: rel.clone(),
                    size: stamp.size,
                })
                .collect()
        })
    }

    /// Looks at every kept file again (one `lstat` each, a few threads): a file changed since
    /// the fingerprint was taken — in an editor, by a background shell — has a stale copy, which
    /// is dropped; it is returned to be copied again, so the change a command makes next is
    /// logged against what the file really held before it. Blocking.
    pub fn revalidate(&self, root: &Path) -> Vec<Due> {
        let kept: Vec<(PathBuf, Stamp)> =
            self.with_stash(|s| s.entries.iter().map(|(r, k)| (r.clone(), k.stamp)).collect());
        if kept.is_empty() {
            return Vec::new();
        }
        let threads = crate::fsutil::walk::cores().clamp(1, 4);
        let chunk = kept.len().div_ceil(threads);
        let stale: Vec<(PathBuf, u64)> = std::thread::scope(|scope| {
            let workers: Vec<_> = kept
                .chunks(chunk.max(1))
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .filter_map(|(rel, stamp)| {
                                let now = std::fs::symlink_metadata(root.join(rel)).ok();
                                match now.map(|m| Stamp::of(&m)) {
                                    Some(n) if n == *stamp => None,
                                    n => Some((rel.clone(), n.map_or(0, |n| n.size))),
                                }
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
        });
        if stale.is_empty() {
            return Vec::new();
        }
        self.with_stash(|s| {
            for (rel, _) in &stale {
                if let Some(k) = s.entries.remove(rel) {
                    s.bytes = s.bytes.saturating_sub(k.size);
                    if let Some(c) = k.copy {
                        let _ = std::fs::remove_file(c);
                    }
                }
                s.hot.insert(rel.clone());
            }
            s.saturated = false;
        });
        stale
            .into_iter()
            .map(|(rel, size)| Due {
                rel,
                named: false,
                hot: true,
                size,
            })
            .collect()
    }

    /// Copies the due files into the stash: files the command names first, then files that
    /// changed before, then the smallest, as far as the budget goes. Blocking; run it off the
    /// async runtime.
    pub fn stash_before_shell(&self, root: &Path, mut due: Vec<Due>) {
        let (budget_bytes, budget_files) = self.stash_budget;
        if due.is_empty() {
            return;
        }
        due.sort_by_key(|d| (!d.named, !d.hot, d.size));
        let first_seq = self.with_stash(|s| {
            if !s.swept {
                s.swept = true;
                sweep_dead_stashes(&self.dir);
            }
            let first = s.seq;
            s.seq += due.len() as u64;
            first
        });
        let dir = self.stash_dir();
        let Ok(root_fd) = nix::fcntl::open(
            root,
            nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        ) else {
            return;
        };
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        // Rounds: what fits the budget is copied; entries that could not be (not regular files)
        // leave room for the next candidates.
        let mut rest = due.into_iter().enumerate().peekable();
        let mut saturated = false;
        loop {
            let (mut bytes, mut files) = self.with_stash(|s| (s.bytes, s.entries.len()));
            let mut chosen = Vec::new();
            while let Some((_, d)) = rest.peek() {
                if files >= budget_files {
                    saturated = true;
                    break;
                }
                let Some((i, d)) = (if d.size > self.max_bytes || bytes + d.size > budget_bytes {
                    saturated = true;
                    rest.next();
                    None
                } else {
                    rest.next()
                }) else {
                    continue;
                };
                bytes += d.size;
                files += 1;
                chosen.push((dir.join((first_seq + i as u64 + 1).to_string()), d.rel));
            }
            if chosen.is_empty() {
                break;
            }
            let wanted = chosen.len();
            let kept = copy_all(&root_fd, root, chosen, self.max_bytes);
            let got = kept.len();
            self.with_stash(|s| {
                for (rel, k) in kept {
                    s.bytes += k.size;
                    if let Some(old) = s.entries.insert(rel, k) {
                        s.bytes = s.bytes.saturating_sub(old.size);
                        if let Some(c) = old.copy {
                            let _ = std::fs::remove_file(c);
                        }
                    }
                }
            });
            if got == wanted || rest.peek().is_none() {
                break;
            }
        }
        self.with_stash(|s| s.saturated = saturated);
    }

    /// Logs what a shell command changed (paths relative to `root`) under the current point.
    /// Returns, for the tool result, the changed files keel kept no previous content of, and
    /// why.
    pub fn record_shell(
        &self,
        root: &Path,
        added: &[PathBuf],
        modified: &[PathBuf],
        removed: &[PathBuf],
    ) -> Vec<(PathBuf, String)> {
        let mut lost = Vec::new();
        if !(added.is_empty() && modified.is_empty() && removed.is_empty()) {
            // The workspace changed: a full stash may have better candidates now.
            self.with_stash(|s| s.saturated = false);
        }
        let changed = added
            .iter()
            .map(|p| (p, true))
            .chain(modified.iter().chain(removed).map(|p| (p, false)));
        for (rel, is_new) in changed {
            let path = root.join(rel);
            let before = if is_new { Snap::Absent } else { self.take_stashed(rel) };
            if let Snap::NotKept { why, .. } = &before {
                lost.push((path.clone(), why.clone()));
            }
            let after = self.snap_now(&path);
            let by = "Bash".to_string();
            let change = super::Change {
                point: 0,
                path,
                before,
                after,
                by,
            };
            if let Err(e) = self.log_change(change) {
                lost.push((root.join(rel), e.to_string()));
            }
        }
        lost
    }

    /// The stashed copy of `rel` as a stored object (the stash entry is used up).
    fn take_stashed(&self, rel: &Path) -> Snap {
        let Some(kept) = self.with_stash(|s| {
            // Changed: there is room again, and the file is likely to change again.
            s.saturated = false;
            s.hot.insert(rel.to_path_buf());
            let k = s.entries.remove(rel)?;
            s.bytes = s.bytes.saturating_sub(k.size);
            Some(k)
        }) else {
            return Snap::NotKept {
                why: "keel held no copy of it (beyond the undo budget, too big, not a regular file, or changed \
                      by a command keel judged read-only)"
                    .into(),
            };
        };
        let (Some(copy), None) = (&kept.copy, &kept.link) else {
            return match kept.link {
                Some(target) => Snap::Link {
                    hash: entry::link_hash(&target),
                    target,
                },
                None => Snap::NotKept {
                    why: "its copy is missing".into(),
                },
            };
        };
        let stored = std::fs::read(copy).and_then(|bytes| {
            let hash = hex_hash(&bytes);
            let target = self.dir.join("objects").join(&hash);
            if target.is_file() {
                let _ = std::fs::remove_file(copy);
            } else {
                std::fs::create_dir_all(self.dir.join("objects"))?;
                // The copy was made without syncing; it becomes durable as an object now that
                // it is the only record of the old content.
                std::fs::File::open(copy)?.sync_all()?;
                std::fs::rename(copy, &target)?;
            }
            Ok(Snap::Stored {
                hash,
                size: bytes.len() as u64,
                mode: kept.mode,
            })
        });
        stored.unwrap_or_else(|e| Snap::NotKept {
            why: format!("its copy could not be kept ({e})"),
        })
    }

    /// The file as it is now, for a change's `after`: stored when small enough, else its hash.
    fn snap_now(&self, path: &Path) -> Snap {
        let (mut file, meta) = match entry::read(path) {
            Ok(Entry::Absent) => return Snap::Absent,
            Ok(Entry::Link(target)) => {
                return Snap::Link {
                    hash: entry::link_hash(&target),
                    target,
                };
            }
            Ok(Entry::File(f, m)) => (f, m),
            Err(e) => return Snap::NotKept { why: e.to_string() },
        };
        if meta.len() > self.max_bytes {
            return match hash_stream(&mut file) {
                Ok((hash, size)) => Snap::TooBig { hash, size },
                Err(e) => Snap::NotKept { why: e.to_string() },
            };
        }
        match open::read_capped(&mut file, self.max_bytes) {
            // Storing the new content is a convenience (diffs); its hash is what counts.
            Ok(Ok(bytes)) => self
                .snap(Some(&bytes), meta.mode() & 0o7777, false)
                .unwrap_or_else(|_| Snap::TooBig {
                    hash: hex_hash(&bytes),
                    size: bytes.len() as u64,
                }),
            Ok(Err(_)) => Snap::NotKept {
                why: "it grew while it was read".into(),
            },
            Err(e) => Snap::NotKept { why: e.to_string() },
        }
    }
}

pub(super) fn hash_stream(file: &mut std::fs::File) -> std::io::Result<(String, u64)> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    Ok((h.finalize().iter().map(|b| format!("{b:02x}")).collect(), size))
}

/// Copies `(copy, rel)` pairs, a few threads overlapping the system calls.
fn copy_all(
    root_fd: &std::os::fd::OwnedFd,
    root: &Path,
    chosen: Vec<(PathBuf, PathBuf)>,
    cap: u64,
) -> Vec<(PathBuf, Kept)> {
    let threads = crate::fsutil::walk::cores().clamp(2, 4).min(chosen.len().div_ceil(64));
    let chunk = chosen.len().div_ceil(threads.max(1));
    std::thread::scope(|scope| {
        let workers: Vec<_> = chosen
            .chunks(chunk.max(1))
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .filter_map(|(copy, rel)| copy_file(root_fd, root, rel, copy, cap).map(|k| (rel.clone(), k)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    })
}

/// Copies one regular file, opened below the root with no symbolic link followed, to `copy`;
/// `None` when it is not a regular file, too big, or changed while it was copied.
fn copy_file(root_fd: &std::os::fd::OwnedFd, root: &Path, rel: &Path, copy: &Path, cap: u64) -> Option<Kept> {
    use nix::fcntl::{AtFlags, OFlag};
    use std::os::fd::AsFd;
    // Looked at before it is opened: a FIFO or a device is never opened at all.
    let st = nix::sys::stat::fstatat(root_fd.as_fd(), rel, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFLNK => return keep_link(&root.join(rel)),
        _ => return None,
    }
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let mut src = std::fs::File::from(open::open_beneath(root_fd.as_fd(), rel, flags).ok()?);
    let meta = src.metadata().ok()?;
    if !meta.is_file() || meta.ino() != st.st_ino || meta.len() > cap {
        return None;
    }
    let mut out = std::fs::File::create(copy).ok()?;
    let copied = std::io::copy(&mut src, &mut out);
    let now = src.metadata().ok()?;
    if copied.ok() != Some(meta.len()) || Stamp::of(&now) != Stamp::of(&meta) {
        let _ = std::fs::remove_file(copy);
        return None;
    }
    Some(Kept {
        stamp: Stamp::of(&meta),
        copy: Some(copy.to_path_buf()),
        link: None,
        size: meta.len(),
        mode: meta.mode() & 0o7777,
    })
}

/// Keeps a symbolic link's target (the link itself, looked at without following it).
fn keep_link(path: &Path) -> Option<Kept> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let Ok(Entry::Link(target)) = entry::read(path) else {
        return None;
    };
    Some(Kept {
        stamp: Stamp::of(&meta),
        copy: None,
        link: Some(target),
        size: 0,
        mode: 0,
    })
}

/// Removes the stashes of keel processes that are gone (a crash leaves them behind).
fn sweep_dead_stashes(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("stash-"))
            .and_then(|p| p.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        let has_stash = self.with_stash(|s| s.seq > 0);
        if has_stash {
            let _ = std::fs::remove_dir_all(self.stash_dir());
        }
    }
}

/// Whether every part of `command` only reads (so keeping copies before it is wasted work).
pub fn only_reads(command: &str) -> bool {
    crate::shell::plan::CommandPlan::new(command).only_reads()
}

/// Before a tool call: for a foreground shell command that may write, brings the stash up to
/// date. Returns whether the call is such a command (its changes are logged by [`after`]).
pub async fn before(
    root: &Path,
    store: &Arc<crate::checkpoint::Checkpoints>,
    evidence: &crate::evidence::Evidence,
    watch: &crate::evidence::Watch,
    confinement: crate::sandbox::Confinement,
) -> bool {
    let crate::evidence::Watch::Bash { plan, cwd, .. } = watch else {
        return false;
    };
    if confinement == crate::sandbox::Confinement::ReadOnly || plan.only_reads() {
        return true;
    }
    let root = root.to_path_buf();
    let named: Vec<PathBuf> = plan
        .segments
        .iter()
        .flat_map(|seg| seg.words.iter().chain(&seg.writes))
        .filter_map(|w| {
            let p = crate::fsutil::paths::resolve(cwd, w);
            p.strip_prefix(&root).ok().map(Path::to_path_buf)
        })
        .collect();
    let store = store.clone();
    let due = evidence.with_last(|last, touched| store.due_before_shell(last, touched, &named));
    let _ = tokio::task::spawn_blocking(move || {
        let mut due = due;
        due.extend(store.revalidate(&root));
        store.stash_before_shell(&root, due);
    })
    .await;
    true
}

/// After the call: logs the command's changes (what the evidence ledger found it changed) as
/// checkpoint changes, and tells the model which of them cannot be rewound.
pub async fn after(
    root: &Path,
    store: &Arc<crate::checkpoint::Checkpoints>,
    changes: Option<crate::evidence::CommandChanges>,
    output: &mut crate::types::tool::ToolOutput,
) {
    let Some(changes) = changes else {
        return;
    };
    let mut notes = Vec::new();
    if changes.uncertain {
        notes.push(
            "Note: the workspace has more files than keel fingerprints, so changes this command made beyond \
             that limit cannot be rewound."
                .to_string(),
        );
    }
    if changes.added.is_empty() && changes.modified.is_empty() && changes.removed.is_empty() {
        for n in notes {
            crate::evidence::append_note(output, &n);
        }
        return;
    }
    let store = store.clone();
    let root = root.to_path_buf();
    let lost = tokio::task::spawn_blocking(move || {
        store.record_shell(&root, &changes.added, &changes.modified, &changes.removed)
    })
    .await
    .unwrap_or_default();
    if !lost.is_empty() {
        let names: Vec<String> = lost.iter().take(10).map(|(p, _)| p.display().to_string()).collect();
        let more = lost.len().saturating_sub(names.len());
        notes.push(format!(
            "Note: keel held no earlier copy of {}{}, changed by this command, so that change cannot be rewound ({}).",
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
            lost[0].1
        ));
    }
    for n in notes {
        crate::evidence::append_note(output, &n);
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
