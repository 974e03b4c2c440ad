//! Skill folders of packages below the working directory (`services/api/.claude/skills`), for
//! monorepos: found by a bounded walk that honours ignore files and follows no links.

use std::path::{Path, PathBuf};

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
    let keep =
        |e: &ignore::DirEntry| e.file_type().is_some_and(|t| t.is_dir()) && !SKIP.iter().any(|s| e.file_name() == *s);
    let Ok(mut walk) = crate::fsutil::walk::safe_walk(cwd, keep) else {
        return Vec::new();
    };
    let walker = walk.builder.max_depth(Some(MAX_DEPTH + 2)).build();
    let mut found: Vec<(usize, PathBuf)> = Vec::new();
    for entry in walker.flatten().take(MAX_DIRS) {
        let path = entry.path();
        let is_skills = path.file_name().is_some_and(|n| n == "skills")
            && path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == ".claude" || n == ".keel");
        // The working directory's own folders are the project's, read already.
        if is_skills && entry.depth() > 2 {
            found.push((entry.depth(), path.to_path_buf()));
        }
    }
    found.sort();
    found.truncate(MAX_FOLDERS);
    found.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        let rel: Vec<String> = skill_folders(&root)
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            vec![
                "services/api/.claude/skills",
                "services/web/.claude/skills",
                "a/b/c/.keel/skills"
            ]
        );
    }
}
