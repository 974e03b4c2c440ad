//! The reference's `structuredPatch`: the hunks of a line diff, three lines of context, each
//! line prefixed with ` `, `-` or `+`.

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

pub fn structured_patch(old: &str, new: &str) -> Value {
    let diff = TextDiff::from_lines(old, new);
    let hunks: Vec<Value> = diff
        .grouped_ops(3)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let lines: Vec<String> = group
                .iter()
                .flat_map(|op| diff.iter_changes(op))
                .map(|c| {
                    let sign = match c.tag() {
                        ChangeTag::Equal => ' ',
                        ChangeTag::Delete => '-',
                        ChangeTag::Insert => '+',
                    };
                    let text = c.value();
                    let text = text.strip_suffix('\n').unwrap_or(text);
                    format!("{sign}{}", text.strip_suffix('\r').unwrap_or(text))
                })
                .collect();
            // A hunk that adds to an empty range starts at the line before it (unified diff).
            let start = |r: &std::ops::Range<usize>| if r.is_empty() { r.start } else { r.start + 1 };
            Some(json!({
                "oldStart": start(&old_range),
                "oldLines": old_range.len(),
                "newStart": start(&new_range),
                "newLines": new_range.len(),
                "lines": lines,
            }))
        })
        .collect();
    Value::Array(hunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_changed_line_with_context() {
        assert_eq!(
            structured_patch("one\ntwo\nthree\n", "one\nTWO\nthree\n"),
            json!([{"oldStart":1,"oldLines":3,"newStart":1,"newLines":3,"lines":[" one","-two","+TWO"," three"]}])
        );
    }

    #[test]
    fn far_apart_changes_are_separate_hunks_and_no_change_is_none() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l2\n", "L2\n").replace("l19\n", "L19\n");
        let p = structured_patch(&old, &new);
        assert_eq!(p.as_array().unwrap().len(), 2);
        assert_eq!(p[1]["oldStart"], 16);
        assert_eq!(structured_patch("same\n", "same\n"), json!([]));
        assert_eq!(
            structured_patch("", "new\n"),
            json!([{"oldStart":0,"oldLines":0,"newStart":1,"newLines":1,"lines":["+new"]}])
        );
    }
}
