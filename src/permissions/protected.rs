//! Built-in protections: destructive commands that always need an explicit human or rule,
//! credential files that are not read unless allowed, files that configure keel or git (a
//! change there runs code later), and the set of commands that only observe.

use std::path::Path;

pub use crate::sandbox::secrets::credential_reason;

use crate::shell::parse::{Resolved, SimpleCommand, Word, resolve_word};

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
        // What keeps lost commits and stashes recoverable.
        "reflog" if rest.first().is_some_and(|a| matches!(*a, "expire" | "delete")) => {
            Some("`git reflog expire/delete` removes the record that makes lost commits recoverable".into())
        }
        "stash" if rest.first().is_some_and(|a| matches!(*a, "clear" | "drop")) => {
            Some("`git stash clear/drop` deletes stashed work".into())
        }
        "prune" => Some("`git prune` deletes unreachable commits for good".into()),
        "gc" if rest.iter().any(|a| matches!(*a, "--prune=now" | "--prune=all")) => {
            Some("`git gc --prune=now` deletes unreachable commits for good".into())
        }
        "branch"
            if rest.contains(&"-D")
                || (rest.iter().any(|a| matches!(*a, "-d" | "--delete"))
                    && rest.iter().any(|a| matches!(*a, "-f" | "--force"))) =>
        {
            Some("`git branch -D` deletes a branch whether or not it was merged".into())
        }
        "checkout" | "switch"
            if rest
                .iter()
                .any(|a| matches!(*a, "-f" | "--force" | "--discard-changes")) =>
        {
            Some(format!("`git {sub} --force` discards uncommitted work"))
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

/// Files whose change makes something run later outside the model's view: anything in `.git`
/// (config, hooks, `commondir`, `info/`) and `.git` itself, keel's and the reference tool's
/// settings, commands and hooks, MCP server lists, shell start-up files and the user's git
/// and ssh configuration. Writing them always needs the user (or an explicit allow rule), in
/// every mode.
pub fn config_reason(path: &Path, home: Option<&Path>) -> Option<String> {
    let components: Vec<&str> = path.iter().filter_map(|c| c.to_str()).collect();
    let has = |dir: &str| components.contains(&dir);
    let name = path.file_name()?.to_str()?;
    if has(".git") {
        return Some(format!(
            "{} is part of git's own directory, whose configuration and hooks make git run programs",
            path.display()
        ));
    }
    if has(".claude") || has(".keel") {
        return Some(format!(
            "{} is agent configuration (settings, hooks, commands)",
            path.display()
        ));
    }
    if name == ".mcp.json" {
        return Some(format!("{} names MCP servers that agents start", path.display()));
    }
    if let Some(h) = home
        && let Ok(rel) = path.strip_prefix(h)
        && crate::sandbox::policy::HOME_CONFIG.iter().any(|c| rel.starts_with(c))
    {
        return Some(format!(
            "{} configures your shell, git, ssh or other tools, or holds programs found first on PATH, which run later",
            path.display()
        ));
    }
    None
}

#[cfg(test)]
mod tests;
