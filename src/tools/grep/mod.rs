//! Grep: regular-expression search over files, with ripgrep's parameters and semantics.

pub mod search;

use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Capability, Declared, Effects, RuleGrammar, Subject, Tool, ToolContext, ToolError, ToolOutput, parse_input, paths,
};
use search::{FileHits, Mode, Query, SearchError};

pub const DEFAULT_HEAD_LIMIT: usize = 250;
/// How long one search may take (`KEEL_GREP_TIMEOUT_MS` overrides it).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The search budget in force.
fn timeout() -> Duration {
    std::env::var("KEEL_GREP_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
}

pub struct GrepTool;

#[derive(Deserialize)]
struct Input {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(rename = "type")]
    file_type: Option<String>,
    output_mode: Option<String>,
    #[serde(rename = "-i", default)]
    case_insensitive: bool,
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(rename = "-A")]
    after: Option<usize>,
    #[serde(rename = "-B")]
    before: Option<usize>,
    #[serde(rename = "-C")]
    context_c: Option<usize>,
    context: Option<usize>,
    #[serde(rename = "-o", default)]
    only_matching: bool,
    head_limit: Option<usize>,
    offset: Option<usize>,
    #[serde(default)]
    multiline: bool,
}

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "Grep"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::READS,
            grammar: RuleGrammar::Path,
            covered_by: &["Read"],
        }
    }

    fn subject(&self, input: &Value, cwd: &std::path::Path) -> Subject {
        match input.get("path").and_then(Value::as_str) {
            Some(p) => Subject::Path(paths::resolve(cwd, p)),
            None => Subject::Path(cwd.to_path_buf()),
        }
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Files]
    }

    fn description(&self) -> &'static str {
        "Searches file contents with a regular expression (ripgrep syntax: escape literal braces, e.g. \
         `fn\\s+main\\(`). Honours .gitignore and skips .git. `output_mode`: `files_with_matches` (default; \
         paths, newest first), `content` (matching lines as path:line:text, with -A/-B/-C context and -n line \
         numbers, on by default) or `count` (matches per file). Filter files with `glob` (e.g. `*.{ts,tsx}`) \
         or `type` (e.g. `rust`, `py`). `-i` ignores case; `multiline` lets `.` and patterns span lines. \
         Results are paged: `head_limit` (default 250, 0 = all) and `offset`. An invalid pattern is an error, \
         not an empty result."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for"},
                "path": {"type": "string", "description": "File or directory to search (default: working directory)"},
                "glob": {"type": "string", "description": "Only files matching this glob, e.g. `*.rs` or `src/**/*.{ts,tsx}`"},
                "type": {"type": "string", "description": "Only files of this type, e.g. `rust`, `py`, `js`"},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
                "-i": {"type": "boolean", "description": "Case-insensitive search"},
                "-n": {"type": "boolean", "description": "Show line numbers (content mode; default true)"},
                "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match (content mode)"},
                "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match (content mode)"},
                "-C": {"type": "integer", "minimum": 0, "description": "Lines of context around each match (content mode)"},
                "context": {"type": "integer", "minimum": 0, "description": "Same as -C"},
                "-o": {"type": "boolean", "description": "Show only the matched parts (content mode)"},
                "head_limit": {"type": "integer", "minimum": 0, "description": "At most this many entries (default 250; 0 = no limit)"},
                "offset": {"type": "integer", "minimum": 0, "description": "Skip this many entries first"},
                "multiline": {"type": "boolean", "description": "Let patterns match across lines"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn result_budget(&self) -> usize {
        20_000
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let mode = match input.output_mode.as_deref() {
            None | Some("files_with_matches") => Mode::Files,
            Some("content") => Mode::Content,
            Some("count") => Mode::Count,
            Some(other) => {
                return Err(ToolError::invalid(format!("unknown output_mode `{other}`")));
            }
        };
        let around = input.context_c.or(input.context);
        let display_root = input
            .path
            .as_deref()
            .map(|p| paths::resolve(ctx.cwd(), p))
            .unwrap_or_else(|| ctx.cwd().to_path_buf());
        let budget = timeout();
        let query = Query {
            pattern: input.pattern.clone(),
            root: ctx.resolved_path(&display_root),
            display_root,
            roots: ctx.workspace.roots(),
            deadline: Instant::now() + budget,
            globs: input
                .glob
                .as_deref()
                .map(|g| g.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            file_type: input.file_type.clone(),
            case_insensitive: input.case_insensitive,
            multiline: input.multiline,
            before: around.or(input.before).unwrap_or(0),
            after: around.or(input.after).unwrap_or(0),
            only_matching: input.only_matching,
            mode,
            guard: ctx.files()?.read_guard.clone(),
        };
        let page = Page {
            limit: match input.head_limit {
                Some(0) => None,
                Some(n) => Some(n),
                None => Some(DEFAULT_HEAD_LIMIT),
            },
            offset: input.offset.unwrap_or(0),
        };
        let numbers = input.line_numbers.unwrap_or(true);
        let root_shown = query.display_root.clone();
        let cancel = ctx.cancel.child_token();
        let task = {
            let cancel = cancel.clone();
            tokio::task::spawn_blocking(move || search::search(&query, &cancel).map(|h| (h, query)))
        };
        // The search watches its deadline between chunks; a chunk that takes long with a costly
        // pattern must not hold the answer back, so the call itself is timed out too.
        let hits = match tokio::time::timeout(budget + Duration::from_millis(500), task).await {
            Ok(joined) => joined.map_err(|e| ToolError::invalid(format!("the search task failed: {e}")))?,
            Err(_) => {
                cancel.cancel();
                Err(SearchError::TimedOut)
            }
        };
        let (outcome, query) = hits.map_err(|e| match e {
            SearchError::Cancelled => ToolError::Cancelled,
            SearchError::Regex(msg) if msg.contains("size limit") => ToolError::invalid(format!(
                "the pattern `{}` is too complex: compiled, it exceeds the {} MB limit. Simplify it (smaller \
                 repetition counts, fewer alternatives), or search for a shorter literal part of it.",
                input.pattern,
                search::REGEX_SIZE_LIMIT >> 20
            )),
            SearchError::Regex(msg) => ToolError::invalid(format!(
                "invalid regular expression `{}`: {msg}. Escape special characters such as ( [ {{ with a backslash.",
                input.pattern
            )),
            SearchError::MissingPath(p) => ToolError::invalid(format!(
                "{} does not exist; `path` must be an existing file or directory.",
                p.display()
            )),
            SearchError::Open(e) => paths::open_failure(e, &root_shown, "Grep"),
            SearchError::TimedOut => ToolError::invalid(format!(
                "the search for `{}` was stopped after {} s, its time budget: the pattern is too costly for \
                 this much text (nested or large repetitions such as `(a{{1000}}){{100}}`), or the tree is very \
                 large. Simplify the pattern, or narrow `path`, `glob` or `type`.",
                input.pattern,
                budget.as_secs_f32()
            )),
            SearchError::Filter(msg) => ToolError::invalid(msg),
        })?;
        let mut out = render(outcome.hits, &query, page, numbers);
        if let crate::types::message::ToolResultContent::Text(t) = &mut out.content {
            if outcome.withheld > 0 {
                t.push_str(&format!(
                    "\n[{} file{} not searched: keel does not show credential files or files denied by Read rules]",
                    outcome.withheld,
                    plural(outcome.withheld)
                ));
            }
            if outcome.skipped_dirs > 0 {
                t.push_str(&format!(
                    "\n[{} director{} not searched: an ignore file there (.gitignore, .ignore) is not a regular \
                     file or is too large; list them with Bash `ls -la`]",
                    outcome.skipped_dirs,
                    if outcome.skipped_dirs == 1 { "y" } else { "ies" }
                ));
            }
            if outcome.unreadable > 0 {
                t.push_str(&format!(
                    "\n[{} file{} or director{} could not be read (permissions or I/O errors); the result may be incomplete]",
                    outcome.unreadable,
                    plural(outcome.unreadable),
                    if outcome.unreadable == 1 { "y" } else { "ies" }
                ));
            }
        }
        Ok(out)
    }
}

#[derive(Debug, Clone, Copy)]
struct Page {
    limit: Option<usize>,
    offset: usize,
}

impl Page {
    /// Applies offset and limit; returns the kept entries and whether more were cut.
    fn apply<T>(&self, entries: Vec<T>) -> (Vec<T>, bool) {
        let total = entries.len();
        let kept: Vec<T> = entries
            .into_iter()
            .skip(self.offset)
            .take(self.limit.unwrap_or(usize::MAX))
            .collect();
        let cut = self.offset + kept.len() < total;
        (kept, cut)
    }

    fn note(&self, total: usize) -> String {
        format!(
            "\n[Showing entries {}-{} of {total}; pass offset={} for more]",
            self.offset + 1,
            (self.offset + self.limit.unwrap_or(total)).min(total),
            self.offset + self.limit.unwrap_or(total)
        )
    }
}

fn render(mut hits: Vec<FileHits>, q: &Query, page: Page, numbers: bool) -> ToolOutput {
    let pattern = &q.pattern;
    if hits.is_empty() {
        let what = if q.mode == Mode::Content {
            "No matches found"
        } else {
            "No files found"
        };
        return ToolOutput::text(format!(
            "{what} for pattern `{pattern}` in {}",
            q.display_root.display()
        ))
        .with_structured(
            json!({"mode": mode_name(q.mode), "numFiles": 0, "filenames": [], "numLines": 0, "numMatches": 0}),
        );
    }
    match q.mode {
        Mode::Files => {
            hits.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
            let total = hits.len();
            let names: Vec<String> = hits.into_iter().map(|h| h.path.display().to_string()).collect();
            let (kept, cut) = page.apply(names);
            let mut text = format!("Found {total} file{}\n{}", plural(total), kept.join("\n"));
            if cut {
                text.push_str(&page.note(total));
            }
            ToolOutput::text(text)
                .with_structured(json!({"mode": "files_with_matches", "numFiles": total, "filenames": kept}))
        }
        Mode::Count => {
            hits.sort_by(|a, b| a.path.cmp(&b.path));
            let total_files = hits.len();
            let total_matches: u64 = hits.iter().map(|h| h.matched_lines).sum();
            let rows: Vec<String> = hits
                .iter()
                .map(|h| format!("{}:{}", h.path.display(), h.matched_lines))
                .collect();
            let (kept, cut) = page.apply(rows);
            let mut text = kept.join("\n");
            if cut {
                text.push_str(&page.note(total_files));
            }
            text.push_str(&format!(
                "\n\nFound {total_matches} matching line{} in {total_files} file{}.",
                plural(total_matches as usize),
                plural(total_files)
            ));
            ToolOutput::text(text)
                .with_structured(json!({"mode": "count", "numFiles": total_files, "numMatches": total_matches}))
        }
        Mode::Content => {
            hits.sort_by(|a, b| a.path.cmp(&b.path));
            let files = hits.len();
            let mut rows = Vec::new();
            for h in &hits {
                let path = h.path.display().to_string();
                for (i, line) in h.lines.iter().enumerate() {
                    if line.break_before && i > 0 {
                        rows.push("--".to_string());
                    }
                    let sep = if line.is_match { ':' } else { '-' };
                    rows.push(if numbers {
                        format!("{path}{sep}{}{sep}{}", line.number, line.text)
                    } else {
                        format!("{path}{sep}{}", line.text)
                    });
                }
            }
            let total = rows.len();
            let (kept, cut) = page.apply(rows);
            let mut text = kept.join("\n");
            if cut {
                text.push_str(&page.note(total));
            }
            let names: Vec<String> = hits.iter().map(|h| h.path.display().to_string()).collect();
            ToolOutput::text(text.clone()).with_structured(json!({
                "mode": "content", "numFiles": files, "filenames": names, "content": text,
                "numLines": total, "totalLines": total,
            }))
        }
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Files => "files_with_matches",
        Mode::Content => "content",
        Mode::Count => "count",
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
