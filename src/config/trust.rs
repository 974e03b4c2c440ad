//! Workspace trust: a cloned repository's own settings must not run commands on the user's
//! behalf (hooks, plugins, MCP servers, a status line, credential helpers) or widen what keel may do
//! (allow rules, a permissive default mode, extra directories, sandbox exceptions) before the
//! user has said they trust the folder.
//!
//! The first interactive run in a folder whose project settings hold such things (or keys that
//! would weaken a protection, which `precedence.rs` limits whatever the answer) asks once; a
//! "yes" is kept in `<keel home>/trusted-folders.json` and covers the folders below it.
//! Declining runs that session without them and asks again next time. Headless runs (`-p`)
//! apply project settings as before (scripts and CI run where they were set up to run), except
//! the permission mode, which needs `--trust-project` to rise to `acceptEdits`.
//!
//! Other subsystems ask [`ProjectTrust::allows_project_commands`] (from the session's setup) or
//! [`is_trusted`] before acting on project configuration.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::settings::{Settings, nested_in};

/// Where trusted folders are recorded, below keel's home.
pub const FILE: &str = "trusted-folders.json";

/// What the session may take from the project's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectTrust {
    /// The user trusts this folder (or one above it).
    Trusted,
    /// Not trusted: what runs commands or widens permissions in project settings is ignored.
    Untrusted,
    /// A headless run (`-p`): project settings apply as they are (documented in the README).
    Headless,
}

impl ProjectTrust {
    /// Whether project settings may run commands (hooks, MCP servers, helpers).
    pub fn allows_project_commands(self) -> bool {
        self != ProjectTrust::Untrusted
    }
}

/// Top-level keys of a project settings file that make keel run something.
const COMMAND_KEYS: &[(&str, &str)] = &[
    ("hooks", "hooks"),
    ("statusLine", "a status line command"),
    ("apiKeyHelper", "an API key helper"),
    ("awsAuthRefresh", "an AWS credential helper"),
    ("awsCredentialExport", "an AWS credential helper"),
    ("otelHeadersHelper", "a telemetry headers helper"),
    ("mcpServers", "MCP servers"),
    ("enableAllProjectMcpServers", "MCP servers"),
    ("enabledMcpjsonServers", "MCP servers"),
    ("env", "environment variables for commands"),
    ("plugins", "plugins (their hooks, skills and agents)"),
];

/// Nested keys that widen what runs without asking.
const WIDENING_KEYS: &[(&[&str], &str)] = &[
    (&["permissions", "allow"], "rules that approve tools without asking"),
    (&["permissions", "additionalDirectories"], "extra working directories"),
    (&["sandbox", "additionalWritePaths"], "sandbox write exceptions"),
    (&["languageServers", "servers"], "language servers to start"),
    (&["sandbox", "filesystem", "allowRead"], "sandbox read exceptions"),
    (&["sandbox", "allowNetwork"], "network access for sandboxed commands"),
    (&["sandbox", "limits"], "limits on the processes and memory of commands"),
    (
        &["sandbox", "failIfUnavailable"],
        "running commands without the sandbox",
    ),
];

/// A default mode looser than asking (`acceptEdits`, `bypassPermissions`, `dontAsk`).
fn widening_mode(v: &Value) -> bool {
    !matches!(v.as_str(), Some("default") | Some("plan"))
}

/// What the project's settings in `dir` would run, allow or weaken, one line per file naming
/// each key (`.claude/settings.json: `hooks` (hooks), …`); empty when there is nothing to trust.
/// Keys that weaken a protection are listed with what keel does with them (`precedence.rs`).
pub fn project_commands(settings: &Settings, dir: &Path) -> Vec<String> {
    project_findings(settings, dir)
        .into_iter()
        .map(|(file, items)| format!("{file}: {}", items.join(", ")))
        .collect()
}

/// [`project_commands`] as files and their items, for a question that shows one per line.
pub fn project_findings(settings: &Settings, dir: &Path) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for layer in settings.layers.iter().filter(|l| l.scope.is_project()) {
        let mut items: Vec<String> = Vec::new();
        for (key, what) in COMMAND_KEYS {
            if layer.value.get(*key).is_some_and(|v| !v.is_null()) {
                items.push(format!("`{key}` ({what})"));
            }
        }
        for (path, what) in WIDENING_KEYS {
            if nested_in(&layer.value, path).is_some() {
                items.push(format!("`{}` ({what})", path.join(".")));
            }
        }
        items.extend(weakened_protections(&layer.value));
        if !items.is_empty() {
            let file = layer
                .path
                .as_deref()
                .map(|p| p.strip_prefix(dir).unwrap_or(p).display().to_string())
                .unwrap_or_default();
            out.push((file, items));
        }
    }
    if dir.join(".mcp.json").is_file() {
        out.push((".mcp.json".into(), vec!["`mcpServers` (MCP servers)".into()]));
    }
    out
}

/// Keys of one project file that would weaken a protection, each with what keel does with it.
fn weakened_protections(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let is = |path: &[&str], want: bool| nested_in(v, path).and_then(Value::as_bool) == Some(want);
    if is(&["sandbox", "enabled"], false) {
        out.push("`sandbox.enabled: false` (ignored: a project cannot weaken the sandbox)".to_string());
    }
    if is(&["sandbox", "failIfUnavailable"], false) {
        out.push("`sandbox.failIfUnavailable: false` (ignored: a project cannot weaken the sandbox)".to_string());
    }
    if nested_in(v, &["sandbox", "filesystem", "allowRead"]).is_some() {
        out.push("`sandbox.filesystem.allowRead` (ignored: only your settings open more of the disk)".to_string());
    }
    if is(&["disableAllHooks"], true) {
        out.push("`disableAllHooks` (turns off only the project's own hooks)".to_string());
    }
    match nested_in(v, &["permissions", "defaultMode"]).and_then(Value::as_str) {
        Some(m @ "acceptEdits") => out.push(format!(
            "`permissions.defaultMode: {m}` (edits without asking; only if you trust this folder)"
        )),
        Some(m @ ("bypassPermissions" | "dontAsk")) => out.push(format!(
            "`permissions.defaultMode: {m}` (ignored: a project cannot raise the mode above yours)"
        )),
        _ => {}
    }
    out
}

/// Removes from the project layers what runs commands or widens permissions (an untrusted
/// folder); deny and ask rules and everything else stay. Returns what was dropped.
pub fn restrict(settings: &mut Settings, dir: &Path) -> Vec<String> {
    let dropped = project_commands(settings, dir);
    for layer in settings.layers.iter_mut().filter(|l| l.scope.is_project()) {
        let Some(map) = layer.value.as_object_mut() else {
            continue;
        };
        for (key, _) in COMMAND_KEYS {
            map.remove(*key);
        }
        for (path, _) in WIDENING_KEYS {
            let Some((key, parents)) = path.split_last() else {
                continue;
            };
            let mut inner = Some(&mut *map);
            for p in parents {
                inner = match inner.and_then(|m| m.get_mut(*p)) {
                    Some(Value::Object(o)) => Some(o),
                    _ => None,
                };
            }
            if let Some(inner) = inner {
                inner.remove(*key);
            }
        }
        if let Some(Value::Object(perms)) = map.get_mut("permissions")
            && perms.get("defaultMode").is_some_and(widening_mode)
        {
            perms.remove("defaultMode");
        }
        map.remove("disableAllHooks");
        if let Some(Value::Object(sandbox)) = map.get_mut("sandbox") {
            for key in ["enabled", "failIfUnavailable"] {
                if sandbox.get(key) == Some(&Value::Bool(false)) {
                    sandbox.remove(key);
                }
            }
            if let Some(Value::Object(fs)) = sandbox.get_mut("filesystem") {
                fs.remove("allowRead");
            }
        }
    }
    dropped
}

fn trust_file(keel_home: &Path) -> PathBuf {
    keel_home.join(FILE)
}

fn load(keel_home: &Path) -> Value {
    std::fs::read_to_string(trust_file(keel_home))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| serde_json::json!({}))
}

/// Whether the user trusts `dir` (canonical) or a folder above it.
pub fn is_trusted(keel_home: &Path, dir: &Path) -> bool {
    let record = load(keel_home);
    let Some(folders) = record.get("folders").and_then(Value::as_object) else {
        return false;
    };
    dir.ancestors()
        .any(|d| d.to_str().is_some_and(|s| folders.contains_key(s)))
}

/// Records that the user trusts `dir` (and so the folders below it).
pub fn trust(keel_home: &Path, dir: &Path) -> std::io::Result<()> {
    let key = dir
        .to_str()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the folder's path is not UTF-8"))?;
    let mut record = load(keel_home);
    let folders = record
        .as_object_mut()
        .map(|o| o.entry("folders").or_insert_with(|| serde_json::json!({})));
    if let Some(Value::Object(folders)) = folders {
        folders.insert(
            key.to_string(),
            serde_json::json!({"trustedAt": chrono::Utc::now().to_rfc3339()}),
        );
    }
    let mut text = serde_json::to_string_pretty(&record).map_err(std::io::Error::other)?;
    text.push('\n');
    crate::fsutil::write_atomic(&trust_file(keel_home), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, s: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    }

    #[test]
    fn trust_is_remembered_for_the_folder_and_below() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("keel");
        let repo = t.path().join("repo");
        assert!(!is_trusted(&home, &repo));
        trust(&home, &repo).unwrap();
        assert!(is_trusted(&home, &repo));
        assert!(is_trusted(&home, &repo.join("sub/dir")));
        assert!(!is_trusted(&home, t.path()));
        assert!(!is_trusted(&home, &t.path().join("repo2")));
    }

    #[test]
    fn untrusted_projects_lose_what_runs_or_widens_and_keep_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let proj = t.path().join("proj");
        write(
            &home.join(".keel/settings.json"),
            r#"{"hooks": {"Stop": []}, "permissions": {"allow": ["Bash(ls:*)"]}}"#,
        );
        write(
            &proj.join(".claude/settings.json"),
            r#"{"hooks": {"SessionStart": []}, "model": "opus",
                "permissions": {"allow": ["Bash"], "deny": ["Read(.env)"], "defaultMode": "bypassPermissions"},
                "sandbox": {"enabled": true, "allowNetwork": true,
                            "filesystem": {"allowRead": ["~"], "denyRead": ["secrets"]}}}"#,
        );
        write(
            &proj.join(".keel/settings.local.json"),
            r#"{"permissions": {"defaultMode": "plan"}}"#,
        );
        let mut s = Settings::load(None, &home.join(".keel"), &proj, None).unwrap();
        let found = project_commands(&s, &proj);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(".claude/settings.json: `hooks` (hooks)"),
            "{found:?}"
        );
        for key in [
            "`permissions.allow`",
            "`sandbox.allowNetwork`",
            "`permissions.defaultMode: bypassPermissions`",
        ] {
            assert!(found[0].contains(key), "{key} in {found:?}");
        }
        let dropped = restrict(&mut s, &proj);
        assert_eq!(dropped, found);
        assert!(project_commands(&s, &proj).is_empty());
        let p = t.path().join("proj2");
        write(
            &p.join(".claude/settings.json"),
            r#"{"disableAllHooks": true, "sandbox": {"enabled": false, "filesystem": {"allowRead": ["~"]}}}"#,
        );
        let weak = project_commands(&Settings::load(None, &home.join(".keel"), &p, None).unwrap(), &p);
        for key in [
            "`disableAllHooks`",
            "`sandbox.enabled: false`",
            "`sandbox.filesystem.allowRead`",
        ] {
            assert!(weak.len() == 1 && weak[0].contains(key), "{key} in {weak:?}");
        }
        // The user's own layer is untouched; restrictive project settings stay.
        assert!(s.layers[0].value.get("hooks").is_some());
        let allow: Vec<String> = s
            .strings(&["permissions", "allow"])
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(allow, vec!["Bash(ls:*)"]);
        assert_eq!(s.strings(&["permissions", "deny"]).unwrap().len(), 1);
        assert_eq!(s.nested(&["permissions", "defaultMode"]).unwrap().0, "plan");
        assert_eq!(s.scalar("model").unwrap().0, "opus");
        assert_eq!(s.flag(&["sandbox", "enabled"]).unwrap(), Some(true));
        assert_eq!(s.flag(&["sandbox", "allowNetwork"]).unwrap(), None);
        // Reading more of the home is a widening; hiding more is not.
        assert!(s.strings(&["sandbox", "filesystem", "allowRead"]).unwrap().is_empty());
        assert_eq!(s.strings(&["sandbox", "filesystem", "denyRead"]).unwrap().len(), 1);
    }
}
