//! Directory walks for keel's listings and searches (Glob, Grep, the `@` file index, the
//! context report), honouring ignore files — safely.
//!
//! The `ignore` crate reads each directory's `.gitignore` and `.ignore` as it enters it, by
//! path and to the end. A repository can commit `.gitignore` as a link to `/dev/zero` (memory
//! grows until the process dies) or to a FIFO (the walk blocks forever). So a directory whose
//! ignore file is not a regular file of sane size is not entered (and counted, so the result
//! says so); when the walk's own root has one, the walk is refused with a clear message.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::{DirEntry, WalkBuilder};

/// The ignore files the walker reads in every directory.
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];
/// Larger ignore files are treated as hostile (real ones are a few KB).
const MAX_IGNORE_BYTES: u64 = 1 << 20;

/// The CPUs this process may use, read once: `available_parallelism` reads the cgroup's
/// quota files each time it is asked, which every Grep and every walk did.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// An ignore file in `dir` the walker must not read, and why.
pub fn bad_ignore_file(dir: &Path) -> Option<(PathBuf, String)> {
    let git_exclude = dir.join(".git/info/exclude");
    let names = IGNORE_FILES
        .iter()
        .map(|n| dir.join(n))
        .chain(std::iter::once(git_exclude));
    for p in names {
        match std::fs::metadata(&p) {
            Ok(m) if m.is_file() && m.len() <= MAX_IGNORE_BYTES => {}
            Ok(m) if m.is_file() => return Some((p, format!("larger than {} KB", MAX_IGNORE_BYTES / 1024))),
            Ok(m) => return Some((p, crate::fsutil::open::kind_of(&m).to_string())),
            Err(_) => {}
        }
    }
    None
}

/// A walk builder with the safety filter in place, and the count of directories it skipped.
pub struct SafeWalk {
    pub builder: WalkBuilder,
    pub skipped: Arc<AtomicUsize>,
}

impl SafeWalk {
    pub fn skipped(&self) -> usize {
        self.skipped.load(Ordering::Relaxed)
    }

    /// The note a result carries when directories were skipped.
    pub fn note(&self) -> Option<String> {
        let n = self.skipped();
        (n > 0).then(|| {
            format!(
                "[{n} director{} not searched: an ignore file there (.gitignore, .ignore) is not a regular file \
                 or is too large; list them with Bash `ls -la`]",
                if n == 1 { "y" } else { "ies" }
            )
        })
    }
}

/// A walk of `root` (hidden files included, ignore files honoured outside git repositories
/// too) that enters no directory with a hostile ignore file; `keep` is the caller's own
/// filter. `Err` says why `root` itself cannot be walked.
pub fn safe_walk(root: &Path, keep: impl Fn(&DirEntry) -> bool + Send + Sync + 'static) -> Result<SafeWalk, String> {
    if let Some((file, why)) = bad_ignore_file(root) {
        return Err(format!(
            "{} is {why}, so keel does not read it; its directory cannot be searched while ignore files are \
             honoured. Remove or fix it, or list files with Bash.",
            file.display()
        ));
    }
    // Ignore files of the directories above are read as well; one that is unsafe turns that
    // reading off (the walk still honours everything at and below the root).
    let parents_ok = root.ancestors().skip(1).all(|d| bad_ignore_file(d).is_none());
    let skipped = Arc::new(AtomicUsize::new(0));
    let counter = skipped.clone();
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .parents(parents_ok)
        .filter_entry(move |e| {
            if !keep(e) {
                return false;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            if is_dir && e.depth() > 0 && bad_ignore_file(e.path()).is_some() {
                counter.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            true
        });
    Ok(SafeWalk { builder, skipped })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn directories_with_hostile_ignore_files_are_not_entered() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("good")).unwrap();
        std::fs::create_dir_all(root.join("bad")).unwrap();
        std::fs::write(root.join("good/a.txt"), "a").unwrap();
        std::fs::write(root.join("good/.gitignore"), "*.log\n").unwrap();
        std::fs::write(root.join("good/x.log"), "x").unwrap();
        std::fs::write(root.join("bad/b.txt"), "b").unwrap();
        symlink("/dev/zero", root.join("bad/.gitignore")).unwrap();
        let walk = safe_walk(&root, |_| true).unwrap();
        let files: Vec<String> = walk
            .builder
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(files.contains(&"a.txt".to_string()), "{files:?}");
        assert!(
            !files.contains(&"x.log".to_string()),
            "ignore files still apply: {files:?}"
        );
        assert!(!files.contains(&"b.txt".to_string()), "{files:?}");
        assert_eq!(walk.skipped(), 1);
        assert!(walk.note().unwrap().contains("1 directory not searched"));
        // At the root itself: refused with the reason.
        let err = safe_walk(&root.join("bad"), |_| true).err().unwrap();
        assert!(err.contains("character device"), "{err}");
    }
}
