//! The one lexer of shell lines (`lex`), strict for the permission check and tolerant for
//! the ledger, with the reading of redirection targets. Separate from the reader of simple
//! commands, which works on its tokens.

use super::{BOTH_FDS, Tok, Word};
use crate::shell::split::Connector;

const CONTROL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "function", "select",
    "{", "}", "[[", "]]", "!",
];

/// Accumulates one word: its text and whether the shell will expand it.
#[derive(Default)]
struct Acc {
    text: String,
    dynamic: bool,
    started: bool,
}

impl Acc {
    fn push(&mut self, c: char) {
        self.text.push(c);
        self.started = true;
    }

    fn take(&mut self) -> Option<Word> {
        if !self.started {
            return None;
        }
        let w = Word {
            text: std::mem::take(&mut self.text),
            dynamic: self.dynamic,
        };
        self.dynamic = false;
        self.started = false;
        Some(w)
    }
}

pub(super) fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    lex(s, true)
}

/// The one lexer of shell lines. `strict`: everything keel cannot judge (substitutions,
/// subshells, here-documents, control structures) is an error, for the permission check.
/// Tolerant: those are read through — a substitution stays inside its word, parentheses
/// separate commands, a control word is a word — for the ledger, which grants nothing.
pub(in crate::shell) fn lex(s: &str, strict: bool) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut toks = Vec::new();
    let mut cur = Acc::default();
    let mut i = 0;
    let push_word = |cur: &mut Acc, toks: &mut Vec<Tok>| -> Result<(), String> {
        if let Some(w) = cur.take() {
            let first_of_command = !matches!(toks.last(), Some(Tok::Word(_)));
            if strict && first_of_command && !w.dynamic && CONTROL_WORDS.contains(&w.text.as_str()) {
                return Err(format!("shell control structure `{}`", w.text));
            }
            toks.push(Tok::Word(w));
        }
        Ok(())
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                push_word(&mut cur, &mut toks)?;
                i += 1;
            }
            '\n' | ';' => {
                if c == ';' && chars.get(i + 1) == Some(&';') {
                    if strict {
                        return Err("`;;` outside a case statement".into());
                    }
                    i += 1;
                }
                push_word(&mut cur, &mut toks)?;
                toks.push(Tok::Sep(Connector::Seq));
                i += 1;
            }
            '&' | '|' => {
                let next = chars.get(i + 1).copied();
                if c == '&' && next == Some('>') {
                    // &> / &>> redirect stdout and stderr.
                    push_word(&mut cur, &mut toks)?;
                    let skip = if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                    let (target, used) = redirect_target(&chars, i + skip, strict)?;
                    toks.push(Tok::Redirect {
                        write: true,
                        target,
                        fd: BOTH_FDS,
                    });
                    i = used;
                    continue;
                }
                push_word(&mut cur, &mut toks)?;
                let connector = match (c, next) {
                    ('&', Some('&')) => Connector::And,
                    ('|', Some('|')) => Connector::Or,
                    ('|', _) => Connector::Pipe,
                    _ => Connector::Background,
                };
                toks.push(Tok::Sep(connector));
                i += if next == Some(c) || (c == '|' && next == Some('&')) {
                    2
                } else {
                    1
                };
            }
            '#' if !cur.started => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&n) => cur.push(n),
                    None if strict => return Err("trailing backslash".into()),
                    None => {}
                }
                i += 2;
            }
            '\'' => {
                let end = match chars[i + 1..].iter().position(|&x| x == '\'') {
                    Some(end) => end,
                    None if strict => return Err("unterminated single quote".into()),
                    None => chars.len() - i - 1,
                };
                cur.started = true;
                cur.text.extend(&chars[i + 1..i + 1 + end]);
                i += end + 2;
            }
            '"' => {
                i += 1;
                cur.started = true;
                loop {
                    match chars.get(i) {
                        None if strict => return Err("unterminated double quote".into()),
                        None => break,
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(&n) = chars.get(i + 1) {
                                if !matches!(n, '"' | '\\' | '$' | '`' | '\n') {
                                    cur.text.push('\\');
                                }
                                if n != '\n' {
                                    cur.text.push(n);
                                }
                            }
                            i += 2;
                        }
                        Some('`') if strict => return Err("command substitution".into()),
                        Some('$') if strict && chars.get(i + 1) == Some(&'(') => {
                            return Err("command substitution".into());
                        }
                        Some(&x) => {
                            // Variables expand inside double quotes too.
                            if x == '$' {
                                cur.dynamic = true;
                            }
                            cur.text.push(x);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            '`' if strict => return Err("command substitution".into()),
            '$' if chars.get(i + 1) == Some(&'(') => {
                if strict {
                    return Err("command substitution".into());
                }
                // Tolerant: the substitution stays inside its word; its inside is not split.
                cur.dynamic = true;
                let mut depth = 0;
                while i < chars.len() {
                    cur.push(chars[i]);
                    if chars[i] == '(' {
                        depth += 1;
                    } else if chars[i] == ')' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    i += 1;
                }
                i += 1;
            }
            '(' | ')' => {
                if strict {
                    return Err("subshell or grouping".into());
                }
                push_word(&mut cur, &mut toks)?;
                toks.push(Tok::Sep(Connector::Seq));
                i += 1;
            }
            '<' | '>' => {
                if strict && matches!(chars.get(i + 1), Some('(')) {
                    return Err("process substitution".into());
                }
                if c == '<' && chars.get(i + 1) == Some(&'<') {
                    if strict {
                        return Err("here-document".into());
                    }
                    // Tolerant: the delimiter word is the operand; the body lines that follow
                    // are read as lines.
                    i += 1;
                }
                // A word made only of digits right before the operator is a file descriptor.
                let fd_prefix = cur.started && !cur.dynamic && cur.text.chars().all(|d| d.is_ascii_digit());
                let default_fd = if c == '>' { 1 } else { 0 };
                let fd = if fd_prefix {
                    let n = cur.text.parse().unwrap_or(default_fd);
                    cur = Acc::default();
                    n
                } else {
                    push_word(&mut cur, &mut toks)?;
                    default_fd
                };
                let mut j = i + 1;
                if c == '>' && matches!(chars.get(j), Some('>') | Some('|')) {
                    j += 1;
                }
                if chars.get(j) == Some(&'&') {
                    // >&2, 2>&1: duplicate a descriptor, no file involved.
                    j += 1;
                    let from = j;
                    while chars.get(j).is_some_and(|d| d.is_ascii_digit() || *d == '-') {
                        j += 1;
                    }
                    let to: String = chars[from..j].iter().collect();
                    if let Ok(to) = to.parse() {
                        toks.push(Tok::Dup { fd, to });
                    }
                    i = j;
                    continue;
                }
                match redirect_target(&chars, j, strict) {
                    Ok((target, used)) => {
                        toks.push(Tok::Redirect {
                            write: c == '>',
                            target,
                            fd,
                        });
                        i = used;
                    }
                    Err(e) if strict => return Err(e),
                    // Tolerant: an operator with no target just ends the word.
                    Err(_) => i = j,
                }
            }
            _ => {
                if matches!(c, '*' | '?' | '[' | '{' | '$') || (c == '~' && !cur.started) {
                    cur.dynamic = true;
                }
                cur.push(c);
                i += 1;
            }
        }
    }
    push_word(&mut cur, &mut toks)?;
    Ok(toks)
}

/// Reads the word after a redirection operator; returns it and the index after it.
fn redirect_target(chars: &[char], mut i: usize, strict: bool) -> Result<(Word, usize), String> {
    while chars.get(i).is_some_and(|c| *c == ' ' || *c == '\t') {
        i += 1;
    }
    let mut word = Acc::default();
    while let Some(&c) = chars.get(i) {
        match c {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' => break,
            '(' | ')' if !strict => break,
            '(' | ')' | '`' if strict => return Err("unusual redirection target".into()),
            '$' if strict && chars.get(i + 1) == Some(&'(') => return Err("command substitution".into()),
            '\'' | '"' => {
                let end = match chars[i + 1..].iter().position(|&x| x == c) {
                    Some(end) => end,
                    None if strict => return Err("unterminated quote".into()),
                    None => chars.len() - i - 1,
                };
                let quoted: String = chars[i + 1..i + 1 + end].iter().collect();
                if c == '"' && quoted.contains('$') {
                    word.dynamic = true;
                }
                word.started = true;
                word.text.push_str(&quoted);
                i += end + 2;
                continue;
            }
            _ => {
                if matches!(c, '*' | '?' | '[' | '{' | '$') || (c == '~' && !word.started) {
                    word.dynamic = true;
                }
                word.push(c);
            }
        }
        i += 1;
    }
    word.take()
        .map(|w| (w, i))
        .ok_or_else(|| "redirection without a target".into())
}
