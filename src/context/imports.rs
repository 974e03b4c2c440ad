//! `@path` imports in instruction files: where they are (never inside code) and what they name.

use std::path::{Path, PathBuf};

/// The `@path` references of a Markdown text in order of appearance, skipping fenced code
/// blocks and inline code spans (an `@` there is an example, not an import).
pub fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    for line in text.lines() {
        if let Some(marker) = fence_marker(line) {
            match fence {
                None => {
                    fence = Some(marker);
                    continue;
                }
                Some((c, n)) if marker.0 == c && marker.1 >= n && is_closing_fence(line) => {
                    fence = None;
                    continue;
                }
                Some(_) => {}
            }
        }
        if fence.is_some() {
            continue;
        }
        scan_line(&strip_code_spans(line), &mut out);
    }
    out
}

/// A line opening or closing a fenced block: up to three spaces, then three or more ` or ~.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = rest.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

/// A closing fence carries nothing after its marker.
fn is_closing_fence(line: &str) -> bool {
    let t = line.trim();
    t.chars().all(|c| c == '`' || c == '~')
}

/// The line with every inline code span (a run of backticks up to the next run of the same
/// length) replaced by a space. An unmatched run is kept as text.
fn strip_code_spans(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|b| **b == b'`').count();
        let body = i + run;
        let mut j = body;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let r = bytes[j..].iter().take_while(|b| **b == b'`').count();
                if r == run {
                    close = Some(j + r);
                    break;
                }
                j += r;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.push_str(&line[copied..i]);
                out.push(' ');
                copied = end;
                i = end;
            }
            None => i = body,
        }
    }
    out.push_str(&line[copied..]);
    out
}

/// `@ref` tokens that start a word (so `user@example.com` is not one).
fn scan_line(line: &str, out: &mut Vec<String>) {
    let mut prev: Option<char> = None;
    for (i, c) in line.char_indices() {
        if c == '@' && prev.is_none_or(char::is_whitespace) {
            let rest = &line[i + 1..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let token = rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
            if looks_like_path(token) {
                out.push(token.to_string());
            }
        }
        prev = Some(c);
    }
}

fn looks_like_path(token: &str) -> bool {
    !token.is_empty() && !token.starts_with('@') && token.chars().any(|c| c.is_alphanumeric())
}

/// Resolves a reference relative to the directory of the importing file; `~/` means the
/// user's home directory.
pub fn resolve(reference: &str, importer_dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = reference.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    let p = Path::new(reference);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        importer_dir.join(p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_imports_outside_code_only() {
        let text = "\
See @docs/style.md and @~/shared.md.
Mail me at user@example.com, not an import.
Inline `@not/this.md` is code; @also/this.md is not.
```
@inside/fence.md
```
~~~~text
@inside/tilde.md
```
still inside
~~~~
(@paren/ok.md)
@/abs/path.md
";
        assert_eq!(
            references(text),
            vec!["docs/style.md", "~/shared.md", "also/this.md", "/abs/path.md"]
        );
    }

    #[test]
    fn parenthesised_import_after_space_counts() {
        // `(@x)` does not start a word: the reference tool would not treat it as an import.
        assert!(references("(@paren/ok.md)").is_empty());
        assert_eq!(references("see: @a.md, @b.md"), vec!["a.md", "b.md"]);
        assert_eq!(
            references("double ``code with ` inside @x.md`` then @y.md"),
            vec!["y.md"]
        );
        assert_eq!(references("unclosed ` @z.md"), vec!["z.md"]);
    }

    #[test]
    fn resolves_relative_home_and_absolute() {
        let dir = Path::new("/repo/docs");
        let home = Path::new("/home/u");
        assert_eq!(resolve("a.md", dir, Some(home)), Some(PathBuf::from("/repo/docs/a.md")));
        assert_eq!(
            resolve("../b.md", dir, Some(home)),
            Some(PathBuf::from("/repo/docs/../b.md"))
        );
        assert_eq!(resolve("~/c.md", dir, Some(home)), Some(PathBuf::from("/home/u/c.md")));
        assert_eq!(resolve("~/c.md", dir, None), None);
        assert_eq!(resolve("/x/d.md", dir, Some(home)), Some(PathBuf::from("/x/d.md")));
    }
}
