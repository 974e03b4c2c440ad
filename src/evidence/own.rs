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

/// Report files larger than this are not read.
const MAX_REPORT_BYTES: u64 = 4 * 1024 * 1024;
/// What the files other commands print may add up to, for one line.
const MAX_PRINTED_BYTES: usize = 8 * 1024 * 1024;
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
        if let Some(why) = unfollowed(segments, r.segment) {
            own.push(Own::Lost(why));
            continue;
        }
        own.push(match dest {
            Dest::Inherited | Dest::Joined => match other_output(segments, reading, r.segment) {
                Some(why) => Own::Lost(why),
                None => Own::Output,
            },
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
    let mut printed_paths: Vec<std::path::PathBuf> = Vec::new();
    let mut printed_bytes = 0usize;
    // Stored reports matter only beside a report read from the output.
    let any_output = own.contains(&Own::Output);
    for (i, seg) in segments.iter().enumerate().filter(|_| any_output) {
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
            if own_files.contains(&key) || printed_paths.contains(&path) || printed_bytes > MAX_PRINTED_BYTES {
                continue;
            }
            printed_paths.push(path.clone());
            if let Ok(bytes) = read_file_capped(&path, MAX_REPORT_BYTES) {
                printed_bytes += bytes.len();
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

/// Redirections this reading does not follow into the runner's command: a group's or a
/// subshell's (`( pytest ) > /dev/null`), `exec >file` before it, a `sh -c` line that redirects
/// or prints besides its runner.
fn unfollowed(segments: &[Segment], run: usize) -> Option<String> {
    if segments[run..].iter().any(|s| s.group_redirected) {
        return Some(
            "a redirection of the group or subshell around it sends its report where keel does not follow".into(),
        );
    }
    let moved = segments[..run].iter().any(|s| {
        s.words.len() == 1 && s.words[0] == "exec" && (s.stdout != Dest::Inherited || s.stderr != Dest::Inherited)
    });
    if moved {
        return Some("`exec` redirected the line's output before it ran, which keel does not follow".into());
    }
    if let Some(line) = runners::shell_c(&runners::strip_wrappers(&segments[run].words)) {
        let inner = super::command::split(&line);
        let reading = runners::recognise_split(&inner, &runners::Declared::default());
        let extra = inner.iter().enumerate().any(|(i, s)| {
            let is_run = reading.runs.iter().any(|r| r.segment == i);
            (is_run && (s.stdout != Dest::Inherited || s.stderr != Dest::Inherited))
                || s.group_redirected
                || (!is_run && !quiet(s))
        });
        if extra {
            return Some(format!(
                "inside `{}` the runner's report is redirected or other commands print besides it, which keel does \
                 not follow",
                super::ledger::clip(&segments[run].words.join(" "), 60)
            ));
        }
    }
    None
}

/// Programs that print nothing a summary could come from (or only their literal words, which
/// the forged-summary check reads).
const QUIET: &[&str] = &[
    "cd", "pushd", "popd", "true", "false", ":", "export", "set", "unset", "sleep", "exit", "test", "[", "wait",
    "shift", "mkdir", "rm", "cp", "mv", "touch", "ln", "chmod", "source", ".", "umask", "ulimit", "trap",
];

/// Set-up commands whose output comes before the runner's: installers.
fn installs(words: &[String]) -> bool {
    let name = words.first().map(|w| super::command::base_name(w)).unwrap_or("");
    let sub = words.get(1).map(String::as_str).unwrap_or("");
    match name {
        "pip" | "pip3" | "python -m pip" => sub == "install",
        "npm" | "pnpm" | "yarn" | "bun" => matches!(sub, "install" | "ci" | "i" | "") && words.len() <= 3,
        "uv" | "poetry" | "pdm" | "pipenv" => matches!(sub, "sync" | "install" | "pip"),
        "bundle" => sub == "install",
        "go" => matches!(sub, "mod" | "get"),
        _ => false,
    }
}

/// A command that prints nothing keel could mistake for a report: a quiet program, or `echo` /
/// `printf` with literal words (their text is checked as a forged summary).
fn quiet(s: &Segment) -> bool {
    let words = runners::strip_wrappers(&s.words);
    let Some(first) = words.first() else { return true };
    let name = super::command::base_name(first);
    if s.stdout != Dest::Inherited && s.stdout != Dest::Joined {
        return true;
    }
    if QUIET.contains(&name) || (words.len() == 1 && first.contains('=')) {
        return true;
    }
    // `sed -i` edits in place and prints nothing (unless told to write to a device).
    if name == "sed"
        && words.iter().any(|w| w.starts_with("-i") || w == "--in-place")
        && !words.iter().any(|w| w.contains("/dev/") || w.contains("/proc/"))
    {
        return true;
    }
    matches!(name, "echo" | "printf")
        && !s
            .words
            .iter()
            .any(|w| w.contains('$') || w.contains('`') || (name == "printf" && w.contains('%')))
}

/// Filters a runner's report may pass through unchanged in what it says (they keep or drop
/// lines, never rewrite them).
const FILTERS: &[&str] = &[
    "tail", "head", "grep", "egrep", "fgrep", "rg", "tee", "cat", "less", "more", "column",
];

/// Why the output cannot be taken as the runner's report: a command of its pipeline rewrites it
/// (`| sed s/failed/passed/`), or another command of the line prints into the output what keel
/// cannot read (a program, a file, a dynamic `echo`), before or after it.
fn other_output(segments: &[Segment], reading: &Reading, run: usize) -> Option<String> {
    let mut j = run;
    while segments[j].next == super::command::Connector::Pipe && j + 1 < segments.len() {
        j += 1;
        let words = runners::strip_wrappers(&segments[j].words);
        let name = words.first().map(|w| super::command::base_name(w)).unwrap_or("");
        if !FILTERS.contains(&name) {
            return Some(format!(
                "its report passes through `{}`, which may rewrite it",
                super::ledger::clip(&segments[j].words.join(" "), 60)
            ));
        }
    }
    let pipeline_end = j;
    let own_writes = writes_of_runs(segments, reading);
    for (i, s) in segments.iter().enumerate() {
        if (run..=pipeline_end).contains(&i) || reading.runs.iter().any(|r| r.segment == i) || quiet(s) {
            continue;
        }
        if final_dest(segments, i, 1).0 != Dest::Inherited {
            continue;
        }
        // A stage piping into the runner, or a set-up command before it, prints before it.
        let before = i < run;
        if before && installs(&runners::strip_wrappers(&s.words)) {
            continue;
        }
        // Printing only files the runner wrote in this line is showing its report.
        let files = printed_files(s);
        if is_printer(s) && !files.is_empty() && files.iter().all(|f| own_writes.contains(f)) {
            continue;
        }
        return Some(format!(
            "`{}` prints into the same output, so keel cannot tell the runner's report from what it prints",
            super::ledger::clip(&s.words.join(" "), 60)
        ));
    }
    None
}

fn is_printer(s: &Segment) -> bool {
    let words = runners::strip_wrappers(&s.words);
    words
        .first()
        .is_some_and(|w| PRINTERS.contains(&super::command::base_name(w)))
}

/// The files the line's runs (and the filters of their pipelines) write.
fn writes_of_runs(segments: &[Segment], reading: &Reading) -> Vec<String> {
    let mut out = Vec::new();
    for r in &reading.runs {
        let mut j = r.segment;
        loop {
            out.extend(segments[j].writes.iter().cloned());
            // `| tee out.log` writes the runner's own log.
            let words = runners::strip_wrappers(&segments[j].words);
            if words.first().is_some_and(|w| super::command::base_name(w) == "tee") {
                out.extend(words[1..].iter().filter(|w| !w.starts_with('-')).cloned());
            }
            if segments[j].next != super::command::Connector::Pipe || j + 1 >= segments.len() {
                break;
            }
            j += 1;
        }
    }
    out
}
