//! Snapshot files: what a snapshot test expects, kept beside the tests — Jest and Vitest
//! (`__snapshots__/*.snap`), insta (`snapshots/*.snap`), syrupy (`__snapshots__/*.ambr`) and
//! anything else under a `__snapshots__` directory. A changed or removed entry is a changed
//! expectation (`jest -u` accepts whatever the code now prints); a new entry is not. Pure
//! functions over the file's text before and after.

use std::collections::HashMap;
use std::path::Path;

/// Whether `path` holds snapshots (insta's pending `.snap.new` files do not: they are proposals).
pub(super) fn is_snapshot(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    matches!(ext, "snap" | "ambr")
        || (ext != "new"
            && path
                .parent()
                .is_some_and(|p| p.components().any(|c| c.as_os_str() == "__snapshots__")))
}

/// How many entries of `before` hold another value in `after`, or are gone.
pub(super) fn changed(before: &str, after: &str) -> u64 {
    if before.trim().is_empty() {
        return 0;
    }
    let now: HashMap<String, String> = entries(after).into_iter().collect();
    entries(before)
        .into_iter()
        .filter(|(name, value)| now.get(name) != Some(value))
        .count() as u64
}

/// The file's entries: `(name, expected value)`.
fn entries(text: &str) -> Vec<(String, String)> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    if text.starts_with("exports[") || text.contains("\nexports[") {
        return jest_entries(text);
    }
    if let Some(body) = insta_body(text) {
        return vec![(String::new(), body.trim().to_string())];
    }
    if text.contains("# name: ") {
        return syrupy_entries(text);
    }
    vec![(String::new(), text.trim().to_string())]
}

/// ``exports[`adds 1`] = `3`;`` — the name and the value as written (template literals may span
/// lines and escape their backticks).
fn jest_entries(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = find_at_line_start(rest, "exports[") {
        let after = &rest[at + "exports[".len()..];
        let Some((name, tail)) = literal(after) else {
            break;
        };
        let tail = tail.trim_start_matches(']').trim_start();
        let Some(tail) = tail.strip_prefix('=') else {
            rest = tail;
            continue;
        };
        let tail = tail.trim_start();
        let (value, next) = match literal(tail) {
            Some((v, n)) => (v, n),
            None => {
                let end = tail.find(";\n").unwrap_or(tail.len());
                (tail[..end].to_string(), &tail[end..])
            }
        };
        out.push((name, value));
        rest = next;
    }
    out
}

fn find_at_line_start(text: &str, needle: &str) -> Option<usize> {
    if text.starts_with(needle) {
        return Some(0);
    }
    text.find(&format!("\n{needle}")).map(|i| i + 1)
}

/// A string or template literal at the start of `s`: its text (escapes kept) and what follows.
fn literal(s: &str) -> Option<(String, &str)> {
    let q = s.chars().next()?;
    if !matches!(q, '`' | '"' | '\'') {
        return None;
    }
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q {
            return Some((s[1..i].to_string(), &s[i + 1..]));
        }
    }
    None
}

/// insta: a `---` header (source, expression, metadata), then the snapshot.
fn insta_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(&rest[end + "\n---\n".len()..])
}

/// syrupy's `.ambr`: `# name: test_x` then the value, up to `# ---`.
fn syrupy_entries(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("# name: ") {
            if let Some(done) = current.take() {
                out.push(done);
            }
            current = Some((name.trim().to_string(), String::new()));
        } else if line.trim() == "# ---" {
            if let Some(done) = current.take() {
                out.push(done);
            }
        } else if let Some((_, value)) = current.as_mut() {
            value.push_str(line);
            value.push('\n');
        }
    }
    out.extend(current);
    out
}

#[cfg(test)]
#[path = "snapshots_tests.rs"]
mod tests;
