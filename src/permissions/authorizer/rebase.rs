//! The permission boundary of a sub-agent that works in a git worktree: the same rules, moved
//! with the files they protect. A rule written for the repository (`Read(secret.txt)`,
//! `Edit(.github/**)`) resolves to paths in the parent's tree; its copy in the worktree must be
//! covered too, or isolation would be a way around every path rule.

use std::path::{Path, PathBuf};

use crate::fsutil::rebase_path as moved;
use std::sync::{Mutex, RwLock};

use super::Authorizer;
use crate::permissions::rules::{Anchors, Behavior, Rule};

impl Authorizer {
    /// The rules and session grants for a sub-agent working in `worktree`, a copy of the
    /// repository whose working tree is `repo`: working directories inside the repository move
    /// to the same place in the worktree; every path rule about the repository also applies to
    /// its copy there (deny and ask rules as much as allow rules); and the file tools may not
    /// write the parent's tree, whatever the mode. Nothing is added that the parent could not do
    /// in its own tree.
    pub fn rebased(&self, repo: &Path, worktree: &Path) -> Authorizer {
        let dirs: Vec<PathBuf> = self.working_dirs().iter().map(|d| moved(d, repo, worktree)).collect();
        let with_copies = |rules: &[Rule]| -> Vec<Rule> {
            rules
                .iter()
                .flat_map(|r| std::iter::once(r.clone()).chain(r.rebased(repo, worktree)))
                .collect()
        };
        let session = with_copies(&self.session.lock().unwrap_or_else(|p| p.into_inner()));
        let mut rules = with_copies(&self.rules);
        let anchors = Anchors {
            cwd: moved(&self.anchors.cwd, repo, worktree),
            base_dir: moved(&self.anchors.base_dir, repo, worktree),
            home: self.home.clone(),
        };
        if let Ok(r) = Rule::parse(
            &format!("Edit(/{}/**)", repo.display()),
            Behavior::Deny,
            "worktree isolation (the parent's working tree)",
            &anchors,
        ) {
            rules.push(r);
        }
        // Rules a program removed stay removed (their copies carry the same text and source).
        let masked = self.masked.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Authorizer {
            rules,
            session: Mutex::new(session),
            masked: Mutex::new(masked),
            anchors,
            dirs: RwLock::new(dirs),
            home: self.home.clone(),
            save_path: self.save_path.clone(),
            ceiling: self.ceiling.clone(),
            managed_rules_only: self.managed_rules_only,
            managed_dirs: self.managed_dirs,
            model_allowlist: self.model_allowlist.clone(),
            jail: self.jail.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::Mode;
    use crate::permissions::authorizer::Verdict;
    use serde_json::json;

    #[test]
    fn path_rules_follow_the_files_into_the_worktree() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let repo = base.join("repo");
        let cwd = repo.join("app");
        let wt = base.join("worktrees/agent-1");
        let anchors = Anchors {
            cwd: cwd.clone(),
            base_dir: repo.clone(),
            home: None,
        };
        let rule = |text: &str, b: Behavior| Rule::parse(text, b, "project settings", &anchors).unwrap();
        let parent = Authorizer::new(
            vec![
                rule("Read(secret.txt)", Behavior::Deny),
                rule("Edit(/ci/**)", Behavior::Deny),
                rule("Read(./notes.md)", Behavior::Ask),
            ],
            vec![cwd.clone()],
            None,
            None,
        );
        let child = parent.rebased(&repo, &wt);
        let wcwd = wt.join("app");
        assert_eq!(child.working_dirs(), std::slice::from_ref(&wcwd));
        let check = |a: &Authorizer, tool: &str, path: PathBuf| {
            a.check(
                tool,
                &json!({"file_path": path, "content": "x"}),
                tool == "Read",
                Mode::AcceptEdits,
                &wcwd,
                None,
            )
        };
        // The parent's rules hold for the copies of its files.
        assert!(matches!(
            check(&child, "Read", wcwd.join("secret.txt")),
            Verdict::Deny(_)
        ));
        assert!(matches!(
            check(&child, "Read", wcwd.join("deep/secret.txt")),
            Verdict::Deny(_)
        ));
        assert!(child.read_denied(&wcwd.join("secret.txt"), false));
        assert!(matches!(
            check(&child, "Write", wt.join("ci/deploy.yml")),
            Verdict::Deny(_)
        ));
        assert!(matches!(
            check(&child, "Read", wcwd.join("notes.md")),
            Verdict::Ask { .. }
        ));
        // What the rules leave open stays open, and the parent's tree is closed to writes.
        assert_eq!(check(&child, "Read", wcwd.join("main.rs")), Verdict::Allow);
        assert_eq!(check(&child, "Write", wcwd.join("main.rs")), Verdict::Allow);
        assert!(matches!(check(&child, "Write", cwd.join("main.rs")), Verdict::Deny(_)));
        // The parent itself is unchanged.
        assert!(matches!(
            check(&parent, "Read", cwd.join("secret.txt")),
            Verdict::Deny(_)
        ));
    }
}
