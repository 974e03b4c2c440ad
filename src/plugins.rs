//! Plugins: a folder bundling skills, commands, agents, hooks and MCP servers in the
//! reference's layout, loaded from `--plugin-dir DIR` and the `plugins` setting (a list of
//! folders):
//!
//! ```text
//! my-plugin/.claude-plugin/plugin.json   name, version, description (optional: the folder name)
//! my-plugin/skills/<name>/SKILL.md       skills, named `my-plugin:<name>`
//! my-plugin/commands/*.md                commands, `my-plugin:<name>`
//! my-plugin/agents/*.md                  sub-agent types, `my-plugin:<name>`
//! my-plugin/hooks/hooks.json             {"hooks": {...}}; `${CLAUDE_PLUGIN_ROOT}` is the folder
//! my-plugin/.mcp.json                    {"mcpServers": {...}}; same substitution
//! ```
//!
//! A plugin folder placed in a skills folder (`.claude/skills/<plugin>/.claude-plugin/plugin.json`,
//! the project's or `~/.claude/skills`) loads without being named anywhere; the manifest's
//! `skills` (a path or a list of paths inside the plugin, each a folder of skill folders) adds to
//! `skills/`. Skills, commands and agents are found by their catalogs (given each plugin's name
//! and root); hooks join the settings as one more layer; MCP servers are handed to the MCP client.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::settings::{Layer, Scope, Settings, SettingsError};

pub const ROOT_VAR: &str = "${CLAUDE_PLUGIN_ROOT}";

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("plugin {path}: {problem}")]
    Invalid { path: String, problem: String },
    #[error(transparent)]
    Settings(#[from] SettingsError),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    pub name: String,
    pub root: PathBuf,
    pub version: Option<String>,
    pub description: Option<String>,
    /// `hooks/hooks.json` (or the manifest's `hooks`) with the root substituted.
    pub hooks: Option<(PathBuf, Value)>,
    /// `.mcp.json` (or the manifest's `mcpServers`) with the root substituted, by server name.
    pub mcp_servers: Map<String, Value>,
    /// Where the plugin was configured (for its hooks' settings layer).
    pub scope: Scope,
    /// Skill folders the manifest's `skills` names, besides `skills/`.
    pub skill_dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default)]
pub struct Plugins {
    pub list: Vec<Plugin>,
    /// Plugins found in skills folders that were not loaded, with why.
    pub warnings: Vec<String>,
}

/// Plugin folders placed in skills folders: `~/.claude/skills/*` (the user's) and the
/// project's `.claude/skills/*` and `.keel/skills/*` from the working directory up to the
/// repository root. A project's must really lie in the repository (a link elsewhere is not
/// loaded, and said in `warnings`).
pub fn in_skill_folders(cwd: &Path, user_home: Option<&Path>, warnings: &mut Vec<String>) -> Vec<(PathBuf, Scope)> {
    let mut out = Vec::new();
    let mut look = |folder: PathBuf, scope: Scope, bound: Option<&Path>, out: &mut Vec<(PathBuf, Scope)>| {
        let Ok(rd) = std::fs::read_dir(&folder) else { return };
        let mut dirs: Vec<PathBuf> = rd
            .flatten()
            .take(MAX_SKILL_FOLDER_ENTRIES)
            .map(|e| e.path())
            .filter(|d| d.join(".claude-plugin/plugin.json").is_file())
            .collect();
        dirs.sort();
        for d in dirs {
            if crate::skills::discover::within(&d, bound) {
                out.push((d, scope));
            } else {
                warnings.push(format!(
                    "{}: a plugin folder that leads outside {} (a link); it is not loaded",
                    d.display(),
                    bound.map(|b| b.display().to_string()).unwrap_or_default()
                ));
            }
        }
    };
    if let Some(h) = user_home {
        look(h.join(".claude/skills"), Scope::User, None, &mut out);
    }
    let project = crate::skills::discover::project_dirs(cwd);
    let repo = project.last().cloned();
    for d in project.iter().rev() {
        for folder in [".claude/skills", ".keel/skills"] {
            look(d.join(folder), Scope::Project, repo.as_deref(), &mut out);
        }
    }
    out
}

/// Entries of one skills folder looked at for plugins.
const MAX_SKILL_FOLDER_ENTRIES: usize = 500;

impl Plugins {
    /// Loads the folders of `--plugin-dir` and of the `plugins` setting (relative to the file
    /// that names them). Two plugins with one name are an error.
    /// `found` are the plugin folders of skills folders ([`in_skill_folders`]): one that
    /// cannot load, or whose name is taken, is a warning, so a repository cannot stop a session
    /// from starting.
    pub fn load(
        cli_dirs: &[PathBuf],
        cwd: &Path,
        settings: &Settings,
        found: Vec<(PathBuf, Scope)>,
    ) -> Result<Plugins, PluginError> {
        let mut dirs: Vec<(PathBuf, Scope)> = Vec::new();
        for (p, layer) in settings.strings(&["plugins"])? {
            dirs.push((crate::fsutil::paths::resolve(&layer.base_dir, &p), layer.scope));
        }
        for d in cli_dirs {
            dirs.push((crate::fsutil::paths::resolve(cwd, &d.to_string_lossy()), Scope::Cli));
        }
        let mut out = Plugins::default();
        for (dir, scope) in dirs {
            let plugin = load_one(&dir, scope)?;
            if let Some(other) = out.list.iter().find(|p| p.name == plugin.name) {
                if other.root == plugin.root {
                    continue;
                }
                return Err(PluginError::Invalid {
                    path: dir.display().to_string(),
                    problem: format!(
                        "its name `{}` is already used by the plugin in {}",
                        plugin.name,
                        other.root.display()
                    ),
                });
            }
            out.list.push(plugin);
        }
        for (dir, scope) in found {
            let plugin = match load_one(&dir, scope) {
                Ok(p) => p,
                Err(e) => {
                    out.warnings.push(format!("{e}; it is not loaded"));
                    continue;
                }
            };
            match out.list.iter().find(|p| p.name == plugin.name) {
                Some(other) if other.root == plugin.root => {}
                Some(other) => out.warnings.push(format!(
                    "plugin {}: its name `{}` is already used by the plugin in {}; it is not loaded",
                    dir.display(),
                    plugin.name,
                    other.root.display()
                )),
                None => out.list.push(plugin),
            }
        }
        Ok(out)
    }

    /// (name, folder) of the skill folders plugins' manifests name besides `skills/`.
    pub fn skill_roots(&self) -> Vec<(String, PathBuf)> {
        self.list
            .iter()
            .flat_map(|p| p.skill_dirs.iter().map(move |d| (p.name.clone(), d.clone())))
            .collect()
    }

    /// (name, root) of each plugin, for the skill and agent catalogs.
    pub fn roots(&self) -> Vec<(String, PathBuf)> {
        self.list.iter().map(|p| (p.name.clone(), p.root.clone())).collect()
    }

    /// Adds each plugin's hooks to the settings as one more layer.
    pub fn add_hook_layers(&self, settings: &mut Settings) {
        for p in &self.list {
            if let Some((path, hooks)) = &p.hooks {
                let mut value = Map::new();
                value.insert("hooks".into(), hooks.clone());
                settings.layers.push(Layer {
                    scope: p.scope,
                    path: Some(path.clone()),
                    base_dir: p.root.clone(),
                    value: Value::Object(value),
                });
            }
        }
    }

    /// Marks each plugin's hooks as its own, so they run with `CLAUDE_PLUGIN_ROOT` set.
    pub fn tag_hooks(&self, config: &mut crate::hooks::HookConfig) {
        for p in &self.list {
            if let Some((path, _)) = &p.hooks {
                config.set_plugin_root(&path.display().to_string(), &p.root);
            }
        }
    }

    /// Every plugin's MCP servers as `plugin:server`, configuration, and where the plugin was
    /// configured (a repository's plugin is the repository's: its servers need approval).
    pub fn mcp_servers(&self) -> Vec<(String, Value, Scope)> {
        self.list
            .iter()
            .flat_map(|p| {
                p.mcp_servers
                    .iter()
                    .map(move |(k, v)| (format!("{}:{k}", p.name), v.clone(), p.scope))
            })
            .collect()
    }

    /// For `system/init`'s `plugins`: name and path.
    pub fn describe(&self) -> Vec<Value> {
        self.list
            .iter()
            .map(|p| serde_json::json!({"name": p.name, "path": p.root.display().to_string()}))
            .collect()
    }
}

fn invalid(dir: &Path, problem: impl Into<String>) -> PluginError {
    PluginError::Invalid {
        path: dir.display().to_string(),
        problem: problem.into(),
    }
}

/// Largest manifest, hooks or MCP file read.
const MAX_JSON: u64 = 1024 * 1024;

/// Reads a plugin's JSON file like keel's other reads of configuration it did not write: never
/// a FIFO or a device, never more than [`MAX_JSON`].
/// `dir` is the plugin's (canonical) folder: a file leading outside it (`"hooks":
/// "../../x.json"`, an absolute path, a link) is an error, so a plugin runs and configures only
/// what it ships.
fn read_json(path: &Path, dir: &Path) -> Result<Option<Value>, PluginError> {
    use crate::fsutil::open::{ReadError, read_file_capped};
    match path.canonicalize() {
        Ok(real) if !real.starts_with(dir) => {
            return Err(invalid(
                dir,
                format!(
                    "{} leads outside the plugin's folder; a plugin's files must be inside it",
                    path.display()
                ),
            ));
        }
        _ => {}
    }
    let bytes = match read_file_capped(path, MAX_JSON) {
        Ok(b) => b,
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(invalid(dir, format!("cannot read {}: {e}", path.display()))),
    };
    let text = String::from_utf8(bytes).map_err(|_| invalid(dir, format!("{}: not UTF-8 text", path.display())))?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        invalid(
            dir,
            format!("{}:{}:{}: invalid JSON: {e}", path.display(), e.line(), e.column()),
        )
    })
}

/// Loads one plugin folder.
pub fn load_one(dir: &Path, scope: Scope) -> Result<Plugin, PluginError> {
    let root = dir
        .canonicalize()
        .map_err(|e| invalid(dir, format!("the folder cannot be opened: {e}")))?;
    if !root.is_dir() {
        return Err(invalid(dir, "not a folder"));
    }
    let manifest = read_json(&root.join(".claude-plugin/plugin.json"), &root)?.unwrap_or(Value::Null);
    if !manifest.is_null() && !manifest.is_object() {
        return Err(invalid(&root, ".claude-plugin/plugin.json must be a JSON object"));
    }
    let text = |k: &str| manifest.get(k).and_then(Value::as_str).map(str::to_string);
    let name = match text("name") {
        Some(n) => n,
        None if manifest.is_object() => {
            return Err(invalid(&root, ".claude-plugin/plugin.json needs a `name`"));
        }
        None => root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(invalid(
            &root,
            format!("`{name}` is not a valid plugin name (letters, digits, `-`, `_`, `.`; not starting with `.`)"),
        ));
    }
    let root_text = root.display().to_string();
    let hooks = match manifest.get("hooks") {
        Some(Value::Object(_)) => manifest
            .get("hooks")
            .map(|h| (root.join(".claude-plugin/plugin.json"), h.clone())),
        Some(Value::String(rel)) => {
            let path = named(&root, &root_text, "hooks", rel)?;
            load_hooks(&path, &root)?.map(|h| (path, h))
        }
        _ => {
            let path = root.join("hooks/hooks.json");
            load_hooks(&path, &root)?.map(|h| (path, h))
        }
    };
    let hooks = hooks.map(|(p, h)| (p, substitute(h, &root_text)));
    let mcp = match manifest.get("mcpServers") {
        Some(Value::Object(m)) => Some(Value::Object(m.clone())),
        Some(Value::String(rel)) => {
            let path = named(&root, &root_text, "mcpServers", rel)?;
            read_json(&path, &root)?.map(|v| v.get("mcpServers").cloned().unwrap_or(v))
        }
        _ => read_json(&root.join(".mcp.json"), &root)?.map(|v| v.get("mcpServers").cloned().unwrap_or(Value::Null)),
    };
    let mcp_servers = match mcp.map(|v| substitute(v, &root_text)) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(invalid(&root, "`mcpServers` must be an object keyed by server name")),
    };
    let skill_dirs = skill_dirs(&manifest, &root, &root_text)?;
    Ok(Plugin {
        skill_dirs,
        name,
        version: text("version"),
        description: text("description"),
        root,
        hooks,
        mcp_servers,
        scope,
    })
}

/// A file the manifest names (`"hooks": "./config/hooks.json"`): inside the plugin, no `..`,
/// and there (a file named but missing is an error, not a plugin without hooks).
fn named(root: &Path, root_text: &str, key: &str, rel: &str) -> Result<PathBuf, PluginError> {
    let rel = rel.replace(ROOT_VAR, root_text);
    let path = root.join(rel.trim_start_matches("./"));
    if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) || !path.starts_with(root) {
        return Err(invalid(
            root,
            format!("`{key}` names {rel}, which leads outside the plugin's folder; a plugin's files must be inside it"),
        ));
    }
    if !path.exists() {
        return Err(invalid(root, format!("`{key}` names {rel}, which does not exist")));
    }
    Ok(path)
}

/// The manifest's `skills`: a path or a list of paths, each a folder inside the plugin (a
/// file is an error saying so). `./skills/` itself is read anyway, so it is not repeated.
fn skill_dirs(manifest: &Value, root: &Path, root_text: &str) -> Result<Vec<PathBuf>, PluginError> {
    let named_paths: Vec<&str> = match manifest.get("skills") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| invalid(root, "`skills` must list paths (strings) of folders inside the plugin"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid(root, "`skills` must be a path or a list of paths")),
    };
    let mut out = Vec::new();
    for rel in named_paths {
        let path = named(root, root_text, "skills", rel)?;
        let real = path
            .canonicalize()
            .map_err(|e| invalid(root, format!("`skills` names {rel}: {e}")))?;
        if !real.starts_with(root) {
            return Err(invalid(
                root,
                format!(
                    "`skills` names {rel}, which leads outside the plugin's folder; a plugin's files must be inside it"
                ),
            ));
        }
        if !real.is_dir() {
            return Err(invalid(
                root,
                format!(
                    "`skills` names {rel}, which is a file; it must name a folder holding skill folders (<name>/SKILL.md)"
                ),
            ));
        }
        if real != root.join("skills") && !out.contains(&real) {
            out.push(real);
        }
    }
    Ok(out)
}

/// A hooks file: `{"hooks": {...}}` (the reference's plugin shape) or the event map itself.
fn load_hooks(path: &Path, root: &Path) -> Result<Option<Value>, PluginError> {
    Ok(read_json(path, root)?.map(|v| v.get("hooks").cloned().unwrap_or(v)))
}

/// Replaces `${CLAUDE_PLUGIN_ROOT}` in every string of `v` (a plugin's hooks and servers, the
/// hooks of its skills).
pub fn substitute(v: Value, root: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(ROOT_VAR, root)),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| substitute(x, root)).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, x)| (k, substitute(x, root))).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: PathBuf, s: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    }

    #[test]
    fn loads_a_plugin_folder() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap().join("ops-plugin");
        write(
            root.join(".claude-plugin/plugin.json"),
            r#"{"name": "ops", "version": "1.2.0", "description": "Deploy tools"}"#,
        );
        write(
            root.join("hooks/hooks.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/check.sh"}]}]}}"#,
        );
        write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db", "args": ["--ro"]}}}"#,
        );
        let p = load_one(&root, Scope::Cli).unwrap();
        assert_eq!(p.name, "ops");
        assert_eq!(p.version.as_deref(), Some("1.2.0"));
        let (_, hooks) = p.hooks.as_ref().unwrap();
        assert_eq!(
            hooks["PreToolUse"][0]["hooks"][0]["command"],
            format!("{}/hooks/check.sh", root.display())
        );
        let plugins = Plugins {
            list: vec![p],
            warnings: Vec::new(),
        };
        let servers = plugins.mcp_servers();
        assert_eq!(servers[0].0, "ops:db");
        assert_eq!(servers[0].1["command"], format!("{}/bin/db", root.display()));
        assert_eq!(servers[0].2, Scope::Cli);
        let mut settings = Settings::default();
        plugins.add_hook_layers(&mut settings);
        let hc = crate::hooks::HookConfig::from_settings(&settings).unwrap();
        assert_eq!(hc.matching(crate::hooks::Event::PreToolUse, Some("Bash")).len(), 1);
    }

    #[test]
    fn problems_are_errors_naming_the_folder() {
        let t = tempfile::tempdir().unwrap();
        let missing = t.path().join("nope");
        assert!(load_one(&missing, Scope::Cli).unwrap_err().to_string().contains("nope"));
        let bad = t.path().join("bad");
        write(bad.join(".claude-plugin/plugin.json"), "{\"name\": ");
        let err = load_one(&bad, Scope::Cli).unwrap_err().to_string();
        assert!(err.contains("plugin.json:1:") && err.contains("invalid JSON"), "{err}");
        // A FIFO in place of the manifest is refused at once instead of blocking startup.
        let fifo = t.path().join("fifo-plugin");
        std::fs::create_dir_all(fifo.join(".claude-plugin")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(fifo.join(".claude-plugin/plugin.json"))
            .status()
            .unwrap();
        assert!(made.success());
        // Should a reader block on it, a writer comes by and closes it, so the test ends.
        let pipe = fifo.join(".claude-plugin/plugin.json");
        std::thread::spawn(move || {
            use std::os::unix::fs::OpenOptionsExt;
            for _ in 0..100 {
                let opened = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&pipe);
                if opened.is_ok() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        let err = load_one(&fifo, Scope::Cli).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        let nameless = t.path().join("bare-plugin");
        std::fs::create_dir_all(&nameless).unwrap();
        assert_eq!(load_one(&nameless, Scope::Cli).unwrap().name, "bare-plugin");
    }

    /// A plugin placed in a skills folder is found; its manifest's `skills` adds folders, and
    /// naming a file there is an error that says so.
    #[test]
    fn plugins_in_skills_folders_and_the_manifests_skills() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let root = repo.join(".claude/skills/tools");
        write(
            root.join(".claude-plugin/plugin.json"),
            r#"{"name": "tools", "skills": ["./extra/", "./skills"]}"#,
        );
        write(root.join("extra/fmt/SKILL.md"), "---\ndescription: f\n---\n");
        write(root.join("skills/own/SKILL.md"), "---\ndescription: o\n---\n");
        write(repo.join(".claude/skills/plain/SKILL.md"), "a plain skill, no plugin");
        let mut warnings = Vec::new();
        let found = in_skill_folders(&repo, None, &mut warnings);
        assert_eq!(found, vec![(root.clone(), Scope::Project)]);
        let plugins = Plugins::load(&[], &repo, &Settings::default(), found).unwrap();
        assert_eq!(plugins.skill_roots(), vec![("tools".to_string(), root.join("extra"))]);
        write(
            root.join(".claude-plugin/plugin.json"),
            r#"{"name": "tools", "skills": "./extra/fmt/SKILL.md"}"#,
        );
        let err = load_one(&root, Scope::Project).unwrap_err().to_string();
        assert!(err.contains("which is a file"), "{err}");
        // A broken plugin found in a skills folder is a warning, not a failed start.
        let plugins = Plugins::load(&[], &repo, &Settings::default(), vec![(root, Scope::Project)]).unwrap();
        assert!(
            plugins.list.is_empty() && plugins.warnings[0].contains("not loaded"),
            "{:?}",
            plugins.warnings
        );
    }

    /// A plugin (perhaps one a cloned repository configures) points its manifest at files
    /// outside its folder, or links them there, or names itself `..`: each is an error naming
    /// the file, and nothing of it is loaded.
    #[test]
    fn a_plugins_files_must_be_inside_it() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let outside = base.join("outside.json");
        write(
            outside.clone(),
            r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/x"}]}]}}"#,
        );
        let cases = [
            (r#"{"name": "a", "hooks": "../outside.json"}"#, None),
            (r#"{"name": "b", "hooks": "./hooks/../../outside.json"}"#, None),
            (
                format!(r#"{{"name": "c", "mcpServers": "{}"}}"#, outside.display()).leak() as &str,
                None,
            ),
            (r#"{"name": "d"}"#, Some("hooks/hooks.json")),
            (r#"{"name": "e"}"#, Some(".mcp.json")),
        ];
        for (i, (manifest, link)) in cases.into_iter().enumerate() {
            let root = base.join(format!("p{i}"));
            write(root.join(".claude-plugin/plugin.json"), manifest);
            if let Some(l) = link {
                std::fs::create_dir_all(root.join(l).parent().unwrap()).unwrap();
                symlink(&outside, root.join(l)).unwrap();
            }
            let err = load_one(&root, Scope::Project).unwrap_err().to_string();
            assert!(err.contains("leads outside the plugin's folder"), "{manifest}: {err}");
        }
        // A link inside the plugin is fine.
        let root = base.join("inside");
        write(root.join(".claude-plugin/plugin.json"), r#"{"name": "inside"}"#);
        write(root.join("shared/hooks.json"), r#"{"hooks": {}}"#);
        std::fs::create_dir_all(root.join("hooks")).unwrap();
        symlink(root.join("shared/hooks.json"), root.join("hooks/hooks.json")).unwrap();
        assert!(load_one(&root, Scope::Project).unwrap().hooks.is_some());
        for name in ["..", ".", ".hidden"] {
            let root = base.join(format!("named{name}"));
            write(
                root.join(".claude-plugin/plugin.json"),
                &format!(r#"{{"name": "{name}"}}"#),
            );
            let err = load_one(&root, Scope::Project).unwrap_err().to_string();
            assert!(err.contains("not a valid plugin name"), "{name}: {err}");
        }
    }
}
