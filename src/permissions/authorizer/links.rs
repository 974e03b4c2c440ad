//! Paths that leave the workspace through a symbolic link inside it.
//!
//! A cloned repository can commit `docs -> ~/.config/git`: `docs/notes` reads as a file
//! of the project, yet it is the user's credential store. A file tool's path is therefore
//! judged where it resolves (links followed; for a file that does not exist yet, its nearest
//! existing ancestor), as well as where it is written: a path inside a working directory that
//! resolves outside every working directory (and, for reads, outside the session folder's
//! model output: spilled results, shell output)
//! is a trap the repository laid, not a choice anyone made. Such a call is asked in every
//! mode — bypassPermissions too — and refused where nobody can answer (headless, dontAsk),
//! unless an allow rule names the resolved path or a working directory (`--add-dir`) covers
//! it. Deny rules keep matching both paths, so resolution never weakens one. A link to a
//! device, FIFO or socket is left to the tools, which open regular files only.

use std::path::Path;

use super::{AskInfo, Ctx, Verdict, real_path};

/// Whether a file check judges where a path inside the workspace leads (the file tools' own
/// calls), or only whether it lies inside (paths a shell line names, which the shell check
/// and the sandbox judge on their own terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Links {
    Judged,
    Plain,
}

/// What the call would do with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
}

impl Ctx<'_> {
    /// The question for a path inside a working directory that resolves, through a link, to a
    /// place no working directory covers (nor, for reads, the session's model output); `None`
    /// when it does not leave. The caller lets a rule naming `real` through before asking.
    pub(super) fn escape(&self, path: &Path, real: &Path, access: Access) -> Option<Verdict> {
        if path == real || !self.in_dirs(path) || self.in_dirs(real) {
            return None;
        }
        if access == Access::Read && self.in_session_dir(real) {
            return None;
        }
        // A device, FIFO or socket is refused by every file tool whatever the check says (only
        // regular files are opened, exactly at `real`), and that refusal says what it is.
        if std::fs::metadata(real).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
            return None;
        }
        let (rule_tool, verb) = match access {
            Access::Read => ("Read", "Read"),
            Access::Write => ("Edit", "Change"),
        };
        let rule = format!("{rule_tool}(/{})", globset::escape(&real.to_string_lossy()));
        // The directory `--add-dir` would need: the nearest one that exists (a new file's
        // folders may not yet).
        let dir = real.ancestors().find(|a| a.is_dir()).unwrap_or(real);
        let reason = format!(
            "`{}` resolves to `{}`, outside the working directories: a symbolic link inside them leads there. \
             {verb} it only if that is intended: approve it, start keel with `--add-dir {}`, or add the allow \
             rule `{rule}`",
            self.relative(path),
            real.display(),
            dir.display()
        );
        Some(Verdict::Ask {
            hard: true,
            info: AskInfo {
                reason,
                rules_to_save: vec![rule],
                session_grants: Vec::new(),
            },
        })
    }

    /// Below one of the working directories (which are canonical).
    pub(super) fn in_dirs(&self, path: &Path) -> bool {
        self.dirs.iter().any(|d| path.starts_with(d))
    }

    /// Below the session folder's model output (spilled results, shell output), as the folder
    /// is configured or where it resolves.
    pub(super) fn in_session_dir(&self, path: &Path) -> bool {
        self.session_dir.is_some_and(|s| {
            [s.to_path_buf(), real_path(s)].iter().any(|base| {
                crate::tools::services::MODEL_OUTPUT_DIRS
                    .iter()
                    .any(|d| path.starts_with(base.join(d)))
            })
        })
    }

    /// A path for a message: as written, and where it resolves when that differs.
    pub(super) fn shown(&self, path: &Path, real: &Path) -> String {
        if path == real {
            path.display().to_string()
        } else {
            format!("{} (which resolves to {})", path.display(), real.display())
        }
    }

    /// A path inside a working directory shown relative to it, else absolute.
    fn relative(&self, path: &Path) -> String {
        self.dirs
            .iter()
            .find(|d| path.starts_with(d))
            .map(|d| crate::fsutil::paths::display_relative(path, d))
            .unwrap_or_else(|| path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::{Value, json};

    use super::super::{Authorizer, Call, Decision, HookDecision, Verdict};
    use crate::permissions::Mode;
    use crate::permissions::rules::{Anchors, Behavior, Rule};

    /// A workspace whose `docs` is a link to the user's git configuration (holding
    /// `notes`), `out` one to another folder of the user's, `a` a link to `b` inside
    /// it, and a session folder outside it.
    struct Trap {
        _dir: tempfile::TempDir,
        work: PathBuf,
        git: PathBuf,
        elsewhere: PathBuf,
        session: PathBuf,
    }

    fn trap() -> Trap {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (work, git, session) = (base.join("work"), base.join("home/.config/git"), base.join("session"));
        let elsewhere = base.join("home/elsewhere");
        for d in [&work, &git, &session, &elsewhere] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(git.join("notes"), "https://u:SECRET@example.com\n").unwrap();
        std::os::unix::fs::symlink(&git, work.join("docs")).unwrap();
        std::fs::write(elsewhere.join("notes.md"), "mine\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, work.join("out")).unwrap();
        std::fs::write(work.join("b"), "inside\n").unwrap();
        std::os::unix::fs::symlink("b", work.join("a")).unwrap();
        std::fs::create_dir_all(session.join("tool-results")).unwrap();
        std::fs::write(session.join("tool-results/out.txt"), "spilled\n").unwrap();
        std::fs::write(session.join("hook-env.sh"), "export TOKEN=x\n").unwrap();
        std::os::unix::fs::symlink(&session, work.join("spills")).unwrap();
        Trap {
            _dir: dir,
            work,
            git,
            elsewhere,
            session,
        }
    }

    impl Trap {
        fn authorizer(&self, allow: &[&str], deny: &[&str], extra_dirs: &[&PathBuf]) -> Authorizer {
            let anchors = Anchors {
                cwd: self.work.clone(),
                base_dir: self.work.clone(),
                home: self.git.parent().and_then(|p| p.parent()).map(PathBuf::from),
            };
            let mut rules = Vec::new();
            for (list, b) in [(allow, Behavior::Allow), (deny, Behavior::Deny)] {
                for r in list {
                    rules.push(Rule::parse(r, b, "test", &anchors).unwrap());
                }
            }
            let mut dirs = vec![self.work.clone()];
            dirs.extend(extra_dirs.iter().map(|d| (*d).clone()));
            Authorizer::new(rules, dirs, anchors.home.clone(), None)
        }

        fn decide(&self, a: &Authorizer, tool: &str, input: Value, mode: Mode) -> Decision {
            let call = Call::named(tool, &input, false, &self.work).in_session(&self.session);
            a.decide_call(&call, mode, &self.work, None, &[])
        }
    }

    const MODES: [Mode; 5] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::DontAsk,
        Mode::BypassPermissions,
        Mode::Plan,
    ];

    /// The question every mode asks, naming the path the call resolves to.
    fn assert_trap(d: &Decision, resolved: &std::path::Path) {
        match &d.verdict {
            Verdict::Ask { hard: true, info } => {
                assert!(
                    info.reason.contains(&resolved.display().to_string()) && info.reason.contains("outside"),
                    "{}",
                    info.reason
                );
            }
            other => panic!("expected a hard question, got {other:?}"),
        }
    }

    #[test]
    fn reads_through_a_link_out_of_the_workspace_ask_in_every_mode() {
        let t = trap();
        let a = t.authorizer(&[], &[], &[]);
        let creds = t.git.join("notes");
        for mode in MODES {
            for (tool, input) in [
                ("Read", json!({"file_path": "docs/notes"})),
                ("Grep", json!({"pattern": "SECRET", "path": "docs"})),
                ("Glob", json!({"pattern": "docs/**"})),
                ("LS", json!({"path": "docs"})),
                ("NotebookRead", json!({"notebook_path": "docs/notes"})),
            ] {
                let d = t.decide(&a, tool, input, mode);
                let want = if tool == "Grep" || tool == "Glob" || tool == "LS" {
                    &t.git
                } else {
                    &creds
                };
                assert_trap(&d, want);
            }
        }
        // The tool is handed the resolved path, so the message and the open agree.
        let d = t.decide(&a, "Read", json!({"file_path": "docs/notes"}), Mode::Default);
        assert_eq!(d.resolved.as_deref(), Some(creds.as_path()));
        // A PreToolUse hook's allow does not answer it.
        let input = json!({"file_path": "docs/notes"});
        let call = Call::named("Read", &input, true, &t.work);
        let d = a.decide_call(&call, Mode::BypassPermissions, &t.work, Some(HookDecision::Allow), &[]);
        assert_trap(&d, &creds);
    }

    #[test]
    fn writes_through_a_link_out_of_the_workspace_ask_in_every_mode_but_plan_which_denies() {
        let t = trap();
        let a = t.authorizer(&["Edit", "Edit(out/**)"], &[], &[]);
        let e = &t.elsewhere;
        for mode in MODES {
            for (tool, input, target) in [
                (
                    "Write",
                    json!({"file_path": "out/new.txt", "content": "x"}),
                    e.join("new.txt"),
                ),
                (
                    "Write",
                    json!({"file_path": "out/sub/dir/new.txt", "content": "x"}),
                    e.join("sub/dir/new.txt"),
                ),
                (
                    "Edit",
                    json!({"file_path": "out/notes.md", "old_string": "a", "new_string": "b"}),
                    e.join("notes.md"),
                ),
                (
                    "MultiEdit",
                    json!({"file_path": "out/notes.md", "edits": []}),
                    e.join("notes.md"),
                ),
                (
                    "NotebookEdit",
                    json!({"notebook_path": "out/nb.ipynb", "new_source": ""}),
                    e.join("nb.ipynb"),
                ),
            ] {
                let d = t.decide(&a, tool, input, mode);
                if mode == Mode::Plan {
                    assert!(matches!(d.verdict, Verdict::Deny(_)), "{tool}: {:?}", d.verdict);
                } else {
                    assert_trap(&d, &target);
                }
            }
        }
    }

    #[test]
    fn only_a_rule_naming_the_resolved_path_or_an_added_directory_lets_it_through() {
        let t = trap();
        let read = json!({"file_path": "docs/notes"});
        let write = json!({"file_path": "out/new.txt", "content": "x"});
        // Rules naming the path as written, or no path at all, do not.
        let a = t.authorizer(&["Read", "Read(docs/**)", "Edit(out/**)"], &[], &[]);
        assert_trap(&t.decide(&a, "Read", read.clone(), Mode::Default), &t.git.join("notes"));
        assert_trap(
            &t.decide(&a, "Write", write.clone(), Mode::AcceptEdits),
            &t.elsewhere.join("new.txt"),
        );
        // A rule naming where it leads does.
        let named = format!("Read(/{}/**)", t.git.display());
        let edit_named = format!("Edit(/{}/**)", t.elsewhere.display());
        let a = t.authorizer(&[&named, &edit_named], &[], &[]);
        assert_eq!(
            t.decide(&a, "Read", read.clone(), Mode::Default).verdict,
            Verdict::Allow
        );
        assert_eq!(
            t.decide(&a, "Write", write.clone(), Mode::Default).verdict,
            Verdict::Allow
        );
        // So does a working directory covering the target (`--add-dir`).
        let a = t.authorizer(&[], &[], &[&t.git, &t.elsewhere]);
        assert_eq!(
            t.decide(&a, "Read", read.clone(), Mode::Default).verdict,
            Verdict::Allow
        );
        assert_eq!(t.decide(&a, "Write", write, Mode::AcceptEdits).verdict, Verdict::Allow);
        // The suggested rule, once granted, answers the question for the rest of the session.
        let a = t.authorizer(&[], &[], &[]);
        let Verdict::Ask { info, .. } = t.decide(&a, "Read", read.clone(), Mode::Default).verdict else {
            panic!("expected a question");
        };
        assert_eq!(info.rules_to_save, vec![format!("Read(/{}/notes)", t.git.display())]);
        a.grant(&info);
        assert_eq!(t.decide(&a, "Read", read, Mode::Default).verdict, Verdict::Allow);
    }

    #[test]
    fn a_deny_rule_on_either_path_still_denies() {
        let t = trap();
        let outside = format!("Read(/{}/**)", t.git.display());
        for deny in ["Read(docs/**)", outside.as_str()] {
            let a = t.authorizer(&[], &[deny], &[&t.git]);
            for mode in MODES {
                let d = t.decide(&a, "Read", json!({"file_path": "docs/notes"}), mode);
                assert!(
                    matches!(d.verdict, Verdict::Deny(_)),
                    "{deny} {mode:?}: {:?}",
                    d.verdict
                );
            }
        }
    }

    #[test]
    fn links_that_stay_inside_and_the_session_folder_are_not_questioned() {
        let t = trap();
        let a = t.authorizer(&[], &[], &[]);
        let d = t.decide(&a, "Read", json!({"file_path": "a"}), Mode::Default);
        assert_eq!(d.verdict, Verdict::Allow);
        assert_eq!(d.resolved, Some(t.work.join("b")));
        let d = t.decide(
            &a,
            "Write",
            json!({"file_path": "a", "content": "x"}),
            Mode::AcceptEdits,
        );
        assert_eq!(d.verdict, Verdict::Allow);
        // The session folder's model output: read as written or through a link, not written
        // through one; the rest of the session folder is not the model's.
        for path in [
            t.session.join("tool-results/out.txt"),
            t.work.join("spills/tool-results/out.txt"),
        ] {
            let d = t.decide(&a, "Read", json!({"file_path": path}), Mode::Default);
            assert_eq!(d.verdict, Verdict::Allow, "{}", path.display());
        }
        let d = t.decide(
            &a,
            "Read",
            json!({"file_path": t.session.join("hook-env.sh")}),
            Mode::Default,
        );
        assert!(matches!(d.verdict, Verdict::Ask { hard: false, .. }), "{:?}", d.verdict);
        let d = t.decide(&a, "Read", json!({"file_path": "spills/hook-env.sh"}), Mode::Default);
        assert_trap(&d, &t.session.join("hook-env.sh"));
        let d = t.decide(
            &a,
            "Write",
            json!({"file_path": "spills/tool-results/x", "content": "x"}),
            Mode::BypassPermissions,
        );
        assert_trap(&d, &t.session.join("tool-results/x"));
        // A link from one working directory into another stays inside.
        let a = t.authorizer(&[], &[], &[&t.elsewhere]);
        let d = t.decide(
            &a,
            "Write",
            json!({"file_path": "out/new.txt", "content": "x"}),
            Mode::AcceptEdits,
        );
        assert_eq!(d.verdict, Verdict::Allow);
    }

    #[test]
    fn a_path_outside_as_written_keeps_its_old_answers() {
        let t = trap();
        let a = t.authorizer(&[], &[], &[]);
        let creds = t.git.join("notes");
        let d = t.decide(&a, "Read", json!({"file_path": creds}), Mode::Default);
        assert!(matches!(d.verdict, Verdict::Ask { hard: false, .. }), "{:?}", d.verdict);
        let d = t.decide(&a, "Read", json!({"file_path": creds}), Mode::BypassPermissions);
        assert_eq!(d.verdict, Verdict::Allow);
        // A link to a device is left to the tools, which open regular files only and say what
        // the target is.
        std::os::unix::fs::symlink("/dev/zero", t.work.join("zero")).unwrap();
        let d = t.decide(&a, "Read", json!({"file_path": "zero"}), Mode::BypassPermissions);
        assert_eq!(d.verdict, Verdict::Allow);
        assert_eq!(d.resolved.as_deref(), Some(std::path::Path::new("/dev/zero")));
    }
}
