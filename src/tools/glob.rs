//! Glob: file paths matching a pattern, newest first, honouring .gitignore.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Declared, Effects, RuleGrammar, Subject, Tool, ToolContext, ToolError, ToolOutput, parse_input, paths};

pub const MAX_RESULTS: usize = 100;

pub struct GlobTool;

#[derive(Deserialize)]
struct Input {
    pattern: String,
    path: Option<String>,
}

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &'static str {
        "Glob"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::READS,
            grammar: RuleGrammar::Path,
            covered_by: &["Read"],
        }
    }

    /// The directory the call lists: its `path`, or the literal start of an absolute pattern
    /// (or one that climbs with `..`), so `/etc/*` is checked as a read of `/etc`.
    fn subject(&self, input: &Value, cwd: &std::path::Path) -> Subject {
        let base = match input.get("path").and_then(Value::as_str) {
            Some(p) => paths::resolve(cwd, p),
            None => cwd.to_path_buf(),
        };
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("");
        Subject::Path(walk_root(&base, pattern))
    }

    fn description(&self) -> &'static str {
        "Finds files by name pattern (e.g. `**/*.rs`, `src/**/test_*.{ts,tsx}`) below `path` (default: the \
         working directory). Returns absolute paths, most recently modified first, at most 100; files \
         ignored by .gitignore and the .git directory are skipped. Use it to learn a project's layout \
         before Grep and Read."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, relative to `path`"},
                "path": {"type": "string", "description": "Directory to search in (default: working directory)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let base = match &input.path {
            Some(p) => paths::resolve(ctx.cwd(), p),
            None => ctx.cwd().to_path_buf(),
        };
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || glob(&base, &input.pattern, &cancel))
            .await
            .map_err(|e| ToolError::invalid(format!("the glob task failed: {e}")))?
    }
}

/// The directory a Glob call walks (what the permission check decides on).
pub fn walk_root(base: &Path, pattern: &str) -> PathBuf {
    paths::normalize(&split_pattern(base, pattern).0)
}

/// Splits an absolute pattern into the directory to walk and the remaining pattern.
fn split_pattern(base: &Path, pattern: &str) -> (PathBuf, String) {
    let full = if Path::new(pattern).is_absolute() {
        pattern.to_string()
    } else {
        return literal_prefix(base, pattern);
    };
    literal_prefix(Path::new("/"), full.trim_start_matches('/'))
}

/// Moves leading literal directories of the pattern into the walk root (`src/**/*.rs` walks
/// only `src`).
fn literal_prefix(base: &Path, pattern: &str) -> (PathBuf, String) {
    let mut root = base.to_path_buf();
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut i = 0;
    while i + 1 < parts.len() && !parts[i].contains(['*', '?', '[', '{']) {
        if parts[i] == ".." {
            root.pop();
        } else if !parts[i].is_empty() && parts[i] != "." {
            root.push(parts[i]);
        }
        i += 1;
    }
    (root, parts[i..].join("/"))
}

fn compile(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::invalid(format!("invalid glob pattern `{pattern}`: {e}")))
}

fn glob(base: &Path, pattern: &str, cancel: &tokio_util::sync::CancellationToken) -> Result<ToolOutput, ToolError> {
    let (root, rest) = split_pattern(base, pattern);
    if !base.is_dir() {
        return Err(ToolError::invalid(format!(
            "{} is not a directory; `path` must name a directory to search in.",
            base.display()
        )));
    }
    let matcher = compile(&rest)?;
    // A bare file-name pattern (`*.rs`) matches at any depth, as users expect from Glob.
    let basename_matcher = if rest.contains('/') {
        None
    } else {
        Some(compile(&format!("**/{rest}"))?)
    };
    let started = std::time::Instant::now();
    let mut found: Vec<(PathBuf, SystemTime)> = Vec::new();
    let mut unreadable = 0usize;
    let mut skipped_note = None;
    if root.is_dir() {
        let walk = super::walk::safe_walk(&root, |e| e.file_name() != ".git").map_err(ToolError::invalid)?;
        let walker = walk.builder.build();
        for entry in walker {
            if cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let Ok(entry) = entry else {
                unreadable += 1;
                continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&root) else {
                continue;
            };
            let hit = matcher.is_match(rel) || basename_matcher.as_ref().is_some_and(|m| m.is_match(rel));
            if hit {
                let mtime = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((entry.into_path(), mtime));
            }
        }
        skipped_note = walk.note();
    }
    // Directories that could not be listed are said, so "no files" is never a hidden error.
    let mut unreadable_note = if unreadable > 0 {
        format!(
            "\n[{unreadable} director{} could not be read (permissions or I/O errors); the list may be incomplete]",
            if unreadable == 1 { "y" } else { "ies" }
        )
    } else {
        String::new()
    };
    // Whether every directory was searched, so the number of matches is the whole count.
    let complete = unreadable == 0 && skipped_note.is_none();
    let duration_ms = started.elapsed().as_millis() as u64;
    if let Some(note) = skipped_note {
        unreadable_note.push('\n');
        unreadable_note.push_str(&note);
    }
    if found.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No files found matching `{pattern}` in {}{unreadable_note}",
            base.display()
        ))
        .with_structured(
            json!({"filenames": [], "durationMs": duration_ms, "numFiles": 0, "truncated": false,
                                 "totalMatches": 0, "countIsComplete": complete}),
        ));
    }
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total = found.len();
    let truncated = total > MAX_RESULTS;
    let names: Vec<String> = found
        .into_iter()
        .take(MAX_RESULTS)
        .map(|(p, _)| shown_name(&p))
        .collect();
    let mut text = names.join("\n");
    if truncated {
        text.push_str(&format!(
            "\n(Showing {MAX_RESULTS} of {total} matches, newest first. Narrow the pattern or the path to see the rest.)"
        ));
    }
    text.push_str(&unreadable_note);
    Ok(ToolOutput::text(text).with_structured(json!({
        "filenames": names, "durationMs": duration_ms, "numFiles": names.len(), "truncated": truncated,
        "totalMatches": total, "countIsComplete": complete,
    })))
}

/// A path as listed; a name that is not UTF-8 cannot be passed back to a file tool, so it is
/// marked, with the exact bytes as Bash can take them.
fn shown_name(p: &Path) -> String {
    if p.to_str().is_some() {
        return p.display().to_string();
    }
    format!(
        "{} [name is not valid UTF-8: file tools cannot open it; in Bash it is {}]",
        p.display(),
        paths::bash_quote(p)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefix_moves_into_root() {
        let (root, rest) = literal_prefix(Path::new("/r"), "src/deep/**/*.rs");
        assert_eq!(root, PathBuf::from("/r/src/deep"));
        assert_eq!(rest, "**/*.rs");
        let (root, rest) = literal_prefix(Path::new("/r"), "*.md");
        assert_eq!(root, PathBuf::from("/r"));
        assert_eq!(rest, "*.md");
        let (root, rest) = split_pattern(Path::new("/r"), "/etc/*.conf");
        assert_eq!(root, PathBuf::from("/etc"));
        assert_eq!(rest, "*.conf");
    }
}
