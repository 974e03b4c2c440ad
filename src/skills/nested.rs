//! Skill folders of packages below the working directory (`services/api/.claude/skills`), for
//! monorepos: found by a bounded walk of directories that honours ignore files and follows no
//! links.
//!
//! The walk runs at every start, so it looks at directories only: a general walker matches
//! every file against the ignore rules before it can be skipped, which in a repository of
//! 100,000 files was most of keel's start-up. Here a directory is read once (its entries' types
//! come with the listing), files are passed over unmatched, and the ignore files that decide
//! whether a subdirectory is entered are `.gitignore` and `.ignore` of each directory on the
//! way (from the working directory up to the repository's top too) and the repository's
//! `.git/info/exclude` (not the user's global excludes file). A directory whose ignore file is
//! not a regular file of sane size (a link to `/dev/zero`, a FIFO) is not entered.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Deepest package folder looked at, counted from the working directory.
const MAX_DEPTH: usize = 6;
/// Directories looked at in all; a huge tree is not crawled at every start.
const MAX_DIRS: usize = 20_000;
/// Most nested skill folders read.
pub const MAX_FOLDERS: usize = 50;

/// Folders that are never a package of this project.
const SKIP: &[&str] = &[".git", "node_modules", "target", ".venv", "vendor"];

/// The `.claude/skills` and `.keel/skills` folders below `cwd` (not `cwd`'s own), nearest first
/// and then by path.
pub fn skill_folders(cwd: &Path) -> Vec<PathBuf> {
    if crate::fsutil::walk::bad_ignore_file(cwd).is_some() {
        return Vec::new();
    }
    // The rules of the directories above, as git applies them to this tree.
    let mut above: Vec<Arc<Gitignore>> = Vec::new();
    let parents_ok = cwd
        .ancestors()
        .skip(1)
        .all(|d| crate::fsutil::walk::bad_ignore_file(d).is_none());
    if parents_ok {
        for dir in cwd.ancestors().skip(1) {
            above.extend(rules_of(dir));
            if dir.join(".git").exists() {
                break;
            }
        }
        above.reverse();
    }
    let mut found: Vec<(usize, PathBuf)> = Vec::new();
    // Breadth first: when the cap cuts the walk short, what is left out is the farthest.
    let mut queue: VecDeque<(PathBuf, usize, Vec<Arc<Gitignore>>)> = VecDeque::new();
    let mut rules = above;
    rules.extend(rules_of(cwd));
    queue.push_back((cwd.to_path_buf(), 0, rules));
    let mut looked = 0;
    while let Some((dir, depth, rules)) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            // A link (to a directory or not) is typed as one and never entered.
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = entry.file_name();
            if SKIP.iter().any(|s| name == *s) {
                continue;
            }
            let path = entry.path();
            if ignored(&rules, &path) {
                continue;
            }
            looked += 1;
            if looked > MAX_DIRS {
                break;
            }
            let child = depth + 1;
            let is_skills = name == "skills" && dir.file_name().is_some_and(|n| n == ".claude" || n == ".keel");
            // The working directory's own folders are the project's, read already.
            if is_skills && child > 2 {
                found.push((child, path.clone()));
            }
            if child >= MAX_DEPTH + 2 || crate::fsutil::walk::bad_ignore_file(&path).is_some() {
                continue;
            }
            let mut inner = rules.clone();
            inner.extend(rules_of(&path));
            queue.push_back((path, child, inner));
        }
        if looked > MAX_DIRS {
            break;
        }
    }
    found.sort();
    found.truncate(MAX_FOLDERS);
    found.into_iter().map(|(_, p)| p).collect()
}

/// The ignore rules `dir` adds (its `.gitignore` and `.ignore`, and `.git/info/exclude` where
/// it is a repository's top); none when it has no such file. Only called for directories
/// whose ignore files passed [`crate::fsutil::walk::bad_ignore_file`].
fn rules_of(dir: &Path) -> Option<Arc<Gitignore>> {
    // Later files win within one builder: git's exclude file weighs least, `.ignore` most.
    let files = [
        dir.join(".git/info/exclude"),
        dir.join(".gitignore"),
        dir.join(".ignore"),
    ];
    let present: Vec<&PathBuf> = files.iter().filter(|f| f.is_file()).collect();
    if present.is_empty() {
        return None;
    }
    let mut builder = GitignoreBuilder::new(dir);
    for f in present {
        // A rule that does not parse is left out, as git leaves it out.
        let _ = builder.add(f);
    }
    builder.build().ok().map(Arc::new)
}

/// Whether the nearest rule that speaks of the directory `path` ignores it.
fn ignored(rules: &[Arc<Gitignore>], path: &Path) -> bool {
    for r in rules.iter().rev() {
        match r.matched(path, true) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(root: &Path) -> Vec<String> {
        skill_folders(root)
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn finds_package_skill_folders_nearest_first_and_skips_ignored_ones() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        for d in [
            ".claude/skills/own",
            "services/api/.claude/skills/deploy",
            "services/web/.claude/skills/deploy",
            "a/b/c/.keel/skills/x",
            "node_modules/pkg/.claude/skills/y",
            "ignored/.claude/skills/z",
            "services/old/.claude/skills/w",
            "services/kept/.claude/skills/v",
            "deep/1/2/3/4/5/6/.claude/skills/too-deep",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        // A nested ignore file, and a later rule letting one directory back in.
        std::fs::write(root.join("services/.gitignore"), "old/\nkept/\n!kept/\n").unwrap();
        assert_eq!(
            rel(&root),
            vec![
                "services/api/.claude/skills",
                "services/kept/.claude/skills",
                "services/web/.claude/skills",
                "a/b/c/.keel/skills"
            ]
        );
    }

    /// A directory with a hostile ignore file is not entered, a linked directory is not
    /// followed, and the rules of the directories above the working directory count too.
    #[test]
    fn hostile_ignore_files_links_and_rules_from_above() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().canonicalize().unwrap();
        std::fs::create_dir(top.join(".git")).unwrap();
        std::fs::write(top.join(".gitignore"), "work/generated/\n").unwrap();
        let root = top.join("work");
        for d in [
            "generated/.claude/skills/a",
            "bad/pkg/.claude/skills/b",
            "good/.claude/skills/c",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::os::unix::fs::symlink("/dev/zero", root.join("bad/.gitignore")).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(elsewhere.path().join("pkg/.claude/skills/d")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join("linked")).unwrap();
        assert_eq!(rel(&root), vec!["good/.claude/skills"]);
    }
}
