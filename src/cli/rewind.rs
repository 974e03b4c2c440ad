//! `keel rewind`: the headless undo. Lists a session's points or restores the code, the
//! conversation or both to the moment before one (see `checkpoint` and `engine::rewind`).

use std::process::ExitCode;

use super::args::{RestoreArg, RewindArgs};
use crate::checkpoint::{PointKind, Restore};
use crate::config::paths;
use crate::console::{err_line, out_line};
use crate::engine::Session;
use crate::transcript::{self, Transcript};

pub fn run(args: &RewindArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?.canonicalize()?;
    let home = paths::keel_home().ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set KEEL_HOME"))?;
    let project_dir = paths::project_dir(&home, &cwd);
    let path = match &args.session {
        Some(id) => transcript::find_session(&home, &project_dir, id)?,
        None => transcript::latest_in(&project_dir)?,
    };
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| anyhow::anyhow!("odd transcript file name {}", path.display()))?
        .to_string();
    let session_dir = path.with_extension("");
    let loaded = transcript::load(&path)?;
    // Only a real rewind appends to the transcript; listing leaves it (and its record of
    // unsaved lines, which the next resume reports) alone.
    let writes = args.to.is_some() && !args.dry_run;
    let transcript = if writes {
        Transcript::create(&path)?
    } else {
        Transcript::disabled(path.clone())
    };
    let mut session = Session::new(id.clone(), cwd, session_dir, transcript);
    session.set_history(loaded.history);
    if writes {
        session.log_loss(loaded.unsaved.as_ref());
    }
    let store = session.services.checkpoints.clone();

    let Some(to) = args.to else {
        let points = store.points();
        if points.is_empty() {
            out_line!("Session {id} has no points to rewind to yet.");
            return Ok(ExitCode::SUCCESS);
        }
        out_line!("Points of session {id} (rewind with `keel rewind --to N`):");
        for p in points {
            let kind = match p.kind {
                PointKind::Prompt => "prompt",
                PointKind::Rewind => "rewind",
            };
            let when = p.at.get(..19).unwrap_or(&p.at).replace('T', " ");
            let lost = match p.not_restorable {
                0 => String::new(),
                n => format!(" ({n} not restorable)"),
            };
            out_line!(
                "{:>4}  {kind:<6}  {when}  {:>3} file(s) changed since{lost}  {}",
                p.point,
                p.files_changed,
                p.text
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    let restore = match args.restore {
        RestoreArg::Code => Restore::Code,
        RestoreArg::Conversation => Restore::Conversation,
        RestoreArg::Both => Restore::Both,
    };
    if args.dry_run {
        let plan = store.plan(to)?;
        for f in &plan.files {
            out_line!("would restore {}", f.path.display());
        }
        for c in &plan.conflicts {
            out_line!("changed outside keel since: {}\n{}", c.path.display(), c.diff);
        }
        for p in &plan.too_big {
            out_line!("cannot restore (too big to have been kept): {}", p.display());
        }
        for (p, why) in &plan.not_restorable {
            out_line!("not restorable (changed by a shell command): {} — {why}", p.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    match crate::engine::rewind::rewind(&mut session, to, restore) {
        Ok(report) => {
            for f in &report.files {
                out_line!("restored {}", f.display());
            }
            if report.files.is_empty() && restore.code() {
                out_line!("no files needed restoring");
            }
            for (p, why) in &report.not_restorable {
                out_line!(
                    "not restorable (changed by a shell command), left as it is: {} — {why}",
                    p.display()
                );
            }
            if let Some(n) = report.messages {
                out_line!("the conversation now ends before point {to} ({n} messages); continue it with `keel -c`");
            }
            out_line!(
                "this rewind is point {}: `keel rewind --to {}` undoes it",
                report.point,
                report.point
            );
            if let Some(problem) = session.transcript.health() {
                err_line!("keel: warning: {problem}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            err_line!("Error: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
