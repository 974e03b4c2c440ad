//! Whether a `.git` directory a sandboxed command made runs nothing: it may stay when it holds
//! what `git init`, commits, branches and remotes leave, and nothing that makes git run a
//! program later outside the sandbox — hooks (only the `*.sample` files `git init` copies,
//! which git never runs), configuration keys other than a short list of inert ones (so no
//! `core.hooksPath`, `core.fsmonitor`, `core.sshCommand`, `core.pager`, diff or filter
//! drivers, aliases, `include.path`, …), `commondir`, `config.worktree`, submodule and worktree
//! directories, an operation in progress (a rebase's todo list holds `exec` lines), links, and
//! files with a second name elsewhere (which a later command could change through that name).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Entries a plain repository's `.git` holds.
const ENTRIES: &[&str] = &[
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "AUTO_MERGE",
    "COMMIT_EDITMSG",
    "TAG_EDITMSG",
    "description",
    "config",
    "index",
    "packed-refs",
    "shallow",
    "hooks",
    "info",
    "logs",
    "objects",
    "refs",
    "branches",
];

/// Most entries looked at; a larger `.git` is not kept.
const MAX_ENTRIES: usize = 200_000;
/// Largest configuration read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `Ok` when the `.git` directory `dir` runs nothing; else why not.
pub fn check(dir: &Path) -> Result<(), String> {
    let meta = dir.symlink_metadata().map_err(|e| format!("it cannot be read ({e})"))?;
    if !meta.is_dir() {
        return Err("it is not a directory (a `.git` file points git at another repository)".into());
    }
    let mut seen = 0;
    for e in std::fs::read_dir(dir).map_err(|e| format!("it cannot be read ({e})"))? {
        let e = e.map_err(|e| format!("it cannot be read ({e})"))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !ENTRIES.contains(&name.as_str()) {
            return Err(format!("it holds `{name}`, which a plain repository has not"));
        }
        let path = e.path();
        walk(&path, &name, name != "objects", &mut seen)?;
        match name.as_str() {
            "hooks" => hooks(&path)?,
            "config" => config(&path)?,
            _ => {}
        }
    }
    Ok(())
}

/// No links anywhere, no file with a second name (outside `objects`, where a local clone
/// shares files), no special files.
fn walk(path: &Path, rel: &str, single_names: bool, seen: &mut usize) -> Result<(), String> {
    *seen += 1;
    if *seen > MAX_ENTRIES {
        return Err(format!("it holds more than {MAX_ENTRIES} entries"));
    }
    let meta = path
        .symlink_metadata()
        .map_err(|e| format!("`{rel}` cannot be read ({e})"))?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(format!("`{rel}` is a link"));
    }
    if ft.is_dir() {
        for e in std::fs::read_dir(path).map_err(|e| format!("`{rel}` cannot be read ({e})"))? {
            let e = e.map_err(|e| format!("`{rel}` cannot be read ({e})"))?;
            let child = format!("{rel}/{}", e.file_name().to_string_lossy());
            walk(&e.path(), &child, single_names, seen)?;
        }
        return Ok(());
    }
    if !ft.is_file() {
        return Err(format!("`{rel}` is not a regular file"));
    }
    if single_names && meta.nlink() > 1 {
        return Err(format!("`{rel}` has another name outside `.git`"));
    }
    Ok(())
}

/// Only the samples `git init` copies, which git never runs.
fn hooks(dir: &Path) -> Result<(), String> {
    for e in std::fs::read_dir(dir).map_err(|e| format!("`hooks` cannot be read ({e})"))? {
        let e = e.map_err(|e| format!("`hooks` cannot be read ({e})"))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let plain = e.file_type().is_ok_and(|t| t.is_file());
        if !plain || !name.ends_with(".sample") {
            return Err(format!("it holds the hook `hooks/{name}`"));
        }
    }
    Ok(())
}

fn config(path: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| format!("its `config` cannot be read ({e})"))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err("its `config` is too large".into());
    }
    check_config(&text)
}

/// Reads git configuration conservatively: only the plain form `git init` and `git config`
/// write (no continuation lines, escapes, or keys on a section's line) is understood, and any
/// other line counts against the repository, so nothing git would read as a key goes unseen.
pub fn check_config(text: &str) -> Result<(), String> {
    let unplain = |n: usize| format!("line {n} of its `config` is not in the plain form keel reads");
    if text.contains(['\0', '\\']) {
        return Err("its `config` holds escapes or NUL bytes".into());
    }
    let mut section: Option<(String, Option<String>)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let inner = rest.strip_suffix(']').ok_or_else(|| unplain(n))?;
            section = Some(header(inner).ok_or_else(|| unplain(n))?);
            continue;
        }
        let (name, sub) = section.as_ref().ok_or_else(|| unplain(n))?;
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line, None),
        };
        let plain_key = key.starts_with(|c: char| c.is_ascii_alphabetic())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !plain_key {
            return Err(unplain(n));
        }
        let key = key.to_ascii_lowercase();
        if !inert(name, sub.as_deref(), &key, value) {
            let full = match sub {
                Some(s) => format!("{name}.{s}.{key}"),
                None => format!("{name}.{key}"),
            };
            return Err(format!("its configuration sets `{full}`"));
        }
    }
    Ok(())
}

/// `name` or `name "subsection"`; the name lowercased.
fn header(inner: &str) -> Option<(String, Option<String>)> {
    let inner = inner.trim();
    let (name, sub) = match inner.split_once(char::is_whitespace) {
        None => (inner, None),
        Some((name, rest)) => {
            let quoted = rest.trim().strip_prefix('"')?.strip_suffix('"')?;
            if quoted.contains('"') {
                return None;
            }
            (name, Some(quoted.to_string()))
        }
    };
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    plain.then(|| (name.to_ascii_lowercase(), sub))
}

/// Keys that only describe the repository, its identity, branches and remotes.
fn inert(section: &str, sub: Option<&str>, key: &str, value: Option<&str>) -> bool {
    match (section, sub.is_some()) {
        ("core", false) => matches!(
            key,
            "repositoryformatversion"
                | "filemode"
                | "bare"
                | "logallrefupdates"
                | "ignorecase"
                | "precomposeunicode"
                | "symlinks"
                | "autocrlf"
                | "eol"
                | "safecrlf"
        ),
        ("extensions", false) => matches!(key, "objectformat" | "refstorage"),
        ("init", false) => key == "defaultbranch",
        ("user", false) => matches!(key, "name" | "email"),
        // `ext::` and `fd::` addresses run a program instead of connecting.
        ("remote", true) if matches!(key, "url" | "pushurl") => value.is_some_and(|v| {
            let v = v.trim_matches('"').to_ascii_lowercase();
            !v.starts_with("ext::") && !v.starts_with("fd::") && !v.starts_with('-')
        }),
        ("remote", true) => matches!(key, "fetch" | "push" | "tagopt" | "prune" | "mirror"),
        ("branch", true) => matches!(key, "remote" | "merge" | "rebase" | "pushremote"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_git_init_and_remotes_write_is_inert() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
            \tlogallrefupdates = true\n[user]\n\tname = A Person\n\temail = a@example.com\n\
            [remote \"origin\"]\n\turl = https://example.com/r.git\n\
            \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
            \tmerge = refs/heads/main\n";
        assert_eq!(check_config(text), Ok(()));
    }

    #[test]
    fn configuration_that_runs_programs_is_named() {
        for (text, key) in [
            ("[core]\n\thooksPath = /tmp/x\n", "core.hookspath"),
            ("[core]\n\tfsmonitor = touch x\n", "core.fsmonitor"),
            ("[core]\nsshCommand = evil\n", "core.sshcommand"),
            ("[alias]\n\tst = !sh -c x\n", "alias.st"),
            ("[include]\n\tpath = /tmp/more\n", "include.path"),
            ("[filter \"lfs\"]\n\tclean = evil\n", "filter.lfs.clean"),
            ("[diff \"x\"]\n\ttextconv = evil\n", "diff.x.textconv"),
            ("[CORE]\n\tFSMONITOR\n", "core.fsmonitor"),
            ("[remote \"o\"]\n\turl = ext::sh -c evil\n", "remote.o.url"),
            ("[remote \"o\"]\n\tuploadpack = evil\n", "remote.o.uploadpack"),
        ] {
            let e = check_config(text).unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn forms_keel_does_not_read_count_against_the_repository() {
        for text in [
            "[core] fsmonitor = x\n",
            "[core]\n\tbare = false \\\n\tfsmonitor = x\n",
            "fsmonitor = x\n",
            "[core.sub]\n\tbare = false\n",
            "[remote \"a\"b\"]\n\turl = x\n",
            "[core]\n\tfs.monitor = x\n",
        ] {
            assert!(check_config(text).is_err(), "{text}");
        }
    }

    #[test]
    fn a_fresh_repository_passes_and_hooks_or_links_do_not() {
        let d = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(d.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            crate::console::err_line!("skipped: no git here");
            return;
        }
        let git = d.path().join(".git");
        assert_eq!(check(&git), Ok(()));
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        assert!(check(&git).unwrap_err().contains("hooks/pre-commit"));
        std::fs::remove_file(git.join("hooks/pre-commit")).unwrap();
        std::fs::write(d.path().join("outside"), "[core]\n").unwrap();
        std::fs::remove_file(git.join("config")).unwrap();
        std::fs::hard_link(d.path().join("outside"), git.join("config")).unwrap();
        assert!(check(&git).unwrap_err().contains("another name"));
        std::fs::remove_file(git.join("config")).unwrap();
        std::os::unix::fs::symlink("../outside", git.join("config")).unwrap();
        assert!(check(&git).unwrap_err().contains("link"));
        std::fs::remove_file(git.join("config")).unwrap();
        std::fs::write(git.join("commondir"), "/elsewhere\n").unwrap();
        assert!(check(&git).unwrap_err().contains("commondir"));
    }
}
