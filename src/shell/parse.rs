//! A conservative reader of shell command lines for permission checks.
//!
//! It splits a command into simple commands (`&&`, `||`, `;`, `|`, `|&`, `&`, newlines), looks
//! through wrappers (`timeout`, `env VAR=…`, `nice`, …) and into `sh -c '…'`, collects
//! redirections, and marks words the shell will expand at run time (globs, `$VAR`, `~`), whose
//! real value keel cannot know. Anything it does not fully understand — subshells, command
//! substitution, process substitution, here-documents, control structures, `eval` — is reported
//! as unknown, which the permission layer treats as "ask". It never executes anything.

use std::path::{Path, PathBuf};

use super::split::Connector;

/// One shell word. `dynamic`: the shell expands it at run time (an unquoted glob, `$`, `~` or
/// brace), so its text is not what the command will see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub dynamic: bool,
}

/// One simple command after wrappers and leading assignments were stripped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    pub words: Vec<Word>,
    /// Files this command writes through redirections (`>`, `>>`, `&>`, `2>`…).
    pub writes: Vec<Word>,
    /// Files this command reads through `<`.
    pub reads: Vec<Word>,
    /// Environment assignments it runs with (`VAR=value cmd`, `env VAR=value cmd`).
    pub env: Vec<Word>,
    /// Wrapper programs looked through, outermost first (`timeout`, `env`, `xargs`, …).
    pub wrappers: Vec<String>,
}

impl SimpleCommand {
    /// The normalized text rules are matched against (words joined by single spaces).
    pub fn text(&self) -> String {
        self.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
    }

    pub fn program(&self) -> &str {
        self.words.first().map(|w| w.text.as_str()).unwrap_or("")
    }

    /// The program without its directory (`/bin/rm` → `rm`).
    pub fn program_name(&self) -> &str {
        let p = self.program();
        p.rsplit('/').next().unwrap_or(p)
    }

    pub fn args(&self) -> &[Word] {
        self.words.get(1..).unwrap_or(&[])
    }

    /// The texts rules are matched against: as written, with the program's directory removed,
    /// and without a leading `sudo`/`doas`, so `/bin/rm` and `sudo rm` meet `Bash(rm:*)` rules.
    pub fn rule_texts(&self) -> Vec<String> {
        let mut out = vec![self.text()];
        let mut words: Vec<&str> = self.words.iter().map(|w| w.text.as_str()).collect();
        if matches!(words.first(), Some(&"sudo") | Some(&"doas")) {
            let skip = words.iter().skip(1).take_while(|w| w.starts_with('-')).count();
            words.drain(..1 + skip);
        }
        if let Some(first) = words.first_mut() {
            *first = first.rsplit('/').next().unwrap_or(first);
        }
        let alt = words.join(" ");
        if !alt.is_empty() && !out.contains(&alt) {
            out.push(alt);
        }
        out
    }
}

/// Most simple commands one line may hold before it is considered too complex to judge.
pub const MAX_PARTS: usize = 50;
/// How deep `sh -c '…'` inside `sh -c '…'` is followed.
pub(super) const MAX_NESTING: usize = 3;

pub(super) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Word(Word),
    /// What joins two simple commands.
    Sep(Connector),
    Redirect {
        write: bool,
        target: Word,
        /// The descriptor redirected: 0 or 1 by default, 2 for `2>`, [`BOTH_FDS`] for `&>`.
        fd: u32,
    },
    /// `2>&1`, `>&2`: descriptor `fd` becomes a copy of `to` (no file involved).
    Dup {
        fd: u32,
        to: u32,
    },
}

/// The `fd` of `&>file`: standard output and standard error together.
pub(super) const BOTH_FDS: u32 = u32::MAX;

/// Splits a command line. `Err` carries why it cannot be judged safely.
pub fn parse(command: &str) -> Result<Vec<SimpleCommand>, String> {
    let out = parse_nested(command, 0)?;
    if out.len() > MAX_PARTS {
        return Err(format!("more than {MAX_PARTS} commands in one line"));
    }
    if out.is_empty() {
        return Err("empty command".into());
    }
    Ok(out)
}

fn parse_nested(command: &str, depth: usize) -> Result<Vec<SimpleCommand>, String> {
    let toks = tokenize(command)?;
    let mut out = Vec::new();
    let mut current = SimpleCommand::default();
    let mut toks = toks.into_iter().peekable();
    loop {
        let t = toks.next();
        match t {
            Some(Tok::Word(w)) => current.words.push(w),
            Some(Tok::Dup { .. }) => {}
            Some(Tok::Redirect { write, target, .. }) => {
                if write {
                    current.writes.push(target)
                } else {
                    current.reads.push(target)
                }
            }
            Some(Tok::Sep(_)) | None => {
                let done = std::mem::take(&mut current);
                if !(done.words.is_empty() && done.writes.is_empty() && done.reads.is_empty()) {
                    out.extend(finish(done, depth)?);
                }
                if t.is_none() {
                    break;
                }
            }
        }
    }
    Ok(out)
}

/// Strips wrappers and replaces `sh -c 'script'` by the script's own commands.
fn finish(mut cmd: SimpleCommand, depth: usize) -> Result<Vec<SimpleCommand>, String> {
    let stripped = strip_wrappers(cmd.words)?;
    cmd.words = stripped.words;
    cmd.env.extend(stripped.env);
    cmd.wrappers.extend(stripped.wrappers);
    match cmd.program_name() {
        "eval" | "source" | "." => return Err(format!("`{}` runs text keel cannot see", cmd.program_name())),
        name if SHELLS.contains(&name) => {
            let Some(script) = shell_script(&cmd) else {
                // A shell reading a script file or stdin: what it runs is unknown.
                return Err(format!("`{name}` runs a script keel cannot read"));
            };
            if depth >= MAX_NESTING {
                return Err("shells nested too deeply".into());
            }
            let mut inner = parse_nested(&script, depth + 1)?;
            // The outer redirections apply to the inner commands as a whole, the outer
            // environment and wrappers to each.
            for part in &mut inner {
                part.env.splice(0..0, cmd.env.iter().cloned());
                part.wrappers.splice(0..0, cmd.wrappers.iter().cloned());
            }
            if let Some(first) = inner.first_mut() {
                first.writes.extend(cmd.writes);
                first.reads.extend(cmd.reads);
            }
            return Ok(inner);
        }
        _ => {}
    }
    Ok(vec![cmd])
}

/// The script of `sh -c 'script'` (options such as `-e`, `-x` or `-lc` allowed), if literal.
pub(super) fn shell_script(cmd: &SimpleCommand) -> Option<String> {
    let args = cmd.args();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.dynamic || !a.text.starts_with('-') {
            return None;
        }
        if a.text.contains('c') && !a.text.starts_with("--") {
            let script = args.get(i + 1)?;
            return (!script.dynamic).then(|| script.text.clone());
        }
        i += 1;
    }
    None
}

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

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    lex(s, true)
}

/// The one lexer of shell lines. `strict`: everything keel cannot judge (substitutions,
/// subshells, here-documents, control structures) is an error, for the permission check.
/// Tolerant: those are read through — a substitution stays inside its word, parentheses
/// separate commands, a control word is a word — for the ledger, which grants nothing.
pub(super) fn lex(s: &str, strict: bool) -> Result<Vec<Tok>, String> {
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

fn is_assignment(w: &Word) -> bool {
    match w.text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// A command with its wrappers and leading assignments taken off.
pub(super) struct Stripped {
    pub(super) words: Vec<Word>,
    pub(super) env: Vec<Word>,
    pub(super) wrappers: Vec<String>,
}

/// Removes leading `VAR=value` words and wrapper commands that only change how the real
/// command runs, so rules match the command itself. The assignments and wrappers are kept:
/// they decide whether the command may run without asking.
pub(super) fn strip_wrappers(mut words: Vec<Word>) -> Result<Stripped, String> {
    let mut env = Vec::new();
    let mut wrappers = Vec::new();
    loop {
        let before = words.len();
        while words.first().is_some_and(is_assignment) {
            env.push(words.remove(0));
        }
        let Some(first) = words.first().cloned() else { break };
        if first.dynamic {
            return Err(format!("the program name `{}` is expanded by the shell", first.text));
        }
        let second = words.get(1).map(|w| w.text.as_str());
        let skip = match first.text.rsplit('/').next().unwrap_or(&first.text) {
            "timeout" => skip_options(&words, &["-s", "--signal", "-k", "--kill-after"]).map(|n| n + 1),
            "time" | "nohup" | "builtin" | "noglob" => skip_options(&words, &[]),
            "exec" => skip_options(&words, &["-a"]),
            "setsid" => skip_options(&words, &[]),
            "command" => match second {
                Some("-v") | Some("-V") => None,
                _ => skip_options(&words, &[]),
            },
            "nice" => skip_options(&words, &["-n", "--adjustment"]),
            "stdbuf" => skip_options(&words, &["-i", "-o", "-e"]),
            "env" => {
                if words.iter().skip(1).any(|w| {
                    w.text == "-S"
                        || w.text.starts_with("--split-string")
                        || (w.text.starts_with("-S") && w.text.len() > 2)
                }) {
                    return Err("`env -S` splits a string into a command keel cannot see".into());
                }
                skip_options(&words, &["-u", "--unset", "-C", "--chdir"])
            }
            "xargs" => skip_options(
                &words,
                &[
                    "-a",
                    "-d",
                    "-E",
                    "-I",
                    "-L",
                    "-n",
                    "-P",
                    "-s",
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-procs",
                    "--max-chars",
                    "--process-slot-var",
                ],
            ),
            _ => None,
        };
        match skip {
            Some(n) if n < words.len() => {
                let name = first.text.rsplit('/').next().unwrap_or(&first.text).to_string();
                words.drain(..n);
                wrappers.push(name);
            }
            _ => break,
        }
        if words.len() == before {
            break;
        }
    }
    if words.is_empty() {
        return Err("a command made only of assignments or wrappers".into());
    }
    Ok(Stripped { words, env, wrappers })
}

/// Index of the first word after the wrapper and its options (`takes_value` options consume
/// the next word unless written as `--opt=value` or `-oVALUE`).
fn skip_options(words: &[Word], takes_value: &[&str]) -> Option<usize> {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if w.text == "--" {
            return Some(i + 1);
        }
        if !w.text.starts_with('-') || w.text == "-" {
            break;
        }
        let takes = takes_value.iter().any(|o| w.text == *o);
        i += if takes { 2 } else { 1 };
    }
    Some(i)
}

/// What a word names on disk, as far as keel can tell before the shell runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Paths(Vec<PathBuf>),
    /// Depends on the shell's run-time state (variables other than `HOME`, complex globs).
    Unknown,
}

/// Resolves a word used as a file name: `~` and `$HOME` are expanded, a glob in the last path
/// component is matched against the directory as the shell would; anything else dynamic is
/// unknown. `..` is folded as the kernel folds it (after a symbolic link: the target's parent).
pub fn resolve_word(w: &Word, cwd: &Path, home: Option<&Path>) -> Resolved {
    resolve_word_with(w, cwd, home, crate::fsutil::paths::resolve_physical)
}

/// The same for the argument of `cd`, which the shell folds lexically (`cd link/..` returns
/// to where it started) unless given `-P`.
pub fn resolve_word_logical(w: &Word, cwd: &Path, home: Option<&Path>) -> Resolved {
    resolve_word_with(w, cwd, home, crate::fsutil::paths::resolve)
}

fn resolve_word_with(w: &Word, cwd: &Path, home: Option<&Path>, resolve: fn(&Path, &str) -> PathBuf) -> Resolved {
    if !w.dynamic {
        return Resolved::Paths(vec![resolve(cwd, &w.text)]);
    }
    let text = match expand_home(&w.text, home) {
        Some(t) => t,
        None => return Resolved::Unknown,
    };
    if !text.contains(['*', '?', '[']) {
        return if text.contains(['$', '{']) {
            Resolved::Unknown
        } else {
            Resolved::Paths(vec![resolve(cwd, &text)])
        };
    }
    let full = resolve(cwd, &text);
    let (Some(dir), Some(pattern)) = (full.parent(), full.file_name().and_then(|n| n.to_str())) else {
        return Resolved::Unknown;
    };
    if dir.to_string_lossy().contains(['*', '?', '[', '$', '{']) || pattern.contains(['$', '{']) {
        return Resolved::Unknown;
    }
    let Ok(glob) = globset::GlobBuilder::new(pattern).literal_separator(true).build() else {
        return Resolved::Unknown;
    };
    let matcher = glob.compile_matcher();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Resolved::Paths(vec![full]);
    };
    let mut hits: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            // As in the shell, a leading `*` or `?` does not match a hidden name.
            (pattern.starts_with('.') || !name.starts_with('.')) && matcher.is_match(name.as_ref())
        })
        .map(|e| e.path())
        .collect();
    hits.sort();
    // No match: the shell passes the pattern through literally.
    if hits.is_empty() {
        Resolved::Paths(vec![full])
    } else {
        Resolved::Paths(hits)
    }
}

/// Expands a leading `~`, `$HOME` or `${HOME}`; `None` when other variables remain.
fn expand_home(text: &str, home: Option<&Path>) -> Option<String> {
    let home = home.map(|h| h.display().to_string());
    let replaced = if text == "~" || text == "$HOME" || text == "${HOME}" {
        home?
    } else if let Some(rest) = text
        .strip_prefix("~/")
        .or_else(|| text.strip_prefix("$HOME/"))
        .or_else(|| text.strip_prefix("${HOME}/"))
    {
        format!("{}/{rest}", home?)
    } else if text.starts_with('~') {
        return None;
    } else {
        text.to_string()
    };
    (!replaced.contains('$')).then_some(replaced)
}

#[cfg(test)]
mod tests;
