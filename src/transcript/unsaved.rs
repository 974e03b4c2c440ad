//! The record of transcript lines that could not be written, kept beside the transcript
//! (`<session>.unsaved`). Its bytes are allocated when the session starts and later only
//! overwritten in place, so it can still be updated when the disk is full.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Bytes reserved for the record.
const SIZE: usize = 512;

/// What a run could not save.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsavedRecord {
    pub lines: u64,
    pub messages: u64,
    pub error: String,
    pub since: String,
}

/// The open, preallocated record file of a session. Best effort: a record that cannot be
/// created (read-only directory) simply records nothing.
pub struct Unsaved {
    file: Option<File>,
    since: Option<String>,
}

pub fn path_for(transcript: &Path) -> PathBuf {
    transcript.with_extension("unsaved")
}

impl Unsaved {
    /// Opens (and blanks) the record of the transcript at `transcript`.
    pub fn open(transcript: &Path) -> Unsaved {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path_for(transcript))
            .ok()
            .filter(|f| f.write_all_at(&[b' '; SIZE], 0).is_ok());
        Unsaved { file, since: None }
    }

    pub fn record(&mut self, lines: u64, messages: u64, error: &str) {
        let since = self
            .since
            .get_or_insert_with(|| chrono::Utc::now().to_rfc3339())
            .clone();
        let mut rec = UnsavedRecord {
            lines,
            messages,
            error: error.to_string(),
            since,
        };
        let mut bytes = serde_json::to_vec(&rec).unwrap_or_default();
        if bytes.len() > SIZE {
            rec.error = rec.error.chars().take(200).collect();
            bytes = serde_json::to_vec(&rec).unwrap_or_default();
        }
        bytes.resize(SIZE, b' ');
        if let Some(f) = &self.file {
            let _ = f.write_all_at(&bytes, 0).and_then(|_| f.sync_data());
        }
    }

    pub fn clear(&mut self) {
        self.since = None;
        if let Some(f) = &self.file {
            let _ = f.write_all_at(&[b' '; SIZE], 0);
        }
    }
}

/// The record left by an earlier run of the transcript at `transcript`, if it lost lines.
pub fn read(transcript: &Path) -> Option<UnsavedRecord> {
    let text = std::fs::read_to_string(path_for(transcript)).ok()?;
    let rec: UnsavedRecord = serde_json::from_str(text.trim()).ok()?;
    (rec.lines > 0).then_some(rec)
}
