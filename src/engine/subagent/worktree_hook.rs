//! A sub-agent's worktree when hooks take part: a `WorktreeCreate` hook makes it instead of
//! `git worktree add` (printing its path), and a `WorktreeRemove` hook removes it instead of
//! keel. Without such hooks keel's git does both, as in [`worktree`].

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agents::worktree::{self, BaseRef, Worktree};
use crate::hooks::{Event, Hooks, Ran, fields};
use crate::permissions::Mode;
use crate::types::events::EventSink;

/// The sub-agent's worktree: made by the WorktreeCreate hooks when any is configured,
/// otherwise with git under `home`. `name` is the worktree's name (the agent id).
pub(super) async fn create(
    hooks: &Hooks,
    mode: Mode,
    events: &EventSink,
    cwd: &Path,
    home: &Path,
    name: &str,
    base: &BaseRef,
) -> Result<Worktree, String> {
    if !hooks.has(Event::WorktreeCreate) {
        return worktree::create(cwd, home, name, base).await;
    }
    let agg = hooks
        .fire(
            Event::WorktreeCreate,
            None,
            mode,
            fields([("name", name.into())]),
            events,
        )
        .await;
    let (label, path) = answer(&agg.ran)?;
    let path = checked(&label, &path)?;
    Ok(Worktree {
        cwd: path.clone(),
        path,
        branch: String::new(),
        base: String::new(),
        repo: worktree::project_top(cwd).await,
        made_by: Some(label),
    })
}

/// The first succeeding hook's answer: the first non-empty line of its stdout, or
/// `hookSpecificOutput.worktreePath` of a JSON answer.
fn answer(ran: &[Ran]) -> Result<(String, String), String> {
    let succeeded: Vec<&Ran> = ran.iter().filter(|r| r.succeeded).collect();
    if succeeded.is_empty() {
        let failures: Vec<String> = ran
            .iter()
            .map(|r| {
                format!(
                    "the WorktreeCreate hook `{}` failed ({})",
                    r.label,
                    r.problem.as_deref().unwrap_or("no output")
                )
            })
            .collect();
        return Err(if failures.is_empty() {
            "no WorktreeCreate hook ran, so the sub-agent has no worktree and was not started".into()
        } else {
            format!(
                "{}; the sub-agent has no worktree and was not started",
                failures.join("; ")
            )
        });
    }
    for r in &succeeded {
        if let Some(p) = path_of(&r.stdout) {
            return Ok((r.label.clone(), p));
        }
    }
    Err(format!(
        "the WorktreeCreate hook `{}` returned no worktree path (it must print the absolute path of the directory \
         it made); the sub-agent was not started",
        succeeded[0].label
    ))
}

fn path_of(stdout: &str) -> Option<String> {
    let t = stdout.trim();
    if t.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(t)
    {
        return v
            .pointer("/hookSpecificOutput/worktreePath")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string);
    }
    t.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}

/// The hook's path, when it is an absolute path to an existing directory (canonical).
fn checked(label: &str, path: &str) -> Result<PathBuf, String> {
    let bad = |why: &str| {
        format!(
            "the WorktreeCreate hook `{label}` returned `{path}`, which is not an absolute path to a directory \
             ({why}); the sub-agent was not started"
        )
    };
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(bad("it is relative"));
    }
    let c = p.canonicalize().map_err(|e| bad(&e.to_string()))?;
    if !c.is_dir() {
        return Err(bad("not a directory"));
    }
    Ok(c)
}

/// After the sub-agent: what becomes of its worktree, as a note for the parent model. A
/// changed git worktree is kept; an unchanged one, and every hook-made one, goes to the
/// WorktreeRemove hooks when any is configured.
pub(super) async fn finish(hooks: &Hooks, mode: Mode, events: &EventSink, w: &Worktree) -> String {
    let shown = w.path.display();
    if let Some(maker) = &w.made_by {
        if !hooks.has(Event::WorktreeRemove) {
            return format!(
                "(The sub-agent worked in the worktree {shown}, which the WorktreeCreate hook `{maker}` made; no \
                 WorktreeRemove hook is configured, so it was left in place.)"
            );
        }
        return match fire_remove(hooks, mode, events, w).await {
            Ok(label) => format!(
                "(The sub-agent worked in the worktree {shown}, which the WorktreeCreate hook `{maker}` made; the \
                 WorktreeRemove hook `{label}` removed it.)"
            ),
            Err(problems) => format!(
                "Warning: the sub-agent's worktree {shown} (made by the WorktreeCreate hook `{maker}`) was left in \
                 place: {problems}."
            ),
        };
    }
    let changed = match worktree::changes(w).await {
        Ok(c) => c,
        Err(e) => return format!("The sub-agent's git worktree {shown} could not be cleaned up: {e}"),
    };
    if let Some(summary) = changed {
        return format!(
            "The sub-agent worked in the git worktree {shown} on the branch `{}` ({summary}); your working tree is \
             unchanged. Inspect with `git -C {shown} diff` or `git log {}`, and merge the branch to keep the changes.",
            w.branch, w.branch
        );
    }
    let mut warning = None;
    if hooks.has(Event::WorktreeRemove) {
        match fire_remove(hooks, mode, events, w).await {
            Ok(label) => {
                return format!(
                    "(The sub-agent worked in the separate git worktree {shown} and changed nothing there; the \
                     WorktreeRemove hook `{label}` took care of removing it, so keel left it and its branch `{}` to \
                     the hook.)",
                    w.branch
                );
            }
            Err(problems) => warning = Some(problems),
        }
    }
    match (worktree::remove(w).await, warning) {
        (Ok(()), None) => {
            "(The sub-agent worked in a separate git worktree; it changed nothing there, so the worktree was removed.)"
                .to_string()
        }
        (Ok(()), Some(w)) => format!(
            "(The sub-agent worked in a separate git worktree and changed nothing there.) Warning: {w}; keel removed \
             the worktree itself."
        ),
        (Err(e), warning) => format!(
            "The sub-agent's git worktree {shown} could not be cleaned up: {e}{}",
            warning.map(|w| format!(" (and {w})")).unwrap_or_default()
        ),
    }
}

/// Fires WorktreeRemove for `w`: the first hook that succeeded, or what went wrong with each.
async fn fire_remove(hooks: &Hooks, mode: Mode, events: &EventSink, w: &Worktree) -> Result<String, String> {
    let agg = hooks
        .fire(
            Event::WorktreeRemove,
            None,
            mode,
            fields([("worktree_path", w.path.display().to_string().into())]),
            events,
        )
        .await;
    if let Some(r) = agg.ran.iter().find(|r| r.succeeded) {
        return Ok(r.label.clone());
    }
    let problems: Vec<String> = agg
        .ran
        .iter()
        .map(|r| {
            format!(
                "the WorktreeRemove hook `{}` failed ({})",
                r.label,
                r.problem.as_deref().unwrap_or("no output")
            )
        })
        .collect();
    Err(if problems.is_empty() {
        "no WorktreeRemove hook ran".into()
    } else {
        problems.join("; ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(label: &str, succeeded: bool, stdout: &str, problem: Option<&str>) -> Ran {
        Ran {
            label: label.into(),
            succeeded,
            stdout: stdout.into(),
            problem: problem.map(str::to_string),
        }
    }

    #[test]
    fn the_first_succeeding_hook_with_a_line_gives_the_path() {
        let runs = [
            ran("a", false, "/x", Some("exit status 1: nope")),
            ran("b", true, "\n", None),
            ran("c", true, "\n  /tmp/wt  \nmore\n", None),
        ];
        assert_eq!(answer(&runs).unwrap(), ("c".into(), "/tmp/wt".into()));
        let json = [ran("j", true, r#"{"hookSpecificOutput":{"worktreePath":"/w"}}"#, None)];
        assert_eq!(answer(&json).unwrap().1, "/w");
        let e = answer(&[ran("b", true, "", None)]).unwrap_err();
        assert!(e.contains("`b` returned no worktree path"), "{e}");
        let e = answer(&[ran("a", false, "", Some("exit status 3: disk full"))]).unwrap_err();
        assert!(e.contains("`a` failed (exit status 3: disk full)"), "{e}");
    }

    #[test]
    fn the_path_must_be_an_absolute_directory() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(
            checked("h", &t.path().display().to_string()).unwrap(),
            t.path().canonicalize().unwrap()
        );
        let e = checked("h", "rel/dir").unwrap_err();
        assert!(
            e.contains("`h`") && e.contains("not an absolute path to a directory"),
            "{e}"
        );
        let f = t.path().join("file");
        std::fs::write(&f, "x").unwrap();
        assert!(checked("h", &f.display().to_string()).is_err());
        assert!(checked("h", &t.path().join("none").display().to_string()).is_err());
    }
}
