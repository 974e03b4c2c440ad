//! Sessions written out for other tools. `keel export --format atif SESSION` turns a session's
//! transcript (with its sub-agents' transcripts and its evidence ledger) into an Agent
//! Trajectory Interchange Format document ([`atif`]), the format evaluation harnesses such as
//! Harbor read. Export only reads: the session may be running, and nothing of it changes.

pub mod atif;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::transcript::{self, TranscriptError};

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} holds no conversation: no user or assistant line could be read")]
    Empty(PathBuf),
    #[error(transparent)]
    Find(#[from] TranscriptError),
    #[error("`{0}` is neither a session id (letters, digits, `-`, `_`) nor the path of a session's .jsonl transcript")]
    BadSession(String),
}

/// The transcript `session` names: the path of a `.jsonl` file, or a session id, looked up as
/// `--resume` does (this directory's project first, then every project under `home`).
pub fn locate(home: &Path, cwd: &Path, session: &str) -> Result<PathBuf, ExportError> {
    let as_path = Path::new(session);
    if session.ends_with(".jsonl") {
        return if as_path.is_file() {
            Ok(as_path.to_path_buf())
        } else {
            Err(ExportError::Read {
                path: as_path.to_path_buf(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            })
        };
    }
    // An id becomes a file name: nothing in it may lead out of the projects folder.
    let valid = !session.is_empty()
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(ExportError::BadSession(session.to_string()));
    }
    let project_dir = crate::config::paths::project_dir(home, cwd);
    Ok(transcript::find_session(home, &project_dir, session)?)
}

/// A transcript's lines as JSON values, in order; unreadable lines are counted by number.
pub(crate) struct Lines {
    pub values: Vec<Value>,
    pub bad: Vec<usize>,
}

pub(crate) fn read_lines(path: &Path) -> Result<Lines, ExportError> {
    let read_err = |source| ExportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(read_err)?;
    let mut out = Lines {
        values: Vec::new(),
        bad: Vec::new(),
    };
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let line = line.map_err(read_err)?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match transcript::parse_line(&line) {
            Some(v) => out.values.push(v),
            None => out.bad.push(i + 1),
        }
    }
    Ok(out)
}

/// A sub-agent transcript below a session folder, and the Agent call it answers.
pub(crate) struct SubagentFile {
    pub agent_id: String,
    pub path: PathBuf,
    /// The sub-agent's own folder (its evidence, its own sub-agents).
    pub dir: PathBuf,
}

/// The sub-agent transcripts directly below `session_dir` (`subagents/<agent id>.jsonl`), by
/// name so the export is the same every time.
pub(crate) fn subagent_files(session_dir: &Path) -> Vec<SubagentFile> {
    let dir = session_dir.join("subagents");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<SubagentFile> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .filter_map(|p| {
            let agent_id = p.file_stem()?.to_str()?.to_string();
            Some(SubagentFile {
                dir: dir.join(&agent_id),
                agent_id,
                path: p,
            })
        })
        .collect();
    out.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_cannot_lead_out_of_the_projects_folder() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../../etc/passwd", "a/b", "", "x y"] {
            assert!(
                matches!(locate(dir.path(), dir.path(), bad), Err(ExportError::BadSession(_))),
                "{bad:?} was accepted"
            );
        }
        assert!(matches!(
            locate(dir.path(), dir.path(), "no-such-session"),
            Err(ExportError::Find(_))
        ));
    }

    #[test]
    fn a_path_names_its_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        assert_eq!(locate(dir.path(), dir.path(), file.to_str().unwrap()).unwrap(), file);
        let missing = dir.path().join("gone.jsonl");
        assert!(matches!(
            locate(dir.path(), dir.path(), missing.to_str().unwrap()),
            Err(ExportError::Read { .. })
        ));
    }
}
