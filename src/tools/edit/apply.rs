//! The pure core of Edit: find the anchor, replace it, touch nothing else.
//!
//! Line endings: the model sees files through Read, which shows lines without their `\r`. So
//! when an anchor containing `\n` is not found verbatim in a file that uses CRLF, it is tried
//! again with every line break written as `\r\n`, and `new_string` gets the same treatment. The
//! replacement happens on the raw text: every byte outside the anchored region, including the
//! line endings of a mixed-ending file and a missing final newline, stays exactly as it was.

use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    NotFound,
    /// The anchor occurs this many times (overlapping occurrences counted) and `replace_all`
    /// was not set.
    Ambiguous(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub replacements: usize,
    /// Byte range of the first replacement in the new text (for the result snippet).
    pub first: Range<usize>,
    /// The anchor as it was matched (after line-ending adaptation).
    pub matched_old: String,
}

/// Replaces `old` by `new` in `text`: exactly one occurrence, or all of them with `replace_all`.
/// `old` must not be empty (the tool handles that case before).
pub fn apply(text: &str, old: &str, new: &str, replace_all: bool) -> Result<Applied, ApplyError> {
    let (old, new) = variants(text, old, new)
        .into_iter()
        .find(|(o, _)| !o.is_empty() && text.contains(o.as_str()))
        .ok_or(ApplyError::NotFound)?;
    let Some(start) = text.find(&old) else {
        return Err(ApplyError::NotFound);
    };
    if replace_all {
        let replacements = text.matches(old.as_str()).count();
        return Ok(Applied {
            text: text.replace(old.as_str(), &new),
            replacements,
            first: start..start + new.len(),
            matched_old: old,
        });
    }
    let occurrences = count_overlapping(text, &old);
    if occurrences > 1 {
        return Err(ApplyError::Ambiguous(occurrences));
    }
    let mut out = String::with_capacity(text.len() - old.len() + new.len());
    out.push_str(&text[..start]);
    out.push_str(&new);
    out.push_str(&text[start + old.len()..]);
    Ok(Applied {
        text: out,
        replacements: 1,
        first: start..start + new.len(),
        matched_old: old,
    })
}

/// The (old, new) pairs to try, in order: verbatim first, then adapted to the file's line breaks.
fn variants(text: &str, old: &str, new: &str) -> Vec<(String, String)> {
    let mut out = vec![(old.to_string(), new.to_string())];
    if old.contains('\n') {
        if text.contains("\r\n") {
            out.push((to_crlf(old), to_crlf(new)));
        }
        if old.contains("\r\n") {
            out.push((old.replace("\r\n", "\n"), new.replace("\r\n", "\n")));
        }
    }
    out
}

fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Occurrences of `needle`, overlapping ones included (`aa` occurs twice in `aaa`): an anchor
/// that overlaps itself does not identify one place.
pub fn count_overlapping(haystack: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return 0;
    }
    let mut count = 0;
    let mut from = 0;
    while let Some(i) = haystack[from..].find(needle) {
        count += 1;
        // Step past the first character of this occurrence.
        let first_len = haystack[from + i..].chars().next().map_or(1, char::len_utf8);
        from += i + first_len;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unique_anchor_is_replaced() {
        let a = apply("one\ntwo\nthree\n", "two", "2", false).unwrap();
        assert_eq!(a.text, "one\n2\nthree\n");
        assert_eq!(a.first, 4..5);
    }

    #[test]
    fn missing_and_ambiguous_are_distinct() {
        assert_eq!(apply("a b a", "c", "d", false), Err(ApplyError::NotFound));
        assert_eq!(apply("a b a", "a", "d", false), Err(ApplyError::Ambiguous(2)));
        assert_eq!(apply("aaa", "aa", "b", false), Err(ApplyError::Ambiguous(2)));
        let all = apply("a b a", "a", "d", true).unwrap();
        assert_eq!((all.text.as_str(), all.replacements), ("d b d", 2));
    }

    #[test]
    fn crlf_file_matches_lf_anchor_and_keeps_crlf() {
        let a = apply("x\r\ny\r\nz", "x\ny", "x\nY\nW", false).unwrap();
        assert_eq!(a.text, "x\r\nY\r\nW\r\nz");
    }

    #[test]
    fn mixed_endings_outside_the_anchor_are_untouched() {
        let text = "a\nb\r\nc\r\nd\n";
        let a = apply(text, "b\nc", "B\nC", false).unwrap();
        assert_eq!(a.text, "a\nB\r\nC\r\nd\n");
    }

    #[test]
    fn crlf_anchor_matches_lf_file() {
        let a = apply("p\nq\n", "p\r\nq", "P\r\nQ", false).unwrap();
        assert_eq!(a.text, "P\nQ\n");
    }

    #[test]
    fn counts_overlaps_on_char_boundaries() {
        assert_eq!(count_overlapping("ééé", "éé"), 2);
        assert_eq!(count_overlapping("abc", "d"), 0);
    }

    fn piece() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[ab\\n\\r é]{0,12}").unwrap()
    }

    proptest! {
        /// An edit changes exactly the anchored region: the text before and after it is
        /// byte-identical, and the region now holds the new string.
        #[test]
        fn edit_changes_only_the_anchored_region(prefix in piece(), suffix in piece(), new in piece()) {
            // A marker that cannot occur in the generated pieces makes the anchor unique.
            let old = format!("<{}>", prefix.len());
            let text = format!("{prefix}{old}{suffix}");
            let a = apply(&text, &old, &new, false).unwrap();
            prop_assert_eq!(&a.text[..prefix.len()], prefix.as_str());
            prop_assert_eq!(&a.text[a.first.clone()], new.as_str());
            prop_assert_eq!(&a.text[a.first.end..], suffix.as_str());
            prop_assert_eq!(a.replacements, 1);
        }

        /// With anchors drawn from the text itself: a unique anchor is replaced in place and
        /// everything else survives; a repeated one is refused and nothing changes.
        #[test]
        fn anchors_from_the_text(text in proptest::string::string_regex("[ab\\n\\r]{1,40}").unwrap(),
                                 start in 0usize..40, len in 1usize..8, new in piece()) {
            let start = start % text.len();
            let end = (start + len).min(text.len());
            let old = &text[start..end];
            match apply(&text, old, &new, false) {
                Ok(a) => {
                    prop_assert_eq!(count_overlapping(&text, &a.matched_old), 1);
                    let at = text.find(&a.matched_old).unwrap();
                    prop_assert_eq!(&a.text[..at], &text[..at]);
                    prop_assert_eq!(&a.text[a.first.end..], &text[at + a.matched_old.len()..]);
                }
                Err(ApplyError::Ambiguous(n)) => prop_assert!(n > 1),
                Err(ApplyError::NotFound) => prop_assert!(false, "an anchor taken from the text must be found"),
            }
        }

        /// Replace-all leaves no occurrence behind when the new string cannot recreate one, and
        /// the text between occurrences is unchanged.
        #[test]
        fn replace_all_replaces_every_occurrence(parts in proptest::collection::vec(piece(), 1..5)) {
            let text = parts.join("<X>");
            let a = apply(&text, "<X>", "[Y]", true);
            if parts.len() == 1 {
                prop_assert_eq!(a, Err(ApplyError::NotFound));
            } else {
                let a = a.unwrap();
                prop_assert_eq!(a.text, parts.join("[Y]"));
                prop_assert_eq!(a.replacements, parts.len() - 1);
            }
        }
    }
}
