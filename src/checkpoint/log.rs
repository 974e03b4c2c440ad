//! The log file (`checkpoints/log.jsonl`) and its tail that could not be written yet.
//!
//! Lines are appended whole: a failed append is cut back to the last whole line, and a line a
//! crash cut off is ended before the next append, so it never swallows the next line. When the
//! disk is full, a change's line is kept, in order, in memory and in a record beside the log
//! whose bytes were allocated when the log was opened (`unrecorded.json`, overwritten in place,
//! so it can be updated on a full disk). Readers take that record as the log's tail; the next
//! append that succeeds (in this process or a later one) writes it into the log first.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Change, Point};

pub(super) const LOG: &str = "log.jsonl";
const TAIL: &str = "unrecorded.json";
/// Bytes reserved for the record of unwritten changes (some fifty changes).
const TAIL_SIZE: usize = 16 * 1024;

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum LogLine {
    Point(Point),
    Change {
        change: Change,
    },
    /// Changes under `point` of which not even the record beside the log could hold a line.
    Lost {
        lost: Lost,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lost {
    pub point: u32,
    pub count: u64,
}

/// The changes not in the log yet, oldest first.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Tail {
    pub changes: Vec<Change>,
    /// Changes that did not fit in the record either: only their number is known.
    #[serde(default)]
    pub lost: Option<Lost>,
}

impl Tail {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.lost.is_none()
    }

    /// The lines to write into the log, in order.
    pub fn lines(&self) -> Vec<LogLine> {
        let mut out: Vec<LogLine> = self
            .changes
            .iter()
            .map(|c| LogLine::Change { change: c.clone() })
            .collect();
        out.extend(self.lost.map(|lost| LogLine::Lost { lost }));
        out
    }
}

/// What the log holds, its unwritten tail included.
#[derive(Debug, Default)]
pub(super) struct Contents {
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    pub lost: Vec<Lost>,
}

/// Every line of the log, then the unwritten tail; a torn line (a crash) is ignored.
pub(super) fn read(dir: &Path) -> Contents {
    let mut out = Contents::default();
    if let Ok(file) = File::open(dir.join(LOG)) {
        for line in BufReader::new(file).split(b'\n').map_while(Result::ok) {
            match serde_json::from_slice::<LogLine>(&line) {
                Ok(LogLine::Point(p)) => out.points.push(p),
                Ok(LogLine::Change { change }) => out.changes.push(change),
                Ok(LogLine::Lost { lost }) => out.lost.push(lost),
                Err(_) => {}
            }
        }
    }
    let tail = read_tail(dir);
    out.changes.extend(tail.changes);
    out.lost.extend(tail.lost);
    out
}

fn read_tail(dir: &Path) -> Tail {
    std::fs::read(dir.join(TAIL))
        .ok()
        .and_then(|b| serde_json::from_slice(b.trim_ascii()).ok())
        .unwrap_or_default()
}

/// The open log and its record of unwritten changes.
#[derive(Debug)]
pub(super) struct LogFile {
    file: File,
    len: u64,
    cut: bool,
    tail_file: Option<File>,
    /// What the record beside the log holds (written there, not yet in the log).
    pub tail: Tail,
}

impl LogFile {
    pub fn open(dir: &Path) -> std::io::Result<LogFile> {
        std::fs::create_dir_all(dir)?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(dir.join(LOG))?;
        let len = file.metadata()?.len();
        let mut cut = false;
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            cut = last[0] != b'\n';
        }
        let tail = read_tail(dir);
        Ok(LogFile {
            file,
            len,
            cut,
            tail_file: reserve_tail(&dir.join(TAIL)),
            tail,
        })
    }

    /// Appends `lines` whole, the unwritten tail first; with `sync`, durably. On failure
    /// nothing of them stays in the log.
    pub fn append(&mut self, lines: &[LogLine], sync: bool) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        if self.cut {
            bytes.push(b'\n');
        }
        for line in self.tail.lines().iter().chain(lines) {
            bytes.extend(serde_json::to_vec(line).unwrap_or_default());
            bytes.push(b'\n');
        }
        let written = self
            .file
            .write_all(&bytes)
            .and_then(|_| if sync { self.file.sync_data() } else { Ok(()) });
        match written {
            Ok(()) => {
                self.len += bytes.len() as u64;
                self.cut = false;
                if !self.tail.is_empty() {
                    self.tail = Tail::default();
                    self.store_tail();
                }
                Ok(())
            }
            Err(e) => {
                // Back to the last whole line (the prepended line end included, so `cut` stays).
                if self.file.set_len(self.len).is_err() {
                    self.cut = true;
                }
                Err(e)
            }
        }
    }

    /// Adds `change` to the unwritten tail (in memory and in the record beside the log).
    /// Returns whether the record holds it.
    pub fn keep(&mut self, change: Change) -> bool {
        self.tail.changes.push(change);
        let held = self.tail.changes.len();
        self.store_tail();
        // The newest change is the first one dropped for lack of room.
        self.tail_file.is_some() && self.tail.changes.len() == held
    }

    /// Writes the tail into its record, dropping the newest changes it has no room for (they
    /// are counted).
    fn store_tail(&mut self) {
        let Some(file) = &self.tail_file else {
            return;
        };
        let mut bytes = serde_json::to_vec(&self.tail).unwrap_or_default();
        while bytes.len() > TAIL_SIZE
            && let Some(dropped) = self.tail.changes.pop()
        {
            let lost = self.tail.lost.get_or_insert(Lost {
                point: dropped.point,
                count: 0,
            });
            lost.point = lost.point.min(dropped.point);
            lost.count += 1;
            bytes = serde_json::to_vec(&self.tail).unwrap_or_default();
        }
        bytes.resize(TAIL_SIZE, b' ');
        let _ = file.write_all_at(&bytes, 0).and_then(|_| file.sync_data());
    }
}

/// Opens the record beside the log and makes sure its bytes are allocated (what it holds is
/// kept). Best effort: without it a full disk loses the unwritten changes, and says so.
fn reserve_tail(path: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .ok()?;
    let len = file.metadata().ok()?.len() as usize;
    if len < TAIL_SIZE {
        file.write_all_at(&vec![b' '; TAIL_SIZE - len], len as u64).ok()?;
    }
    Some(file)
}
