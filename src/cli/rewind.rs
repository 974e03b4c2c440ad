//! `keel rewind`: the headless undo. Lists a session's points or restores the code, the
//! conversation or both to the moment before one (see `checkpoint` and `engine::rewind`).

use std::process::ExitCode;

use super::args::{RestoreArg, RewindArgs};
use crate::checkpoint::{Checkpoints, PointKind, Restore, Snap};
use crate::config::paths;
use crate::console::{err_line, out_line};
use crate::engine::Session;
use crate::transcript::{self, Transcript, lock};

pub fn run(args: &RewindArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?.canonicalize()?;
    let home = paths::keel_home().ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set KEEL_HOME"))?;
    crate::checkpoint::check_env().map_err(anyhow::Error::msg)?;
    // What a keel killed while writing left is removed; this run's own temporary files are
    // noted, so a rewind killed mid-write leaves nothing a later start does not remove.
    crate::fsutil::stale::start(&home);
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
    // A rewind is the session's one writer: it waits briefly for another keel process to be
    // done with it. A listing only reads, and takes the lock only when it is free (to finish a
    // rewind a crash interrupted).
    let rewinds = args.to.is_some() && !args.dry_run;
    let held = if rewinds {
        let wait = lock::wait_from_env().map_err(anyhow::Error::msg)?;
        match lock::acquire(&session_dir, &id, wait) {
            Ok(l) => Some(l),
            Err(e) => {
                err_line!("Error: {e}; rewind it once that process has ended");
                return Ok(ExitCode::from(1));
            }
        }
    } else {
        lock::acquire(&session_dir, &id, std::time::Duration::ZERO).ok()
    };
    let interrupted = held.is_some() && Checkpoints::new(&session_dir).pending_rewind()?.is_some();
    let loaded = transcript::load(&path)?;
    // Only a rewind (or finishing one) appends to the transcript; listing leaves it (and its
    // record of unsaved lines, which the next resume reports) alone.
    let writes = rewinds || interrupted;
    let transcript = if writes {
        Transcript::create(&path)?
    } else {
        Transcript::disabled(path.clone())
    };
    let mut session = Session::new(id.clone(), cwd, session_dir, transcript);
    if let Some(l) = held {
        session.hold(l);
    }
    if writes {
        session.log_loss(loaded.unsaved.as_ref());
    }
    let mut history = loaded.history;
    if interrupted {
        match crate::engine::rewind::recover(&mut session) {
            Ok(None) => {}
            Ok(Some(recovered)) => {
                err_line!("keel: {}", recovered.notice);
                if recovered.conversation {
                    history = transcript::load(&path)?.history;
                }
            }
            Err(e) => {
                err_line!("Error: an interrupted rewind could not be completed or rolled back: {e}");
                return Ok(ExitCode::from(1));
            }
        }
    }
    session.set_history(history);
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
        list_unrestorable(&store);
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
        for u in &plan.not_restorable {
            out_line!("{}: {} — {}", u.label(), u.path.display(), u.why);
        }
        return Ok(ExitCode::SUCCESS);
    }
    match crate::engine::rewind::rewind(&mut session, to, restore) {
        Ok(report) => {
            for f in &report.files {
                out_line!("restored {}", f.display());
            }
            if report.files.is_empty() && report.not_restorable.is_empty() && restore.code() {
                out_line!("no files needed restoring");
            }
            for u in &report.not_restorable {
                out_line!("{}, left as it is: {} — {}", u.label(), u.path.display(), u.why);
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

/// After the points: which changes a rewind cannot restore, by name (a shell command's beyond
/// the undo budget, a content keel could not store, a record that could not be written).
fn list_unrestorable(store: &Checkpoints) {
    let (changes, lost) = store.unrecorded();
    if changes.is_empty() && lost.is_empty() {
        return;
    }
    out_line!("Changes a rewind cannot restore (keel holds no earlier content of them):");
    for c in &changes {
        let why = match &c.before {
            Snap::NotKept { why } => why.as_str(),
            _ => "",
        };
        out_line!("{:>4}  {:<6}  {} — {why}", c.point, c.by, c.path.display());
    }
    for l in &lost {
        out_line!(
            "{:>4}  {} more change(s) from this point on whose record could not be written at all (the disk was full)",
            l.point,
            l.count
        );
    }
}
