//! keel's own record of tool outcomes: an append-only log, one entry per tool call, kept in
//! the session (and in `<session dir>/tool-log.jsonl`, so a resumed session still has it).
//!
//! Autocompaction fills the hand-off's "failed checks" and "files changed" sections from this
//! record, never from the summarising model, which tends to forget exactly those.
//!
//! A *failed check* is a call that went wrong in a way that matters for verification: an error
//! result of a command-like tool (anything that is not a pure observation — a shell command
//! exits non-zero, an edit is refused), or output that shows test-runner or compiler failures
//! (also when the model only read or searched a log file). Calls that never ran (schema errors,
//! unknown tools) are mistakes, not checks. A failure stays open until a later call of the same
//! tool on the same target succeeds without failure markers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::budget;
use super::calls;
use crate::types::message::ToolResultContent;

/// Decisive lines kept per failure.
pub const MAX_DECISIVE_LINES: usize = 8;
/// Longest decisive line kept.
const MAX_LINE_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    /// The session's model request the call belongs to.
    pub step: u32,
    pub id: String,
    pub tool: String,
    /// `Name(key argument)`.
    pub label: String,
    /// What the call worked on (path, command, pattern); two calls with the same tool and
    /// target are the same check.
    pub target: String,
    pub is_error: bool,
    pub not_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// An error of a command-like tool, or output showing failures.
    pub failure: bool,
    /// The lines that say what failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisive: Vec<String>,
    /// Where the full output is (tier 1 spill file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<PathBuf>,
    /// The file an observation read (a log file the failure came from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PathBuf>,
    /// The file a successful edit changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<PathBuf>,
}

/// What a call was, for building its outcome.
pub struct CallFacts<'a> {
    pub step: u32,
    pub id: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
    pub content: &'a ToolResultContent,
    pub is_error: bool,
    pub structured: &'a Value,
    /// What the call's tool declares.
    pub declared: crate::types::tool::Declared,
}

/// Builds the outcome of one call. A spilled result is examined in full, from its spill file.
pub fn outcome(f: &CallFacts<'_>, cwd: &Path, session_dir: &Path) -> ToolOutcome {
    let shown = f.content.as_text();
    let spill = shown
        .starts_with("<persisted-output>")
        .then(|| budget::spill_path(session_dir, f.id))
        .filter(|p| p.is_file());
    let full = spill
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or(shown);
    let not_run = f.is_error && calls::is_not_run(&full);
    let observes = f.declared.effects.read_only;
    let source = if observes {
        calls::input_paths(f.input, cwd).into_iter().next()
    } else {
        None
    };
    let scan = !observes || source.as_deref().is_some_and(looks_like_log);
    let mut decisive = if scan && !not_run {
        marker_lines(&full)
    } else {
        Vec::new()
    };
    let markers = !decisive.is_empty();
    let error_counts = f.is_error && !not_run && !observes;
    if error_counts && decisive.is_empty() {
        decisive = last_lines(&full, 3);
    }
    let edited = if f.is_error {
        None
    } else {
        Some(f.input)
            .filter(|_| f.declared.effects.edits_files)
            .and_then(|i| i.get("file_path").or_else(|| i.get("notebook_path")))
            .and_then(Value::as_str)
            .map(|p| crate::fsutil::paths::resolve(cwd, p))
    };
    ToolOutcome {
        step: f.step,
        id: f.id.to_string(),
        tool: f.tool.to_string(),
        label: calls::label(f.tool, f.input),
        target: calls::target(f.input),
        is_error: f.is_error,
        not_run,
        exit_code: exit_code(f.structured, &full),
        failure: error_counts || markers,
        decisive,
        spill,
        source,
        edited,
    }
}

/// Log-like files: where reading failure markers means a failed run, not source code.
fn looks_like_log(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    matches!(ext, "log" | "out" | "txt" | "err") || name.contains("log")
}

// A literal pattern, compiled by the tests: it cannot fail at run time.
#[allow(clippy::expect_used)]
fn markers() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            // ASCII word boundaries: much faster than Unicode ones, and the markers are ASCII.
            r"(?m-u)test result: FAILED|\bFAILED\b|\bpanicked at\b|\berror(\[E[0-9]{4}\])?:|",
            r"\b[1-9][0-9]* (failed|failing)\b|Traceback \(most recent call last\)|\bAssertionError\b|",
            r"--- FAIL:|^FAIL\b|npm ERR!|\bExit code [1-9][0-9]*"
        ))
        .expect("constant regex")
    })
}

/// Lines with failure markers, the last [`MAX_DECISIVE_LINES`] of them (runners summarise at
/// the end), without repeats. One pass of the regex over the whole text.
pub fn marker_lines(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut next_line = 0;
    for m in markers().find_iter(text) {
        if m.start() < next_line {
            continue;
        }
        let start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let end = text[m.end()..].find('\n').map_or(text.len(), |i| m.end() + i);
        next_line = end;
        let l = clip(
            text[start..end]
                .trim()
                .trim_start_matches("<tool_use_error>")
                .trim_end_matches("</tool_use_error>"),
        );
        if !found.contains(&l) {
            found.push(l);
        }
    }
    let skip = found.len().saturating_sub(MAX_DECISIVE_LINES);
    found.into_iter().skip(skip).collect()
}

/// The last `n` non-empty lines (where an error usually says what went wrong).
pub fn last_lines(text: &str, n: usize) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("</") && !l.starts_with("<tool_use_error>"))
        .take(n)
        .map(clip)
        .collect();
    lines.reverse();
    if lines.is_empty() {
        // A one-line error wrapped in tags.
        let inner = text
            .trim()
            .trim_start_matches("<tool_use_error>")
            .trim_end_matches("</tool_use_error>");
        if !inner.trim().is_empty() {
            lines.push(clip(inner.trim()));
        }
    }
    lines
}

fn clip(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS - 1).collect();
    format!("{cut}…")
}

/// The exit code of a command, from its structured result or its text.
pub fn exit_code(structured: &Value, text: &str) -> Option<i64> {
    for k in ["exit_code", "exitCode", "returnCode", "return_code", "code"] {
        if let Some(n) = structured.get(k).and_then(Value::as_i64) {
            return Some(n);
        }
    }
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    let re =
        RE.get_or_init(|| Regex::new(r"(?i)\bexit(?:ed with)? (?:code|status)[ :=]*(-?\d+)").expect("constant regex"));
    re.captures_iter(text).last()?.get(1)?.as_str().parse().ok()
}

/// A file changed by edits during the session.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: PathBuf,
    pub edits: usize,
    pub last_step: u32,
    pub tools: Vec<String>,
}

/// The append-only log of tool outcomes.
#[derive(Debug, Default)]
pub struct ToolLog {
    entries: Vec<ToolOutcome>,
    file: Option<PathBuf>,
    /// `file`, opened for appending at the first entry and kept open (one write per entry).
    handle: Option<std::fs::File>,
    /// The first failure to persist an entry (kept in memory regardless).
    pub write_error: Option<String>,
}

impl ToolLog {
    /// A log kept in memory only (`--no-session-persistence`, tests).
    pub fn in_memory() -> Self {
        ToolLog::default()
    }

    /// A log persisted at `path`, continuing the entries already there (resume).
    pub fn open(path: PathBuf) -> Self {
        let entries = std::fs::read_to_string(&path)
            .map(|t| t.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
            .unwrap_or_default();
        ToolLog {
            entries,
            file: Some(path),
            handle: None,
            write_error: None,
        }
    }

    pub fn record(&mut self, outcome: ToolOutcome) {
        if let Some(path) = &self.file
            && self.write_error.is_none()
            && let Err(e) = append_line(path, &mut self.handle, &outcome)
        {
            self.write_error = Some(format!("cannot write the tool log {}: {e}", path.display()));
        }
        self.entries.push(outcome);
    }

    pub fn entries(&self) -> &[ToolOutcome] {
        &self.entries
    }

    /// Failures not fixed by a later successful call of the same tool on the same target, in
    /// the order they happened.
    pub fn open_failures(&self) -> Vec<&ToolOutcome> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                e.failure
                    && !self.entries[i + 1..]
                        .iter()
                        .any(|l| l.tool == e.tool && l.target == e.target && !l.failure && !l.is_error)
            })
            .map(|(_, e)| e)
            .collect()
    }

    /// Files changed by successful edits, most recently changed first.
    pub fn files_changed(&self) -> Vec<FileChange> {
        let mut out: Vec<FileChange> = Vec::new();
        for e in &self.entries {
            let Some(path) = &e.edited else { continue };
            match out.iter_mut().find(|c| &c.path == path) {
                Some(c) => {
                    c.edits += 1;
                    c.last_step = e.step;
                    if !c.tools.contains(&e.tool) {
                        c.tools.push(e.tool.clone());
                    }
                }
                None => out.push(FileChange {
                    path: path.clone(),
                    edits: 1,
                    last_step: e.step,
                    tools: vec![e.tool.clone()],
                }),
            }
        }
        out.sort_by_key(|c| std::cmp::Reverse(c.last_step));
        out
    }
}

fn append_line(path: &Path, handle: &mut Option<std::fs::File>, outcome: &ToolOutcome) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(outcome).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let f = match handle {
        Some(f) => f,
        None => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            handle.insert(std::fs::OpenOptions::new().create(true).append(true).open(path)?)
        }
    };
    // One write of the whole line: an append never interleaves with another writer's.
    f.write_all(&line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts<'a>(
        step: u32,
        id: &'a str,
        tool: &'a str,
        input: &'a Value,
        content: &'a ToolResultContent,
        is_error: bool,
    ) -> CallFacts<'a> {
        static NULL: Value = Value::Null;
        CallFacts {
            step,
            id,
            tool,
            input,
            content,
            is_error,
            structured: &NULL,
            declared: crate::tools::kinds::declared(tool),
        }
    }

    #[test]
    fn command_failure_keeps_exit_code_and_decisive_lines() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"command": "cargo test"});
        let text: ToolResultContent = "running 3 tests\ntest a ... ok\ntest b ... FAILED\n\nfailures:\n---- b stdout ----\nthread 'b' panicked at src/lib.rs:9:5\ntest result: FAILED. 2 passed; 1 failed\nExit code 101".to_string().into();
        let o = outcome(&facts(4, "t1", "Bash", &input, &text, true), dir.path(), dir.path());
        assert!(o.failure && o.is_error && !o.not_run);
        assert_eq!(o.exit_code, Some(101));
        assert!(o.decisive.iter().any(|l| l == "test b ... FAILED"), "{:?}", o.decisive);
        assert!(o.decisive.iter().any(|l| l.starts_with("test result: FAILED")));
        assert!(o.decisive.iter().any(|l| l.contains("panicked at src/lib.rs:9:5")));
        assert!(!o.decisive.iter().any(|l| l.contains("test a ... ok")));
    }

    #[test]
    fn structured_exit_code_wins_and_plain_errors_keep_their_last_lines() {
        assert_eq!(exit_code(&json!({"exit_code": 2}), "Exit code 7"), Some(2));
        assert_eq!(exit_code(&Value::Null, "exited with status 3\n"), Some(3));
        assert_eq!(exit_code(&Value::Null, "all good"), None);
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"file_path": "/r/a.rs", "old_string": "x", "new_string": "y"});
        let text: ToolResultContent = "<tool_use_error>old_string was not found in /r/a.rs</tool_use_error>"
            .to_string()
            .into();
        let o = outcome(&facts(1, "e", "Edit", &input, &text, true), dir.path(), dir.path());
        assert!(o.failure);
        assert_eq!(o.decisive, vec!["old_string was not found in /r/a.rs"]);
        assert_eq!(o.edited, None);
    }

    #[test]
    fn reading_a_failing_log_is_a_failure_reading_source_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let log = json!({"file_path": "/r/logs/test-run.log"});
        let text: ToolResultContent = "   1\ttest x ... FAILED\n   2\ttest result: FAILED. 1 failed"
            .to_string()
            .into();
        let o = outcome(&facts(2, "r", "Read", &log, &text, false), dir.path(), dir.path());
        assert!(o.failure && !o.is_error);
        assert_eq!(o.source.as_deref(), Some(Path::new("/r/logs/test-run.log")));
        let src = json!({"file_path": "/r/src/tests.rs"});
        let o = outcome(&facts(2, "s", "Read", &src, &text, false), dir.path(), dir.path());
        assert!(!o.failure);
        // A call that never ran is a mistake, not a failed check.
        let bad: ToolResultContent = "<tool_use_error>Bash was not run: its input does not match</tool_use_error>"
            .to_string()
            .into();
        let o = outcome(&facts(3, "n", "Bash", &json!({}), &bad, true), dir.path(), dir.path());
        assert!(o.not_run && !o.failure);
    }

    #[test]
    fn spilled_output_is_examined_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let full = format!(
            "{}\nerror[E0308]: mismatched types\n{}",
            "noise\n".repeat(5_000),
            "tail\n".repeat(2_000)
        );
        let out = budget::apply(crate::types::tool::ToolOutput::error(full), 5_000, dir.path(), "big");
        let input = json!({"command": "cargo build"});
        let mut f = facts(7, "big", "Bash", &input, &out.content, true);
        f.structured = &out.structured;
        let o = outcome(&f, dir.path(), dir.path());
        assert_eq!(o.spill, Some(budget::spill_path(dir.path(), "big")));
        assert_eq!(o.decisive, vec!["error[E0308]: mismatched types"]);
    }

    #[test]
    fn failures_close_when_the_same_check_later_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/tool-log.jsonl");
        let mut log = ToolLog::open(path.clone());
        let fail: ToolResultContent = "test result: FAILED. 1 failed\nExit code 101".to_string().into();
        let ok: ToolResultContent = "test result: ok. 3 passed".to_string().into();
        let t = json!({"command": "cargo test"});
        let lint = json!({"command": "cargo clippy"});
        let edit = json!({"file_path": "/r/a.rs"});
        let done: ToolResultContent = "edited".to_string().into();
        for (step, id, tool, input, content, err) in [
            (1, "a", "Bash", &t, &fail, true),
            (2, "b", "Bash", &lint, &fail, true),
            (3, "c", "Edit", &edit, &done, false),
            (4, "d", "Bash", &t, &ok, false),
            (5, "e", "Edit", &edit, &done, false),
        ] {
            log.record(outcome(
                &facts(step, id, tool, input, content, err),
                dir.path(),
                dir.path(),
            ));
        }
        let open: Vec<&str> = log.open_failures().iter().map(|o| o.id.as_str()).collect();
        assert_eq!(open, vec!["b"]);
        let changed = log.files_changed();
        assert_eq!(changed.len(), 1);
        assert_eq!((changed[0].edits, changed[0].last_step), (2, 5));
        // Persisted line by line: a resumed session reads the same record back.
        let again = ToolLog::open(path);
        assert_eq!(again.entries(), log.entries());
        assert!(log.write_error.is_none());
    }
}
