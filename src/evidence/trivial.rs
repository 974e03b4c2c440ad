//! Assertions that cannot fail: `assert True`, `assert 1 == 1`, `self.assertEqual(1, 1)`,
//! `expect(true).toBe(true)`, `assert!(true)`, `assert_eq!(x, x)`, `assertTrue(true)`,
//! `assert.Equal(t, 2, 2)`… The same literal or name on both sides of an equality, a literal that is
//! true where truth is asserted (false where falsehood is, null where null is). Replacing a real
//! assertion with one of these keeps the count and removes the check, so they do not count as
//! assertions. Pure functions over code with its comments removed.

use std::sync::OnceLock;

use regex::Regex;

use super::Lang;

/// Whether the assertion an assertion pattern matched (`matched`, the text from the match on in
/// `from`) cannot fail.
pub(super) fn cannot_fail(lang: Lang, matched: &str, from: &str) -> bool {
    // An assertion that cannot fail is short; reading no further keeps a file of unclosed
    // brackets from making every match read the rest of it.
    let mut cut = from.len().min(MAX_ASSERTION);
    while !from.is_char_boundary(cut) {
        cut -= 1;
    }
    let from = &from[..cut];
    let name = matched.trim_end_matches(|c: char| c == '(' || c == '[' || c == '{' || c.is_whitespace());
    let rest = &from[name.len().min(from.len())..];
    let last = last_segment(name);
    let Some(form) = form(&last) else {
        return false;
    };
    let statement_form = (lang == Lang::Python && last == "assert") || !opens(rest);
    let args: Vec<&str> = if statement_form {
        match statement(rest.trim_start_matches([' ', '\t'])) {
            Some(stmt) => split_args(stmt),
            None => return false,
        }
    } else {
        match balanced(rest.trim_start_matches([' ', '\t']), lang) {
            Some((inner, _)) => split_args(inner),
            None => return false,
        }
    };
    let mut args = args;
    // testify: `assert.Equal(t, want, got)`.
    if lang == Lang::Go && args.len() >= 2 && (args[0] == "t" || args[0].ends_with(".T()")) {
        args.remove(0);
    }
    let Some(first) = args.first().copied() else {
        return false;
    };
    match form {
        Form::Truthy if lang == Lang::Python && python_tuple(first) => true,
        Form::Truthy => trivially_true(first),
        Form::Falsy => falsy_literal(first),
        Form::Nullish => null_literal(first),
        Form::NotNullish => literal(first) && !null_literal(first),
        Form::Equal => {
            (args.len() >= 2 && same_simple(args[0], args[1]))
                || (lang == Lang::Jvm && args.len() >= 3 && same_simple(args[1], args[2]))
        }
        Form::NotEqual => args.len() >= 2 && distinct_literals(args[0], args[1]),
        Form::Chain => {
            if statement_form {
                return false;
            }
            let after = match balanced(rest.trim_start_matches([' ', '\t']), lang) {
                Some((_, after)) => after,
                None => return false,
            };
            chain(lang, first, after)
        }
    }
}

/// How much of the text from an assertion on is read.
const MAX_ASSERTION: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Truthy,
    Falsy,
    Nullish,
    NotNullish,
    Equal,
    NotEqual,
    /// `expect(x).toBe(y)`, `assertThat(x).isEqualTo(y)`, `expect(x).to eq(y)`.
    Chain,
}

/// `self.assertEqual` → `assertequal`; `assert_eq!` → `assert_eq`; `->assertSame` → `assertsame`.
fn last_segment(name: &str) -> String {
    let last = name.rsplit(['.', ':', '>']).next().unwrap_or(name);
    let mut l = last.trim_end_matches('!').to_ascii_lowercase();
    // minitest: `refute_equal` is `assert_not_equal`.
    if let Some(r) = l.strip_prefix("refute_") {
        l = format!("assert_not_{r}");
    }
    l
}

fn form(l: &str) -> Option<Form> {
    let nullish = l.contains("none") || l.contains("null") || l.contains("nil");
    let equalish = l.contains("equal") || l.contains("same") || l.ends_with("_eq") || l.ends_with("_ne");
    Some(match l {
        "assert" | "asserttrue" | "assert_true" | "true" | "istrue" | "ok" | "debug_assert" | "prop_assert" => {
            Form::Truthy
        }
        "assertfalse" | "assert_false" | "false" | "isfalse" | "refute" | "assert_not" | "notok" => Form::Falsy,
        "expect" | "assertthat" => Form::Chain,
        _ if l.contains("not") || l.ends_with("_ne") => {
            if nullish {
                Form::NotNullish
            } else if equalish || matches!(l, "not" | "isnot" | "assertisnot") {
                Form::NotEqual
            } else {
                return None;
            }
        }
        _ if nullish => Form::Nullish,
        _ if equalish || matches!(l, "is" | "assertis" | "eq") => Form::Equal,
        _ => return None,
    })
}

fn opens(s: &str) -> bool {
    s.trim_start_matches([' ', '\t']).starts_with(['(', '[', '{'])
}

/// The text inside the bracket `s` starts with, and what follows its closing bracket.
fn balanced(s: &str, lang: Lang) -> Option<(&str, &str)> {
    let open = s.chars().next()?;
    if !matches!(open, '(' | '[' | '{') {
        return None;
    }
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '`' => quote = Some(c),
            // A Rust `'` is a lifetime as often as a character literal.
            '\'' if lang != Lang::Rust => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((&s[1..i], &s[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// The statement `s` starts (to the end of its line, or a `;`, outside brackets and strings);
/// `None` when a bracket or string is still open where `s` ends.
fn statement(s: &str) -> Option<&str> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '\n' | ';' if depth == 0 => return Some(&s[..i]),
            _ => {}
        }
    }
    (depth == 0 && quote.is_none()).then_some(s)
}

/// Splits at the commas outside brackets and strings.
fn split_args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let tail = s[start..].trim();
    if !tail.is_empty() || !out.is_empty() {
        out.push(tail);
    }
    out
}

/// `x` without the parentheses around all of it.
fn strip_parens(mut x: &str) -> &str {
    loop {
        x = x.trim();
        match balanced(x, Lang::Other) {
            Some((inner, after)) if x.starts_with('(') && after.trim().is_empty() => x = inner,
            _ => return x,
        }
    }
}

/// `assert (a == b, "message")`: a non-empty tuple, always true.
fn python_tuple(x: &str) -> bool {
    let x = x.trim();
    x.starts_with('(')
        && balanced(x, Lang::Python)
            .is_some_and(|(inner, after)| after.trim().is_empty() && split_args(inner).len() > 1)
}

fn trivially_true(e: &str) -> bool {
    let e = strip_parens(e);
    if truthy_literal(e) {
        return true;
    }
    if let Some(inner) = e
        .strip_prefix("not ")
        .or_else(|| e.strip_prefix('!').filter(|r| !r.starts_with('=')))
    {
        let inner = inner.trim_start_matches('!');
        return falsy_literal(strip_parens(inner));
    }
    for op in ["===", "==", " is ", "<=", ">="] {
        if op == " is " && e.contains(" is not ") {
            continue;
        }
        if let Some((a, b)) = split_op(e, op) {
            return same_simple(a, b);
        }
    }
    for op in ["!==", "!=", " is not "] {
        if let Some((a, b)) = split_op(e, op) {
            return distinct_literals(a, b);
        }
    }
    false
}

/// `e` split at the first `op` outside brackets and strings (`==` is not part of `===`, `!=`,
/// `<=` or `>=` there).
fn split_op<'a>(e: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let bytes = e.as_bytes();
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' | b'\'' | b'`' => quote = Some(c),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            // Bytes, not `str` slices: `i` may sit inside a multi-byte character (`größe`); an
            // ASCII operator's first byte never does, so the slices below are on boundaries.
            _ if depth == 0 && bytes[i..].starts_with(op.as_bytes()) => {
                let symbolic = !op.starts_with(' ');
                let before = i.checked_sub(1).map(|j| bytes[j]);
                let after = bytes.get(i + op.len()).copied();
                let joined =
                    symbolic && (before.is_some_and(|b| b"=!<>".contains(&b)) || after.is_some_and(|b| b == b'='));
                if !joined {
                    return Some((&e[..i], &e[i + op.len()..]));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `expect(x)` followed by `after`: `.toBe(x)`, `.to.be.true`, `.to eq(x)`, `->toBeTrue()`.
fn chain(lang: Lang, x: &str, mut after: &str) -> bool {
    const FILLER: &[&str] = &[
        "to", "be", "been", "is", "that", "which", "and", "has", "have", "with", "at", "of", "same", "does", "still",
        "also", "deep",
    ];
    for _ in 0..8 {
        let t = after.trim_start();
        let Some(t) = t.strip_prefix("->").or_else(|| t.strip_prefix('.')) else {
            return false;
        };
        let end = t
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '?'))
            .unwrap_or(t.len());
        let (word, rest) = t.split_at(end);
        let w = word.to_ascii_lowercase();
        if matches!(
            w.as_str(),
            "not" | "to_not" | "not_to" | "resolves" | "rejects" | "never"
        ) {
            return false;
        }
        let continues = rest.trim_start().starts_with('.') || rest.trim_start().starts_with("->");
        if lang == Lang::Ruby && w == "to" && !continues {
            return ruby_matcher(x, rest);
        }
        if rest.starts_with('(') {
            let Some((inner, _)) = balanced(rest, lang) else {
                return false;
            };
            return matcher(&w, x, &split_args(inner));
        }
        if continues && FILLER.contains(&w.as_str()) {
            after = rest;
            continue;
        }
        return matcher(&w, x, &[]);
    }
    false
}

/// RSpec's `to eq(1)`, `to eq 1`, `to be true`, `to be_truthy`.
fn ruby_matcher(x: &str, rest: &str) -> bool {
    let t = rest.trim_start_matches([' ', '\t']);
    let end = t
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '?'))
        .unwrap_or(t.len());
    let (word, rest) = t.split_at(end);
    let args: Vec<&str> = if rest.starts_with('(') {
        match balanced(rest, Lang::Ruby) {
            Some((inner, _)) => split_args(inner),
            None => return false,
        }
    } else {
        match statement(rest.trim_start_matches([' ', '\t'])) {
            Some(stmt) => split_args(stmt),
            None => return false,
        }
    };
    matcher(&word.to_ascii_lowercase(), x, &args)
}

fn matcher(w: &str, x: &str, args: &[&str]) -> bool {
    match w {
        "tobe" | "toequal" | "tostrictequal" | "equal" | "equals" | "eq" | "eql" | "be" | "isequalto" | "issameas" => {
            args.first().is_some_and(|y| same_simple(x, y))
        }
        "tobetruthy" | "tobetrue" | "true" | "ok" | "be_truthy" | "be_true" | "istrue" => truthy_literal(x),
        "tobefalsy" | "tobefalse" | "false" | "be_falsey" | "be_falsy" | "be_false" | "isfalse" => falsy_literal(x),
        "tobenull" | "tobeundefined" | "null" | "undefined" | "be_nil" | "nil" | "isnull" => null_literal(x),
        "tobedefined" | "exist" | "isnotnull" => literal(x) && !null_literal(x),
        _ => false,
    }
}

fn number_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    RE.get_or_init(|| {
        Regex::new(r"^(-?\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:[iuf](?:8|16|32|64|128|size)|[lLfFdDmMn])?$")
            .expect("constant regex")
    })
}

fn ident_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A literal pattern, compiled by the tests: it cannot fail at run time.
    #[allow(clippy::expect_used)]
    RE.get_or_init(|| {
        Regex::new(r"^(?:\$|@{1,2})?[A-Za-z_][\w]*(?:(?:\.|::|->)\$?[A-Za-z_][\w]*)*$").expect("constant regex")
    })
}

fn number(x: &str) -> Option<f64> {
    let c = number_re().captures(x)?;
    c.get(1)?.as_str().replace('_', "").parse().ok()
}

/// The content of a string literal (`"a"`, `'a'`, `` `a` ``).
fn string(x: &str) -> Option<&str> {
    let q = x.chars().next()?;
    if !matches!(q, '"' | '\'' | '`') || x.len() < 2 || !x.ends_with(q) {
        return None;
    }
    let inner = &x[1..x.len() - 1];
    let mut escaped = false;
    for c in inner.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q || (q == '`' && c == '$') {
            return None;
        }
    }
    Some(inner)
}

fn null_literal(x: &str) -> bool {
    matches!(strip_parens(x), "None" | "null" | "nil" | "undefined" | "NULL")
}

fn bool_literal(x: &str) -> Option<bool> {
    match x {
        "True" | "true" => Some(true),
        "False" | "false" => Some(false),
        _ => None,
    }
}

fn literal(x: &str) -> bool {
    let x = strip_parens(x);
    bool_literal(x).is_some() || null_literal(x) || number(x).is_some() || string(x).is_some() || symbol(x)
}

/// A Ruby symbol (`:ok`).
fn symbol(x: &str) -> bool {
    x.strip_prefix(':')
        .is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

fn truthy_literal(x: &str) -> bool {
    let x = strip_parens(x);
    bool_literal(x) == Some(true)
        || number(x).is_some_and(|n| n != 0.0)
        || string(x).is_some_and(|s| !s.is_empty())
        || symbol(x)
}

fn falsy_literal(x: &str) -> bool {
    let x = strip_parens(x);
    bool_literal(x) == Some(false) || null_literal(x) || number(x) == Some(0.0) || string(x) == Some("")
}

/// The same literal or name on both sides (`1, 1`, `"a", 'a'`, `x, x`).
fn same_simple(a: &str, b: &str) -> bool {
    let (a, b) = (strip_parens(a), strip_parens(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    if let (Some(x), Some(y)) = (string(a), string(b)) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (number(a), number(b)) {
        return x == y;
    }
    (literal(a) || ident_re().is_match(a)) && a == b
}

/// Two different literals of one kind (`1, 2`, `"a", "b"`): an inequality that cannot fail.
fn distinct_literals(a: &str, b: &str) -> bool {
    let (a, b) = (strip_parens(a), strip_parens(b));
    if let (Some(x), Some(y)) = (string(a), string(b)) {
        return x != y;
    }
    if let (Some(x), Some(y)) = (number(a), number(b)) {
        return x != y;
    }
    if let (Some(x), Some(y)) = (bool_literal(a), bool_literal(b)) {
        return x != y;
    }
    false
}

#[cfg(test)]
#[path = "trivial_tests.rs"]
mod tests;
