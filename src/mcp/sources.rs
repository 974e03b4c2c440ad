//! Where MCP servers are configured, merged by name with clear precedence, and whether a
//! project's servers may start.
//!
//! Precedence, lowest first: user (`~/.claude.json` `mcpServers`, user settings `mcpServers`,
//! `$KEEL_HOME/keel.json` `mcpServers`), project (`.mcp.json`, project settings `mcpServers`),
//! local (`~/.claude.json` and `keel.json` `projects.<cwd>.mcpServers`), then every
//! `--mcp-config` in order. `--strict-mcp-config` keeps only the last group.
//!
//! Project servers come with the repository, so they run only once approved. Approvals are
//! honoured only from places a cloned repository cannot write: user settings, `--settings`,
//! keel's own per-project record and the reference's `~/.claude.json` project entry. A
//! repository's own settings files may only *disable* its servers.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::config::{self, Scope, ServerSpec};
use crate::config::settings::{Scope as SettingsScope, Settings};

/// Everything the configuration is read from.
pub struct Sources<'a> {
    pub cwd: &'a Path,
    /// The user's home directory (for the reference's `~/.claude.json`).
    pub home: Option<&'a Path>,
    pub keel_home: &'a Path,
    pub settings: &'a Settings,
    /// `--mcp-config` values: a file path or inline JSON each.
    pub cli_configs: &'a [String],
    pub strict: bool,
}

/// One configured server after merging.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub scope: Scope,
    /// The file (or `--mcp-config`) it came from.
    pub source: String,
    pub raw: Value,
    /// The lowered configuration with variables expanded, or why it is unusable.
    pub spec: Result<ServerSpec, String>,
    /// Entries of the same name it overrides (their sources).
    pub shadows: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    /// Unreadable files that were skipped.
    pub warnings: Vec<String>,
}

/// keel's own record of MCP servers and approvals: `$KEEL_HOME/keel.json`.
pub fn keel_json(keel_home: &Path) -> PathBuf {
    keel_home.join("keel.json")
}

/// The reference tool's `~/.claude.json`.
pub fn claude_json(home: &Path) -> PathBuf {
    home.join(".claude.json")
}

/// The project key used in `projects` maps: the working directory as a string.
pub fn project_key(cwd: &Path) -> String {
    cwd.display().to_string()
}

/// Reads all sources. A malformed `--mcp-config` is an error (the user named it); other
/// malformed files are skipped with a warning.
pub fn load(src: &Sources<'_>, env: &dyn Fn(&str) -> Option<String>) -> Result<Loaded, String> {
    let mut loaded = Loaded::default();
    let mut raw: Vec<(String, Scope, String, Value)> = Vec::new();
    let key = project_key(src.cwd);
    if !src.strict {
        let claude = src.home.map(claude_json);
        let claude_doc = claude.as_deref().and_then(|p| read_doc(p, &mut loaded.warnings));
        let keel_path = keel_json(src.keel_home);
        let keel_doc = read_doc(&keel_path, &mut loaded.warnings);
        let mut add = |scope: Scope, label: String, doc: Option<&Value>, warnings: &mut Vec<String>| {
            if let Some(doc) = doc {
                match config::servers_of(doc, &label) {
                    Ok(list) => raw.extend(list.into_iter().map(|(n, v)| (n, scope, label.clone(), v))),
                    Err(e) => warnings.push(e),
                }
            }
        };
        let claude_label = claude.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let keel_label = keel_path.display().to_string();
        add(
            Scope::User,
            claude_label.clone(),
            claude_doc.as_ref(),
            &mut loaded.warnings,
        );
        for layer in src.settings.layers.iter().filter(|l| l.scope == SettingsScope::User) {
            add(Scope::User, layer.label(), Some(&layer.value), &mut loaded.warnings);
        }
        add(Scope::User, keel_label.clone(), keel_doc.as_ref(), &mut loaded.warnings);
        let mcp_json = src.cwd.join(".mcp.json");
        let project_doc = read_doc(&mcp_json, &mut loaded.warnings);
        add(
            Scope::Project,
            mcp_json.display().to_string(),
            project_doc.as_ref(),
            &mut loaded.warnings,
        );
        for layer in src
            .settings
            .layers
            .iter()
            .filter(|l| matches!(l.scope, SettingsScope::Project | SettingsScope::Local))
        {
            add(Scope::Project, layer.label(), Some(&layer.value), &mut loaded.warnings);
        }
        let claude_project = claude_doc.as_ref().and_then(|d| d.get("projects")?.get(&key)).cloned();
        add(
            Scope::Local,
            claude_label,
            claude_project.as_ref(),
            &mut loaded.warnings,
        );
        let keel_project = keel_doc.as_ref().and_then(|d| d.get("projects")?.get(&key)).cloned();
        add(Scope::Local, keel_label, keel_project.as_ref(), &mut loaded.warnings);
        for layer in src.settings.layers.iter().filter(|l| l.scope == SettingsScope::Cli) {
            add(Scope::Cli, layer.label(), Some(&layer.value), &mut loaded.warnings);
        }
    }
    for arg in src.cli_configs {
        let (label, doc) = cli_doc(arg, src.cwd)?;
        let list = config::servers_of(&doc, &label)?;
        if doc.get("mcpServers").is_none() {
            return Err(format!(
                "{label}: no `mcpServers` object; expected {{\"mcpServers\": {{\"name\": {{...}}}}}}"
            ));
        }
        raw.extend(list.into_iter().map(|(n, v)| (n, Scope::Cli, label.clone(), v)));
    }
    for (name, scope, source, value) in raw {
        let spec = match config::resolve_entry(&name, &value, env) {
            // A configuration file cannot make keel relay to a program that never offered it.
            Ok(ServerSpec::Sdk) if scope != Scope::Cli => Err(format!(
                "server `{name}`: \"type\": \"sdk\" names a server inside the program driving keel; only --mcp-config may declare one"
            )),
            other => other,
        };
        if let Some(existing) = loaded.entries.iter_mut().find(|e| e.name == name) {
            let mut shadows = std::mem::take(&mut existing.shadows);
            shadows.push(format!("{} ({})", existing.source, existing.scope.as_str()));
            *existing = Entry {
                name,
                scope,
                source,
                raw: value,
                spec,
                shadows,
            };
        } else {
            loaded.entries.push(Entry {
                name,
                scope,
                source,
                raw: value,
                spec,
                shadows: Vec::new(),
            });
        }
    }
    Ok(loaded)
}

fn cli_doc(arg: &str, cwd: &Path) -> Result<(String, Value), String> {
    if arg.trim_start().starts_with('{') {
        let doc: Value = serde_json::from_str(arg).map_err(|e| format!("--mcp-config: invalid JSON: {e}"))?;
        return Ok(("--mcp-config".to_string(), doc));
    }
    let path = crate::fsutil::paths::resolve(cwd, arg);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("--mcp-config {}: {e}", path.display()))?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("--mcp-config {}: invalid JSON: {e}", path.display()))?;
    Ok((path.display().to_string(), doc))
}

fn read_doc(path: &Path, warnings: &mut Vec<String>) -> Option<Value> {
    match read_json(path) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!("{e}; its MCP servers are ignored"));
            None
        }
    }
}

/// A JSON object file; `None` when it does not exist.
pub fn read_json(path: &Path) -> Result<Option<Value>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Some(json!({})));
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", path.display()))?;
    if !v.is_object() {
        return Err(format!("{}: must be a JSON object", path.display()));
    }
    Ok(Some(v))
}

/// Writes a JSON document atomically, keeping the file's permissions.
pub fn write_json(path: &Path, doc: &Value) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    text.push('\n');
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Whether a project server may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    Approved,
    Rejected,
    /// Nobody decided yet: ask (interactive) or skip (headless).
    Pending,
}

/// Decides a project server's approval from the places a repository cannot write, plus
/// disables from anywhere.
pub fn project_approval(name: &str, src: &Sources<'_>) -> Approval {
    let key = project_key(src.cwd);
    let mut records: Vec<Value> = Vec::new();
    if let Some(home) = src.home
        && let Ok(Some(doc)) = read_json(&claude_json(home))
        && let Some(p) = doc.get("projects").and_then(|p| p.get(&key))
    {
        records.push(p.clone());
    }
    if let Ok(Some(doc)) = read_json(&keel_json(src.keel_home))
        && let Some(p) = doc.get("projects").and_then(|p| p.get(&key))
    {
        records.push(p.clone());
    }
    let all: Vec<&Value> = src
        .settings
        .layers
        .iter()
        .map(|l| &l.value)
        .chain(records.iter())
        .collect();
    let trusted: Vec<&Value> = src
        .settings
        .layers
        .iter()
        .filter(|l| l.scope.is_users())
        .map(|l| &l.value)
        .chain(records.iter())
        .collect();
    let lists = |docs: &[&Value], key: &str| -> bool {
        docs.iter().any(|d| {
            d.get(key)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(name)))
        })
    };
    if lists(&all, "disabledMcpjsonServers") {
        return Approval::Rejected;
    }
    if lists(&trusted, "enabledMcpjsonServers")
        || trusted
            .iter()
            .any(|d| d.get("enableAllProjectMcpServers") == Some(&Value::Bool(true)))
    {
        return Approval::Approved;
    }
    Approval::Pending
}

/// Remembers a decision about a project server in keel's per-project record.
pub fn remember_approval(keel_home: &Path, cwd: &Path, name: &str, approved: bool) -> Result<(), String> {
    edit_keel_json(keel_home, |doc| {
        let project = project_entry(doc, cwd);
        let (add, remove) = if approved {
            ("enabledMcpjsonServers", "disabledMcpjsonServers")
        } else {
            ("disabledMcpjsonServers", "enabledMcpjsonServers")
        };
        if let Some(list) = project.get_mut(remove).and_then(Value::as_array_mut) {
            list.retain(|v| v.as_str() != Some(name));
        }
        let list = project.entry(add).or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        if let Some(list) = list.as_array_mut()
            && !list.iter().any(|v| v.as_str() == Some(name))
        {
            list.push(json!(name));
        }
        Ok(())
    })
}

/// Reads, changes and atomically rewrites `keel.json` (created when missing).
pub fn edit_keel_json(
    keel_home: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<(), String>,
) -> Result<(), String> {
    let path = keel_json(keel_home);
    let mut doc = read_json(&path)?.unwrap_or_else(|| json!({}));
    let Some(obj) = doc.as_object_mut() else {
        return Err(format!("{}: must be a JSON object", path.display()));
    };
    change(obj)?;
    write_json(&path, &doc)
}

/// The `projects.<cwd>` object of a `keel.json` document, created when missing.
pub fn project_entry<'a>(doc: &'a mut Map<String, Value>, cwd: &Path) -> &'a mut Map<String, Value> {
    let projects = doc.entry("projects").or_insert_with(|| json!({}));
    if !projects.is_object() {
        *projects = json!({});
    }
    let Value::Object(projects) = projects else {
        unreachable!("set to an object above")
    };
    let entry = projects.entry(project_key(cwd)).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("set to an object above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::Layer;

    fn layer(scope: SettingsScope, value: Value) -> Layer {
        Layer {
            scope,
            path: Some(PathBuf::from(format!("/{}.json", scope.as_str()))),
            base_dir: PathBuf::from("/"),
            value,
        }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        cwd: PathBuf,
        home: PathBuf,
        keel: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("repo");
        let home = dir.path().join("home");
        let keel = home.join(".keel");
        for d in [&cwd, &home, &keel] {
            std::fs::create_dir_all(d).unwrap();
        }
        Fixture {
            _dir: dir,
            cwd,
            home,
            keel,
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn precedence_user_project_local_cli() {
        let f = fixture();
        std::fs::write(
            f.home.join(".claude.json"),
            json!({"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}},
                   "projects": {project_key(&f.cwd): {"mcpServers": {"c": {"command": "local-c"}}}}})
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            f.cwd.join(".mcp.json"),
            json!({"mcpServers": {"b": {"command": "project-b"}, "c": {"command": "project-c"}}}).to_string(),
        )
        .unwrap();
        let settings = Settings::default();
        let cli = vec![r#"{"mcpServers": {"a": {"command": "cli-a"}}}"#.to_string()];
        let src = Sources {
            cwd: &f.cwd,
            home: Some(&f.home),
            keel_home: &f.keel,
            settings: &settings,
            cli_configs: &cli,
            strict: false,
        };
        let loaded = load(&src, &no_env).unwrap();
        let by = |n: &str| loaded.entries.iter().find(|e| e.name == n).unwrap();
        assert_eq!(by("a").scope, Scope::Cli);
        assert_eq!(by("a").spec.as_ref().unwrap().target(), "cli-a");
        assert_eq!(by("b").scope, Scope::Project);
        assert_eq!(by("c").scope, Scope::Local);
        assert_eq!(by("c").shadows.len(), 1);
        let strict = Sources { strict: true, ..src };
        let only = load(&strict, &no_env).unwrap();
        assert_eq!(only.entries.len(), 1);
        assert_eq!(only.entries[0].name, "a");
    }

    #[test]
    fn bad_cli_config_is_an_error_bad_project_file_a_warning() {
        let f = fixture();
        std::fs::write(f.cwd.join(".mcp.json"), "{not json").unwrap();
        let settings = Settings::default();
        let src = Sources {
            cwd: &f.cwd,
            home: Some(&f.home),
            keel_home: &f.keel,
            settings: &settings,
            cli_configs: &[],
            strict: false,
        };
        let loaded = load(&src, &no_env).unwrap();
        assert!(loaded.entries.is_empty());
        assert!(loaded.warnings[0].contains(".mcp.json"), "{:?}", loaded.warnings);
        let cli = vec!["{\"mcpServers\": 3}".to_string()];
        assert!(
            load(
                &Sources {
                    cli_configs: &cli,
                    ..src
                },
                &no_env
            )
            .is_err()
        );
        let missing = vec!["/no/such/file.json".to_string()];
        let err = load(
            &Sources {
                cli_configs: &missing,
                ..src
            },
            &no_env,
        )
        .unwrap_err();
        assert!(err.contains("/no/such/file.json"), "{err}");
    }

    #[test]
    fn a_repository_cannot_approve_its_own_servers() {
        let f = fixture();
        let hostile = Settings {
            layers: vec![
                layer(SettingsScope::Project, json!({"enableAllProjectMcpServers": true})),
                layer(SettingsScope::Local, json!({"enabledMcpjsonServers": ["evil"]})),
            ],
        };
        let src = Sources {
            cwd: &f.cwd,
            home: Some(&f.home),
            keel_home: &f.keel,
            settings: &hostile,
            cli_configs: &[],
            strict: false,
        };
        assert_eq!(project_approval("evil", &src), Approval::Pending);
        let user = Settings {
            layers: vec![
                layer(SettingsScope::User, json!({"enabledMcpjsonServers": ["good"]})),
                layer(SettingsScope::Project, json!({"disabledMcpjsonServers": ["good2"]})),
                layer(SettingsScope::User, json!({"enableAllProjectMcpServers": true})),
            ],
        };
        let src = Sources { settings: &user, ..src };
        assert_eq!(project_approval("good", &src), Approval::Approved);
        assert_eq!(project_approval("other", &src), Approval::Approved);
        assert_eq!(project_approval("good2", &src), Approval::Rejected);
    }

    #[test]
    fn remembered_decisions_are_kept_per_project() {
        let f = fixture();
        std::fs::write(keel_json(&f.keel), json!({"theme": "dark"}).to_string()).unwrap();
        let settings = Settings::default();
        let src = Sources {
            cwd: &f.cwd,
            home: Some(&f.home),
            keel_home: &f.keel,
            settings: &settings,
            cli_configs: &[],
            strict: false,
        };
        remember_approval(&f.keel, &f.cwd, "srv", true).unwrap();
        assert_eq!(project_approval("srv", &src), Approval::Approved);
        remember_approval(&f.keel, &f.cwd, "srv", false).unwrap();
        assert_eq!(project_approval("srv", &src), Approval::Rejected);
        let doc = read_json(&keel_json(&f.keel)).unwrap().unwrap();
        assert_eq!(doc["theme"], "dark", "other keys survive");
        let other = f.cwd.join("elsewhere");
        assert_eq!(
            project_approval("srv", &Sources { cwd: &other, ..src }),
            Approval::Pending
        );
    }
}
