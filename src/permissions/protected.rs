//! Built-in protections: destructive commands that always need an explicit human or rule,
//! credential files that are not read unless allowed, files that configure keel or git (a
//! change there runs code later), and the set of commands that only observe.

use std::path::Path;

pub use crate::sandbox::secrets::credential_reason;

use crate::shell::parse::{Resolved, SimpleCommand, Word, resolve_word};

mod git;

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
        "git" => git::destructive(cmd, args, cwd, home),
        "rm" => rm_destructive(cmd, args, cwd, workspace, home),
        "terraform" | "tofu" => terraform_destroys(args).then(|| format!("`{prog} destroy` deletes infrastructure")),
        // `pulumi down` is `pulumi destroy`; global options may come first (`-s dev destroy`).
        "pulumi" | "cdk" => args
            .iter()
            .take_while(|a| **a != "--")
            .any(|a| *a == "destroy" || (prog == "pulumi" && *a == "down"))
            .then(|| format!("`{prog} destroy` deletes infrastructure")),
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
    git::config_write(&words[1..])
}

fn program_name(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// `terraform destroy` and `terraform apply -destroy` (the flag also as `--destroy` or
/// `-destroy=true`), after global options such as `-chdir=dir`. A `-target` does not make
/// it harmless: what it names is still deleted.
fn terraform_destroys(args: &[&str]) -> bool {
    let mut rest = args.iter().skip_while(|a| a.starts_with('-'));
    match rest.next() {
        Some(&"destroy") => true,
        Some(&"apply") => rest.any(|a| {
            let flag = a.trim_start_matches('-');
            a.starts_with('-') && (flag == "destroy" || flag.strip_prefix("destroy=").is_some_and(|v| v != "false"))
        }),
        _ => false,
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
