//! What a sandboxed command created under the names at the top of the workspace that hold
//! configuration running programs later (`.git`, `.keel`, `.claude`, `.mcp.json`): keel lets
//! the command create entries at the top (Landlock cannot refuse one name and allow another)
//! and, once every process of the command is gone and before any other command runs or keel
//! reads those names, moves what appeared there into the session's quarantine directory. A
//! `.git` that runs nothing ([`super::gitdir`]) stays: `git init` works in the sandbox.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Most bytes copied into quarantine when it lies on another file system than the workspace
/// (a rename cannot cross file systems); the rest is dropped, and the note says so.
const COPY_BUDGET: u64 = 256 << 20;

/// What became of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A `.git` that runs nothing: it stays where the command made it.
    Kept(PathBuf),
    /// Moved into quarantine.
    Moved {
        from: PathBuf,
        to: PathBuf,
        why: String,
        /// Bytes not kept (copying across file systems passed the budget).
        dropped: u64,
    },
    /// It could not be moved and is still there.
    Stuck { path: PathBuf, why: String, error: String },
}

/// Looks at each of `names` (missing when the command started) and moves what is there now
/// into `dest` (created when needed). Call only once no process of the command is left.
pub fn sweep(names: &[PathBuf], dest: &Path) -> Vec<Outcome> {
    let mut out = Vec::new();
    for name in names {
        let Ok(meta) = name.symlink_metadata() else { continue };
        let is_git = name.file_name().is_some_and(|n| n == ".git");
        let why = if is_git && meta.is_dir() {
            match super::gitdir::check(name) {
                Ok(()) => {
                    out.push(Outcome::Kept(name.clone()));
                    continue;
                }
                Err(reason) => format!("a `.git` that could make git run programs: {reason}"),
            }
        } else if is_git {
            "a `.git` that is not a directory (it would point git at another repository)".to_string()
        } else {
            "configuration that makes keel or other tools run programs".to_string()
        };
        out.push(match move_away(name, dest) {
            Ok((to, dropped)) => Outcome::Moved {
                from: name.clone(),
                to,
                why,
                dropped,
            },
            Err(e) => Outcome::Stuck {
                path: name.clone(),
                why,
                error: e.to_string(),
            },
        });
    }
    out
}

/// Moves `from` to a free name in `dest`: a rename, or across file systems a copy (links as
/// links, no special files, at most [`COPY_BUDGET`] bytes) and a removal.
fn move_away(from: &Path, dest: &Path) -> std::io::Result<(PathBuf, u64)> {
    std::fs::create_dir_all(dest)?;
    let base = from
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut to = dest.join(&base);
    let mut n = 1;
    while to.symlink_metadata().is_ok() {
        n += 1;
        to = dest.join(format!("{base}.{n}"));
    }
    match std::fs::rename(from, &to) {
        Ok(()) => return Ok((to, 0)),
        Err(e) if e.raw_os_error() != Some(libc::EXDEV) => return Err(e),
        Err(_) => {}
    }
    let mut budget = COPY_BUDGET;
    let mut dropped = 0;
    copy_tree(from, &to, &mut budget, &mut dropped)?;
    remove_tree(from)?;
    Ok((to, dropped))
}

fn copy_tree(from: &Path, to: &Path, budget: &mut u64, dropped: &mut u64) -> std::io::Result<()> {
    let meta = from.symlink_metadata()?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        return std::os::unix::fs::symlink(std::fs::read_link(from)?, to);
    }
    if ft.is_dir() {
        std::fs::create_dir(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            copy_tree(&e.path(), &to.join(e.file_name()), budget, dropped)?;
        }
        return Ok(());
    }
    if !ft.is_file() {
        return Ok(());
    }
    if meta.len() > *budget {
        *dropped += meta.len();
        return Ok(());
    }
    *budget -= meta.len();
    use std::os::unix::fs::OpenOptionsExt;
    let mut src = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)?;
    let mut dst = std::fs::File::create(to)?;
    std::io::copy(&mut src, &mut dst)?;
    Ok(())
}

/// Removes a tree the command made, giving its directories back the write right first (a
/// command may leave one unwritable).
fn remove_tree(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::remove_dir_all(path).is_ok() || path.symlink_metadata().is_err() {
        return Ok(());
    }
    fn open_up(p: &Path) {
        let Ok(meta) = p.symlink_metadata() else { return };
        if meta.is_dir() {
            let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700));
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                open_up(&e.path());
            }
        }
    }
    open_up(path);
    std::fs::remove_dir_all(path)
}

/// Where keel records, while a command with the top open runs, what it must look at after the
/// command: should keel die first (killed, crashed), the next keel start does it, before it
/// reads any settings ([`recover`]).
fn pending_dir() -> Option<PathBuf> {
    crate::config::paths::keel_home().map(|h| h.join("sandbox-pending"))
}

#[derive(Serialize, Deserialize)]
struct Record {
    /// The keel process that ran the command, and when it started (pids are reused).
    pid: u32,
    started: u64,
    names: Vec<PathBuf>,
    quarantine: PathBuf,
    /// The command's helper once it started, and its cgroups: what is left of the command is
    /// killed before its names are looked at.
    #[serde(default)]
    helper: Option<(u32, u64)>,
    #[serde(default)]
    cgroups: Vec<PathBuf>,
}

/// When this process started, in clock ticks after boot (`/proc/<pid>/stat`, field 22).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Records that `names` are to be looked at into `dest`; returns the record's file, to remove
/// with [`clear`] once [`sweep`] ran. Best effort: a record that cannot be written only loses
/// the recovery after a crash.
pub fn record(names: &[PathBuf], dest: &Path) -> Option<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = pending_dir()?;
    std::fs::create_dir_all(&dir).ok()?;
    let pid = std::process::id();
    let rec = Record {
        pid,
        started: start_time(pid)?,
        names: names.to_vec(),
        quarantine: dest.to_path_buf(),
        helper: None,
        cgroups: Vec::new(),
    };
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("{pid}-{}-{n}.json", rec.started));
    let text = serde_json::to_vec(&rec).ok()?;
    crate::fsutil::write_atomic(&file, &text).ok()?;
    Some(file)
}

/// Adds the command's helper, once it started, to its record.
pub fn record_helper(record: &Path, helper: libc::pid_t) {
    let Some(mut rec) = std::fs::read(record)
        .ok()
        .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
    else {
        return;
    };
    let Some(started) = start_time(helper as u32) else {
        return;
    };
    rec.helper = Some((helper as u32, started));
    rec.cgroups = super::cgroup::all_dirs(helper);
    if let Ok(text) = serde_json::to_vec(&rec) {
        let _ = crate::fsutil::write_atomic(record, &text);
    }
}

pub fn clear(record: &Path) {
    let _ = std::fs::remove_file(record);
}

/// Looks at what commands of keel processes that are gone left unexamined (their keel was
/// killed while they ran) and moves it into quarantine; returns a line for the user for each
/// name moved or kept. Records of keel processes still running are left to them.
pub fn recover() -> Vec<String> {
    let Some(dir) = pending_dir() else { return Vec::new() };
    let mut lines = Vec::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = e.path();
        let Some(rec) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
        else {
            clear(&path);
            continue;
        };
        if start_time(rec.pid) == Some(rec.started) {
            continue;
        }
        // The command outlives the keel that ran it: it goes first.
        if let Some((helper, started)) = rec.helper
            && start_time(helper) == Some(started)
        {
            let pid = helper as libc::pid_t;
            super::contain::kill_descendants(pid, false);
            // SAFETY: kill(2) of the helper's group and the helper, checked by start time above.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
        }
        super::cgroup::end_at(&rec.cgroups, std::time::Duration::from_secs(5));
        let outcomes = sweep(&rec.names, &rec.quarantine);
        if let Some(n) = note(&outcomes) {
            lines.push(format!(
                "keel: a sandboxed command of an earlier session was interrupted before keel could look at what it \
                 created. {}",
                n.trim_start_matches("[keel sandbox] ")
            ));
        }
        clear(&path);
    }
    lines
}

/// The note for the model about what happened to the names, when anything did.
pub fn note(outcomes: &[Outcome]) -> Option<String> {
    let mut lines = Vec::new();
    for o in outcomes {
        match o {
            Outcome::Kept(p) => lines.push(format!(
                "{} was created by this command and kept: it holds no hooks and no configuration that runs \
                 programs. Later sandboxed commands can read it but not change it (commits need the user's \
                 approval to run outside the sandbox).",
                p.display()
            )),
            Outcome::Moved { from, to, why, dropped } => {
                let mut line = format!(
                    "{} appeared at the top of the workspace and was moved into quarantine at {} ({why}). \
                     Sandboxed commands may not create it; if the user wants it, they can move it back.",
                    from.display(),
                    to.display()
                );
                if *dropped > 0 {
                    line.push_str(&format!(
                        " {dropped} bytes of large files in it were not kept (the quarantine is on another file \
                         system)."
                    ));
                }
                lines.push(line);
            }
            Outcome::Stuck { path, why, error } => lines.push(format!(
                "{} appeared at the top of the workspace ({why}) and keel could NOT move it away ({error}). Tell \
                 the user to remove it before running anything outside the sandbox.",
                path.display()
            )),
        }
    }
    (!lines.is_empty()).then(|| format!("[keel sandbox] {}", lines.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_moved_and_plain_entries_are_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().join("w");
        std::fs::create_dir_all(w.join(".claude")).unwrap();
        std::fs::write(w.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(w.join(".mcp.json"), "{}").unwrap();
        std::fs::write(w.join("notes.txt"), "x").unwrap();
        let q = d.path().join("q");
        let names = [w.join(".claude"), w.join(".mcp.json"), w.join(".keel")];
        let out = sweep(&names, &q);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(!w.join(".claude").exists() && !w.join(".mcp.json").exists());
        assert_eq!(std::fs::read_to_string(q.join(".claude/settings.json")).unwrap(), "{}");
        assert!(w.join("notes.txt").exists());
        let n = note(&out).unwrap();
        assert!(n.contains("quarantine") && n.contains(".mcp.json"), "{n}");
        // A second one of the same name does not replace the first.
        std::fs::write(w.join(".mcp.json"), "again").unwrap();
        sweep(&names, &q);
        assert_eq!(std::fs::read_to_string(q.join(".mcp.json.2")).unwrap(), "again");
        assert_eq!(note(&[]), None);
    }

    #[test]
    fn across_file_systems_a_tree_is_copied_then_removed() {
        let d = tempfile::tempdir().unwrap();
        let from = d.path().join("src");
        std::fs::create_dir_all(from.join("sub")).unwrap();
        std::fs::write(from.join("sub/f"), "data").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", from.join("link")).unwrap();
        let to = d.path().join("dst");
        let (mut budget, mut dropped) = (2, 0);
        copy_tree(&from, &to, &mut budget, &mut dropped).unwrap();
        assert_eq!(dropped, 4, "a file past the budget is not copied");
        assert_eq!(std::fs::read_link(to.join("link")).unwrap(), Path::new("/etc/passwd"));
        remove_tree(&from).unwrap();
        assert!(!from.exists());
    }
}
