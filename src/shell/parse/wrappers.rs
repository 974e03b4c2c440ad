//! Wrappers a simple command runs through (`timeout`, `env VAR=…`, `nice`, `xargs`, …) and
//! leading assignments, stripped to reach the program that really runs.

use super::Word;

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
pub(in crate::shell) struct Stripped {
    pub(in crate::shell) words: Vec<Word>,
    pub(in crate::shell) env: Vec<Word>,
    pub(in crate::shell) wrappers: Vec<String>,
}

/// Removes leading `VAR=value` words and wrapper commands that only change how the real
/// command runs, so rules match the command itself. The assignments and wrappers are kept:
/// they decide whether the command may run without asking.
pub(in crate::shell) fn strip_wrappers(mut words: Vec<Word>) -> Result<Stripped, String> {
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
