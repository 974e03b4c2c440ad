//! Where each runner's own report went, from the command plan: the command's output, a file it
//! was redirected to, or nowhere (`> /dev/null`); and the files the line's other commands print
//! into the output (`cat reports/last.txt`), which are not the runner's report unless the runner
//! wrote them in this command. The ledger reads a run's counts from the runner's own stream,
//! never from any line of the output that merely looks like a summary.

use std::path::Path;
use std::time::SystemTime;

use super::command::{Dest, Segment};
use super::expand::Expanded;
use super::runners::{self, Reading, Runner};
use crate::fsutil::open::read_file_capped;

/// Report files larger than this are read up to it.
const MAX_REPORT_BYTES: u64 = 4 * 1024 * 1024;
/// The kernel stamps times from a coarse clock: a file written right at the start still counts.
const SLACK: std::time::Duration = std::time::Duration::from_millis(20);

/// Where one run's report went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Own {
    /// Into the command's output (directly or through a pipeline).
    Output,
    /// Into a file the command wrote: its content now.
    File { path: String, text: String },
    /// Nowhere keel can read: why.
    Lost(String),
}

/// What the plan says of a line's output, for [`super::classify`].
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Per run of the reading.
    pub own: Vec<Own>,
    /// Per run, the body of the script it runs, when read.
    pub bodies: Vec<Option<Expanded>>,
    /// Files other commands of the line print into the output: (segment, its text as written,
    /// the file's content).
    pub printed: Vec<(usize, String, String)>,
}

impl Facts {
    /// Every run's report in the output, nothing printed from files, no bodies (pure tests).
    pub fn output_only(reading: &Reading) -> Facts {
        Facts {
            own: vec![Own::Output; reading.runs.len()],
            bodies: vec![None; reading.runs.len()],
            printed: Vec::new(),
        }
    }
}

/// The descriptor a runner writes its summary to.
pub fn summary_fd(runner: Runner) -> u32 {
    match runner {
        Runner::Jest | Runner::Unittest | Runner::BunTest | Runner::Cargo => 2,
        _ => 1,
    }
}

/// Reads where each run's report went and what other commands print from files.
pub fn facts(
    segments: &[Segment],
    reading: &Reading,
    bodies: Vec<Option<Expanded>>,
    cwd: &Path,
    started_at: SystemTime,
) -> Facts {
    let mut own = Vec::with_capacity(reading.runs.len());
    for (r, body) in reading.runs.iter().zip(&bodies) {
        let inner = body.as_ref().and_then(|b| b.inner_runner().map(|i| (b, i)));
        let fd = summary_fd(inner.map_or(r.runner, |(_, i)| i.runner));
        let (mut dest, mut through) = final_dest(segments, r.segment, fd);
        // The script's own line may send its runner's report elsewhere (`pytest > log` in
        // package.json).
        if dest == Dest::Inherited
            && let Some((b, i)) = inner
        {
            dest = final_dest(&b.segments, i.segment, fd).0;
            through = r.segment;
        }
        own.push(match dest {
            Dest::Inherited | Dest::Joined => Own::Output,
            Dest::File(f) => match shared_with(segments, reading, r.segment..=through, &f, cwd) {
                Some(other) => Own::Lost(format!(
                    "its report went to `{f}`, which `{}` of the same line writes too",
                    super::ledger::clip(&other, 60)
                )),
                None => report_file(&f, cwd, started_at),
            },
        });
    }
    let own_files: Vec<String> = own
        .iter()
        .filter_map(|o| match o {
            Own::File { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    let mut printed = Vec::new();
    for (i, seg) in segments.iter().enumerate() {
        if reading.runs.iter().any(|r| r.segment == i) || final_dest(segments, i, 1).0 != Dest::Inherited {
            continue;
        }
        for file in printed_files(seg) {
            let path = crate::fsutil::paths::resolve(cwd, &file);
            // Only the project's files can hold a stored report worth comparing; keel reads
            // nothing of the machine's for it.
            if !path.starts_with(cwd) {
                continue;
            }
            let key = path.display().to_string();
            if own_files.contains(&key) {
                continue;
            }
            if let Ok(bytes) = read_file_capped(&path, MAX_REPORT_BYTES) {
                printed.push((i, seg.words.join(" "), String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    Facts { own, bodies, printed }
}

/// Where descriptor `fd` of segment `i` ends up: a file, or the command's output — through the
/// rest of a pipeline (`pytest 2>&1 | tail -3 > run.log` reports into `run.log`).
fn final_dest(segments: &[Segment], i: usize, fd: u32) -> (Dest, usize) {
    let Some(seg) = segments.get(i) else {
        return (Dest::Inherited, i);
    };
    let start = if fd == 2 { &seg.stderr } else { &seg.stdout };
    match start {
        Dest::File(f) => return (Dest::File(f.clone()), i),
        // Standard error not joined to standard output goes to the output directly.
        Dest::Inherited if fd == 2 => return (Dest::Inherited, i),
        _ => {}
    }
    let mut j = i;
    while segments[j].next == super::command::Connector::Pipe && j + 1 < segments.len() {
        j += 1;
        if let Dest::File(f) = &segments[j].stdout {
            return (Dest::File(f.clone()), j);
        }
    }
    (Dest::Inherited, j)
}

/// A command of the line that is not a run and writes `file` too (`echo "5 passed" >> log`).
/// The runner's own pipeline (`pipeline`: the segments its report passes through) is not
/// another writer.
fn shared_with(
    segments: &[Segment],
    reading: &Reading,
    pipeline: std::ops::RangeInclusive<usize>,
    file: &str,
    cwd: &Path,
) -> Option<String> {
    let target = crate::fsutil::paths::resolve(cwd, file);
    segments.iter().enumerate().find_map(|(i, s)| {
        let run = reading.runs.iter().any(|r| r.segment == i) || pipeline.contains(&i);
        (!run && s.writes.iter().any(|w| crate::fsutil::paths::resolve(cwd, w) == target)).then(|| s.words.join(" "))
    })
}

/// A runner's report sent to `file`: its content when the command wrote it.
fn report_file(file: &str, cwd: &Path, started_at: SystemTime) -> Own {
    if file == "/dev/null" {
        return Own::Lost(format!(
            "its report went to /dev/null (`> {file}`), so the command's output holds nothing of its own"
        ));
    }
    let path = crate::fsutil::paths::resolve(cwd, file);
    let key = path.display().to_string();
    let written = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t + SLACK >= started_at);
    if !written {
        return Own::Lost(format!(
            "its report was sent to `{file}`, which the command did not write"
        ));
    }
    match read_file_capped(&path, MAX_REPORT_BYTES) {
        Ok(bytes) => Own::File {
            path: key,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        },
        Err(e) => Own::Lost(format!(
            "its report was sent to `{file}`, which keel could not read: {e}"
        )),
    }
}

/// Programs that print (part of) the files they are given.
const PRINTERS: &[&str] = &[
    "cat", "tac", "tail", "head", "less", "more", "nl", "grep", "egrep", "fgrep", "rg", "sed", "awk", "column", "jq",
    "cut", "sort", "uniq", "strings",
];

/// The file operands of a printing command (words that are not options; a missing file is
/// simply not read).
fn printed_files(seg: &Segment) -> Vec<String> {
    let words = runners::strip_wrappers(&seg.words);
    let Some(first) = words.first() else { return Vec::new() };
    if !PRINTERS.contains(&super::command::base_name(first)) {
        return Vec::new();
    }
    words[1..].iter().filter(|w| !w.starts_with('-')).cloned().collect()
}
