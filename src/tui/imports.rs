//! The external imports question: asked once per project before setup, when the project's
//! instruction files import files from outside it (see `context::import_policy`). The answer,
//! either way, is kept for exactly the files shown; a file imported later asks again.

use std::path::{Path, PathBuf};

use crate::context::import_policy::{Answers, External, ImportPolicy};
use crate::context::instructions::{ExternalImport, Instructions};

use super::trust::{Answer, ask_question};
use crate::console::err_line;

/// What the project imports from outside it that the user has not answered yet.
pub fn pending(cwd: &Path, home: Option<&Path>, keel_home: &Path) -> (PathBuf, Vec<ExternalImport>) {
    let mut policy = ImportPolicy::strict(cwd, home);
    let answers = Answers::load(keel_home, &policy.root);
    // Every external file is followed here (credentials never are), so the question covers
    // what approved files import in turn.
    policy.external = External::All;
    let found = Instructions::discover_with(cwd, home, policy.clone());
    let out = found
        .external
        .into_iter()
        .filter(|e| !answers.decided(&e.target))
        .collect();
    (policy.root, out)
}

/// Asks about the project's unanswered external imports, if any, and records the answer.
/// `false` when the user chose to quit.
pub fn decide(cwd: &Path, home: Option<&Path>, keel_home: &Path) -> std::io::Result<bool> {
    let (root, found) = pending(cwd, home, keel_home);
    if found.is_empty() {
        return Ok(true);
    }
    let answer = ask_question(&question(&root, &found), OPTIONS)?;
    let approve = match answer {
        Answer::Trust => true,
        Answer::Decline => false,
        Answer::Quit => return Ok(false),
    };
    let mut targets: Vec<PathBuf> = Vec::new();
    for e in found {
        if !targets.contains(&e.target) {
            targets.push(e.target);
        }
    }
    if let Err(e) = Answers::record(keel_home, &root, &targets, approve) {
        err_line!("keel: could not record the answer in {}: {e}", keel_home.display());
    }
    Ok(true)
}

const OPTIONS: [&str; 2] = [
    "Yes, load these files for this project",
    "No, leave them out (keel remembers and does not ask about them again)",
];

fn question(root: &Path, found: &[ExternalImport]) -> Vec<(bool, String)> {
    let shown = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut lines: Vec<(bool, String)> = vec![
        (true, "Load instruction files from outside this project?".into()),
        (false, String::new()),
        (false, format!("  {}", root.display())),
        (false, String::new()),
        (
            false,
            "Its instruction files import files outside it, which would go into the model's context:".into(),
        ),
    ];
    for e in found {
        let what = if e.link {
            "is a link to".to_string()
        } else {
            format!("imports @{}:", e.reference)
        };
        lines.push((
            false,
            format!("  • {} {what} {}", shown(&e.importer), e.target.display()),
        ));
    }
    lines.extend([
        (false, String::new()),
        (
            false,
            "Approve only files you expect this project to use. Credential files are never loaded.".into(),
        ),
        (false, String::new()),
    ]);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_lists_unanswered_outside_files_including_their_imports() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let home = base.join("home");
        let kh = home.join(".keel");
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(home.join("shared")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "KEY").unwrap();
        std::fs::write(home.join("shared/a.md"), "a @b.md").unwrap();
        std::fs::write(home.join("shared/b.md"), "b").unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "@~/shared/a.md @~/.ssh/id_rsa @docs/in.md").unwrap();
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        std::fs::write(repo.join("docs/in.md"), "inside").unwrap();
        let (root, found) = pending(&repo, Some(&home), &kh);
        assert_eq!(root, repo);
        let targets: Vec<PathBuf> = found.iter().map(|e| e.target.clone()).collect();
        assert_eq!(targets, vec![home.join("shared/a.md"), home.join("shared/b.md")]);
        let text: String = question(&root, &found).into_iter().map(|(_, l)| l + "\n").collect();
        assert!(text.contains("CLAUDE.md imports @~/shared/a.md:"), "{text}");
        assert!(!text.contains("id_rsa"), "{text}");
        // Answered (either way): not asked again.
        Answers::record(&kh, &root, &targets[..1], false).unwrap();
        Answers::record(&kh, &root, &targets[1..], true).unwrap();
        assert!(pending(&repo, Some(&home), &kh).1.is_empty());
    }
}
