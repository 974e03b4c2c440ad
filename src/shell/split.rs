//! Splitting a shell command line into the simple commands it runs, keeping what joins them
//! (`&&`, `||`, `;`, `|`, `&`), so a recogniser can tell whether a test runner's exit status
//! reaches the shell's (`pytest && echo ok`) or is hidden (`pytest | tail -1`, `pytest; echo`).
//!
//! Unlike the strict reader (`shell::parse`), which refuses what it cannot judge, this one is
//! tolerant: subshells, `$(…)`, loops and groups are split through, because
//! recognising a run never grants anything. It never executes anything.

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
}

/// Shell keywords that open or continue a compound command; the command after them is what runs.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "fi", "done", "}",
];

/// Splits `line` into simple commands. Empty commands are dropped; the connector of a dropped
/// command is merged into the previous one.
pub fn split(line: &str) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut writes: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut pending_write = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;

    let finish_word = |word: &mut String,
                       in_word: &mut bool,
                       words: &mut Vec<String>,
                       writes: &mut Vec<String>,
                       pending: &mut bool| {
        if *in_word {
            if *pending {
                writes.push(std::mem::take(word));
                *pending = false;
            } else {
                words.push(std::mem::take(word));
            }
            *in_word = false;
        }
    };
    let push_segment = |words: &mut Vec<String>, writes: &mut Vec<String>, next: Connector, out: &mut Vec<Segment>| {
        while words.first().is_some_and(|w| KEYWORDS.contains(&w.as_str())) {
            words.remove(0);
        }
        if words.is_empty() {
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
        });
    };

    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() && matches!(chars[i + 1], '"' | '\\' | '$' | '`') {
                        i += 1;
                    }
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '\\' => {
                if i + 1 < chars.len() {
                    if chars[i + 1] != '\n' {
                        in_word = true;
                        word.push(chars[i + 1]);
                    }
                    i += 1;
                }
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                // Command substitution stays inside the word; its inside is not split here.
                in_word = true;
                let mut depth = 0;
                while i < chars.len() {
                    word.push(chars[i]);
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
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            ' ' | '\t' => finish_word(&mut word, &mut in_word, &mut words, &mut writes, &mut pending_write),
            '>' | '<' => {
                // A file-descriptor number right before belongs to the redirection (`2>`).
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                } else {
                    finish_word(&mut word, &mut in_word, &mut words, &mut writes, &mut pending_write);
                }
                let write = c == '>';
                while i + 1 < chars.len() && matches!(chars[i + 1], '>' | '|') {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&'&') {
                    // `2>&1`, `>&2`: a duplication, not a file.
                    i += 2;
                    while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '-') {
                        i += 1;
                    }
                    continue;
                }
                pending_write = write;
                if !write {
                    // `<file`: the operand is read, not a word of the command.
                    pending_write = false;
                    i += 1;
                    while i < chars.len() && chars[i] == ' ' {
                        i += 1;
                    }
                    while i < chars.len() && !matches!(chars[i], ' ' | '\t' | '\n' | ';' | '&' | '|' | ')') {
                        i += 1;
                    }
                    continue;
                }
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                // `&>file`
                finish_word(&mut word, &mut in_word, &mut words, &mut writes, &mut pending_write);
                i += 1;
                while i + 1 < chars.len() && chars[i + 1] == '>' {
                    i += 1;
                }
                pending_write = true;
            }
            '&' | '|' | ';' | '\n' | '(' | ')' => {
                finish_word(&mut word, &mut in_word, &mut words, &mut writes, &mut pending_write);
                let next_c = chars.get(i + 1).copied();
                let connector = match (c, next_c) {
                    ('&', Some('&')) => {
                        i += 1;
                        Connector::And
                    }
                    ('|', Some('|')) => {
                        i += 1;
                        Connector::Or
                    }
                    ('|', Some('&')) => {
                        i += 1;
                        Connector::Pipe
                    }
                    ('|', _) => Connector::Pipe,
                    ('&', _) => Connector::Background,
                    (';', Some(';')) => {
                        i += 1;
                        Connector::Seq
                    }
                    _ => Connector::Seq,
                };
                push_segment(&mut words, &mut writes, connector, &mut out);
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    finish_word(&mut word, &mut in_word, &mut words, &mut writes, &mut pending_write);
    push_segment(&mut words, &mut writes, Connector::End, &mut out);
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
}
