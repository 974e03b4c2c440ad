//! Splitting a shell command line into the simple commands it runs, keeping what joins them
//! (`&&`, `||`, `;`, `|`, `&`), so a recogniser can tell whether a test runner's exit status
//! reaches the shell's (`pytest && echo ok`) or is hidden (`pytest | tail -1`, `pytest; echo`).
//!
//! It reads the line with the same lexer as the strict reader (`shell::parse`), in its tolerant
//! mode: where the strict reader refuses what it cannot judge, subshells, `$(…)`, loops and
//! groups are split through here, because recognising a run never grants anything. It never
//! executes anything.

use super::parse::Tok;

/// What follows a simple command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    /// `&&`: the next command runs only if this one succeeded.
    And,
    /// `||`
    Or,
    /// `;`, a newline, or a closing group.
    Seq,
    /// `|` or `|&`: the output goes to the next command.
    Pipe,
    /// `&`: runs in the background.
    Background,
    /// The end of the line.
    End,
}

/// One simple command: its words (quotes removed, redirections left out) and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub words: Vec<String>,
    pub next: Connector,
    /// Files this command writes through `>`/`>>` (not `2>&1`).
    pub writes: Vec<String>,
    /// Where its standard output goes once its redirections applied, in order.
    pub stdout: Dest,
    /// Where its standard error goes.
    pub stderr: Dest,
    /// A redirection after it applies to a group or subshell it ends (`( … ) > f`,
    /// `{ …; } > f`), which this split does not follow into the group's commands.
    pub group_redirected: bool,
}

/// Where one output stream of a simple command ends up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Dest {
    /// Where the line's streams go (the result, or the next command of a pipeline); `2>&1`
    /// and `>&2` keep a stream here.
    #[default]
    Inherited,
    /// Wherever standard output goes, the next command of a pipeline included (`2>&1` while
    /// standard output is inherited).
    Joined,
    /// A file (`/dev/null` included).
    File(String),
}

/// Applies one redirection to the pair (standard output, standard error).
fn redirect(streams: &mut (Dest, Dest), fd: u32, to: Dest) {
    match fd {
        1 => streams.0 = to,
        2 => streams.1 = to,
        super::parse::BOTH_FDS => {
            streams.0 = to.clone();
            streams.1 = to;
        }
        _ => {}
    }
}

/// `fd>&to`: `fd` goes where `to` goes now.
fn duplicate(streams: &mut (Dest, Dest), fd: u32, to: u32) {
    let copy = match (to, &streams.0) {
        (1, Dest::Inherited) if fd == 2 => Dest::Joined,
        (1, d) => d.clone(),
        (2, _) if streams.1 == Dest::Joined => Dest::Inherited,
        (2, _) => streams.1.clone(),
        _ => return,
    };
    redirect(streams, fd, copy);
}

/// Shell keywords that open or continue a compound command; the command after them is what runs.
pub(super) const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "fi", "done", "}",
];

/// Splits `line` into simple commands, reading it with the crate's one lexer in its tolerant
/// mode ([`super::parse::lex`]). Empty commands are dropped; the connector of a dropped
/// command is merged into the previous one.
pub fn split(line: &str) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut writes: Vec<String> = Vec::new();
    let mut streams = (Dest::Inherited, Dest::Inherited);
    let push_segment = |words: &mut Vec<String>,
                        writes: &mut Vec<String>,
                        streams: &mut (Dest, Dest),
                        next: Connector,
                        out: &mut Vec<Segment>| {
        let (stdout, stderr) = std::mem::take(streams);
        while words.first().is_some_and(|w| KEYWORDS.contains(&w.as_str())) {
            words.remove(0);
        }
        if words.is_empty() {
            if (stdout, stderr) != (Dest::Inherited, Dest::Inherited)
                && let Some(last) = out.last_mut()
            {
                last.group_redirected = true;
            }
            writes.clear();
            if let Some(last) = out.last_mut()
                && next != Connector::Seq
                && next != Connector::End
            {
                last.next = next;
            }
            return;
        }
        out.push(Segment {
            words: std::mem::take(words),
            next,
            writes: std::mem::take(writes),
            stdout,
            stderr,
            group_redirected: false,
        });
    };
    // Tolerant reading never refuses; an error here would be a lexer fault, read as nothing.
    for tok in super::parse::lex(line, false).unwrap_or_default() {
        match tok {
            Tok::Word(w) => words.push(w.text),
            Tok::Redirect {
                write: true,
                target,
                fd,
            } => {
                redirect(&mut streams, fd, Dest::File(target.text.clone()));
                writes.push(target.text);
            }
            // `<file`: the operand is read, not a word of the command.
            Tok::Redirect { write: false, .. } => {}
            Tok::Dup { fd, to } => duplicate(&mut streams, fd, to),
            Tok::Sep(connector) => push_segment(&mut words, &mut writes, &mut streams, connector, &mut out),
        }
    }
    push_segment(&mut words, &mut writes, &mut streams, Connector::End, &mut out);
    out
}

/// The program's name without its directory (`./node_modules/.bin/jest` → `jest`).
pub fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<(String, Connector)> {
        split(line).into_iter().map(|s| (s.words.join(" "), s.next)).collect()
    }

    #[test]
    fn chains_pipelines_and_lists_keep_their_connectors() {
        use Connector::*;
        assert_eq!(
            words("cd app && pytest -q | tail -1; echo done"),
            vec![
                ("cd app".into(), And),
                ("pytest -q".into(), Pipe),
                ("tail -1".into(), Seq),
                ("echo done".into(), End)
            ]
        );
        assert_eq!(
            words("cargo test 2>&1 || true"),
            vec![("cargo test".into(), Or), ("true".into(), End)]
        );
        assert_eq!(
            words("npm test |& tee log"),
            vec![("npm test".into(), Pipe), ("tee log".into(), End)]
        );
    }

    #[test]
    fn quotes_redirections_groups_and_comments() {
        let s = split(r#"(cd "my dir" && python -m pytest -k 'a or b') > out.log 2>&1 # run"#);
        let w: Vec<String> = s.iter().map(|s| s.words.join(" ")).collect();
        assert_eq!(w, vec!["cd my dir", "python -m pytest -k a or b"]);
        assert_eq!(s[1].words[3], "-k");
        assert_eq!(s[1].words[4], "a or b");
        let s = split("pytest &> log.txt");
        assert_eq!(s[0].words, vec!["pytest"]);
        assert_eq!(s[0].writes, vec!["log.txt"]);
        let s = split("for f in a b; do pytest $f; done");
        let w: Vec<String> = s.iter().map(|s| s.words.join(" ")).collect();
        assert_eq!(w, vec!["for f in a b", "pytest $f"]);
        let s = split("echo $(date) && go test ./... < /dev/null");
        assert_eq!(s[0].words, vec!["echo", "$(date)"]);
        assert_eq!(s[1].words, vec!["go", "test", "./..."]);
    }

    #[test]
    fn each_segment_knows_where_its_output_and_errors_go() {
        let f = |t: &str| Dest::File(t.to_string());
        let streams =
            |line: &str| -> Vec<(Dest, Dest)> { split(line).into_iter().map(|s| (s.stdout, s.stderr)).collect() };
        assert_eq!(streams("pytest -q"), vec![(Dest::Inherited, Dest::Inherited)]);
        assert_eq!(
            streams("pytest > /dev/null 2>&1"),
            vec![(f("/dev/null"), f("/dev/null"))]
        );
        assert_eq!(streams("pytest 2>&1 > out.log"), vec![(f("out.log"), Dest::Joined)]);
        assert_eq!(streams("jest 2> err.log"), vec![(Dest::Inherited, f("err.log"))]);
        assert_eq!(streams("cargo test &> all.log"), vec![(f("all.log"), f("all.log"))]);
        assert_eq!(streams("pytest 1>o.log 2>>e.log"), vec![(f("o.log"), f("e.log"))]);
        assert_eq!(
            streams("pytest 2>&1 | tail -3 > run.log; cat run.log"),
            vec![
                (Dest::Inherited, Dest::Joined),
                (f("run.log"), Dest::Inherited),
                (Dest::Inherited, Dest::Inherited)
            ]
        );
    }
}
