//! Unified diffs: built from a tool's structured patch, from an edit's old and new strings, or
//! parsed from diff text; drawn with line numbers and colours.

use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::theme;
use super::wrap::{self, Mode, sanitize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Hunk,
    Context,
    Add,
    Remove,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: Kind,
    /// Line number in the old (Remove, Context) or new (Add) file, when known.
    pub number: Option<u32>,
    pub text: String,
}

/// The reference's `structuredPatch`: `[{oldStart, oldLines, newStart, newLines, lines: ["+a", "-b", " c"]}]`.
pub fn from_structured_patch(patch: &Value) -> Option<Vec<DiffLine>> {
    let hunks = patch.as_array()?;
    let mut out = Vec::new();
    for h in hunks {
        let mut old = h.get("oldStart")?.as_u64()? as u32;
        let mut new = h.get("newStart")?.as_u64()? as u32;
        out.push(DiffLine {
            kind: Kind::Hunk,
            number: None,
            text: format!(
                "@@ -{},{} +{},{} @@",
                old,
                h.get("oldLines").and_then(Value::as_u64).unwrap_or(0),
                new,
                h.get("newLines").and_then(Value::as_u64).unwrap_or(0)
            ),
        });
        for l in h.get("lines")?.as_array()? {
            let l = l.as_str()?;
            let (kind, text) = split_marker(l);
            let number = match kind {
                Kind::Add => {
                    new += 1;
                    Some(new - 1)
                }
                Kind::Remove => {
                    old += 1;
                    Some(old - 1)
                }
                _ => {
                    old += 1;
                    new += 1;
                    Some(new - 1)
                }
            };
            out.push(DiffLine {
                kind,
                number,
                text: text.to_string(),
            });
        }
    }
    Some(out)
}

fn split_marker(l: &str) -> (Kind, &str) {
    match l.chars().next() {
        Some('+') => (Kind::Add, &l[1..]),
        Some('-') => (Kind::Remove, &l[1..]),
        Some(' ') => (Kind::Context, &l[1..]),
        _ => (Kind::Context, l),
    }
}

/// The diff between two texts (an edit's `old_string` and `new_string`). Line numbers are
/// those within the snippet, so they are left out.
pub fn from_strings(old: &str, new: &str) -> Vec<DiffLine> {
    let diff = TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for change in diff.iter_all_changes() {
        let kind = match change.tag() {
            ChangeTag::Delete => Kind::Remove,
            ChangeTag::Insert => Kind::Add,
            ChangeTag::Equal => Kind::Context,
        };
        out.push(DiffLine {
            kind,
            number: None,
            text: change.value().trim_end_matches(['\n', '\r']).to_string(),
        });
    }
    out
}

/// The diff an approval showed (a whole file's lines, numbered as in the file).
pub fn from_preview(body: &crate::types::permission::Body) -> Option<Vec<DiffLine>> {
    use crate::types::permission::{Body, LineKind};
    let Body::Diff { lines, .. } = body else {
        return None;
    };
    Some(
        lines
            .iter()
            .map(|l| {
                let (kind, number) = match l.kind {
                    LineKind::Context => (Kind::Context, l.new),
                    LineKind::Add => (Kind::Add, l.new),
                    LineKind::Remove => (Kind::Remove, l.old),
                    LineKind::Gap => (Kind::Hunk, None),
                };
                DiffLine {
                    kind,
                    number: number.map(|n| n as u32),
                    text: if kind == Kind::Hunk {
                        "⋯".into()
                    } else {
                        l.text.clone()
                    },
                }
            })
            .collect(),
    )
}

/// Parses unified diff text (e.g. a permission prompt's detail). `None` when it is not one.
pub fn parse_unified(text: &str) -> Option<Vec<DiffLine>> {
    if !text.lines().any(|l| l.starts_with("@@")) {
        return None;
    }
    let mut out = Vec::new();
    let (mut old, mut new) = (0u32, 0u32);
    let mut in_hunk = false;
    for l in text.lines() {
        if !in_hunk && !l.starts_with("@@") {
            out.push(DiffLine {
                kind: Kind::Hunk,
                number: None,
                text: l.to_string(),
            });
            continue;
        }
        if let Some(rest) = l.strip_prefix("@@") {
            in_hunk = true;
            let nums: Vec<u32> = rest
                .split([' ', ',', '-', '+', '@'])
                .filter_map(|p| p.parse().ok())
                .collect();
            old = nums.first().copied().unwrap_or(0);
            new = nums.get(2).copied().unwrap_or(0);
            out.push(DiffLine {
                kind: Kind::Hunk,
                number: None,
                text: l.to_string(),
            });
            continue;
        }
        let (kind, body) = split_marker(l);
        let number = match kind {
            Kind::Add => {
                new += 1;
                new - 1
            }
            Kind::Remove => {
                old += 1;
                old - 1
            }
            _ => {
                old += 1;
                new += 1;
                new - 1
            }
        };
        out.push(DiffLine {
            kind,
            number: (number > 0).then_some(number),
            text: body.to_string(),
        });
    }
    Some(out)
}

/// Draws diff lines, at most `max` of them (the rest is counted in a last line).
pub fn render(lines: &[DiffLine], width: usize, indent: &str, max: Option<usize>) -> Vec<Line<'static>> {
    let number_width = lines
        .iter()
        .filter_map(|l| l.number)
        .max()
        .map(|n| n.to_string().len())
        .unwrap_or(0);
    let shown = max.map_or(lines.len(), |m| m.min(lines.len()));
    let mut out = Vec::new();
    for l in &lines[..shown] {
        let (sign, style) = match l.kind {
            Kind::Hunk => ("", theme::diff_hunk()),
            Kind::Context => (" ", ratatui::style::Style::new()),
            Kind::Add => ("+", theme::diff_add()),
            Kind::Remove => ("-", theme::diff_remove()),
        };
        let mut prefix = vec![Span::raw(indent.to_string())];
        if number_width > 0 {
            let n = l.number.map(|n| n.to_string()).unwrap_or_default();
            prefix.push(Span::styled(format!("{n:>number_width$} "), theme::dim()));
        }
        let mut rest = prefix.clone();
        if let Some(Span { content, .. }) = rest.last_mut() {
            *content = " ".repeat(content.chars().count()).into();
        }
        prefix.push(Span::styled(sign.to_string(), style));
        rest.push(Span::raw(" ".repeat(sign.len())));
        let text = sanitize(&l.text).into_owned();
        out.extend(wrap::wrap(
            &[Span::styled(text, style)],
            width,
            &prefix,
            &rest,
            Mode::Chars,
        ));
    }
    if shown < lines.len() {
        out.push(Line::from(Span::styled(
            format!("{indent}… {} more diff lines (Ctrl+O to expand)", lines.len() - shown),
            theme::dim(),
        )));
    }
    out
}

/// Counts of added and removed lines.
pub fn stats(lines: &[DiffLine]) -> (usize, usize) {
    let added = lines.iter().filter(|l| l.kind == Kind::Add).count();
    let removed = lines.iter().filter(|l| l.kind == Kind::Remove).count();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_patch_numbers_lines() {
        let patch = json!([{"oldStart": 10, "oldLines": 3, "newStart": 10, "newLines": 3,
            "lines": [" keep", "-old", "+new", " tail"]}]);
        let lines = from_structured_patch(&patch).unwrap();
        let numbers: Vec<_> = lines.iter().map(|l| (l.kind, l.number)).collect();
        assert_eq!(
            numbers,
            vec![
                (Kind::Hunk, None),
                (Kind::Context, Some(10)),
                (Kind::Remove, Some(11)),
                (Kind::Add, Some(11)),
                (Kind::Context, Some(12)),
            ]
        );
        assert_eq!(stats(&lines), (1, 1));
    }

    #[test]
    fn strings_diff_marks_changes() {
        let lines = from_strings("a\nb\nc\n", "a\nB\nc\n");
        let kinds: Vec<_> = lines.iter().map(|l| (l.kind, l.text.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (Kind::Context, "a"),
                (Kind::Remove, "b"),
                (Kind::Add, "B"),
                (Kind::Context, "c")
            ]
        );
    }

    #[test]
    fn unified_text_is_recognised() {
        assert!(parse_unified("echo hi").is_none());
        let lines = parse_unified("--- a/x\n+++ b/x\n@@ -3,2 +3,2 @@\n ctx\n-gone\n+here\n").unwrap();
        assert_eq!(lines[3].number, Some(3));
        assert_eq!((lines[4].kind, lines[4].number), (Kind::Remove, Some(4)));
        assert_eq!((lines[5].kind, lines[5].number), (Kind::Add, Some(4)));
    }

    #[test]
    fn long_diffs_are_cut_with_a_count() {
        let lines = from_strings("", &"x\n".repeat(10));
        let out = render(&lines, 40, "", Some(4));
        assert_eq!(out.len(), 5);
        assert!(out[4].to_string().contains("6 more diff lines"));
    }
}
