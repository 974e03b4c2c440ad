//! Temporary files of atomic writes that a killed keel left behind.
//!
//! The rename that makes a write atomic needs the temporary file in the target's directory,
//! where `git add -A` would pick it up if keel died before renaming it. So every temporary
//! file is named after its owner (`.keel-write-<pid>-<random>`) and noted, before it is
//! created, in a journal of the owning process under keel's home
//! (`pending-writes/<pid>-<start time>`). At startup keel removes the temporary files listed
//! by journals whose process is gone, then the journals.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// How every temporary file of an atomic write begins.
pub const TEMP_PREFIX: &str = ".keel-write-";
const JOURNAL_DIR: &str = "pending-writes";

static JOURNAL: OnceLock<Mutex<Journal>> = OnceLock::new();

struct Journal {
    path: PathBuf,
    file: Option<std::fs::File>,
}

/// A fresh temporary name for this process.
pub fn temp_name() -> String {
    format!("{TEMP_PREFIX}{}-{:016x}", std::process::id(), fastrand::u64(..))
}

/// At startup: removes what dead keel processes left, then journals this process's files.
pub fn start(keel_home: &Path) {
    let removed = sweep(keel_home);
    if removed > 0 {
        crate::debug::log(format!(
            "removed {removed} temporary file(s) left by a keel that was killed while writing"
        ));
    }
    install(keel_home);
}

/// Starts journaling this process's temporary files under `keel_home` (once per process).
pub fn install(keel_home: &Path) {
    let Some(start) = start_time(std::process::id()) else {
        return;
    };
    let path = keel_home
        .join(JOURNAL_DIR)
        .join(format!("{}-{start}", std::process::id()));
    let _ = JOURNAL.set(Mutex::new(Journal { path, file: None }));
}

/// Notes a temporary file about to be created (best effort: a write never fails for it).
pub fn record(dir: &Path, name: &str) {
    let Some(journal) = JOURNAL.get() else {
        return;
    };
    let mut j = journal.lock().unwrap_or_else(|p| p.into_inner());
    if j.file.is_none() {
        if let Some(parent) = j.path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        j.file = std::fs::OpenOptions::new().create(true).append(true).open(&j.path).ok();
    }
    if let Some(f) = j.file.as_mut() {
        use std::os::unix::ffi::OsStrExt;
        let mut line = dir.join(name).as_os_str().as_bytes().to_vec();
        line.push(b'\n');
        let _ = f.write_all(&line);
    }
}

/// Removes the temporary files of dead keel processes; returns how many were removed.
pub fn sweep(keel_home: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(keel_home.join(JOURNAL_DIR)) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(parse_owner) else {
            continue;
        };
        if start_time(pid).is_some_and(|s| s == start) {
            continue; // still running
        }
        if let Ok(text) = std::fs::read(entry.path()) {
            for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                use std::os::unix::ffi::OsStrExt;
                let p = Path::new(std::ffi::OsStr::from_bytes(line));
                if is_owned_temp(p, pid) && remove_regular(p) {
                    removed += 1;
                }
            }
        }
        let _ = std::fs::remove_file(entry.path());
    }
    removed
}

fn parse_owner(name: &str) -> Option<(u32, u64)> {
    let (pid, start) = name.split_once('-')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Only keel's own temporary files of that process are ever removed.
fn is_owned_temp(p: &Path, pid: u32) -> bool {
    p.is_absolute()
        && p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .is_some_and(|(owner, _)| owner == pid.to_string())
}

fn remove_regular(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()) && std::fs::remove_file(p).is_ok()
}

/// A process's start time (clock ticks since boot, from /proc), which tells a live owner
/// from a later process that reuses its id.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_temp_files_of_dead_owners_only() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let work = t.path().join("work");
        std::fs::create_dir_all(home.join(JOURNAL_DIR)).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        // A process that has exited: its id is free (or reused with another start time).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = work.join(format!("{TEMP_PREFIX}{dead}-00ff"));
        let other = work.join(format!("{TEMP_PREFIX}{}-00ff", dead + 1));
        let own = work.join(format!("{TEMP_PREFIX}{}-00ff", std::process::id()));
        for p in [&stale, &other, &own] {
            std::fs::write(p, "partial").unwrap();
        }
        let list = |paths: &[&PathBuf]| paths.iter().map(|p| format!("{}\n", p.display())).collect::<String>();
        // The dead owner's journal also names a file that is not its own: left alone.
        std::fs::write(
            home.join(JOURNAL_DIR).join(format!("{dead}-1")),
            list(&[&stale, &other]),
        )
        .unwrap();
        let me = std::process::id();
        std::fs::write(
            home.join(JOURNAL_DIR).join(format!("{me}-{}", start_time(me).unwrap())),
            list(&[&own]),
        )
        .unwrap();
        assert_eq!(sweep(&home), 1);
        assert!(!stale.exists());
        assert!(other.exists() && own.exists());
        assert!(!home.join(JOURNAL_DIR).join(format!("{dead}-1")).exists());
    }

    #[test]
    fn start_time_survives_odd_command_names() {
        assert!(start_time(std::process::id()).is_some());
        assert!(start_time(u32::MAX).is_none());
    }
}
