//! YAML front matter of markdown files (skills, custom commands, sub-agent definitions).
//!
//! A file may open with `---`, a YAML mapping and a closing `---`; the rest is the body. The
//! YAML is parsed by `yaml-rust2` and lowered to JSON values so callers deserialize typed fields
//! with serde. Files written for the reference tool often carry descriptions with an unquoted
//! `: ` inside (for example `Examples: <example>Context: …`), which strict YAML rejects; such a
//! document is read again with those top-level values quoted, and only a document that still
//! does not parse is an error, reported with its line in the file.

use serde_json::{Map, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

/// A parsed markdown document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document<'a> {
    /// The front matter's fields (empty when there is none).
    pub meta: Map<String, Value>,
    pub body: &'a str,
    /// The file line the body starts on (1-based).
    pub body_line: usize,
}

/// Malformed front matter: what is wrong and on which line of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct FrontMatterError {
    pub line: usize,
    pub message: String,
}

/// Splits and parses a document. Text that does not start with `---` has no front matter.
pub fn parse(text: &str) -> Result<Document<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(first_end) = opening_fence(text) else {
        return Ok(Document {
            meta: Map::new(),
            body: text,
            body_line: 1,
        });
    };
    let rest = &text[first_end..];
    let mut offset = 0;
    let mut yaml_end = None;
    let mut lines_in_yaml = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            yaml_end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
        lines_in_yaml += 1;
    }
    let Some((yaml_stop, body_start)) = yaml_end else {
        return Err(FrontMatterError {
            line: 1,
            message: "the front matter opened with `---` is never closed by a `---` line".into(),
        });
    };
    let yaml = &rest[..yaml_stop];
    let meta = parse_yaml(yaml)?;
    Ok(Document {
        meta,
        body: &rest[body_start..],
        body_line: lines_in_yaml + 3,
    })
}

fn opening_fence(text: &str) -> Option<usize> {
    let first = text.split_inclusive('\n').next()?;
    (first.trim_end_matches(['\r', '\n']).trim_end() == "---" && first.ends_with('\n')).then_some(first.len())
}

/// Front matter larger than this is refused: real ones are a few KiB, and the YAML loader
/// holds the whole document in memory several times over.
const MAX_FRONT_MATTER: usize = 128 * 1024;

/// Parses the YAML between the fences (file line 2 onwards) into a JSON object.
fn parse_yaml(yaml: &str) -> Result<Map<String, Value>, FrontMatterError> {
    if yaml.len() > MAX_FRONT_MATTER {
        return Err(FrontMatterError {
            line: 2,
            message: format!(
                "the front matter is {} KiB, more than the {} KiB keel reads",
                yaml.len() / 1024,
                MAX_FRONT_MATTER / 1024
            ),
        });
    }
    refuse_aliases(yaml)?;
    let docs = match YamlLoader::load_from_str(yaml) {
        Ok(d) => d,
        Err(strict) => {
            let lenient = quote_plain_values(yaml);
            let folded = fold_continuations(yaml);
            let retry = YamlLoader::load_from_str(&lenient)
                .ok()
                .filter(|_| lenient != yaml)
                .or_else(|| {
                    // The folded text is new YAML: it gets the same alias check.
                    let loaded = refuse_aliases(&folded)
                        .ok()
                        .and_then(|_| YamlLoader::load_from_str(&folded).ok());
                    loaded.filter(|_| folded != yaml)
                });
            match retry {
                Some(d) => d,
                None => {
                    return Err(FrontMatterError {
                        // The scanner counts lines from 1 within the YAML, which starts on line 2.
                        line: strict.marker().line() + 1,
                        message: format!("invalid YAML: {}", strict.info()),
                    });
                }
            }
        }
    };
    match docs.into_iter().next() {
        None | Some(Yaml::Null) => Ok(Map::new()),
        Some(Yaml::Hash(h)) => {
            let mut out = Map::new();
            for (k, v) in h {
                out.insert(key_text(&k), to_json(v));
            }
            Ok(out)
        }
        Some(_) => Err(FrontMatterError {
            line: 2,
            message: "the front matter must be a mapping of `key: value` lines".into(),
        }),
    }
}

/// The loader copies an anchored node for every alias (`*name`) to it, so a few hundred bytes
/// of nested aliases expand to gigabytes; a file from a cloned repository must not be able to
/// exhaust memory. Front matter has no use for them: any alias is an error. (Syntax errors are
/// left to the loader, which reports them.)
fn refuse_aliases(yaml: &str) -> Result<(), FrontMatterError> {
    let mut parser = Parser::new_from_str(yaml);
    loop {
        match parser.next_token() {
            Ok((Event::Alias(_), mark)) => {
                return Err(FrontMatterError {
                    line: mark.line() + 1,
                    message: "YAML aliases (`*name`) are not supported in front matter".into(),
                });
            }
            Ok((Event::StreamEnd, _)) | Err(_) => return Ok(()),
            Ok(_) => {}
        }
    }
}

/// Quotes the value of each top-level one-line `key: value` whose value does not parse on its
/// own, so an unquoted `: ` inside a description, or a hint like `[pr-number] [priority]`,
/// stops being a syntax error.
fn quote_plain_values(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + 64);
    for line in yaml.split_inclusive('\n') {
        let content = line.trim_end_matches(['\r', '\n']);
        let ending = &line[content.len()..];
        let top_level = !content.starts_with([' ', '\t', '-', '#']);
        match content.split_once(':') {
            Some((key, value)) if top_level && is_plain_key(key) && needs_quotes(value.trim()) => {
                let v = value.trim().replace('\'', "''");
                out.push_str(&format!("{key}: '{v}'{ending}"));
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// The fields of skills, commands and sub-agents; in a document that is not YAML, a top-level
/// line starting with one of them begins a field.
const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "color",
    "permissionMode",
    "skills",
    "hooks",
    "mcpServers",
    "memory",
    "maxTurns",
    "isolation",
    "background",
    "effort",
    "argument-hint",
    "allowed-tools",
    "when_to_use",
    "when-to-use",
    "disable-model-invocation",
    "user-invocable",
    "arguments",
    "context",
    "agent",
    "version",
    "license",
    "metadata",
    "initialPrompt",
];

/// Reads a document the way files written for the reference are meant: a description that
/// goes on over unindented lines (`<example>`, `Context: …`, `user: "…"`) until the next known
/// field. Each such field becomes one quoted value, its lines joined by newlines; known fields
/// with their indented blocks stay as written.
fn fold_continuations(yaml: &str) -> String {
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    let mut preamble = String::new();
    for line in yaml.lines() {
        let top_level = !line.starts_with([' ', '\t', '-', '#']);
        let start = line
            .split_once(':')
            .filter(|(k, _)| top_level && KNOWN_KEYS.contains(&k.trim()) && k.trim() == *k);
        match (start, fields.last_mut()) {
            (Some(_), _) => fields.push((line.to_string(), Vec::new())),
            (None, Some((_, more))) => more.push(line.to_string()),
            (None, None) => {
                preamble.push_str(line);
                preamble.push('\n');
            }
        }
    }
    let mut out = preamble;
    for (first, more) in fields {
        let block = more
            .iter()
            .all(|l| l.trim().is_empty() || l.starts_with([' ', '\t', '-', '#']));
        // Only a plain value goes on; an unclosed quote or bracket is a mistake, not text.
        let plain = first.split_once(':').is_some_and(|(_, v)| {
            !v.trim_start()
                .starts_with(['"', '\'', '|', '>', '[', '{', '&', '*', '!'])
        });
        if more.is_empty() || block || !plain {
            out.push_str(&first);
            out.push('\n');
            for l in more {
                out.push_str(&l);
                out.push('\n');
            }
            continue;
        }
        let (key, value) = first.split_once(':').unwrap_or((&first, ""));
        let mut text = value.trim().to_string();
        for l in &more {
            text.push('\n');
            text.push_str(l);
        }
        let quoted = Value::String(text.trim().to_string()).to_string();
        out.push_str(&format!("{key}: {quoted}\n"));
    }
    out
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Whether a one-line value does not parse on its own (and is not a quoted or block scalar).
fn needs_quotes(value: &str) -> bool {
    if value.is_empty() || value.starts_with(['\'', '"', '|', '>', '&', '*', '!', '#']) {
        return false;
    }
    // A bracket that is never closed is a mistake, not text.
    if (value.starts_with('[') && !value.ends_with(']')) || (value.starts_with('{') && !value.ends_with('}')) {
        return false;
    }
    YamlLoader::load_from_str(&format!("k: {value}")).is_err()
}

fn key_text(k: &Yaml) -> String {
    match k {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => "null".into(),
        other => format!("{other:?}"),
    }
}

fn to_json(v: Yaml) -> Value {
    match v {
        Yaml::String(s) => Value::String(s),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::String(r)),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(a) => Value::Array(a.into_iter().map(to_json).collect()),
        Yaml::Hash(h) => Value::Object(h.into_iter().map(|(k, v)| (key_text(&k), to_json(v))).collect()),
        Yaml::Null | Yaml::BadValue | Yaml::Alias(_) => Value::Null,
    }
}

/// A string field: strings as they are, numbers and booleans as their text.
pub fn string(meta: &Map<String, Value>, key: &str) -> Option<String> {
    match meta.get(key)? {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A boolean field; `"true"`/`"false"` strings count too. Anything else is an error message.
pub fn flag(meta: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match meta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(format!("`{key}` must be true or false, found {other}")),
    }
}

/// A list field given as a YAML list or as one string separated by commas or spaces (commas
/// and spaces inside parentheses belong to the entry: `Bash(git diff:*)`).
pub fn list(meta: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match meta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(split_cli_rules(std::slice::from_ref(s)))),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => out.extend(split_cli_rules(std::slice::from_ref(s))),
                    other => return Err(format!("`{key}` must list strings, found {other}")),
                }
            }
            Ok(Some(out))
        }
        Some(other) => Err(format!(
            "`{key}` must be a list or a comma-separated string, found {other}"
        )),
    }
}

/// Splits `--allowedTools` values: commas or spaces separate rules, except inside parentheses.
pub fn split_cli_rules(values: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for v in values {
        let mut depth = 0usize;
        let mut cur = String::new();
        for c in v.chars() {
            match c {
                '(' => {
                    depth += 1;
                    cur.push(c);
                }
                ')' => {
                    depth = depth.saturating_sub(1);
                    cur.push(c);
                }
                ',' | ' ' if depth == 0 => {
                    if !cur.trim().is_empty() {
                        out.push(cur.trim().to_string());
                    }
                    cur.clear();
                }
                _ => cur.push(c),
            }
        }
        if !cur.trim().is_empty() {
            out.push(cur.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_front_matter_and_body() {
        let doc = parse("---\nname: review\ndescription: Review the diff\nallowed-tools: [Read, \"Bash(git diff:*)\"]\n---\n# Review\n\nBody $ARGUMENTS\n").unwrap();
        assert_eq!(doc.meta["name"], "review");
        assert_eq!(string(&doc.meta, "description").as_deref(), Some("Review the diff"));
        assert_eq!(
            list(&doc.meta, "allowed-tools").unwrap().unwrap(),
            vec!["Read", "Bash(git diff:*)"]
        );
        assert_eq!(doc.body, "# Review\n\nBody $ARGUMENTS\n");
        assert_eq!(doc.body_line, 6);
    }

    #[test]
    fn no_front_matter_is_all_body() {
        let doc = parse("# Title\n---\nnot yaml\n").unwrap();
        assert!(doc.meta.is_empty());
        assert_eq!(doc.body_line, 1);
        assert!(doc.body.starts_with("# Title"));
        let crlf = parse("---\r\nname: x\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(crlf.meta["name"], "x");
        assert_eq!(crlf.body, "body\r\n");
    }

    #[test]
    fn block_scalars_lists_and_comma_strings() {
        let doc = parse(
            "---\ndescription: >\n  Folded over\n  two lines.\ntools: Read, Grep, Glob, Bash\nmaxTurns: 7\ndisable-model-invocation: \"true\"\n---\n",
        )
        .unwrap();
        assert_eq!(doc.meta["description"], "Folded over two lines.\n");
        assert_eq!(
            list(&doc.meta, "tools").unwrap().unwrap(),
            vec!["Read", "Grep", "Glob", "Bash"]
        );
        assert_eq!(doc.meta["maxTurns"], 7);
        assert_eq!(flag(&doc.meta, "disable-model-invocation").unwrap(), Some(true));
        assert!(flag(&doc.meta, "maxTurns").is_err());
    }

    #[test]
    fn a_description_going_on_over_unindented_lines_is_read_to_the_next_field() {
        // The shape of plugin agents written for the reference: examples follow the
        // description at the margin, some looking like keys, some like tags.
        let text = "---\nname: tidy\ndescription: Use after code changes.\\n\\nExamples:\\n\\n<example>\n\
                    Context: a feature was just added.\nuser: \"Add login\"\nassistant: \"Done:\"\n\
                    <call omitted>\n<commentary>\nThen tidy it.\n</commentary>\n</example>\n\
                    tools:\n  - Read\n  - Edit\nmodel: opus\n---\nBody\n";
        let d = parse(text).unwrap();
        assert_eq!(d.meta["name"], "tidy");
        assert_eq!(d.meta["model"], "opus");
        assert_eq!(d.meta["tools"], serde_json::json!(["Read", "Edit"]));
        let desc = d.meta["description"].as_str().unwrap();
        assert!(desc.starts_with("Use after code changes."), "{desc}");
        assert!(
            desc.contains("\nContext: a feature was just added.\nuser: \"Add login\""),
            "{desc}"
        );
        assert!(desc.ends_with("</example>"), "{desc}");
        assert!(d.meta.get("Context").is_none() && d.meta.get("user").is_none());
        assert_eq!(d.body, "Body\n");
    }

    #[test]
    fn huge_front_matter_and_aliases_stay_refused_when_read_leniently() {
        let huge = format!("---\nname: x\ndescription: {}\n---\n", "a ".repeat(200_000));
        assert!(parse(&huge).unwrap_err().message.contains("KiB"));
        let bomb = "---\nname: &a [x]\n<tag>\nmodel: *a\n---\n";
        assert!(parse(bomb).is_err(), "an alias is refused in a lenient read too");
    }

    #[test]
    fn unquoted_colons_in_a_description_are_accepted() {
        // The shape of agent files generated by the reference tool.
        let doc = parse(
            "---\nname: code-reviewer\ndescription: Use this agent after writing code. Examples: <example>Context: the user wrote a function. user: 'done' assistant: 'reviewing'</example>\ntools: Read, Grep\n---\nYou review code.\n",
        )
        .unwrap();
        assert!(
            string(&doc.meta, "description")
                .unwrap()
                .contains("Context: the user wrote a function. user: 'done'")
        );
        assert_eq!(doc.body, "You review code.\n");
    }

    #[test]
    fn hints_in_brackets_and_lists_read_as_people_write_them() {
        let doc = parse(
            "---\nargument-hint: [pr-number] [priority] [assignee]\nallowed-tools: [Read, Grep]\ndescription: Fix issue: the parser\n---\n",
        )
        .unwrap();
        assert_eq!(doc.meta["argument-hint"], "[pr-number] [priority] [assignee]");
        assert_eq!(list(&doc.meta, "allowed-tools").unwrap().unwrap(), vec!["Read", "Grep"]);
        assert_eq!(doc.meta["description"], "Fix issue: the parser");
    }

    #[test]
    fn malformed_yaml_names_the_file_line() {
        let err = parse("---\nname: x\ndescription: \"never closed\nother: 1\n---\nbody\n").unwrap_err();
        assert!(err.line >= 3 && err.line <= 5, "{err}");
        assert!(err.message.contains("invalid YAML"), "{err}");
        let err = parse("---\nname: x\n  bad: indent\n---\n").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        let err = parse("---\nname: x\n").unwrap_err();
        assert!(err.message.contains("never closed"));
        let err = parse("---\n- a\n- b\n---\n").unwrap_err();
        assert!(err.message.contains("mapping"));
    }

    #[test]
    fn aliases_are_refused_before_they_can_expand() {
        // Ten aliases per level: a million copies at five levels (each further level multiplies
        // by ten, so a file under a kilobyte can ask for terabytes).
        let mut yaml = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..6 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            yaml.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        yaml.push_str("description: boom\n---\nbody\n");
        let err = parse(&yaml).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("aliases"), "{err}");
        // Anchors alone, and `*` inside text, are fine.
        let doc = parse("---\nname: &n review\ndescription: \"*bold* and *a\"\n---\n").unwrap();
        assert_eq!(doc.meta["name"], "review");
    }
}
