//! Git commands that throw away work or history keel cannot bring back, and `git config`
//! writes, read from a command's words as git reads its options: long options may be
//! abbreviated (`--har` is `--hard`), short ones bundled (`-qf`).
//!
//! Where git's reading depends on the repository (`git checkout NAME` switches to a branch
//! NAME, or restores a file NAME), the guard leans to "destructive": a name that exists as a
//! path, looks like a pathspec, or cannot be resolved counts as a path.

use std::path::{Path, PathBuf};

use crate::shell::parse::{Resolved, SimpleCommand, Word, resolve_word};

/// A git command line: the subcommand, its arguments and the directory git works in (the
/// shell's, moved by `-C dir`; `None` when keel cannot tell).
struct Invocation<'a> {
    sub: &'a str,
    rest: &'a [&'a str],
    dir: Option<PathBuf>,
}

/// The git subcommand and its arguments, skipping global options like `-C dir`.
pub(super) fn git_sub<'a>(args: &'a [&'a str]) -> Option<(&'a str, &'a [&'a str])> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match *a {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--config-env" | "--namespace" => i += 2,
            a if a.starts_with('-') => i += 1,
            sub => return Some((sub, &args[i + 1..])),
        }
    }
    None
}

fn invocation<'a>(
    cmd: &SimpleCommand,
    args: &'a [&'a str],
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Option<Invocation<'a>> {
    let (sub, rest) = git_sub(args)?;
    let mut dir = cwd.map(Path::to_path_buf);
    let globals = &args[..args.len() - rest.len() - 1];
    for pair in globals.windows(2).filter(|p| p[0] == "-C") {
        dir = dir.and_then(|d| match resolve_word(&word_of(cmd, pair[1]), &d, home) {
            Resolved::Paths(p) if p.len() == 1 => p.into_iter().next(),
            _ => None,
        });
    }
    Some(Invocation { sub, rest, dir })
}

/// An alias defined on the command line (`-c alias.x='checkout -- .'`, `--config-env`), or
/// `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_*` in the command's environment: the subcommand's name
/// then says nothing of what it does. (Configuration that runs programs is judged elsewhere:
/// such a command is never read-only.)
fn inline_config(cmd: &SimpleCommand, args: &[&str]) -> Option<String> {
    let globals = git_sub(args).map_or(args.len(), |(_, rest)| args.len() - rest.len() - 1);
    let is_alias = |v: &str| v.to_ascii_lowercase().starts_with("alias.");
    let mut i = 0;
    while i < globals {
        let a = args[i];
        let value = match a {
            "-c" | "--config-env" => args.get(i + 1).copied(),
            _ => a.strip_prefix("--config-env="),
        };
        if value.is_some_and(is_alias) {
            return Some("a git alias defined on the command line can make the subcommand do anything".into());
        }
        i += if matches!(
            a,
            "-C" | "-c" | "--config-env" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            2
        } else {
            1
        };
    }
    cmd.env
        .iter()
        .filter_map(|w| w.text.split_once('=').map(|(k, _)| k))
        .any(|k| k == "GIT_CONFIG_COUNT" || k.starts_with("GIT_CONFIG_KEY_") || k == "GIT_CONFIG_PARAMETERS")
        .then(|| {
            "git configuration given in the environment (`GIT_CONFIG_*`) can define aliases that do anything".into()
        })
}

/// The command's word with this text (for whether the shell expands it).
fn word_of(cmd: &SimpleCommand, text: &str) -> Word {
    cmd.words.iter().find(|w| w.text == text).cloned().unwrap_or(Word {
        text: text.to_string(),
        dynamic: false,
    })
}

/// Whether `arg` is the long option `full` as git accepts it: written out, or abbreviated to
/// any prefix longer than `--` (git takes an unambiguous prefix; an ambiguous one fails, so
/// reading every prefix as the option only errs towards asking). Only for options that make
/// a command destructive: an option that makes it harmless is recognised written out.
fn names(arg: &str, full: &str) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    name.len() > 2 && name.starts_with("--") && full.starts_with(name)
}

/// The letters of a bundle of short options (`-qf` → `qf`); `None` for a long option, `--`,
/// `-` or a word that is no option.
fn short_bundle(arg: &str) -> Option<&str> {
    arg.strip_prefix('-').filter(|b| !b.is_empty() && !b.starts_with('-'))
}

/// Whether a bundle of short options holds `flag` before any option that takes the rest of
/// the bundle as its value (`-bf` names a branch `f`, it does not force).
fn bundle_has(bundle: &str, flag: char, takes_value: &[char]) -> bool {
    for c in bundle.chars() {
        if c == flag {
            return true;
        }
        if takes_value.contains(&c) {
            return false;
        }
    }
    false
}

/// Why a git command is destructive, or `None`. `args` are the words after `git`.
pub(super) fn destructive(
    cmd: &SimpleCommand,
    args: &[&str],
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Option<String> {
    // An alias given on the command line makes any word mean anything.
    if let Some(why) = inline_config(cmd, args) {
        return Some(why);
    }
    let call = invocation(cmd, args, cwd, home)?;
    let (sub, rest) = (call.sub, call.rest);
    // Words `xargs` appends are paths keel never sees: `… | xargs git checkout` restores them.
    if cmd.wrappers.iter().any(|w| w == "xargs") && matches!(sub, "checkout" | "restore") {
        return Some(format!(
            "`xargs git {sub}` restores the paths it is given, discarding their changes"
        ));
    }
    let forced = |takes_value: &[char]| {
        rest.iter()
            .any(|a| names(a, "--force") || short_bundle(a).is_some_and(|b| bundle_has(b, 'f', takes_value)))
    };
    match sub {
        "reset" if rest.iter().any(|a| names(a, "--hard")) => {
            Some("`git reset --hard` discards uncommitted work".into())
        }
        "clean" if forced(&[]) => Some("`git clean -f` deletes untracked files".into()),
        "push" => push(rest),
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
        "switch" if forced(&['c', 'C']) || rest.iter().any(|a| names(a, "--discard-changes")) => {
            Some("`git switch --force` discards uncommitted work".into())
        }
        "checkout" if forced(&['b', 'B']) || rest.iter().any(|a| names(a, "--discard-changes")) => {
            Some("`git checkout --force` discards uncommitted work".into())
        }
        "checkout" => checkout_paths(cmd, rest, call.dir.as_deref(), home),
        "restore" => restore(rest),
        "commit" if rest.iter().take_while(|a| **a != "--").any(|a| names(a, "--amend")) => {
            Some("`git commit --amend` rewrites the last commit, which need not be this session's".into())
        }
        _ => None,
    }
}

fn push(rest: &[&str]) -> Option<String> {
    let forced = rest.iter().any(|a| {
        a.starts_with("--force")
            || names(a, "--force")
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

/// `git checkout` in its pathspec forms (`git checkout -- <paths>`, `git checkout .`,
/// `git checkout <tree> <paths>`, `--pathspec-from-file`): the files' uncommitted changes are
/// overwritten. Switching branches (`git checkout main`, `-b new`) keeps them.
fn checkout_paths(cmd: &SimpleCommand, rest: &[&str], dir: Option<&Path>, home: Option<&Path>) -> Option<String> {
    const WHY: &str = "`git checkout` with paths overwrites their uncommitted changes";
    let mut new_branch = false;
    let mut from_file = false;
    let mut positional: Vec<&str> = Vec::new();
    let mut after_dashes: Option<usize> = None;
    let mut i = 0;
    while let Some(&a) = rest.get(i) {
        i += 1;
        if let Some(n) = after_dashes.as_mut() {
            *n += 1;
        } else if a == "--" {
            after_dashes = Some(0);
        } else if matches!(a, "--orphan" | "-b" | "-B") {
            new_branch = true;
            i += 1;
        } else if a.starts_with("--orphan=") {
            new_branch = true;
        } else if names(a, "--pathspec-from-file") {
            from_file = true;
        } else if a == "--conflict" {
            i += 1;
        } else if let Some(bundle) = short_bundle(a) {
            // `-qb name` or `-bname`: a new branch; its name is the bundle's rest or the next word.
            if let Some(at) = bundle.find(['b', 'B']) {
                new_branch = true;
                if at + 1 == bundle.len() {
                    i += 1;
                }
            }
        } else if !a.starts_with("--") {
            positional.push(a);
        }
    }
    // A new branch starts from a commit; git refuses paths with it.
    if new_branch {
        return None;
    }
    let paths = from_file
        || after_dashes.is_some_and(|n| n > 0)
        || positional.len() >= 2
        || (after_dashes.is_none()
            && positional
                .first()
                .is_some_and(|name| may_be_path(&word_of(cmd, name), dir, home)));
    paths.then(|| WHY.to_string())
}

/// Whether the one name of `git checkout NAME` may be a path git would restore: it looks
/// like a pathspec, names something that exists, or keel cannot tell.
fn may_be_path(word: &Word, dir: Option<&Path>, home: Option<&Path>) -> bool {
    let t = word.text.as_str();
    if matches!(t, "." | "..") || t.starts_with(':') || t.ends_with('/') || t.contains(['*', '?', '[']) {
        return true;
    }
    let Some(dir) = dir else { return true };
    match resolve_word(word, dir, home) {
        Resolved::Paths(paths) => paths.iter().any(|p| p.symlink_metadata().is_ok()),
        Resolved::Unknown => true,
    }
}

/// `git restore` overwrites the working tree unless it is told to touch the index alone
/// (`--staged` without `--worktree`).
fn restore(rest: &[&str]) -> Option<String> {
    let (mut staged, mut worktree) = (false, false);
    let mut i = 0;
    while let Some(&a) = rest.get(i) {
        i += 1;
        match a {
            "--" => break,
            "--staged" => staged = true,
            "--no-worktree" => worktree = false,
            "--source" => i += 1,
            _ if names(a, "--worktree") => worktree = true,
            _ if names(a, "--no-staged") => staged = false,
            _ => {
                let Some(bundle) = short_bundle(a) else { continue };
                for (at, c) in bundle.char_indices() {
                    match c {
                        'S' => staged = true,
                        'W' => worktree = true,
                        's' => {
                            // `-s tree` or `-stree`: the source, the bundle's rest or the next word.
                            if at + 1 == bundle.len() {
                                i += 1;
                            }
                            break;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    (worktree || !staged).then(|| "`git restore` overwrites uncommitted changes in the working tree".to_string())
}

/// `git config` setting a value: configuration that can make git run programs later.
pub(super) fn config_write(args: &[&str]) -> Option<String> {
    let (sub, rest) = git_sub(args)?;
    let reads_only = rest.iter().any(|a| {
        matches!(
            *a,
            "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "--show-origin" | "--show-scope"
        ) || a.starts_with("--get")
    }) || rest.iter().filter(|a| !a.starts_with('-')).count() <= 1;
    (sub == "config" && !reads_only).then(|| "`git config` changes settings that can make git run programs".to_string())
}
