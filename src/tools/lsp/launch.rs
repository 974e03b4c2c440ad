//! How a language server is started without handing the repository a way in: its program is
//! looked up on PATH outside the workspace (the git top level and the working directories), it
//! gets the environment without the variables that look like secrets, and the servers that
//! would run repository code on their own are told not to: rust-analyzer runs no build scripts
//! or proc macros, typescript-language-server uses a TypeScript from outside the workspace.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Folders a server's program must not come from: `root`, its git top level, the working
/// directories (as given and resolved).
pub fn excluded(root: &Path, working_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::iter::once(root).chain(working_dirs.iter().map(PathBuf::as_path)) {
        out.push(d.to_path_buf());
        if let Ok(real) = d.canonicalize() {
            out.push(real);
        }
        if let Some(top) = git_top(d) {
            out.push(top);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The nearest folder at or above `dir` holding `.git` (a directory, or a worktree's file).
fn git_top(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

fn inside(path: &Path, excluded: &[PathBuf]) -> bool {
    let real = path.canonicalize().ok();
    excluded
        .iter()
        .any(|e| path.starts_with(e) || real.as_ref().is_some_and(|r| r.starts_with(e)))
}

/// An absolute program on PATH whose folder is outside `excluded` (a cloned repository must
/// not be able to put its own program where keel looks).
pub fn on_path(program: &str, excluded: &[PathBuf]) -> Option<PathBuf> {
    on_path_in(&std::env::var_os("PATH")?, program, excluded)
}

fn on_path_in(path: &OsStr, program: &str, excluded: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute() && !inside(dir, excluded))
        .map(|dir| dir.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The environment a server gets: keel's, without every variable `secrets` names.
pub fn server_env(
    all: impl IntoIterator<Item = (OsString, OsString)>,
    secrets: &[OsString],
) -> Vec<(OsString, OsString)> {
    all.into_iter().filter(|(k, _)| !secrets.contains(k)).collect()
}

/// The settings rust-analyzer gets (as `initializationOptions` and as its answer to
/// `workspace/configuration`): build scripts and proc macros are repository code, not run.
pub fn rust_analyzer_settings() -> Value {
    json!({"cargo": {"buildScripts": {"enable": false}}, "procMacro": {"enable": false}})
}

/// What a server started as `program` is told at `initialize`, and the section and value it
/// gets when it asks for its configuration. Err: the server cannot be started safely.
pub fn server_settings(program: &Path, excluded: &[PathBuf]) -> Result<Option<(String, Value)>, String> {
    settings_with_path(program, excluded, &std::env::var_os("PATH").unwrap_or_default())
}

/// [`server_settings`] with `path` as PATH.
fn settings_with_path(program: &Path, excluded: &[PathBuf], path: &OsStr) -> Result<Option<(String, Value)>, String> {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.as_str() {
        "rust-analyzer" => Ok(Some(("rust-analyzer".into(), rust_analyzer_settings()))),
        "typescript-language-server" => match tsserver_outside(program, excluded, path) {
            Some(tsserver) => Ok(Some((
                "typescript".into(),
                json!({"tsserver": {"path": tsserver.display().to_string()}}),
            ))),
            None => Err(
                "typescript-language-server would load the workspace's own TypeScript (its node_modules), and no \
                 TypeScript outside the workspace was found; install typescript next to the language server or \
                 globally (npm install -g typescript)"
                    .into(),
            ),
        },
        _ => Ok(None),
    }
}

/// A `tsserver.js` outside `excluded`: the one installed with the language server (its own
/// `node_modules`, or beside it in a global `node_modules`), else the `tsserver` on PATH.
fn tsserver_outside(program: &Path, excluded: &[PathBuf], path: &OsStr) -> Option<PathBuf> {
    let found = |candidate: PathBuf| {
        (candidate.is_file() && !inside(&candidate, excluded)).then(|| candidate.canonicalize().unwrap_or(candidate))
    };
    let real = program.canonicalize().ok()?;
    let beside = real.ancestors().skip(1).find_map(|d| {
        found(d.join("node_modules/typescript/lib/tsserver.js")).or_else(|| {
            (d.file_name() == Some(OsStr::new("node_modules")))
                .then(|| found(d.join("typescript/lib/tsserver.js")))
                .flatten()
        })
    });
    beside.or_else(|| {
        let bin = on_path_in(path, "tsserver", excluded)?.canonicalize().ok()?;
        found(bin.parent()?.parent()?.join("lib/tsserver.js"))
    })
}

/// The answer to a `workspace/configuration` request: the server's settings for the items that
/// ask for its section, `null` for the rest.
pub fn configuration_answer(settings: Option<&(String, Value)>, items: &[Value]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|item| match settings {
                Some((section, value)) if item.get("section").and_then(Value::as_str) == Some(section) => value.clone(),
                _ => Value::Null,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn path_entries_inside_the_repository_or_a_working_directory_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let repo = base.join("repo");
        let cwd = repo.join("sub/pkg");
        let other = base.join("extra");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        for dir in ["repo/tools", "extra/bin", "system/bin"] {
            executable(&base.join(dir).join("rust-analyzer"));
        }
        let excluded = excluded(&cwd, std::slice::from_ref(&other));
        let path = std::env::join_paths([repo.join("tools"), other.join("bin"), base.join("system/bin")]).unwrap();
        assert_eq!(
            on_path_in(&path, "rust-analyzer", &excluded),
            Some(base.join("system/bin/rust-analyzer")),
            "the repository's tools folder (above the working directory) and the added directory are not looked in"
        );
        let only_theirs = std::env::join_paths([repo.join("tools"), other.join("bin")]).unwrap();
        assert_eq!(on_path_in(&only_theirs, "rust-analyzer", &excluded), None);
    }

    #[test]
    fn secrets_stay_out_of_a_servers_environment() {
        let all = vec![
            (OsString::from("PATH"), OsString::from("/usr/bin")),
            (OsString::from("ANTHROPIC_API_KEY"), OsString::from("sk-1")),
            (OsString::from("GITHUB_TOKEN"), OsString::from("gh-1")),
        ];
        let kept = server_env(
            all,
            &[OsString::from("ANTHROPIC_API_KEY"), OsString::from("GITHUB_TOKEN")],
        );
        assert_eq!(kept, vec![(OsString::from("PATH"), OsString::from("/usr/bin"))]);
    }

    #[test]
    fn rust_analyzer_runs_no_repository_code_and_typescript_uses_an_outside_tsserver() {
        let (section, value) = server_settings(Path::new("/usr/bin/rust-analyzer"), &[])
            .unwrap()
            .unwrap();
        assert_eq!(section, "rust-analyzer");
        assert_eq!(value["cargo"]["buildScripts"]["enable"], false);
        assert_eq!(value["procMacro"]["enable"], false);
        let answer = configuration_answer(
            Some(&(section, value.clone())),
            &[json!({"section": "rust-analyzer"}), json!({"section": "files"})],
        );
        assert_eq!(answer, json!([value, null]));

        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let global = base.join("global/lib/node_modules");
        let cli = global.join("typescript-language-server/lib/cli.mjs");
        executable(&cli);
        // As npm installs it: a link on PATH named as the program.
        let server = base.join("global/bin/typescript-language-server");
        std::fs::create_dir_all(server.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&cli, &server).unwrap();
        let work = base.join("work");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        std::fs::create_dir_all(work.join("node_modules/typescript/lib")).unwrap();
        std::fs::write(work.join("node_modules/typescript/lib/tsserver.js"), "// theirs\n").unwrap();
        let excluded = excluded(&work, &[]);
        // The workspace's own tsserver on PATH does not count either.
        executable(&work.join("node_modules/.bin/tsserver"));
        let theirs_on_path = std::env::join_paths([work.join("node_modules/.bin")]).unwrap();
        assert!(
            settings_with_path(&server, &excluded, &theirs_on_path).is_err(),
            "without an outside TypeScript the server is not started"
        );
        let ours = global.join("typescript/lib/tsserver.js");
        std::fs::create_dir_all(ours.parent().unwrap()).unwrap();
        std::fs::write(&ours, "// ours\n").unwrap();
        let (section, value) = settings_with_path(&server, &excluded, &theirs_on_path)
            .unwrap()
            .unwrap();
        assert_eq!(section, "typescript");
        assert_eq!(value["tsserver"]["path"], ours.display().to_string());
    }
}
