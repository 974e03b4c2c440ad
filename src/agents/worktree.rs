//! `isolation: worktree`: a sub-agent works in a fresh `git worktree` on its own branch, so the
//! parent's files stay untouched. Afterwards the worktree is removed when nothing changed in it,
//! and kept (path and branch reported) when something did. WorktreeCreate / WorktreeRemove
//! hooks can take these steps over (`engine::subagent::worktree_hook`).

use std::path::{Path, PathBuf};

use tokio::process::Command;

use crate::fsutil::rebase_path as moved;
use crate::sandbox::SandboxMode;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's root.
    pub path: PathBuf,
    /// Where the sub-agent starts: the same place within the tree as the parent's directory.
    pub cwd: PathBuf,
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// The main repository's working tree (for a hook's worktree: the project's root).
    pub repo: PathBuf,
    /// The WorktreeCreate hook that made it: keel's git leaves such a worktree alone (no
    /// branch, no base; removing it is a WorktreeRemove hook's business).
    pub made_by: Option<String>,
}

/// What became of a worktree after its sub-agent finished (the sub-agent runner decides with
/// [`changes`] and [`remove`], where WorktreeRemove hooks may take part).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Removed,
    Kept {
        path: PathBuf,
        branch: String,
        summary: String,
    },
}

/// keel's own git call: the repository's configuration runs nothing (no hooks on
/// `worktree add`, no filters on checkout, no fsmonitor on status; see `context::git`).
async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::from(crate::context::git::command(dir));
    let out = cmd
        .args(args)
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    } else {
        Err(format!(
            "`git {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Where a project's sub-agent worktrees go: `$KEEL_WORKTREES`, else keel's folder in the
/// user's data directory (`~/.local/share/keel/worktrees/<project>`). Not under `~/.keel`: a
/// path through a `.keel` folder counts as agent configuration, which every write would have
/// to confirm. `fallback` is used when there is no data directory.
pub fn home(cwd: &Path, fallback: &Path) -> PathBuf {
    let project = crate::config::paths::encode_cwd(&crate::memory::project_root(cwd));
    if let Some(dir) = std::env::var_os("KEEL_WORKTREES").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join(project);
    }
    match dirs::data_local_dir() {
        Some(d) => d.join("keel/worktrees").join(project),
        None => fallback.join("worktrees"),
    }
}

/// The sandbox of a sub-agent in the worktree `to` of the repository `from`: what was writable
/// in the repository is writable at the same place in the worktree instead (the parent's tree
/// no longer), with the worktree's agent configuration and git hooks read-only.
pub fn rebase_sandbox(mode: &SandboxMode, from: &Path, to: &Path) -> SandboxMode {
    let SandboxMode::Enforced(policy) = mode else {
        return mode.clone();
    };
    let mut p = policy.clone();
    // A writable folder the worktree does not have (an untracked build folder) is left out.
    p.writable = p
        .writable
        .iter()
        .map(|w| (moved(w, from, to), w.starts_with(from)))
        .filter(|(w, was_moved)| !was_moved || w.exists())
        .map(|(w, _)| w)
        .collect();
    p.protected = p
        .protected
        .iter()
        .map(|x| moved(x, from, to))
        .filter(|x| x.exists())
        .collect();
    SandboxMode::Enforced(p)
}

/// `worktree.baseRef`: the commit a sub-agent's worktree starts from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BaseRef {
    /// The repository's current `HEAD`, unpushed work included (`"head"`, the default).
    #[default]
    Head,
    /// The remote's default branch as last fetched (`"fresh"`: `origin/HEAD`): the worktree
    /// starts without the local, unpushed commits.
    Fresh,
    /// Any other branch, tag or commit the repository knows.
    Named(String),
}

impl BaseRef {
    /// The setting's value: `head`, `fresh` or a ref. A ref that could be read as an option of
    /// git, or holds control characters, is refused.
    pub fn parse(value: &str) -> Result<BaseRef, String> {
        let v = value.trim();
        match v {
            "" | "head" | "HEAD" => Ok(BaseRef::Head),
            "fresh" => Ok(BaseRef::Fresh),
            _ if v.starts_with('-') || v.chars().any(|c| c.is_control() || c.is_whitespace()) => Err(format!(
                "worktree.baseRef `{v}` is not a git ref; use \"head\", \"fresh\" or a branch, tag or commit"
            )),
            _ => Ok(BaseRef::Named(v.to_string())),
        }
    }

    /// The revision git resolves, and how to say it in an error.
    fn revision(&self) -> (String, String) {
        match self {
            BaseRef::Head => ("HEAD".into(), "HEAD".into()),
            BaseRef::Fresh => (
                "refs/remotes/origin/HEAD".into(),
                "the remote's default branch (origin/HEAD; `git remote set-head origin --auto` records it)".into(),
            ),
            BaseRef::Named(r) => (r.clone(), format!("`{r}`")),
        }
    }
}

/// Creates a worktree of the repository containing `cwd` under `parent_dir`, on a new branch
/// named after `id`, from `base` (worktree.baseRef).
pub async fn create(cwd: &Path, parent_dir: &Path, id: &str, base: &BaseRef) -> Result<Worktree, String> {
    let top = git(cwd, &["rev-parse", "--show-toplevel"]).await.map_err(|_| {
        format!(
            "isolation: worktree needs a git repository, and {} is not in one",
            cwd.display()
        )
    })?;
    let top = PathBuf::from(top);
    let (rev, said) = base.revision();
    let base = match git(
        &top,
        &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")],
    )
    .await
    {
        Ok(sha) if !sha.is_empty() => sha,
        _ if *base == BaseRef::Head => {
            return Err("isolation: worktree needs a commit to start from; this repository has none yet".into());
        }
        _ => {
            return Err(format!(
                "isolation: worktree cannot start from {said} (worktree.baseRef): this repository has no such commit"
            ));
        }
    };
    std::fs::create_dir_all(parent_dir).map_err(|e| format!("cannot create {}: {e}", parent_dir.display()))?;
    let path = parent_dir.join(id);
    let branch = format!("keel/{id}");
    let path_text = path.display().to_string();
    git(&top, &["worktree", "add", "--quiet", "-b", &branch, &path_text, &base]).await?;
    let path = path.canonicalize().unwrap_or(path);
    let rel = cwd
        .canonicalize()
        .ok()
        .and_then(|c| {
            c.strip_prefix(top.canonicalize().unwrap_or(top.clone()))
                .ok()
                .map(Path::to_path_buf)
        })
        .unwrap_or_default();
    Ok(Worktree {
        cwd: path.join(rel),
        path,
        branch,
        base,
        repo: top,
        made_by: None,
    })
}

/// The root of the repository containing `cwd`, or `cwd` itself outside one.
pub async fn project_top(cwd: &Path) -> PathBuf {
    match git(cwd, &["rev-parse", "--show-toplevel"]).await {
        Ok(top) if !top.is_empty() => PathBuf::from(top),
        _ => cwd.to_path_buf(),
    }
}

/// Removes the worktree and its branch when nothing changed; otherwise keeps both.
#[cfg(test)]
pub async fn finish(w: &Worktree) -> Result<Outcome, String> {
    match changes(w).await? {
        None => {
            remove(w).await?;
            Ok(Outcome::Removed)
        }
        Some(summary) => Ok(Outcome::Kept {
            path: w.path.clone(),
            branch: w.branch.clone(),
            summary,
        }),
    }
}

/// What changed in a git worktree (new commits, uncommitted changes); `None` when nothing did.
pub async fn changes(w: &Worktree) -> Result<Option<String>, String> {
    let status = git(&w.path, &["status", "--porcelain", "--untracked-files=all"]).await?;
    let head = git(&w.path, &["rev-parse", "HEAD"]).await?;
    if status.is_empty() && head == w.base {
        return Ok(None);
    }
    let mut summary = Vec::new();
    if head != w.base {
        let commits = git(&w.path, &["rev-list", "--count", &format!("{}..HEAD", w.base)])
            .await
            .unwrap_or_default();
        summary.push(format!("{commits} new commit(s) on the branch"));
    }
    if !status.is_empty() {
        summary.push(format!("{} uncommitted change(s)", status.lines().count()));
    }
    Ok(Some(summary.join(", ")))
}

/// Removes an unchanged git worktree and its branch.
pub async fn remove(w: &Worktree) -> Result<(), String> {
    git(
        &w.repo,
        &["worktree", "remove", "--force", &w.path.display().to_string()],
    )
    .await?;
    // The branch has no commits of its own; deleting it loses nothing.
    git(&w.repo, &["branch", "-D", "--quiet", &w.branch]).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(r.join("src")).unwrap();
        sh(&r, &["init", "-q"]);
        sh(&r, &["config", "user.email", "t@example.com"]);
        sh(&r, &["config", "user.name", "t"]);
        std::fs::write(r.join("src/a.txt"), "one\n").unwrap();
        sh(&r, &["add", "."]);
        sh(&r, &["commit", "-qm", "init"]);
        (t, r)
    }

    /// A repository whose configuration runs programs on checkout (a hook, a smudge filter) and
    /// on status (fsmonitor): a plain `git worktree add` runs them; keel's worktree runs none.
    #[tokio::test]
    async fn making_and_finishing_a_worktree_runs_no_repository_program() {
        let (t, r) = repo();
        let marker = t.path().join("ran");
        std::fs::write(r.join(".gitattributes"), "* filter=x\n").unwrap();
        sh(&r, &["add", "."]);
        sh(&r, &["commit", "-qm", "attributes"]);
        let plant = |what: &str| format!("sh -c 'echo {what} >> \"{}\"; cat'", marker.display());
        sh(&r, &["config", "filter.x.smudge", &plant("smudge")]);
        sh(&r, &["config", "filter.x.clean", &plant("clean")]);
        sh(&r, &["config", "core.fsmonitor", &plant("fsmonitor")]);
        let hook = r.join(".git/hooks/post-checkout");
        std::fs::write(&hook, format!("#!/bin/sh\necho hook >> \"{}\"\n", marker.display())).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let wt_dir = t.path().join("wts");
        sh(
            &r,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "plain",
                &wt_dir.join("plain").display().to_string(),
            ],
        );
        assert!(
            marker.exists(),
            "the fixture must make a plain `git worktree add` run them"
        );
        std::fs::remove_file(&marker).unwrap();

        let w = create(&r, &wt_dir, "agent-1", &BaseRef::Head).await.unwrap();
        assert_eq!(std::fs::read_to_string(w.path.join("src/a.txt")).unwrap(), "one\n");
        assert_eq!(finish(&w).await.unwrap(), Outcome::Removed);
        assert!(
            !marker.exists(),
            "keel ran a repository program: {}",
            std::fs::read_to_string(&marker).unwrap_or_default()
        );
    }

    #[tokio::test]
    async fn unchanged_worktrees_are_removed_changed_ones_kept() {
        let (t, r) = repo();
        let wt_dir = t.path().join("wts");
        let w = create(&r.join("src"), &wt_dir, "agent-1", &BaseRef::Head)
            .await
            .unwrap();
        assert!(w.cwd.ends_with("agent-1/src"), "{}", w.cwd.display());
        assert_eq!(std::fs::read_to_string(w.cwd.join("a.txt")).unwrap(), "one\n");
        assert_eq!(finish(&w).await.unwrap(), Outcome::Removed);
        assert!(!w.path.exists());
        let branches = std::process::Command::new("git")
            .arg("-C")
            .arg(&r)
            .args(["branch", "--list", "keel/*"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&branches.stdout).trim().is_empty(),
            "the empty branch is deleted"
        );

        let w = create(&r, &wt_dir, "agent-2", &BaseRef::Head).await.unwrap();
        std::fs::write(w.path.join("src/a.txt"), "two\n").unwrap();
        match finish(&w).await.unwrap() {
            Outcome::Kept { path, branch, summary } => {
                assert_eq!(path, w.path);
                assert_eq!(branch, "keel/agent-2");
                assert!(summary.contains("1 uncommitted"), "{summary}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(r.join("src/a.txt")).unwrap(),
            "one\n",
            "the parent's tree is untouched"
        );
        let not_repo = t.path().join("plain");
        std::fs::create_dir_all(&not_repo).unwrap();
        assert!(
            create(&not_repo, &wt_dir, "agent-3", &BaseRef::Head)
                .await
                .unwrap_err()
                .contains("git repository")
        );
    }
    /// keel's own git here runs nothing the repository's configuration names: no hook on
    /// checkout, no fsmonitor, no filter driver (a command approved earlier could have
    /// written that configuration).
    #[tokio::test]
    async fn worktrees_run_no_program_the_repository_names() {
        let (t, r) = repo();
        let marker = t.path().join("ran");
        std::fs::write(r.join(".gitattributes"), "*.txt filter=x\n").unwrap();
        sh(&r, &["add", "."]);
        sh(&r, &["commit", "-qm", "attributes"]);
        let plant = |what: &str| format!("sh -c 'echo {what} >> \"{}\"; cat'", marker.display());
        sh(&r, &["config", "filter.x.smudge", &plant("smudge")]);
        sh(&r, &["config", "filter.x.clean", &plant("clean")]);
        sh(&r, &["config", "core.fsmonitor", &plant("fsmonitor")]);
        let hook = r.join(".git/hooks/post-checkout");
        std::fs::write(&hook, format!("#!/bin/sh\necho hook >> \"{}\"\n", marker.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let w = create(&r, &t.path().join("wts"), "agent-h", &BaseRef::Head)
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(w.path.join("src/a.txt")).unwrap(), "one\n");
        std::fs::write(w.path.join("src/a.txt"), "two\n").unwrap();
        assert!(matches!(finish(&w).await.unwrap(), Outcome::Kept { .. }));
        assert!(
            !marker.exists(),
            "keel's git ran a repository program: {}",
            std::fs::read_to_string(&marker).unwrap_or_default()
        );
    }

    #[tokio::test]
    async fn the_base_ref_chooses_the_commit_a_worktree_starts_from() {
        let (t, r) = repo();
        sh(&r, &["branch", "published"]);
        std::fs::write(r.join("src/a.txt"), "unpushed\n").unwrap();
        sh(&r, &["commit", "-qam", "local work"]);
        let wt_dir = t.path().join("wts");
        let head = create(&r, &wt_dir, "a-head", &BaseRef::parse("head").unwrap())
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(head.path.join("src/a.txt")).unwrap(),
            "unpushed\n"
        );
        let named = create(&r, &wt_dir, "a-named", &BaseRef::parse("published").unwrap())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(named.path.join("src/a.txt")).unwrap(), "one\n");
        // No remote: "fresh" has nothing to start from and says so.
        let e = create(&r, &wt_dir, "a-fresh", &BaseRef::Fresh).await.unwrap_err();
        assert!(e.contains("origin/HEAD") && e.contains("worktree.baseRef"), "{e}");
        let e = create(&r, &wt_dir, "a-none", &BaseRef::parse("no-such-branch").unwrap())
            .await
            .unwrap_err();
        assert!(e.contains("`no-such-branch`"), "{e}");
        assert!(BaseRef::parse("--output=/tmp/x").is_err());
    }
}
