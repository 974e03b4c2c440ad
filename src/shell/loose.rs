//! Every simple command a line may run, read tolerantly: through subshells, groups, control
//! structures, here-documents, `$(…)` and backquotes, `eval` with literal words and
//! `sh -c '…'`. For the guards that must hold even on a line the strict reader refuses
//! (destructive commands in bypass mode): reading more commands than the shell will run only
//! makes such a guard ask more. It never executes anything.

use super::parse::{self, MAX_NESTING, SHELLS, SimpleCommand, Tok, Word};
use super::split::KEYWORDS;

/// Most commands collected from one line; past it the rest is not read.
const MAX_COMMANDS: usize = 500;

/// The commands of a line read loosely.
#[derive(Debug, Default)]
pub struct Loose {
    /// Outer commands after the ones their substitutions and nested shells run, wrappers and
    /// assignments taken off where possible.
    pub commands: Vec<SimpleCommand>,
    /// Whether the whole line was read: false when it nests deeper or holds more commands
    /// than keel reads.
    pub complete: bool,
}

/// The simple commands of `line` and of every substitution and nested shell in it.
pub fn every_command(line: &str) -> Loose {
    let mut out = Loose {
        commands: Vec::new(),
        complete: true,
    };
    collect(line, 0, &mut out);
    out
}

fn collect(line: &str, depth: usize, out: &mut Loose) {
    if depth > MAX_NESTING + 1 || out.commands.len() >= MAX_COMMANDS {
        out.complete = false;
        return;
    }
    for inner in substitutions(line) {
        collect(inner, depth + 1, out);
    }
    let mut words: Vec<Word> = Vec::new();
    // The tolerant lexer never refuses; an error would be a lexer fault, read as nothing.
    for tok in parse::lex(line, false).unwrap_or_default() {
        match tok {
            Tok::Word(w) => words.push(w),
            Tok::Redirect { .. } | Tok::Dup { .. } => {}
            Tok::Sep(_) => command(std::mem::take(&mut words), depth, out),
        }
    }
    command(words, depth, out);
}

/// One simple command: a nested shell's script or `eval`'s text is read as a line of its own.
fn command(mut words: Vec<Word>, depth: usize, out: &mut Loose) {
    while words.first().is_some_and(|w| KEYWORDS.contains(&w.text.as_str())) {
        words.remove(0);
    }
    if words.is_empty() {
        return;
    }
    if out.commands.len() >= MAX_COMMANDS {
        out.complete = false;
        return;
    }
    let cmd = match parse::strip_wrappers(words.clone()) {
        Ok(s) => SimpleCommand {
            words: s.words,
            env: s.env,
            wrappers: s.wrappers,
            ..SimpleCommand::default()
        },
        Err(_) => SimpleCommand {
            words,
            ..SimpleCommand::default()
        },
    };
    let program = cmd.program_name();
    if SHELLS.contains(&program)
        && let Some(script) = parse::shell_script(&cmd)
    {
        collect(&script, depth + 1, out);
    } else if program == "eval" {
        let text: Vec<&str> = cmd.args().iter().map(|w| w.text.as_str()).collect();
        collect(&text.join(" "), depth + 1, out);
    }
    out.commands.push(cmd);
}

/// The texts inside `$(…)` and backquotes, outermost first (their own substitutions are
/// found when they are read). Quotes are not honoured: a quoted `$(` is read as one too.
fn substitutions(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'$' if bytes.get(i + 1) == Some(&b'(') => {
                let start = i + 2;
                let mut depth = 1;
                let mut j = start;
                while j < bytes.len() && depth > 0 {
                    match bytes[j] {
                        b'(' => depth += 1,
                        b')' => depth -= 1,
                        _ => {}
                    }
                    j += 1;
                }
                let end = if depth == 0 { j - 1 } else { bytes.len() };
                out.push(&line[start..end]);
                i = j;
            }
            b'`' => {
                let start = i + 1;
                let end = line[start..].find('`').map_or(bytes.len(), |n| start + n);
                out.push(&line[start..end]);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        every_command(line).commands.iter().map(SimpleCommand::text).collect()
    }

    #[test]
    fn reads_through_what_the_strict_reader_refuses() {
        for (line, expected) in [
            ("(git reset --hard)", "git reset --hard"),
            ("echo $(git reset --hard) done", "git reset --hard"),
            ("echo `git reset --hard`", "git reset --hard"),
            ("if true; then git reset --hard; fi", "git reset --hard"),
            (
                "for f in a; do FOO=1 timeout 5 git reset --hard; done",
                "git reset --hard",
            ),
            ("cat <<EOF\nx\nEOF\ngit reset --hard", "git reset --hard"),
            ("eval 'git reset --hard'", "git reset --hard"),
            ("{ bash -c 'git checkout -- .'; }", "git checkout -- ."),
            ("x=$(echo \"$(git restore a)\")", "git restore a"),
            ("diff <(git stash drop) b", "git stash drop"),
        ] {
            let got = texts(line);
            assert!(got.iter().any(|t| t == expected), "{line:?}: {got:?}");
        }
    }

    #[test]
    fn a_cut_line_is_read_to_its_end() {
        assert!(texts("echo $(git reset --hard").iter().any(|t| t == "git reset --hard"));
        assert!(texts("echo `git prune").iter().any(|t| t == "git prune"));
        assert!(texts("echo \\").iter().any(|t| t == "echo"));
    }

    #[test]
    fn what_is_too_deep_or_too_long_is_said() {
        assert!(every_command("a $(b $(c))").complete);
        let deep = format!("{}git prune{}", "$(".repeat(8), ")".repeat(8));
        assert!(!every_command(&deep).complete);
        assert!(!every_command(&"true;".repeat(MAX_COMMANDS + 1)).complete);
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_read(line in "[a-z $()`'\"\\\\|&;<>{}#=*\n-]{0,60}") {
            let _ = every_command(&line);
        }
    }
}
