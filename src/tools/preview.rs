//! What an approval shows: exactly what the call would do, as its tool says ([`Tool::preview`]),
//! computed by the engine before it asks. A front end renders it as given and decides nothing
//! about permissions.
//!
//! - Bash: the whole command and its `description`.
//! - Write of a new file: its content. Write over an existing file and Edit: the diff of the
//!   file as it will be, with the file's own line numbers and three lines of context.
//! - ExitPlanMode: the plan.
//! - Anything else: the input as JSON (front ends show `detail`).

use std::path::Path;

use serde_json::Value;
use similar::{ChangeTag, DiffTag, TextDiff};

use super::Tool;
use super::edit::apply::{self, ApplyError};
pub use crate::types::permission::{Body, DiffLine, LineKind, Preview};

/// Lines of unchanged text around each change.
pub const CONTEXT_LINES: usize = 3;
/// Files larger than this are not read for a preview (the edit's own strings are shown).
const MAX_PREVIEW_FILE: u64 = 8 * 1024 * 1024;

/// The preview of a call of `tool` with `input` in `cwd`: what the tool says the call would do.
pub fn build(tool: &dyn Tool, input: &Value, cwd: &Path, reason: &str) -> Preview {
    Preview {
        reason: reason.to_string(),
        body: tool.preview(input, cwd),
    }
}

/// The file's text when it exists, is small enough and is UTF-8 (without its BOM).
fn read_text(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the file ({e})")),
    };
    if meta.is_dir() {
        return Err("the path is a directory".into());
    }
    if meta.len() > MAX_PREVIEW_FILE {
        return Err(format!("the file is too large to preview ({} bytes)", meta.len()));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the file ({e})"))?;
    let text = String::from_utf8(bytes).map_err(|_| "the file is not UTF-8 text".to_string())?;
    Ok(Some(text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text)))
}

/// A Write of `content` to `path`: the new file whole, or the diff of the file it replaces.
pub fn write(path: &Path, content: &str) -> Body {
    match read_text(path) {
        Ok(None) => Body::NewFile {
            path: path.to_path_buf(),
            content: content.to_string(),
        },
        Ok(Some(before)) => {
            let mut note = newline_note(&before, content);
            if before == content {
                note = Some("The new content is identical to the file as it is.".into());
            }
            Body::Diff {
                path: path.to_path_buf(),
                lines: file_diff(&before, content),
                note,
            }
        }
        Err(why) => Body::NewFile {
            path: path.to_path_buf(),
            content: format!("({why}; it would be replaced by the content below)\n{content}"),
        },
    }
}

/// An Edit of `path`: the diff of the file as it will be.
pub fn edit(path: &Path, old: &str, new: &str, replace_all: bool) -> Body {
    let fallback = |note: String| Body::Diff {
        path: path.to_path_buf(),
        lines: strings_diff(old, new),
        note: Some(note),
    };
    let before = match read_text(path) {
        Ok(Some(t)) => t,
        Ok(None) if old.is_empty() => {
            return Body::NewFile {
                path: path.to_path_buf(),
                content: new.to_string(),
            };
        }
        Ok(None) => return fallback("The file does not exist, so the edit will fail.".into()),
        Err(why) => return fallback(format!("{why}; showing the edit's own text, without line numbers.")),
    };
    if old.is_empty() {
        return fallback("old_string is empty but the file exists; the edit will fail unless it is empty.".into());
    }
    match apply::apply(&before, old, new, replace_all) {
        Ok(applied) => Body::Diff {
            path: path.to_path_buf(),
            lines: file_diff(&before, &applied.text),
            note: newline_note(&before, &applied.text),
        },
        Err(ApplyError::NotFound) => fallback(
            "old_string does not occur in the file as it is now, so the edit will fail; showing the edit's own text."
                .into(),
        ),
        Err(ApplyError::Ambiguous(n)) => fallback(format!(
            "old_string occurs {n} times and replace_all is not set, so the edit will fail; showing the edit's own text."
        )),
    }
}

/// Said only when the change really adds or removes the final newline.
fn newline_note(before: &str, after: &str) -> Option<String> {
    let ends = |s: &str| s.is_empty() || s.ends_with('\n');
    match (ends(before), ends(after)) {
        (true, false) => Some("The file will no longer end with a newline.".into()),
        (false, true) => Some("The file will end with a newline (it did not).".into()),
        _ => None,
    }
}

fn trim_eol(s: &str) -> String {
    s.trim_end_matches('\n').trim_end_matches('\r').to_string()
}

/// The diff of a whole file: its own line numbers, [`CONTEXT_LINES`] of context, a gap marker
/// between separate changes. A line that differs only by its final newline compares equal, so
/// the last line is never shown as changed for that alone ([`newline_note`] says it instead).
pub fn file_diff(before: &str, after: &str) -> Vec<DiffLine> {
    let b = with_final_newline(before);
    let a = with_final_newline(after);
    let diff = TextDiff::from_lines(b.as_str(), a.as_str());
    let mut out = Vec::new();
    for (g, group) in diff.grouped_ops(CONTEXT_LINES).iter().enumerate() {
        if g > 0 {
            out.push(DiffLine {
                kind: LineKind::Gap,
                old: None,
                new: None,
                text: String::new(),
            });
        }
        for op in group {
            if op.tag() == DiffTag::Equal && op.old_range().is_empty() {
                continue;
            }
            for change in diff.iter_changes(op) {
                let kind = match change.tag() {
                    ChangeTag::Equal => LineKind::Context,
                    ChangeTag::Delete => LineKind::Remove,
                    ChangeTag::Insert => LineKind::Add,
                };
                out.push(DiffLine {
                    kind,
                    old: change.old_index().map(|i| i + 1),
                    new: change.new_index().map(|i| i + 1),
                    text: trim_eol(change.value()),
                });
            }
        }
    }
    out
}

fn with_final_newline(s: &str) -> String {
    if s.is_empty() || s.ends_with('\n') {
        s.to_string()
    } else {
        format!("{s}\n")
    }
}

/// The diff of an edit's own strings (no file to number the lines against).
pub fn strings_diff(old: &str, new: &str) -> Vec<DiffLine> {
    let o = with_final_newline(old);
    let n = with_final_newline(new);
    TextDiff::from_lines(o.as_str(), n.as_str())
        .iter_all_changes()
        .map(|c| DiffLine {
            kind: match c.tag() {
                ChangeTag::Equal => LineKind::Context,
                ChangeTag::Delete => LineKind::Remove,
                ChangeTag::Insert => LineKind::Add,
            },
            old: None,
            new: None,
            text: trim_eol(c.value()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The preview of a call of the built-in tool `name` (any other name shows its input).
    fn build(name: &str, input: &Value, cwd: &Path, reason: &str) -> Preview {
        match crate::tools::kinds::builtin(name) {
            Some(tool) => super::build(tool.as_ref(), input, cwd, reason),
            None => Preview {
                reason: reason.to_string(),
                body: Body::Detail,
            },
        }
    }

    fn numbered(lines: &[DiffLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let n = |x: Option<usize>| x.map(|v| v.to_string()).unwrap_or("-".into());
                let mark = match l.kind {
                    LineKind::Context => ' ',
                    LineKind::Add => '+',
                    LineKind::Remove => '-',
                    LineKind::Gap => '~',
                };
                format!("{}{} {}|{}", mark, n(l.old), n(l.new), l.text)
            })
            .collect()
    }

    #[test]
    fn an_edit_is_shown_with_the_files_line_numbers_and_three_lines_of_context() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.py");
        let text: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&file, &text).unwrap();
        let p = build(
            "Edit",
            &json!({"file_path": "a.py", "old_string": "line 20\n", "new_string": "line twenty\n"}),
            dir.path(),
            "edits need approval",
        );
        assert_eq!(p.reason, "edits need approval");
        let Body::Diff { lines, note, .. } = &p.body else {
            panic!("{p:?}")
        };
        assert_eq!(note, &None);
        assert_eq!(
            numbered(lines),
            vec![
                " 17 17|line 17",
                " 18 18|line 18",
                " 19 19|line 19",
                "-20 -|line 20",
                "+- 20|line twenty",
                " 21 21|line 21",
                " 22 22|line 22",
                " 23 23|line 23",
            ]
        );
    }

    #[test]
    fn a_missing_final_newline_is_not_reported_unless_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "one\ntwo\nthree").unwrap();
        let edit = |old: &str, new: &str| {
            build(
                "Edit",
                &json!({"file_path": file, "old_string": old, "new_string": new}),
                dir.path(),
                "",
            )
            .body
        };
        let Body::Diff { lines, note, .. } = edit("three", "THREE") else {
            panic!()
        };
        assert_eq!(note, None);
        assert_eq!(numbered(&lines)[2..], ["-3 -|three", "+- 3|THREE"]);
        let Body::Diff { lines, note, .. } = edit("three", "three\n") else {
            panic!()
        };
        assert!(lines.is_empty(), "{lines:?}");
        assert_eq!(note.as_deref(), Some("The file will end with a newline (it did not)."));
    }

    #[test]
    fn separate_changes_are_separated_by_a_gap_and_replace_all_is_applied() {
        let text: String = (1..=30)
            .map(|i| if i % 10 == 0 { "x\n".into() } else { format!("{i}\n") })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), &text).unwrap();
        let p = build(
            "Edit",
            &json!({"file_path": "f", "old_string": "x\n", "new_string": "y\n", "replace_all": true}),
            dir.path(),
            "",
        );
        let Body::Diff { lines, .. } = &p.body else { panic!() };
        let gaps = lines.iter().filter(|l| l.kind == LineKind::Gap).count();
        assert_eq!(gaps, 2);
        assert_eq!(p.body.stats(), (3, 3));
        let last_add = lines.iter().rfind(|l| l.kind == LineKind::Add).unwrap();
        assert_eq!((last_add.new, last_add.text.as_str()), (Some(30), "y"));
    }

    #[test]
    fn an_edit_that_will_fail_says_so_and_shows_its_strings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a\na\n").unwrap();
        let body = |old: &str| {
            build(
                "Edit",
                &json!({"file_path": "f", "old_string": old, "new_string": "b"}),
                dir.path(),
                "",
            )
            .body
        };
        let Body::Diff { note, lines, .. } = body("zzz") else {
            panic!()
        };
        assert!(note.unwrap().contains("does not occur"));
        assert_eq!(numbered(&lines), vec!["-- -|zzz", "+- -|b"]);
        let Body::Diff { note, .. } = body("a") else { panic!() };
        assert!(note.unwrap().contains("occurs 2 times"));
    }

    #[test]
    fn writes_show_new_content_or_the_diff_of_the_file_they_replace() {
        let dir = tempfile::tempdir().unwrap();
        let p = build(
            "Write",
            &json!({"file_path": "new.rs", "content": "fn main() {}\n"}),
            dir.path(),
            "",
        );
        assert_eq!(
            p.body,
            Body::NewFile {
                path: dir.path().join("new.rs"),
                content: "fn main() {}\n".into()
            }
        );
        std::fs::write(dir.path().join("old.rs"), "a\nb\n").unwrap();
        let p = build(
            "Write",
            &json!({"file_path": "old.rs", "content": "a\nc\n"}),
            dir.path(),
            "",
        );
        let Body::Diff { lines, .. } = &p.body else { panic!() };
        assert_eq!(numbered(lines), vec![" 1 1|a", "-2 -|b", "+- 2|c"]);
    }

    #[test]
    fn commands_keep_their_description_and_plans_their_text() {
        let p = build(
            "Bash",
            &json!({"command": "cargo test --all", "description": "Run every test"}),
            Path::new("/"),
            "",
        );
        assert_eq!(
            p.body,
            Body::Command {
                command: "cargo test --all".into(),
                description: Some("Run every test".into())
            }
        );
        assert_eq!(
            build("ExitPlanMode", &json!({"plan": "1. do"}), Path::new("/"), "").body,
            Body::Plan("1. do".into())
        );
        assert_eq!(build("WebFetch", &json!({}), Path::new("/"), "").body, Body::Detail);
    }
}
