//! What one simple command does, for the permission check: whether it only observes, which
//! files it reads, which paths a file command touches, and whether keel can see the program
//! that will really run.
//!
//! Two strictnesses: with the read-only jail in force (`strict == false`) an option keel does
//! not know is left to the jail, and only known-unsafe options (however spelled) disqualify a
//! command; without the jail (`strict == true`) keel approves only programs and options on its
//! allow-list, and anything else asks.

use super::option_tables::{GIT_COMMON, GIT_READ_ONLY};
use super::options::{self, Parsed, Table};
use super::parse::{SimpleCommand, Word};

/// Environment assignments that change no program's behaviour in a way that runs code or
/// moves files (locale, colours, log levels). Any other assignment makes a command ask.
pub const SAFE_ENV: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLUMNS",
    "LINES",
    "CI",
    "NODE_ENV",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "CARGO_TERM_COLOR",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "GIT_PAGER_IN_USE",
];

/// The first assignment outside [`SAFE_ENV`] (`LC_*` counts as safe).
pub fn unsafe_assignment(cmd: &SimpleCommand) -> Option<&str> {
    cmd.env.iter().map(|w| w.text.as_str()).find(|a| {
        let name = a.split('=').next().unwrap_or(a);
        !(SAFE_ENV.contains(&name) || name.starts_with("LC_"))
    })
}

/// What keel can tell about a command.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// The program only observes: no writes, no programs run, no network (its redirections
    /// are judged apart, as writes).
    pub observes: bool,
    /// Files it reads (operands, option values, `<` redirections).
    pub reads: Vec<Word>,
    /// It reads files the command line does not name (names from its input, links followed).
    pub reads_unknown: bool,
}

fn program_name(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// File commands with option tables (for acceptEdits), which change files.
const FILE_COMMANDS: &[&str] = &["mkdir", "touch", "cp", "mv"];

/// Programs that print their arguments or test them, and read no files.
const FREE_TEXT: &[&str] = &["echo", "printf", "true", "false", "test", "[", "type"];

pub fn analyze(cmd: &SimpleCommand, strict: bool) -> Analysis {
    let mut a = analyze_program(cmd, strict);
    a.reads.extend(cmd.reads.iter().cloned());
    if unsafe_assignment(cmd).is_some() {
        a.observes = false;
    }
    if cmd.wrappers.iter().any(|w| w == "xargs") {
        // Arguments (options included) come from the input.
        a.reads_unknown = true;
        if strict {
            a.observes = false;
        }
    }
    a
}

fn analyze_program(cmd: &SimpleCommand, strict: bool) -> Analysis {
    let Some(first) = cmd.words.first() else {
        return Analysis::default();
    };
    let name = program_name(&first.text);
    let args = cmd.args();
    if FREE_TEXT.contains(&name) {
        return Analysis {
            observes: true,
            ..Analysis::default()
        };
    }
    match name {
        "git" => return git(args, strict),
        "command" => {
            let observes = matches!(args.first().map(|w| w.text.as_str()), Some("-v") | Some("-V"));
            return Analysis {
                observes,
                ..Analysis::default()
            };
        }
        "find" => return find(args, strict),
        _ => {}
    }
    if FILE_COMMANDS.contains(&name) {
        return Analysis::default();
    }
    let table_name = match name {
        "egrep" | "fgrep" => "grep",
        n => n,
    };
    let Some(table) = options::table(table_name) else {
        return Analysis::default();
    };
    let jq = (table_name == "jq").then(|| jq_pairs(args));
    let args = jq.as_ref().map_or(args, |j| j.rest.as_slice());
    let p = options::parse(args, table, false);
    let mut a = Analysis {
        observes: p.unsafe_opts.is_empty() && (!strict || p.unknown.is_empty()),
        reads: p.read_values().cloned().collect(),
        reads_unknown: false,
    };
    let mut operands: Vec<Word> = p.operands.clone();
    match table_name {
        "grep" | "rg" => {
            let explicit = p.has("regexp") || p.has("file") || p.has("files") || p.has("type-list");
            if !explicit && !operands.is_empty() {
                operands.remove(0);
            }
            let recursive = p.has("recursive") || p.has("dereference-recursive") || table_name == "rg";
            if operands.is_empty() && recursive && !p.has("type-list") {
                operands.push(dot());
            }
            // Following every link can reach any file; the jail keeps credentials out of reach.
            if p.has("dereference-recursive") || p.has("follow") {
                a.reads_unknown |= strict;
            }
        }
        "jq" => {
            // A filter can `import`/`include` files from anywhere (`-L`, `~/.jq`, paths
            // relative to jq's own directory), and a filter file can hold such statements.
            let filter_text = (!p.has("from-file")).then(|| operands.first()).flatten();
            if p.has("from-file")
                || p.has("library-path")
                || filter_text.is_some_and(|f| f.text.contains("import") || f.text.contains("include"))
            {
                a.reads_unknown = true;
            }
            if !p.has("from-file") && !operands.is_empty() {
                operands.remove(0);
            }
            if p.has("args") || p.has("jsonargs") {
                operands.clear();
            }
            if let Some(j) = jq {
                a.reads.extend(j.files);
            }
        }
        "uniq" => a.observes &= operands.len() <= 1,
        "hostname" => a.observes &= operands.is_empty(),
        "date" => {
            a.observes &= operands.iter().all(|w| w.text.starts_with('+'));
            operands.clear();
        }
        "diff" if p.has("recursive") => a.reads_unknown |= strict,
        "cd" => {
            // `cd -P` resolves links: the jail copes, the allow-list asks.
            a.observes &= !(strict && p.has_short('P'));
        }
        "uname" | "id" | "whoami" | "which" | "pwd" | "basename" | "dirname" => operands.clear(),
        _ => {}
    }
    a.reads.extend(operands.into_iter().filter(|w| w.text != "-"));
    a
}

/// jq's options that take two words (`--arg NAME VALUE`, `--rawfile NAME FILE`, …) taken
/// out of its arguments, with the files they read: the option table reads one value only.
struct JqPairs {
    rest: Vec<Word>,
    files: Vec<Word>,
}

fn jq_pairs(args: &[Word]) -> JqPairs {
    let mut out = JqPairs {
        rest: Vec::new(),
        files: Vec::new(),
    };
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "--" => {
                out.rest.extend(args[i..].iter().cloned());
                break;
            }
            "--arg" | "--argjson" => i += 3,
            "--slurpfile" | "--rawfile" | "--argfile" => {
                out.files.extend(args.get(i + 2).cloned());
                i += 3;
            }
            _ => {
                out.rest.push(w.clone());
                i += 1;
            }
        }
    }
    out
}

fn dot() -> Word {
    Word {
        text: ".".into(),
        dynamic: false,
    }
}

/// `find`: the roots before the expression are read; actions that run programs, delete or
/// write files disqualify it.
fn find(args: &[Word], strict: bool) -> Analysis {
    let mut a = Analysis {
        observes: true,
        ..Analysis::default()
    };
    let mut i = 0;
    let mut roots = Vec::new();
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-H" | "-L" | "-P" => {}
            "-D" => i += 1,
            t if t.starts_with("-O") => {}
            _ => break,
        }
        i += 1;
    }
    while let Some(w) = args.get(i) {
        if w.text.starts_with('-') || w.text == "(" || w.text == "!" || w.text == "," {
            break;
        }
        roots.push(w.clone());
        i += 1;
    }
    for w in &args[i..] {
        if FIND_UNSAFE.contains(&w.text.as_str()) || (strict && w.dynamic) {
            a.observes = false;
        }
    }
    if roots.is_empty() {
        roots.push(dot());
    }
    a.reads = roots;
    a
}

const FIND_UNSAFE: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// git: read-only subcommands without options that write files, run programs or reach the
/// network; `-C`, `--git-dir` and `--work-tree` name directories it reads.
fn git(args: &[Word], strict: bool) -> Analysis {
    let mut a = Analysis::default();
    let Some(global) = options::table("git") else { return a };
    let g = options::parse(args, global, true);
    if !g.unsafe_opts.is_empty() || (strict && !g.unknown.is_empty()) {
        return a;
    }
    if strict && (g.has("paginate") || g.has_short('p')) {
        return a;
    }
    // Another git directory brings its own configuration, which can name programs git runs
    // (`core.fsmonitor`, `diff.external`, filters): only the jail contains them.
    if strict && (g.has("git-dir") || g.has("work-tree")) {
        return a;
    }
    for (opt, value) in &g.options {
        if matches!(opt.long, Some("git-dir") | Some("work-tree")) || opt.short == Some('C') {
            a.reads.extend(value.clone());
        }
    }
    let Some((sub, rest)) = g.operands.split_first() else {
        // `git` alone, `git --version`.
        a.observes = true;
        return a;
    };
    let sub = sub.text.as_str();
    if !GIT_READ_ONLY.contains(&sub) {
        return a;
    }
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    a.observes = match sub {
        "branch" => texts.iter().all(|t| {
            matches!(
                *t,
                "-a" | "-r" | "-v" | "-vv" | "--list" | "-l" | "--show-current" | "--all" | "--remotes" | "--no-color"
            )
        }),
        "tag" => texts.is_empty() || matches!(texts.first(), Some(&"-l") | Some(&"--list")),
        "remote" => texts.iter().all(|t| matches!(*t, "-v" | "--verbose")),
        "stash" => matches!(texts.first(), Some(&"list") | Some(&"show")) && sub_options_ok(&rest[1..], strict),
        "reflog" => match texts.first() {
            None => true,
            Some(&("show" | "list" | "exists")) => sub_options_ok(&rest[1..], strict),
            Some(t) if t.starts_with('-') => sub_options_ok(rest, strict),
            // `expire`, `delete`, `drop` rewrite history.
            Some(_) => false,
        },
        _ => sub_options_ok(rest, strict),
    };
    if let Some(t) = git_table() {
        let p = options::parse(rest, t, false);
        a.reads.extend(p.read_values().cloned());
        if p.has("no-index") {
            // `git diff --no-index a b` reads any two files.
            a.reads.extend(p.operands.iter().cloned());
        }
    }
    a
}

fn git_table() -> Option<&'static Table> {
    use std::sync::OnceLock;
    static T: OnceLock<Table> = OnceLock::new();
    Some(T.get_or_init(|| Table::parse(GIT_COMMON)))
}

fn sub_options_ok(rest: &[Word], strict: bool) -> bool {
    let Some(t) = git_table() else { return false };
    let p: Parsed = options::parse(rest, t, false);
    p.unsafe_opts.is_empty() && (!strict || p.unknown.is_empty())
}

/// The paths a simple file command (`mkdir`, `touch`, `cp`, `mv`) creates, changes or reads,
/// target directories included; `None` when it uses an option keel does not know, runs with
/// environment changes, or takes arguments from its input.
pub fn fs_paths(cmd: &SimpleCommand) -> Option<Vec<Word>> {
    let name = program_name(cmd.program());
    if !matches!(name, "mkdir" | "touch" | "cp" | "mv") || !cmd.wrappers.iter().all(|w| w != "xargs") {
        return None;
    }
    if unsafe_assignment(cmd).is_some() {
        return None;
    }
    let table = options::table(name)?;
    let p = options::parse(cmd.args(), table, false);
    if !p.unknown.is_empty() || !p.unsafe_opts.is_empty() {
        return None;
    }
    let mut out = p.operands.clone();
    out.extend(p.read_values().cloned());
    if let Some(t) = p.value("target-directory", Some('t'))
        && name != "touch"
    {
        out.push(t.clone());
    }
    Some(out)
}

/// Why keel cannot tell which program this command will really run, if so: it builds the
/// command from its input or runs code given inline. With a Bash deny rule in force such a
/// command always asks.
pub fn hidden_program(cmd: &SimpleCommand) -> Option<String> {
    if cmd.wrappers.iter().any(|w| w == "xargs") {
        return Some("`xargs` runs a command built from its input".into());
    }
    let name = program_name(cmd.program());
    let args: Vec<&str> = cmd.args().iter().map(|w| w.text.as_str()).collect();
    let has = |flags: &[&str]| {
        args.iter()
            .any(|a| flags.iter().any(|f| a == f || (f.len() == 2 && a.starts_with(f))))
    };
    let inline = match name {
        "find" => args.iter().any(|a| FIND_UNSAFE[..5].contains(a)),
        // `-c alias.x='!cmd'`, `-c core.pager=…` and the like run any program.
        "git" => options::table("git").is_some_and(|t| {
            let g = options::parse(cmd.args(), t, true);
            g.has_short('c') || g.has("config-env") || g.has("exec-path")
        }),
        n if n.starts_with("python") => has(&["-c"]),
        "perl" => has(&["-e", "-E"]),
        "ruby" => has(&["-e"]),
        "node" | "nodejs" | "bun" => has(&["-e", "-p", "--eval", "--print"]),
        "deno" => args.first() == Some(&"eval"),
        "php" => has(&["-r"]),
        "lua" | "luajit" => has(&["-e"]),
        "awk" | "gawk" | "mawk" | "nawk" | "sed" | "busybox" | "watch" | "parallel" | "su" | "flock" | "nsenter"
        | "unshare" | "chroot" | "script" | "expect" | "tclsh" | "ssh" => true,
        _ => false,
    };
    inline.then(|| format!("`{name}` runs commands keel cannot see from the command line"))
}

/// With Bash deny rules naming `denied` programs: whether this command may start one of them
/// in a way the rules cannot see — a program keel does not know to be inert (a wrapper such
/// as `ionice`, `strace`, `taskset`, a builtin such as `trap`, `coproc`, `hash -p`, `alias`)
/// that names one of them in its arguments, or any command run with an environment change
/// (`BASH_ENV`, `LD_PRELOAD` and the like make programs run others).
pub fn may_start_denied(cmd: &SimpleCommand, denied: &[String], strict: bool) -> Option<String> {
    if let Some(var) = unsafe_assignment(cmd) {
        return Some(format!(
            "`{}` runs with `{var}` set, which can make it start other programs",
            cmd.text()
        ));
    }
    let name = program_name(cmd.program());
    if denied.is_empty() || FREE_TEXT.contains(&name) || name == "git" || analyze_program(cmd, strict).observes {
        return None;
    }
    let words = cmd.args().iter().chain(cmd.env.iter());
    for w in words {
        let hit = w
            .text
            .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '/')))
            .map(|t| t.rsplit('/').next().unwrap_or(t))
            .find(|t| denied.iter().any(|d| d == t));
        if let Some(d) = hit {
            return Some(format!("`{name}` is given `{d}` as an argument and may start it"));
        }
    }
    None
}

/// With Bash deny rules naming `denied` programs: why keel cannot tell that the program this
/// command runs is not one of them — a path to a file that does not exist when the line is
/// checked (`cp /bin/rm x && ./x`), a program found nowhere (made earlier in the same line),
/// or a copy or link of a denied program under another name.
pub fn unseen_program(cmd: &SimpleCommand, cwd: Option<&std::path::Path>, denied: &[String]) -> Option<String> {
    use std::path::PathBuf;
    let program = cmd.program();
    if denied.is_empty() || program.is_empty() || cmd.words.first().is_some_and(|w| w.dynamic) {
        return None;
    }
    let path: PathBuf = if program.contains('/') {
        match cwd {
            Some(c) => c.join(program),
            None => return Some(format!("keel cannot tell where `{program}` is")),
        }
    } else if BASH_BUILTINS.contains(&program) {
        return None;
    } else {
        match on_path(program) {
            Some(p) => p,
            None => return Some(format!("`{program}` is not an installed program")),
        }
    };
    let Ok(real) = path.canonicalize() else {
        return Some(format!(
            "`{program}` does not exist yet, so keel cannot tell which program it is"
        ));
    };
    let Ok(meta) = real.metadata() else { return None };
    for d in denied {
        let Some(denied_path) = on_path(d).and_then(|p| p.canonicalize().ok()) else {
            continue;
        };
        if denied_path == real || program_name(&real.to_string_lossy()) == d.as_str() {
            return None; // the program under its own name: the rules see it
        }
        let same = denied_path
            .metadata()
            .is_ok_and(|m| m.len() == meta.len() && std::fs::read(&denied_path).ok() == std::fs::read(&real).ok());
        if same {
            return Some(format!("`{program}` is a copy of `{d}`"));
        }
    }
    None
}

/// Where `name` is found on `PATH`.
fn on_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Builtins and keywords bash runs itself (never looked up on `PATH`).
const BASH_BUILTINS: &[&str] = &[
    ".",
    ":",
    "[",
    "[[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "case",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "coproc",
    "declare",
    "dirs",
    "disown",
    "do",
    "done",
    "echo",
    "elif",
    "else",
    "enable",
    "esac",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "fi",
    "for",
    "function",
    "getopts",
    "hash",
    "help",
    "history",
    "if",
    "in",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "select",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "then",
    "time",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "until",
    "wait",
    "while",
    "{",
    "}",
    "!",
];

/// For `cp`/`mv`: the files they read (every operand but the destination). A copy or move of
/// a credential file to another name would let any later command read it.
pub fn copy_sources(cmd: &SimpleCommand) -> Vec<Word> {
    let name = program_name(cmd.program());
    if !matches!(name, "cp" | "mv") {
        return Vec::new();
    }
    let Some(table) = options::table(name) else {
        return Vec::new();
    };
    let p = options::parse(cmd.args(), table, false);
    let mut sources = p.operands.clone();
    if p.value("target-directory", Some('t')).is_none() {
        sources.pop();
    }
    sources
}

/// For `cp`/`mv`: the destination directory when the command puts entries there under names
/// its command line does not spell (`cp -r src/. dest`, `cp -rT src dest`), whose names the
/// check therefore cannot judge.
pub fn unnamed_destination(cmd: &SimpleCommand) -> Option<Word> {
    let name = program_name(cmd.program());
    if !matches!(name, "cp" | "mv") {
        return None;
    }
    let table = options::table(name)?;
    let p = options::parse(cmd.args(), table, false);
    let target = p.value("target-directory", Some('t')).cloned();
    let mut sources = p.operands.clone();
    let dest = match target {
        Some(t) => t,
        None => sources.pop()?,
    };
    let contents = |w: &Word| {
        let t = w.text.trim_end_matches('/');
        t.is_empty() || t == "." || t == ".." || t.ends_with("/.") || t.ends_with("/..")
    };
    (p.has("no-target-directory") || sources.iter().any(contents)).then_some(dest)
}

#[cfg(test)]
mod tests;
