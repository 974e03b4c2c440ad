//! Built-in protections: destructive commands that always need an explicit human or rule,
//! credential files that are not read unless allowed, files that configure keel or git (a
//! change there runs code later), and the set of commands that only observe.

use std::path::Path;

use super::shell::{Resolved, SimpleCommand, Word, resolve_word};

/// Why a command is destructive, or `None`. `cwd` is the shell's directory for this part
/// (`None` when a dynamic `cd` made it unknown).
pub fn destructive(cmd: &SimpleCommand, cwd: Option<&Path>, workspace: &Path, home: Option<&Path>) -> Option<String> {
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let (prog, args) = match words.first() {
        Some(&"sudo") | Some(&"doas") => {
            let skip = words.iter().skip(1).take_while(|w| w.starts_with('-')).count();
            let rest = &words[1 + skip..];
            (program_name(rest.first()?), &rest[1..])
        }
        Some(first) => (program_name(first), &words[1..]),
        None => return None,
    };
    match prog {
        "git" => git_destructive(args),
        "rm" => rm_destructive(cmd, args, cwd, workspace, home),
        "terraform" | "tofu" => (args.first() == Some(&"destroy")
            || (args.first() == Some(&"apply") && args.contains(&"-destroy")))
        .then(|| format!("`{prog} destroy` deletes infrastructure")),
        "pulumi" | "cdk" => {
            (args.first() == Some(&"destroy")).then(|| format!("`{prog} destroy` deletes infrastructure"))
        }
        _ => None,
    }
}

/// Commands that rewrite configuration which makes git run programs later (`git config`
/// setting a value): treated like destructive commands.
pub fn config_command(cmd: &SimpleCommand) -> Option<String> {
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    if program_name(words.first()?) != "git" {
        return None;
    }
    let (sub, rest) = git_sub(&words[1..])?;
    let reads_only = rest.iter().any(|a| {
        matches!(
            *a,
            "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "--show-origin" | "--show-scope"
        ) || a.starts_with("--get")
    }) || rest.iter().filter(|a| !a.starts_with('-')).count() <= 1;
    (sub == "config" && !reads_only).then(|| "`git config` changes settings that can make git run programs".to_string())
}

fn program_name(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// The git subcommand and its arguments, skipping global options like `-C dir`.
fn git_sub<'a>(args: &'a [&'a str]) -> Option<(&'a str, &'a [&'a str])> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match *a {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--config-env" => i += 2,
            a if a.starts_with('-') => i += 1,
            sub => return Some((sub, &args[i + 1..])),
        }
    }
    None
}

fn git_destructive(args: &[&str]) -> Option<String> {
    let (sub, rest) = git_sub(args)?;
    match sub {
        "reset" if rest.contains(&"--hard") => Some("`git reset --hard` discards uncommitted work".into()),
        "clean"
            if rest
                .iter()
                .any(|a| *a == "--force" || (a.starts_with('-') && !a.starts_with("--") && a.contains('f'))) =>
        {
            Some("`git clean -f` deletes untracked files".into())
        }
        "push" => {
            let forced = rest.iter().any(|a| {
                a.starts_with("--force")
                    || *a == "--mirror"
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
                    || (a.starts_with('+') && a.len() > 1)
            });
            if !forced {
                return None;
            }
            let refs: Vec<&str> = rest.iter().copied().filter(|a| !a.starts_with('-')).skip(1).collect();
            let hits_default = refs.is_empty()
                || refs.iter().any(|r| {
                    let target = r.trim_start_matches('+').rsplit(':').next().unwrap_or(r);
                    let target = target.trim_start_matches("refs/heads/");
                    matches!(target, "main" | "master" | "trunk" | "HEAD")
                });
            hits_default.then(|| "force-pushing can overwrite the default branch".into())
        }
        _ => None,
    }
}

fn rm_destructive(
    cmd: &SimpleCommand,
    args: &[&str],
    cwd: Option<&Path>,
    workspace: &Path,
    home: Option<&Path>,
) -> Option<String> {
    let mut recursive = false;
    let mut force = false;
    let mut options_done = false;
    let mut targets: Vec<&str> = Vec::new();
    for a in args {
        if !options_done && *a == "--" {
            options_done = true;
        } else if !options_done && a.starts_with("--") {
            recursive |= *a == "--recursive";
            force |= *a == "--force";
        } else if !options_done && a.starts_with('-') && a.len() > 1 {
            recursive |= a.contains('r') || a.contains('R');
            force |= a.contains('f');
        } else {
            targets.push(a);
        }
    }
    if !(recursive && force) {
        return None;
    }
    for t in targets {
        let word = cmd.words.iter().find(|w| w.text == *t).cloned().unwrap_or(Word {
            text: t.to_string(),
            dynamic: false,
        });
        let Some(cwd) = cwd else {
            return Some(format!("`rm -rf {t}` runs in a directory keel cannot determine"));
        };
        let paths = match resolve_word(&word, cwd, home) {
            Resolved::Paths(p) => p,
            Resolved::Unknown => return Some(format!("keel cannot tell what `rm -rf {t}` would delete")),
        };
        // `rm -rf dir/*` empties `dir`: judge it like deleting `dir`.
        let judged: Vec<std::path::PathBuf> = if word.dynamic && t.ends_with('*') {
            paths.iter().filter_map(|p| p.parent().map(Path::to_path_buf)).collect()
        } else {
            paths
        };
        for path in judged {
            let critical = path == Path::new("/") || home.is_some_and(|h| path == h) || workspace.starts_with(&path);
            if critical {
                return Some(format!("`rm -rf {t}` would delete {}", path.display()));
            }
        }
    }
    None
}

/// Credential files read only when an allow rule names them.
pub fn credential_reason(path: &Path, home: Option<&Path>) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let is_secret_file = name.starts_with(".env") || name.ends_with(".pem") || name.ends_with(".key");
    let in_secret_dir = home.is_some_and(|h| path.starts_with(h.join(".ssh")) || path.starts_with(h.join(".aws")));
    (is_secret_file || in_secret_dir).then(|| format!("{} may hold credentials", path.display()))
}

/// Files whose change makes something run later outside the model's view: git's config and
/// hooks, keel's and the reference tool's settings, commands and hooks, shell start-up files.
/// Writing them always needs the user (or an explicit allow rule), in every mode.
pub fn config_reason(path: &Path, home: Option<&Path>) -> Option<String> {
    let components: Vec<&str> = path.iter().filter_map(|c| c.to_str()).collect();
    let has = |dir: &str| components.contains(&dir);
    let name = path.file_name()?.to_str()?;
    if has(".git") && (name == "config" || components.windows(2).any(|w| w[0] == ".git" && w[1] == "hooks")) {
        return Some(format!(
            "{} configures git, which can make git run programs",
            path.display()
        ));
    }
    if has(".claude") || has(".keel") {
        return Some(format!(
            "{} is agent configuration (settings, hooks, commands)",
            path.display()
        ));
    }
    const RC: &[&str] = &[
        ".bashrc",
        ".bash_profile",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".zshenv",
        ".bash_login",
    ];
    if home.is_some_and(|h| path.parent() == Some(h)) && RC.contains(&name) {
        return Some(format!("{} runs in every new shell", path.display()));
    }
    None
}

/// Commands that only observe and redirect nothing into files.
pub fn is_read_only(cmd: &SimpleCommand) -> bool {
    cmd.writes.is_empty() && is_observing_program(cmd)
}

/// Whether the program and its arguments only observe (redirections are judged separately).
/// Options that make an otherwise harmless program write files or run programs disqualify it.
pub fn is_observing_program(cmd: &SimpleCommand) -> bool {
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let Some(first) = words.first() else { return false };
    let args = &words[1..];
    let any = |pred: &dyn Fn(&str) -> bool| args.iter().any(|a| pred(a));
    let positional = args.iter().filter(|a| !a.starts_with('-')).count();
    match program_name(first) {
        "ls" | "cat" | "head" | "tail" | "grep" | "egrep" | "fgrep" | "wc" | "which" | "diff" | "stat" | "du"
        | "df" | "pwd" | "echo" | "printf" | "cd" | "true" | "false" | "test" | "[" | "cut" | "basename"
        | "dirname" | "realpath" | "readlink" | "whoami" | "uname" | "id" | "type" | "cmp" | "md5sum" | "sha256sum"
        | "nl" | "column" | "jq" => true,
        "rg" => !any(&|a| a.starts_with("--pre") || a == "-z" || a == "--search-zip"),
        "uniq" => positional <= 1,
        "tree" => !any(&|a| a == "-o" || a.starts_with("--output")),
        "file" => !any(&|a| a.starts_with("-C") || a == "--compile"),
        "date" => !any(&|a| a.starts_with("-s") || a.starts_with("--set")),
        "hostname" => args.iter().all(|a| a.starts_with('-')),
        "sort" => !any(&|a| a == "-o" || a.starts_with("--output") || a.starts_with("--compress-program")),
        "find" => !any(&|a| {
            matches!(
                a,
                "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls"
            )
        }),
        "command" => matches!(args.first(), Some(&"-v") | Some(&"-V")),
        "git" => git_observes(args),
        _ => false,
    }
}

/// Read-only git, without options that name programs or write files.
fn git_observes(args: &[&str]) -> bool {
    // `-c core.fsmonitor=…` and friends make git run programs.
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        if matches!(*a, "-c" | "--config-env" | "--exec-path")
            || a.starts_with("--exec-path=")
            || a.starts_with("--config-env=")
        {
            return false;
        }
        i += if matches!(*a, "-C" | "--git-dir" | "--work-tree") {
            2
        } else {
            1
        };
    }
    let Some((sub, rest)) = git_sub(args) else { return false };
    if rest
        .iter()
        .any(|a| a.starts_with("--output") || a.starts_with("--ext-diff") || a.starts_with("--textconv"))
    {
        return false;
    }
    match sub {
        "status" | "log" | "diff" | "show" | "blame" | "rev-parse" | "ls-files" | "describe" | "shortlog" | "grep"
        | "reflog" | "cat-file" | "ls-tree" | "merge-base" => {
            !(sub == "grep"
                && rest
                    .iter()
                    .any(|a| a.starts_with("-O") || a.starts_with("--open-files-in-pager")))
        }
        "branch" => rest
            .iter()
            .all(|a| matches!(*a, "-a" | "-r" | "-v" | "-vv" | "--list" | "--show-current" | "--all")),
        "remote" => rest.iter().all(|a| *a == "-v"),
        "stash" => rest.first() == Some(&"list"),
        "tag" => rest.is_empty() || rest == ["-l"] || rest == ["--list"],
        _ => false,
    }
}

/// The words a read-only command reads as files (patterns, filters and option values are
/// skipped). `cd` is included: where it goes decides how later relative paths resolve.
pub fn file_operands(cmd: &SimpleCommand) -> Vec<&Word> {
    let prog = cmd.program_name();
    let reads_files = matches!(
        prog,
        "cat"
            | "head"
            | "tail"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "wc"
            | "diff"
            | "stat"
            | "du"
            | "ls"
            | "file"
            | "tree"
            | "uniq"
            | "cut"
            | "nl"
            | "column"
            | "jq"
            | "md5sum"
            | "sha256sum"
            | "cmp"
            | "sort"
            | "find"
            | "readlink"
            | "realpath"
    );
    if !reads_files {
        return cmd.reads.iter().collect();
    }
    let mut out = Vec::new();
    let mut pattern_pending = matches!(prog, "grep" | "egrep" | "fgrep" | "rg" | "jq");
    let mut after_dashdash = false;
    let args = cmd.args();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if !after_dashdash && t == "--" {
            after_dashdash = true;
        } else if !after_dashdash && t.starts_with('-') && t.len() > 1 {
            // An explicit pattern (-e PAT, -f FILE) means the first positional is a file.
            if matches!(prog, "grep" | "egrep" | "fgrep" | "rg") && matches!(t, "-e" | "--regexp" | "-f" | "--file") {
                pattern_pending = false;
                if matches!(t, "-f" | "--file")
                    && let Some(f) = args.get(i + 1)
                {
                    out.push(f);
                }
                i += 1;
            } else if value_options(prog).contains(&t) {
                // An option with a separate value (`head -n 5`, `cut -d , -f 1`).
                i += 1;
            }
            if prog == "find" {
                // find's expression starts at the first option; only the roots before it are paths.
                break;
            }
        } else if pattern_pending {
            pattern_pending = false;
        } else {
            out.push(w);
        }
        i += 1;
    }
    if matches!(prog, "grep" | "egrep" | "fgrep" | "rg" | "find" | "ls" | "du" | "tree") && out.is_empty() {
        // No path: these read the current directory.
        return cmd.reads.iter().collect();
    }
    out.extend(cmd.reads.iter());
    out
}

/// Options that take their value as the next word, per program. A value mistaken for a file
/// only costs an extra question; a file mistaken for a value would be a leak, so the lists
/// name only options known to take values.
fn value_options(prog: &str) -> &'static [&'static str] {
    match prog {
        "head" | "tail" => &["-n", "-c", "--lines", "--bytes"],
        "grep" | "egrep" | "fgrep" => &["-A", "-B", "-C", "-m", "-d", "-D", "--max-count"],
        "rg" => &[
            "-A",
            "-B",
            "-C",
            "-m",
            "-t",
            "-T",
            "-g",
            "-M",
            "--glob",
            "--type",
            "--type-not",
            "--max-count",
        ],
        "cut" => &["-d", "-f", "-c", "-b"],
        "sort" => &["-t", "-k", "-S", "-T"],
        "uniq" => &["-f", "-s", "-w"],
        "column" => &["-s", "-c", "-o"],
        "nl" => &["-b", "-w", "-s", "-v", "-i"],
        "jq" => &["--arg", "--argjson", "--indent"],
        _ => &[],
    }
}

/// Simple file-system commands acceptEdits auto-approves inside the working directories.
pub fn is_simple_fs(cmd: &SimpleCommand) -> bool {
    matches!(cmd.program_name(), "mkdir" | "touch" | "mv" | "cp")
}

#[cfg(test)]
mod tests;
