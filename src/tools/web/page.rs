//! A fetched body as the model reads it: HTML as Markdown, text, JSON and XML as they are,
//! anything else refused with what it is. Pure functions, no I/O.

/// How a body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Binary,
}

/// The kind of a body from its `Content-Type` (or, without one, from its first bytes).
pub fn kind(content_type: Option<&str>, body: &[u8]) -> Kind {
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty());
    match media.as_deref() {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        Some(m) if is_textual(m) => Kind::Text,
        Some("application/octet-stream") | None => sniff(body),
        Some(_) => Kind::Binary,
    }
}

fn is_textual(media: &str) -> bool {
    media.starts_with("text/")
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || matches!(
            media,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
                | "application/x-ndjson"
        )
}

fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    if head.contains(&0) {
        return Kind::Binary;
    }
    let text = String::from_utf8_lossy(head).trim_start().to_ascii_lowercase();
    if text.starts_with("<!doctype html") || text.starts_with("<html") {
        return Kind::Html;
    }
    // A body cut inside a character still reads as text.
    match std::str::from_utf8(head) {
        Ok(_) => Kind::Text,
        Err(e) if e.error_len().is_none() => Kind::Text,
        Err(_) => Kind::Binary,
    }
}

/// Elements whose text is no part of what a page says.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head",
];

/// Stack for the conversion thread: the converter walks the document recursively, so it gets
/// a stack of its own, and a document nested deeper than [`MAX_DEPTH`] is read as plain text.
const CONVERT_STACK: usize = 64 * 1024 * 1024;

/// Deepest element nesting converted with its structure. Parsing costs time in proportion to
/// the depth for every tag (the parser looks through the open elements), so a hostile page of
/// nested elements is caught before it is parsed, by [`estimated_depth`].
const MAX_DEPTH: usize = 512;

/// Elements that are never open for long: void ones, and those the parser closes by itself
/// when the next one starts (a list of unclosed `<li>`s does not nest).
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr", "p", "li",
    "dt", "dd", "tr", "td", "th", "option", "param",
];

/// HTML as Markdown, with the page's title first when it has one.
pub fn html_to_markdown(html: &str) -> Result<String, String> {
    let title = title(html);
    let owned = html.to_string();
    let worker = std::thread::Builder::new()
        .name("keel-html".into())
        .stack_size(CONVERT_STACK)
        .spawn(move || -> Result<String, String> {
            if estimated_depth(&owned) > MAX_DEPTH {
                return Ok(strip_tags(&owned));
            }
            let converter = htmd::HtmlToMarkdown::builder().skip_tags(SKIPPED.to_vec()).build();
            let tree = converter
                .html_to_tree(&owned)
                .map_err(|e| format!("the HTML could not be read: {e}"))?;
            if depth(&tree) > MAX_DEPTH {
                return Ok(strip_tags(&owned));
            }
            Ok(converter.tree_to_markdown(&tree))
        })
        .map_err(|e| format!("cannot start the HTML conversion: {e}"))?;
    let markdown = worker.join().map_err(|_| "the HTML conversion failed".to_string())??;
    let markdown = squeeze_blank_lines(markdown.trim());
    Ok(match title {
        Some(t) if !markdown.contains(&t) => format!("# {t}\n\n{markdown}"),
        _ => markdown,
    })
}

/// How deep the document's nodes nest (walked without recursion).
fn depth(root: &std::rc::Rc<htmd::Node>) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, d)) = stack.pop() {
        deepest = deepest.max(d);
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), d + 1));
        }
    }
    deepest
}

/// The `<title>`'s text, entities left as written but whitespace folded.
fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find("</title")?;
    let text = html[open_end..close].split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// How deep the elements of `html` nest, at most (start tags minus end tags, at the deepest),
/// read from the bytes without parsing.
fn estimated_depth(html: &str) -> usize {
    let bytes = html.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while let Some(pos) = memchr::memchr(b'<', &bytes[i..]) {
        let start = i + pos + 1;
        let closing = bytes.get(start) == Some(&b'/');
        let name_start = if closing { start + 1 } else { start };
        let name_len = bytes[name_start.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        i = name_start + name_len;
        if name_len == 0 || !bytes[name_start].is_ascii_alphabetic() {
            continue;
        }
        let name = html[name_start..name_start + name_len].to_ascii_lowercase();
        if NOT_NESTING.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
            continue;
        }
        let end = memchr::memchr(b'>', &bytes[i..]).map(|e| i + e);
        if end.is_some_and(|e| e > 0 && bytes[e - 1] == b'/') {
            continue;
        }
        depth += 1;
        deepest = deepest.max(depth);
    }
    deepest
}

/// The text of a document without its tags (for documents too deep to convert).
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most one blank line in a row.
fn squeeze_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blanks = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blanks += 1;
            if blanks > 1 {
                continue;
            }
        } else {
            blanks = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// `text` cut to at most `max` characters at a line end where one is near, and whether it was.
pub fn cap(text: &str, max: usize) -> (String, bool) {
    let Some((cut, _)) = text.char_indices().nth(max) else {
        return (text.to_string(), false);
    };
    let head = &text[..cut];
    let at = head
        .rfind('\n')
        .filter(|&i| i > cut.saturating_sub(2_000))
        .unwrap_or(cut);
    (head[..at].to_string(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_type_and_bytes() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(kind(Some("application/json"), b"{}"), Kind::Text);
        assert_eq!(kind(Some("application/vnd.api+json"), b"{}"), Kind::Text);
        assert_eq!(kind(Some("text/plain"), b"x"), Kind::Text);
        assert_eq!(kind(Some("image/png"), b"\x89PNG"), Kind::Binary);
        assert_eq!(kind(None, b"<!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(kind(None, b"plain words"), Kind::Text);
        assert_eq!(kind(Some("application/octet-stream"), b"a\0b"), Kind::Binary);
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let html = "<html><head><title>The  Page</title><style>p{}</style></head><body>\
                    <h1>Heading</h1><p>Some <b>bold</b> text and <a href=\"/x\">a link</a>.</p>\
                    <script>alert('x')</script><ul><li>one</li><li>two</li></ul></body></html>";
        let md = html_to_markdown(html).unwrap();
        assert!(md.starts_with("# The Page\n\n# Heading"), "{md}");
        assert!(md.contains("Some **bold** text and [a link](/x)."), "{md}");
        assert!(
            md.contains("*   one") || md.contains("- one") || md.contains("* one"),
            "{md}"
        );
        assert!(!md.contains("alert"), "{md}");
        assert!(!md.contains("p{}"), "{md}");
    }

    #[test]
    fn deep_nesting_is_read_as_text_quickly() {
        let html = format!("{}deep text{}", "<div>".repeat(200_000), "</div>".repeat(200_000));
        let started = std::time::Instant::now();
        let md = html_to_markdown(&html).unwrap();
        assert_eq!(md, "deep text");
        // Seconds, against the hours a parse of this document would take.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn depth_estimate_ignores_elements_that_do_not_nest() {
        assert_eq!(
            estimated_depth("<div><p>a<p>b<br><img src=x/><ul><li>1<li>2</ul></div>"),
            2
        );
        assert_eq!(estimated_depth("<a/><b></b><c>"), 1);
        let list = format!("<ul>{}</ul>", "<li>item".repeat(5_000));
        assert_eq!(estimated_depth(&list), 1);
        let md = html_to_markdown(&list).unwrap();
        assert!(md.contains("item"), "structure kept for a long flat list");
    }

    #[test]
    fn cap_cuts_on_characters_and_prefers_line_ends() {
        assert_eq!(cap("short", 10), ("short".to_string(), false));
        let (cut, was) = cap("ééééé", 3);
        assert!(was);
        assert_eq!(cut, "ééé");
        let text = format!("{}\n{}", "a".repeat(50), "b".repeat(50));
        let (cut, was) = cap(&text, 80);
        assert!(was);
        assert_eq!(cut, "a".repeat(50));
    }
}
