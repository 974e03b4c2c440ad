//! Reading a program's options the way the program will: glued short options (`-uo FILE`,
//! `-oFILE`), GNU long options with `=` or a separate value, and unambiguous abbreviations of
//! long options (`--outp=` is `--output=`). Each program's options come from a small table
//! whose entries say what the option does, so checks never depend on one exact spelling.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::parse::Word;

/// What an option does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Harmless.
    Safe,
    /// Its value names a file the program reads.
    Reads,
    /// It makes the program write files, run programs, reach the network, or read files the
    /// command line does not name.
    Unsafe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    Nothing,
    Value,
    /// Only attached: `--opt=value`, `-ovalue`.
    Optional,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    pub short: Option<char>,
    pub long: Option<&'static str>,
    pub takes: Takes,
    pub effect: Effect,
}

/// A program's option table.
#[derive(Debug, Default)]
pub struct Table {
    pub opts: Vec<Opt>,
    /// `-NUM` is a valid option (head, tail).
    pub numeric: bool,
}

impl Table {
    /// Parses the table notation: entries separated by spaces; `-x` a short flag, `--name` a
    /// long one, `-x|--name` both; a trailing `=` takes a value, `?` an optional attached
    /// value; a final `<` marks a value the program reads as a file, `!` an unsafe option.
    pub fn parse(spec: &'static str) -> Table {
        let mut t = Table::default();
        for entry in spec.split_whitespace() {
            if entry == "#NUM" {
                t.numeric = true;
                continue;
            }
            let (entry, effect) = match entry.strip_suffix('!') {
                Some(e) => (e, Effect::Unsafe),
                None => match entry.strip_suffix('<') {
                    Some(e) => (e, Effect::Reads),
                    None => (entry, Effect::Safe),
                },
            };
            let (entry, takes) = match entry.strip_suffix('=') {
                Some(e) => (e, Takes::Value),
                None => match entry.strip_suffix('?') {
                    Some(e) => (e, Takes::Optional),
                    None => (entry, Takes::Nothing),
                },
            };
            let mut opt = Opt {
                short: None,
                long: None,
                takes,
                effect,
            };
            for name in entry.split('|') {
                if let Some(l) = name.strip_prefix("--") {
                    opt.long = Some(l);
                } else if let Some(s) = name.strip_prefix('-') {
                    opt.short = s.chars().next();
                }
            }
            t.opts.push(opt);
        }
        t
    }

    fn short(&self, c: char) -> Option<&Opt> {
        self.opts.iter().find(|o| o.short == Some(c))
    }

    /// The option a long name means: exact, or the one option it abbreviates.
    fn long(&self, name: &str) -> Result<&Opt, LongMiss> {
        if let Some(o) = self.opts.iter().find(|o| o.long == Some(name)) {
            return Ok(o);
        }
        let hits: Vec<&Opt> = self
            .opts
            .iter()
            .filter(|o| o.long.is_some_and(|l| l.starts_with(name)))
            .collect();
        match hits.as_slice() {
            [one] => Ok(one),
            [] => Err(LongMiss::Unknown),
            many if many.iter().any(|o| o.effect == Effect::Unsafe) => Err(LongMiss::MaybeUnsafe),
            _ => Err(LongMiss::Ambiguous),
        }
    }
}

enum LongMiss {
    Unknown,
    Ambiguous,
    /// Ambiguous among known options, one of them unsafe.
    MaybeUnsafe,
}

/// One program's arguments, read as the program reads them.
#[derive(Debug, Default, Clone)]
pub struct Parsed {
    /// Options found, with their values.
    pub options: Vec<(Opt, Option<Word>)>,
    pub operands: Vec<Word>,
    /// Option words the table does not know (strict checks ask about them).
    pub unknown: Vec<String>,
    /// Unsafe options (and words that may abbreviate or hide one).
    pub unsafe_opts: Vec<String>,
}

impl Parsed {
    pub fn has(&self, long: &str) -> bool {
        self.options.iter().any(|(o, _)| o.long == Some(long))
    }

    pub fn has_short(&self, c: char) -> bool {
        self.options.iter().any(|(o, _)| o.short == Some(c))
    }

    /// Values of options whose value the program reads as a file.
    pub fn read_values(&self) -> impl Iterator<Item = &Word> {
        self.options
            .iter()
            .filter(|(o, _)| o.effect == Effect::Reads)
            .filter_map(|(_, v)| v.as_ref())
    }

    /// The value of the option with this long name (or short letter).
    pub fn value(&self, long: &str, short: Option<char>) -> Option<&Word> {
        self.options
            .iter()
            .find(|(o, _)| o.long == Some(long) || (short.is_some() && o.short == short))
            .and_then(|(_, v)| v.as_ref())
    }
}

/// Reads `args` against `table`. Options may follow operands (GNU argument order) until `--`.
/// `stop_at_operand`: the first operand ends the options (`git` global options, `xargs`).
pub fn parse(args: &[Word], table: &Table, stop_at_operand: bool) -> Parsed {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut options_done = false;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        if options_done || !t.starts_with('-') || t == "-" {
            p.operands.push(w.clone());
            if stop_at_operand {
                options_done = true;
            }
            continue;
        }
        // Where the shell expands the word, only the part before the first expansion is
        // known; an option name reaching into it could be anything.
        let literal = if w.dynamic {
            t.find(['$', '*', '?', '[', '{', '~', '`']).unwrap_or(t.len())
        } else {
            t.len()
        };
        if t == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if 2 + name.len() > literal {
                p.unknown.push(t.to_string());
                p.unsafe_opts.push(t.to_string());
                continue;
            }
            match table.long(name) {
                Ok(opt) => {
                    let value = match (opt.takes, attached) {
                        (_, Some(v)) => Some(attached_word(w, v)),
                        (Takes::Value, None) => {
                            i += 1;
                            args.get(i - 1).cloned()
                        }
                        _ => None,
                    };
                    if opt.effect == Effect::Unsafe {
                        p.unsafe_opts.push(t.to_string());
                    }
                    p.options.push((opt.clone(), value));
                }
                Err(LongMiss::MaybeUnsafe) => {
                    p.unknown.push(t.to_string());
                    p.unsafe_opts.push(t.to_string());
                }
                Err(_) => p.unknown.push(t.to_string()),
            }
            continue;
        }
        // A cluster of short options: flags until one takes a value, which is the rest of the
        // word or the next word.
        let cluster = &t[1..];
        if table.numeric && cluster.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let mut unknown_seen = false;
        for (at, c) in cluster.char_indices() {
            if 1 + at >= literal {
                p.unknown.push(t.to_string());
                p.unsafe_opts.push(t.to_string());
                break;
            }
            let Some(opt) = table.short(c) else {
                // An unknown letter may take the rest as its value; still look for unsafe
                // letters after it, as the program might read them as options.
                if !unknown_seen {
                    p.unknown.push(format!("-{c}"));
                }
                unknown_seen = true;
                continue;
            };
            if opt.effect == Effect::Unsafe {
                p.unsafe_opts.push(format!("-{c}"));
            }
            if unknown_seen {
                continue;
            }
            match opt.takes {
                Takes::Nothing => p.options.push((opt.clone(), None)),
                Takes::Value | Takes::Optional => {
                    let rest = &cluster[at + c.len_utf8()..];
                    let value = if !rest.is_empty() {
                        Some(attached_word(w, rest))
                    } else if opt.takes == Takes::Value {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        None
                    };
                    p.options.push((opt.clone(), value));
                    break;
                }
            }
        }
    }
    p
}

/// The value part of an option word, keeping whether the shell expands it.
fn attached_word(w: &Word, value: &str) -> Word {
    Word {
        text: value.to_string(),
        dynamic: w.dynamic,
    }
}

/// The tables, parsed once.
pub fn table(program: &str) -> Option<&'static Table> {
    static TABLES: OnceLock<HashMap<&'static str, Table>> = OnceLock::new();
    TABLES
        .get_or_init(|| {
            super::option_tables::SPECS
                .iter()
                .map(|(name, spec)| (*name, Table::parse(spec)))
                .collect()
        })
        .get(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace()
            .map(|t| Word {
                text: t.to_string(),
                dynamic: t.contains('$'),
            })
            .collect()
    }

    #[test]
    fn glued_and_abbreviated_options_are_read_as_the_program_does() {
        let t = Table::parse("-u|--unique -o|--output=! -k|--key= --compress-program=! --check? -c");
        let p = parse(&words("-uo$HOME/.bashrc a"), &t, false);
        assert_eq!(p.unsafe_opts, vec!["-o"]);
        assert_eq!(p.value("output", Some('o')).unwrap().text, "$HOME/.bashrc");
        assert!(p.value("output", None).unwrap().dynamic);
        assert_eq!(p.operands.len(), 1);
        let p = parse(&words("--outp=x --compress-prog=sh a"), &t, false);
        assert_eq!(p.unsafe_opts.len(), 2, "{p:?}");
        let p = parse(&words("-k 2 --check=quiet a -- -o"), &t, false);
        assert!(p.unsafe_opts.is_empty() && p.unknown.is_empty(), "{p:?}");
        assert_eq!(
            p.operands.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(),
            vec!["a", "-o"]
        );
        // An unknown letter before an unsafe one still counts the unsafe one.
        let p = parse(&words("-Xo f"), &t, false);
        assert_eq!(p.unknown, vec!["-X"]);
        assert_eq!(p.unsafe_opts, vec!["-o"]);
        // `--c` could be --compress-program or --check: ambiguous with an unsafe candidate.
        let p = parse(&words("--c=sh"), &t, false);
        assert_eq!(p.unsafe_opts, vec!["--c=sh"]);
    }
}
