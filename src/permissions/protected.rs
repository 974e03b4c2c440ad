//! Built-in protections: destructive commands that always need an explicit human or rule,
//! credential files that are not read unless allowed, and the read-only command set.

use std::path::{Path, PathBuf};

use super::shell::SimpleCommand;

/// Why a command is destructive, or `None`.
pub fn destructive(cmd: &SimpleCommand, shell_cwd: &Path, workspace: &Path, home: Option<&Path>) -> Option<String> {
    let w: Vec<&str> = cmd.words.iter().map(String::as_str).collect();
    let prog = program_name(w.first()?);
    let args = &w[1..];
    match prog {
        "git" => git_destructive(args),
        "rm" => rm_destructive(args, shell_cwd, workspace, home),
        "terraform" | "tofu" => (args.first() == Some(&"destroy")
            || (args.first() == Some(&"apply") && args.contains(&"-destroy")))
        .then(|| format!("`{prog} destroy` deletes infrastructure")),
        "pulumi" | "cdk" => {
            (args.first() == Some(&"destroy")).then(|| format!("`{prog} destroy` deletes infrastructure"))
        }
        _ => None,
    }
}

fn program_name(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// The git subcommand and its arguments, skipping global options like `-C dir`.
fn git_sub<'a>(args: &'a [&'a str]) -> Option<(&'a str, &'a [&'a str])> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match *a {
            "-C" | "-c" | "--git-dir" | "--work-tree" => i += 2,
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

fn rm_destructive(args: &[&str], shell_cwd: &Path, workspace: &Path, home: Option<&Path>) -> Option<String> {
    let mut recursive = false;
    let mut force = false;
    let mut targets = Vec::new();
    let mut options_done = false;
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
            targets.push(*a);
        }
    }
    if !(recursive && force) {
        return None;
    }
    for t in targets {
        let expanded = expand_home(t, home);
        let path = crate::tools::paths::normalize(&shell_cwd.join(&expanded));
        let path = if expanded.ends_with("/*") || expanded == "*" {
            path.parent().map(Path::to_path_buf).unwrap_or(path)
        } else {
            path
        };
        let critical = path == Path::new("/") || home.is_some_and(|h| path == h) || workspace.starts_with(&path);
        if critical {
            return Some(format!("`rm -rf {t}` would delete {}", path.display()));
        }
    }
    None
}

fn expand_home(t: &str, home: Option<&Path>) -> String {
    let h = home.map(|h| h.display().to_string()).unwrap_or_else(|| "~".into());
    if t == "~" || t == "$HOME" || t == "${HOME}" {
        h
    } else if let Some(rest) = t.strip_prefix("~/").or_else(|| t.strip_prefix("$HOME/")) {
        format!("{h}/{rest}")
    } else {
        t.to_string()
    }
}

/// Credential files read only when an allow rule names them.
pub fn credential_reason(path: &Path, home: Option<&Path>) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let is_secret_file = name.starts_with(".env") || name.ends_with(".pem") || name.ends_with(".key");
    let in_secret_dir = home.is_some_and(|h| path.starts_with(h.join(".ssh")) || path.starts_with(h.join(".aws")));
    (is_secret_file || in_secret_dir).then(|| format!("{} may hold credentials", path.display()))
}

/// Commands that only observe and redirect nothing into files.
pub fn is_read_only(cmd: &SimpleCommand) -> bool {
    cmd.writes.is_empty() && is_observing_program(cmd)
}

/// Whether the program and its arguments only observe (redirections are judged separately).
pub fn is_observing_program(cmd: &SimpleCommand) -> bool {
    let w: Vec<&str> = cmd.words.iter().map(String::as_str).collect();
    let Some(first) = w.first() else { return false };
    let args = &w[1..];
    match program_name(first) {
        "ls" | "cat" | "head" | "tail" | "grep" | "egrep" | "fgrep" | "rg" | "wc" | "which" | "diff" | "stat"
        | "du" | "df" | "pwd" | "echo" | "printf" | "cd" | "true" | "false" | "test" | "[" | "file" | "tree"
        | "uniq" | "cut" | "basename" | "dirname" | "realpath" | "readlink" | "date" | "whoami" | "uname" | "id"
        | "hostname" | "type" | "cmp" | "md5sum" | "sha256sum" | "nl" | "column" | "jq" | "less" | "more" => true,
        "sort" => !args.iter().any(|a| *a == "-o" || a.starts_with("--output")),
        "find" => !args.iter().any(|a| {
            matches!(
                *a,
                "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete" | "-fprint" | "-fprintf" | "-fls"
            )
        }),
        "sed" => {
            args.first() == Some(&"-n") && !args.iter().any(|a| a.starts_with("-i") || a.starts_with("--in-place"))
        }
        "command" => matches!(args.first(), Some(&"-v") | Some(&"-V")),
        "git" => match git_sub(args) {
            Some((sub, rest)) => match sub {
                "status" | "log" | "diff" | "show" | "blame" | "rev-parse" | "ls-files" | "describe" | "shortlog"
                | "grep" | "reflog" | "cat-file" | "ls-tree" | "merge-base" => true,
                "branch" => rest
                    .iter()
                    .all(|a| matches!(*a, "-a" | "-r" | "-v" | "-vv" | "--list" | "--show-current" | "--all")),
                "remote" => rest.iter().all(|a| *a == "-v"),
                "stash" => rest.first() == Some(&"list"),
                "tag" => rest.is_empty() || rest == ["-l"] || rest == ["--list"],
                _ => false,
            },
            None => false,
        },
        _ => false,
    }
}

/// Arguments of a read-only command that look like file paths, resolved (best effort).
pub fn path_args(cmd: &SimpleCommand, shell_cwd: &Path) -> Vec<PathBuf> {
    cmd.words
        .iter()
        .skip(1)
        .chain(cmd.reads.iter())
        .filter(|a| !a.starts_with('-') && !a.is_empty())
        .map(|a| crate::tools::paths::resolve(shell_cwd, a))
        .collect()
}

/// Simple file-system commands acceptEdits auto-approves inside the working directories.
pub fn is_simple_fs(cmd: &SimpleCommand) -> bool {
    matches!(program_name(cmd.program()), "mkdir" | "touch" | "mv" | "cp")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::shell::parse;

    fn d(s: &str) -> Option<String> {
        let c = &parse(s).unwrap()[0];
        destructive(
            c,
            Path::new("/w/proj"),
            Path::new("/w/proj"),
            Some(Path::new("/home/u")),
        )
    }

    #[test]
    fn destructive_commands() {
        for s in [
            "git reset --hard HEAD~1",
            "git clean -fd",
            "git clean -xdf",
            "git push --force origin main",
            "git push -f",
            "git push origin +main",
            "rm -rf /",
            "rm -rf ~",
            "rm -fr $HOME",
            "rm -r -f .",
            "rm -rf ..",
            "rm -rf /w/proj",
            "terraform destroy -auto-approve",
            "pulumi destroy",
            "cdk destroy",
        ] {
            assert!(d(s).is_some(), "{s}");
        }
        for s in [
            "git reset HEAD file",
            "git clean -n",
            "git push origin feature",
            "git push --force origin feature",
            "rm -rf target",
            "rm -f /tmp/x",
            "terraform plan",
        ] {
            assert!(d(s).is_none(), "{s}");
        }
    }

    #[test]
    fn read_only_classification() {
        let ro = |s: &str| is_read_only(&parse(s).unwrap()[0]);
        assert!(ro("ls -la"));
        assert!(ro("git status"));
        assert!(ro("git -C sub log --oneline"));
        assert!(ro("find . -name '*.rs'"));
        assert!(!ro("find . -delete"));
        assert!(!ro("echo hi > f"));
        assert!(!ro("git branch -D x"));
        assert!(!ro("sed -i s/a/b/ f"));
        assert!(!ro("rm x"));
    }

    #[test]
    fn credentials() {
        let home = Some(Path::new("/home/u"));
        assert!(credential_reason(Path::new("/p/.env"), home).is_some());
        assert!(credential_reason(Path::new("/p/.env.local"), home).is_some());
        assert!(credential_reason(Path::new("/p/tls/server.key"), home).is_some());
        assert!(credential_reason(Path::new("/home/u/.ssh/config"), home).is_some());
        assert!(credential_reason(Path::new("/p/src/env.rs"), home).is_none());
    }
}
