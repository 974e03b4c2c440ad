//! Which session a run writes: a new one, the continued or resumed one, or a fork of it — and
//! the lock that makes this process its only writer. A session another keel process holds is
//! waited for briefly (`KEEL_SESSION_LOCK_WAIT_MS`); if it is still held, this run continues it
//! as a new session (as `--fork-session` does) and says so, so two processes never interleave
//! one transcript.

use std::path::{Path, PathBuf};

use super::options::Options;
use super::setup::SetupError;
use crate::config::paths;
use crate::transcript::lock::{self, LockError, SessionLock};
use crate::transcript::{self, UnsavedRecord};
use crate::types::message::Message;
use crate::types::tool::Todo;

/// A resumed session's history, task list and record of unsaved lines.
pub(super) type Restored = (Vec<Message>, Vec<Todo>, Option<UnsavedRecord>);

/// Which session this is.
pub(super) struct Place {
    pub id: String,
    pub transcript: PathBuf,
    pub session_dir: PathBuf,
    pub history: Option<Restored>,
    pub forked: bool,
    /// Held from here on (none without a transcript: nobody can open such a session again).
    pub lock: Option<SessionLock>,
}

/// What the command line asks for, before any lock is taken.
enum Wanted {
    New { id: String, transcript: PathBuf },
    Earlier { id: String, transcript: PathBuf },
}

pub(super) fn session_place(
    cli: &Options,
    home: &Path,
    cwd: &Path,
    warnings: &mut Vec<String>,
) -> Result<Place, SetupError> {
    let project_dir = paths::project_dir(home, cwd);
    let wait = lock::wait_from_env().map_err(SetupError::Invalid)?;
    let persist = !cli.no_session_persistence;
    let lock_new = |id: &str| -> Result<Option<SessionLock>, SetupError> {
        if !persist {
            return Ok(None);
        }
        lock::acquire(&project_dir.join(id), id, wait)
            .map(Some)
            .map_err(|e| SetupError::Invalid(e.to_string()))
    };
    let (id, transcript_path) = match wanted(cli, home, &project_dir)? {
        Wanted::New { id, transcript } => {
            let lock = lock_new(&id)?;
            return Ok(Place {
                session_dir: project_dir.join(&id),
                id,
                transcript,
                history: None,
                forked: false,
                lock,
            });
        }
        Wanted::Earlier { id, transcript } => (id, transcript),
    };
    // The earlier session is read once its writer (if any) is done with it.
    let (lock, busy) = if cli.programs.fork_session {
        (None, None)
    } else {
        // The lock beside the transcript: the one every process opening this session takes.
        match lock::acquire(&transcript_path.with_extension(""), &id, wait) {
            Ok(lock) => (Some(lock), None),
            Err(busy @ LockError::Busy { .. }) => (None, Some(busy)),
            Err(e) => return Err(SetupError::Invalid(e.to_string())),
        }
    };
    // A fork (asked for, or the session is busy) continues under a new id; the earlier
    // session's file stays as it was.
    let new_id = uuid::Uuid::new_v4().to_string();
    if let Some(busy) = &busy {
        warnings.push(format!(
            "{busy}, still after {:.1} s, so this run continues it as a new session {new_id} (as --fork-session \
             does); {id} keeps its one writer",
            wait.as_secs_f64()
        ));
    }
    let loaded = transcript::load(&transcript_path)?;
    warnings.extend(match busy {
        Some(_) => loaded.warnings_while_running(&transcript_path),
        None => loaded.warnings(&transcript_path),
    });
    let history = Some((loaded.history, loaded.todos, loaded.unsaved));
    if let Some(lock) = lock {
        return Ok(Place {
            session_dir: project_dir.join(&id),
            id,
            transcript: transcript_path,
            history,
            forked: false,
            lock: Some(lock),
        });
    }
    let lock = lock_new(&new_id)?;
    Ok(Place {
        transcript: project_dir.join(format!("{new_id}.jsonl")),
        session_dir: project_dir.join(&new_id),
        id: new_id,
        history,
        forked: true,
        lock,
    })
}

fn wanted(cli: &Options, home: &Path, project_dir: &Path) -> Result<Wanted, SetupError> {
    // `--resume` without an id opens the picker in interactive mode; the session starts fresh.
    let path = if let Some(id) = cli.resume.as_deref().filter(|id| !id.is_empty()) {
        Some(transcript::find_session(home, project_dir, id)?)
    } else if cli.continue_session {
        Some(transcript::latest_in(project_dir)?)
    } else {
        None
    };
    let Some(path) = path else {
        let id = match &cli.session_id {
            Some(id) => uuid::Uuid::parse_str(id)
                .map_err(|_| SetupError::Invalid(format!("--session-id must be a UUID, got `{id}`")))?
                .to_string(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let transcript = project_dir.join(format!("{id}.jsonl"));
        if transcript.exists() {
            return Err(SetupError::Invalid(format!(
                "session {id} already exists; resume it with --resume {id}"
            )));
        }
        return Ok(Wanted::New { id, transcript });
    };
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(str::to_string)
        .ok_or_else(|| SetupError::Invalid(format!("odd transcript file name {}", path.display())))?;
    Ok(Wanted::Earlier { id, transcript: path })
}
