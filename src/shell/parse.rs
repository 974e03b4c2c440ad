//! A conservative reader of shell command lines for permission checks.
//!
//! It splits a command into simple commands (`&&`, `||`, `;`, `|`, `|&`, `&`, newlines), looks
//! through wrappers (`timeout`, `env VAR=…`, `nice`, …) and into `sh -c '…'`, collects
//! redirections, and marks words the shell will expand at run time (globs, `$VAR`, `~`), whose
//! real value keel cannot know. Anything it does not fully understand — subshells, command
//! substitution, process substitution, here-documents, control structures, `eval` — is reported
//! as unknown, which the permission layer treats as "ask". It never executes anything.

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

mod lex;
mod resolve;
mod wrappers;

pub(super) use lex::lex;
use lex::tokenize;
pub use resolve::{Resolved, resolve_word, resolve_word_logical};
pub(super) use wrappers::strip_wrappers;

#[cfg(test)]
mod tests;
