//! A conservative reader of shell command lines for permission checks.
//!
//! It splits a command into simple commands (`&&`, `||`, `;`, `|`, `|&`, `&`, newlines), looks
//! through wrappers (`timeout`, `env VAR=…`, `nice`, …) and collects output redirections.
//! Anything it does not fully understand — subshells, command substitution, process
//! substitution, here-documents, control structures — is reported as unknown, which the
//! permission layer treats as "ask". It never executes anything.

/// One simple command after wrappers and leading assignments were stripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    /// Files this command writes through redirections (`>`, `>>`, `&>`, `2>`…).
    pub writes: Vec<String>,
    /// Files this command reads through `<`.
    pub reads: Vec<String>,
}

impl SimpleCommand {
    /// The normalized text rules are matched against (words joined by single spaces).
    pub fn text(&self) -> String {
        self.words.join(" ")
    }

    pub fn program(&self) -> &str {
        self.words.first().map(String::as_str).unwrap_or("")
    }
}

/// Most simple commands one line may hold before it is considered too complex to judge.
pub const MAX_PARTS: usize = 50;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Sep,
    Redirect { write: bool, target: Option<String> },
}

/// Splits a command line. `Err` carries why it cannot be judged safely.
pub fn parse(command: &str) -> Result<Vec<SimpleCommand>, String> {
    let toks = tokenize(command)?;
    let mut out = Vec::new();
    let mut words = Vec::new();
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    let mut flush =
        |words: &mut Vec<String>, writes: &mut Vec<String>, reads: &mut Vec<String>| -> Result<(), String> {
            if words.is_empty() && writes.is_empty() && reads.is_empty() {
                return Ok(());
            }
            let stripped = strip_wrappers(std::mem::take(words))?;
            out.push(SimpleCommand {
                words: stripped,
                writes: std::mem::take(writes),
                reads: std::mem::take(reads),
            });
            Ok(())
        };
    for t in toks {
        match t {
            Tok::Word(w) => words.push(w),
            Tok::Sep => flush(&mut words, &mut writes, &mut reads)?,
            Tok::Redirect { write, target } => {
                if let Some(target) = target {
                    if write { writes.push(target) } else { reads.push(target) }
                }
            }
        }
    }
    flush(&mut words, &mut writes, &mut reads)?;
    if out.len() > MAX_PARTS {
        return Err(format!("more than {MAX_PARTS} commands in one line"));
    }
    if out.is_empty() {
        return Err("empty command".into());
    }
    Ok(out)
}

const CONTROL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "function", "select",
    "{", "}", "[[", "]]", "!",
];

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut toks = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut i = 0;
    let push_word = |cur: &mut String, in_word: &mut bool, toks: &mut Vec<Tok>| -> Result<(), String> {
        if *in_word {
            let w = std::mem::take(cur);
            let first_of_command = !matches!(toks.last(), Some(Tok::Word(_)));
            if first_of_command && CONTROL_WORDS.contains(&w.as_str()) {
                return Err(format!("shell control structure `{w}`"));
            }
            toks.push(Tok::Word(w));
            *in_word = false;
        }
        Ok(())
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                push_word(&mut cur, &mut in_word, &mut toks)?;
                i += 1;
            }
            '\n' | ';' => {
                if c == ';' && chars.get(i + 1) == Some(&';') {
                    return Err("`;;` outside a case statement".into());
                }
                push_word(&mut cur, &mut in_word, &mut toks)?;
                toks.push(Tok::Sep);
                i += 1;
            }
            '&' | '|' => {
                let next = chars.get(i + 1).copied();
                if c == '&' && next == Some('>') {
                    // &> / &>> redirect stdout and stderr.
                    push_word(&mut cur, &mut in_word, &mut toks)?;
                    let skip = if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                    let (target, used) = redirect_target(&chars, i + skip)?;
                    toks.push(Tok::Redirect { write: true, target });
                    i = used;
                    continue;
                }
                push_word(&mut cur, &mut in_word, &mut toks)?;
                toks.push(Tok::Sep);
                i += if next == Some(c) || (c == '|' && next == Some('&')) {
                    2
                } else {
                    1
                };
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&n) => {
                        cur.push(n);
                        in_word = true;
                    }
                    None => return Err("trailing backslash".into()),
                }
                i += 2;
            }
            '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == '\'')
                    .ok_or("unterminated single quote")?;
                cur.extend(&chars[i + 1..i + 1 + end]);
                in_word = true;
                i += end + 2;
            }
            '"' => {
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated double quote".into()),
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(&n) = chars.get(i + 1) {
                                if !matches!(n, '"' | '\\' | '$' | '`' | '\n') {
                                    cur.push('\\');
                                }
                                if n != '\n' {
                                    cur.push(n);
                                }
                            }
                            i += 2;
                        }
                        Some('`') => return Err("command substitution".into()),
                        Some('$') if chars.get(i + 1) == Some(&'(') => return Err("command substitution".into()),
                        Some(&x) => {
                            cur.push(x);
                            i += 1;
                        }
                    }
                }
                in_word = true;
                i += 1;
            }
            '`' => return Err("command substitution".into()),
            '$' if chars.get(i + 1) == Some(&'(') => return Err("command substitution".into()),
            '(' | ')' => return Err("subshell or grouping".into()),
            '<' | '>' => {
                if matches!(chars.get(i + 1), Some('(')) {
                    return Err("process substitution".into());
                }
                if c == '<' && chars.get(i + 1) == Some(&'<') {
                    return Err("here-document".into());
                }
                // A word made only of digits right before the operator is a file descriptor.
                let fd_prefix = in_word && cur.chars().all(|d| d.is_ascii_digit());
                if fd_prefix {
                    cur.clear();
                    in_word = false;
                } else {
                    push_word(&mut cur, &mut in_word, &mut toks)?;
                }
                let mut j = i + 1;
                if c == '>' && matches!(chars.get(j), Some('>') | Some('|')) {
                    j += 1;
                }
                if chars.get(j) == Some(&'&') {
                    // >&2, 2>&1: duplicate a descriptor, no file involved.
                    j += 1;
                    while chars.get(j).is_some_and(|d| d.is_ascii_digit() || *d == '-') {
                        j += 1;
                    }
                    i = j;
                    continue;
                }
                let (target, used) = redirect_target(&chars, j)?;
                toks.push(Tok::Redirect {
                    write: c == '>',
                    target,
                });
                i = used;
            }
            _ => {
                cur.push(c);
                in_word = true;
                i += 1;
            }
        }
    }
    push_word(&mut cur, &mut in_word, &mut toks)?;
    Ok(toks)
}

/// Reads the word after a redirection operator; returns it and the index after it.
fn redirect_target(chars: &[char], mut i: usize) -> Result<(Option<String>, usize), String> {
    while chars.get(i).is_some_and(|c| *c == ' ' || *c == '\t') {
        i += 1;
    }
    let mut word = String::new();
    while let Some(&c) = chars.get(i) {
        match c {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' => break,
            '(' | ')' | '`' => return Err("unusual redirection target".into()),
            '$' if chars.get(i + 1) == Some(&'(') => return Err("command substitution".into()),
            '\'' | '"' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == c)
                    .ok_or("unterminated quote")?;
                word.extend(&chars[i + 1..i + 1 + end]);
                i += end + 2;
                continue;
            }
            _ => word.push(c),
        }
        i += 1;
    }
    if word.is_empty() {
        return Err("redirection without a target".into());
    }
    Ok((Some(word), i))
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Removes leading `VAR=value` words and wrapper commands that only change how the real
/// command runs, so rules match the command itself.
fn strip_wrappers(mut words: Vec<String>) -> Result<Vec<String>, String> {
    loop {
        let before = words.len();
        while words.first().is_some_and(|w| is_assignment(w)) {
            words.remove(0);
        }
        let Some(first) = words.first().cloned() else { break };
        let skip = match first.as_str() {
            "timeout" => skip_options(&words, &["-s", "--signal", "-k", "--kill-after"]).map(|n| n + 1),
            "time" | "nohup" | "builtin" | "noglob" => skip_options(&words, &[]),
            "command" => match words.get(1).map(String::as_str) {
                Some("-v") | Some("-V") => None,
                _ => skip_options(&words, &[]),
            },
            "nice" => skip_options(&words, &["-n", "--adjustment"]),
            "stdbuf" => skip_options(&words, &["-i", "-o", "-e"]),
            "env" => skip_options(&words, &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"]),
            "xargs" if words.get(1).is_some_and(|w| !w.starts_with('-')) => Some(1),
            _ => None,
        };
        match skip {
            Some(n) if n < words.len() => {
                words.drain(..n);
            }
            Some(_) => break,
            None => break,
        }
        if words.len() == before {
            break;
        }
    }
    if words.is_empty() {
        return Err("a command made only of assignments or wrappers".into());
    }
    Ok(words)
}

/// Index of the first word after the wrapper and its options (`takes_value` options consume
/// the next word unless written as `--opt=value` or `-oVALUE`).
fn skip_options(words: &[String], takes_value: &[&str]) -> Option<usize> {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if w == "--" {
            return Some(i + 1);
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        let takes = takes_value.iter().any(|o| w == o);
        i += if takes { 2 } else { 1 };
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        parse(s).unwrap().iter().map(SimpleCommand::text).collect()
    }

    #[test]
    fn splits_compound_commands() {
        assert_eq!(texts("echo ok && rm -rf x"), vec!["echo ok", "rm -rf x"]);
        assert_eq!(
            texts("a || b; c | d |& e & f\ng"),
            vec!["a", "b", "c", "d", "e", "f", "g"]
        );
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(
            texts(r#"git commit -m "fix: a && b" "#),
            vec!["git commit -m fix: a && b"]
        );
        assert_eq!(texts("echo 'x;y' a\\ b"), vec!["echo x;y a b"]);
    }

    #[test]
    fn wrappers_and_assignments_are_looked_through() {
        assert_eq!(texts("timeout 30 npm test"), vec!["npm test"]);
        assert_eq!(texts("timeout -s KILL 5s cargo build"), vec!["cargo build"]);
        assert_eq!(texts("env FOO=1 BAR=2 make check"), vec!["make check"]);
        assert_eq!(texts("RUST_LOG=debug nice -n 10 cargo run"), vec!["cargo run"]);
        assert_eq!(texts("nohup time stdbuf -oL ./run.sh"), vec!["./run.sh"]);
        assert_eq!(texts("xargs rm"), vec!["rm"]);
        assert_eq!(texts("command -v git"), vec!["command -v git"]);
    }

    #[test]
    fn unknown_constructs_are_refused() {
        for s in [
            "echo $(rm -rf /)",
            "echo `id`",
            "(cd x && rm y)",
            "diff <(ls a) <(ls b)",
            "cat <<EOF\nhi\nEOF",
            "if true; then rm x; fi",
            "for f in *; do rm $f; done",
            "echo \"$(whoami)\"",
            "{ rm x; }",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn redirections_are_collected() {
        let p = parse("echo hi > out.txt 2>&1; cat < in.txt >> log 2> err.txt; ls &> all.txt").unwrap();
        assert_eq!(p[0].words, vec!["echo", "hi"]);
        assert_eq!(p[0].writes, vec!["out.txt"]);
        assert_eq!(p[1].reads, vec!["in.txt"]);
        assert_eq!(p[1].writes, vec!["log", "err.txt"]);
        assert_eq!(p[2].writes, vec!["all.txt"]);
        let q = parse("cmd >/dev/null 2>&1").unwrap();
        assert_eq!(q[0].writes, vec!["/dev/null"]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(texts("ls # && rm -rf /"), vec!["ls"]);
    }
}
