//! Readers of the configuration formats [`super`] looks into, as far as it needs them: INI
//! sections and keys, TOML tables, keys and values (strings, arrays, multi-line strings), the keys
//! of JavaScript / JSON object literals with the strings under them, and top-level YAML keys.
//! Tolerant: what they cannot read they skip.

/// `(section, key, value)` of an INI file; continuation lines join their key's value.
pub(super) fn ini_entries(text: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut()
                && last.0 == section
            {
                last.2.push('\n');
                last.2.push_str(t);
            }
            continue;
        }
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        let split = t.find(['=', ':']);
        if let Some(i) = split {
            out.push((
                section.clone(),
                t[..i].trim().to_string(),
                t[i + 1..].trim().to_string(),
            ));
        }
    }
    out
}

/// A TOML value, as far as these files need it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Toml {
    Str(String),
    Arr(Vec<Toml>),
    Other(String),
}

impl Toml {
    /// Strings of the value, arrays flattened.
    pub(super) fn strings(&self) -> Vec<String> {
        match self {
            Toml::Str(s) => vec![s.clone()],
            Toml::Arr(items) => items.iter().flat_map(Toml::strings).collect(),
            Toml::Other(_) => Vec::new(),
        }
    }
}

/// `(table, key, value)` of a TOML file (dotted keys joined to the table).
pub(super) fn toml_entries(text: &str) -> Vec<(String, String, Toml)> {
    let mut out = Vec::new();
    let mut table = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            rest = after;
            continue;
        }
        if t.starts_with('[') {
            table = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .replace([' ', '"'], "");
            rest = after;
            continue;
        }
        let Some(eq) = line.find('=') else {
            rest = after;
            continue;
        };
        let key = line[..eq].trim().replace([' ', '"'], "");
        let (value, remaining) = toml_value(&rest[eq + 1..], 0);
        let full = if table.is_empty() {
            key
        } else {
            format!("{table}.{key}")
        };
        let (table_part, key_part) = full.rsplit_once('.').unwrap_or(("", &full));
        out.push((table_part.to_string(), key_part.to_string(), value));
        // Continue after the value (which may span lines), at the next line.
        rest = remaining.split_once('\n').map(|(_, r)| r).unwrap_or("");
    }
    out
}

/// Arrays nested deeper than this are not read (a planted `[[[[…` must not exhaust the stack).
const MAX_TOML_DEPTH: usize = 16;

/// Reads one value from `s` (the text after `=`, to the end of the file) at array depth `depth`;
/// returns it and the text after it.
fn toml_value(s: &str, depth: usize) -> (Toml, &str) {
    if depth > MAX_TOML_DEPTH {
        return (Toml::Other(String::new()), "");
    }
    let s = s.trim_start_matches([' ', '\t']);
    for q in ["\"\"\"", "'''"] {
        if let Some(body) = s.strip_prefix(q) {
            return match body.find(q) {
                Some(end) => (
                    Toml::Str(body[..end].trim_start_matches('\n').to_string()),
                    &body[end + 3..],
                ),
                None => (Toml::Str(body.to_string()), ""),
            };
        }
    }
    if let Some(body) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        out.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                    }
                }
                '"' => return (Toml::Str(out), &body[i + 1..]),
                '\n' => break,
                c => out.push(c),
            }
        }
        return (Toml::Str(out), "");
    }
    if let Some(body) = s.strip_prefix('\'') {
        return match body.find(['\'', '\n']) {
            Some(end) => (Toml::Str(body[..end].to_string()), &body[end + 1..]),
            None => (Toml::Str(body.to_string()), ""),
        };
    }
    if let Some(mut body) = s.strip_prefix('[') {
        let mut items = Vec::new();
        loop {
            body = skip_toml_space(body);
            if body.is_empty() {
                return (Toml::Arr(items), "");
            }
            if let Some(r) = body.strip_prefix(']') {
                return (Toml::Arr(items), r);
            }
            if let Some(r) = body.strip_prefix(',') {
                body = r;
                continue;
            }
            let before = body.len();
            let (item, r) = toml_value(body, depth + 1);
            items.push(item);
            body = r;
            if body.len() == before {
                // Nothing read: skip a character rather than loop forever.
                body = body.get(1..).unwrap_or("");
            }
        }
    }
    if s.starts_with('{') {
        // Inline tables say nothing these files need; skip to their end.
        let mut depth = 0usize;
        for (i, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return (Toml::Other(s[..=i].to_string()), &s[i + 1..]);
                    }
                }
                _ => {}
            }
        }
        return (Toml::Other(s.to_string()), "");
    }
    let end = s.find([',', ']', '\n', '#']).unwrap_or(s.len());
    (Toml::Other(s[..end].trim().to_string()), &s[end..])
}

fn skip_toml_space(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        if s.starts_with('#') {
            s = s.split_once('\n').map(|(_, r)| r).unwrap_or("");
        } else {
            return s;
        }
    }
}

/// Every key of a JavaScript or JSON object literal with the scalar values under it (strings,
/// regular expressions, words; the strings of an array), by its path of keys.
pub(super) fn js_keys(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    /// An open `{`, `[` or `(`: the key it is the value of, and for an array under a key the
    /// strings in it.
    struct Frame {
        key: Option<String>,
        values: Option<Vec<String>>,
    }
    let path_of = |stack: &[Frame], key: &str| -> Vec<String> {
        let mut p: Vec<String> = stack.iter().filter_map(|f| f.key.clone()).collect();
        p.push(key.to_string());
        p
    };
    let tokens = js_tokens(text);
    let mut out: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let tok = &tokens[i];
        let is_key = tokens.get(i + 1) == Some(&Tok::Punct(':'))
            && i > 0
            && matches!(tokens[i - 1], Tok::Punct('{' | ','))
            && stack.last().is_some_and(|f| f.values.is_none());
        match tok {
            Tok::Word(w) | Tok::Str(w) if is_key => {
                pending = Some(w.clone());
                i += 2;
                continue;
            }
            Tok::Punct('{') => stack.push(Frame {
                key: pending.take(),
                values: None,
            }),
            Tok::Punct('[' | '(') => {
                let key = pending.take();
                let values = key.as_ref().map(|_| Vec::new());
                stack.push(Frame { key, values });
            }
            Tok::Punct('}' | ']' | ')') => {
                if let Some(Frame {
                    key: Some(key),
                    values: Some(values),
                }) = stack.pop()
                {
                    out.push((path_of(&stack, &key), values));
                }
                pending = None;
            }
            Tok::Punct(',') => pending = None,
            Tok::Str(v) | Tok::Word(v) => {
                if let Some(key) = pending.take() {
                    out.push((path_of(&stack, &key), vec![v.clone()]));
                } else if let (Tok::Str(v), Some(Frame { values: Some(vals), .. })) = (tok, stack.last_mut()) {
                    vals.push(v.clone());
                }
            }
            Tok::Punct(_) => {}
        }
        i += 1;
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    /// A string or a regular expression literal's text.
    Str(String),
    Punct(char),
}

fn js_tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '"' || c == '\'' || c == '`' || (c == '/' && regex_may_start(&out)) {
            let mut s = String::new();
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    s.push(chars[i]);
                    i += 1;
                }
                s.push(chars[i]);
                i += 1;
            }
            i += 1;
            if c == '/' {
                // Flags of a regular expression.
                while i < chars.len() && chars[i].is_ascii_alphabetic() {
                    i += 1;
                }
            }
            out.push(Tok::Str(s));
        } else if c.is_alphanumeric() || c == '_' || c == '$' || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '$' | '.')) {
                i += 1;
            }
            out.push(Tok::Word(chars[start..i].iter().collect()));
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

/// A `/` starts a regular expression where a value may start (after `:`, `,`, `[`, `(`).
fn regex_may_start(tokens: &[Tok]) -> bool {
    matches!(tokens.last(), Some(Tok::Punct(':' | ',' | '[' | '(' | '=')) | None)
}

/// Top-level keys of a YAML mapping with their scalar values (`grep: add`, `ignore:\n  - a`).
pub(super) fn yaml_keys(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t', '-']) {
            if let (Some(item), Some(last)) = (t.strip_prefix('-'), out.last_mut()) {
                last.1.push(yaml_scalar(item));
            }
            continue;
        }
        if let Some((key, value)) = t.split_once(':') {
            let value = value.trim();
            let values = if value.is_empty() {
                Vec::new()
            } else if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                list.split(',').map(yaml_scalar).filter(|v| !v.is_empty()).collect()
            } else {
                vec![yaml_scalar(value)]
            };
            out.push((yaml_scalar(key), values));
        }
    }
    out
}

fn yaml_scalar(s: &str) -> String {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
        .unwrap_or(s)
        .to_string()
}
