//! Settings layers: keel's own files, the reference tool's files (so existing configuration
//! works unchanged), and `--settings`. Lists merge across layers; scalars: the later layer wins.
//!
//! Order, lowest precedence first: `~/.claude/settings.json`, `~/.keel/settings.json`,
//! `.claude/settings.json`, `.keel/settings.json`, `.claude/settings.local.json`,
//! `.keel/settings.local.json`, `--settings FILE|JSON`, then the managed files an operator
//! installs (`managed.rs`), which sit above everything. What a layer may change is decided in
//! `precedence.rs`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Top-level keys keel understands or knowingly accepts from the reference's files.
const KNOWN_KEYS: &[&str] = &[
    "$schema",
    "permissions",
    "hooks",
    "disableAllHooks",
    "sandbox",
    "shellOutputMaxBytes",
    "contextWindow",
    "autoCompactEnabled",
    "autoCompactThreshold",
    "model",
    "fallbackModel",
    "providers",
    "models",
    "maxRetryWaitSeconds",
    "env",
    "statusLine",
    "outputStyle",
    "cleanupPeriodDays",
    "includeCoAuthoredBy",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "mcpServers",
    "toolSearch",
    "apiKeyHelper",
    "forceLoginMethod",
    "spinnerTipsEnabled",
    "alwaysThinkingEnabled",
    "feedbackSurveyState",
    "verification",
    "allowManagedHooksOnly",
    "allowManagedPermissionRulesOnly",
    "availableModels",
    "enforceAvailableModels",
    "disableBundledSkills",
    "plugins",
    "autoMemoryEnabled",
    "webFetch",
    "webSearch",
    "languageServers",
    "worktree",
    // The reference's keys keel has no use for: accepted without a word.
    "enabledPlugins",
    "extraKnownMarketplaces",
    "companyAnnouncements",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "forceLoginOrgUUID",
    "respectGitignore",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
    Local,
    Cli,
    /// A system-wide file an operator installs (`managed.rs`): above every other layer.
    Managed,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Cli => "cli",
            Scope::Managed => "managed",
        }
    }

    /// Layers a cloned repository can ship.
    pub fn is_project(self) -> bool {
        matches!(self, Scope::Project | Scope::Local)
    }

    /// Layers the user or an operator wrote (not the repository).
    pub fn is_users(self) -> bool {
        !self.is_project()
    }
}

/// One settings file (or the `--settings` argument).
#[derive(Debug, Clone)]
pub struct Layer {
    pub scope: Scope,
    /// The file; `None` for inline `--settings` JSON.
    pub path: Option<PathBuf>,
    /// Directory that `/`-anchored permission paths are relative to.
    pub base_dir: PathBuf,
    pub value: Value,
}

impl Layer {
    pub fn label(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "--settings".to_string(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{path}:{line}:{column}: invalid JSON in settings: {message}")]
    Parse {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: settings must be a JSON object")]
    NotObject { path: String },
    #[error("cannot read settings {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: `{key}` {problem}")]
    Invalid { path: String, key: String, problem: String },
}

#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub layers: Vec<Layer>,
}

impl Settings {
    /// Loads every layer that exists. `home` is the user's home directory, `keel_home` keel's
    /// own directory (normally `~/.keel`), `project` the project root (the working directory).
    pub fn load(
        home: Option<&Path>,
        keel_home: &Path,
        project: &Path,
        cli: Option<&str>,
    ) -> Result<Settings, SettingsError> {
        let candidates = file_layers(home, keel_home, project);
        let mut layers = Vec::new();
        for (scope, path, base) in candidates {
            if let Some(value) = read_file(&path)? {
                layers.push(Layer {
                    scope,
                    path: Some(path),
                    base_dir: base,
                    value,
                });
            }
        }
        if let Some(arg) = cli {
            layers.push(cli_layer(arg, project)?);
        }
        for path in super::managed::files() {
            if let Some(value) = read_file(&path)? {
                let base_dir = path
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("/"));
                layers.push(Layer {
                    scope: Scope::Managed,
                    path: Some(path),
                    base_dir,
                    value,
                });
            }
        }
        let settings = Settings { layers };
        for line in settings.unknown_keys() {
            tracing::debug!("{line}");
        }
        Ok(settings)
    }

    /// Every settings file a session reads, existing or not, with its scope: the ones a
    /// `ConfigChange` hook watches (not `--settings`, which is the command line's).
    pub fn files(home: Option<&Path>, keel_home: &Path, project: &Path) -> Vec<(Scope, PathBuf)> {
        let mut out: Vec<(Scope, PathBuf)> = file_layers(home, keel_home, project)
            .into_iter()
            .map(|(scope, path, _)| (scope, path))
            .collect();
        out.extend(super::managed::files().into_iter().map(|p| (Scope::Managed, p)));
        out
    }

    /// The last layer's value for a top-level key.
    pub fn scalar(&self, key: &str) -> Option<(&Value, &Layer)> {
        self.layers
            .iter()
            .rev()
            .find_map(|l| l.value.get(key).filter(|v| !v.is_null()).map(|v| (v, l)))
    }

    /// The last layer's value at a nested path, e.g. `["permissions", "defaultMode"]`.
    pub fn nested(&self, path: &[&str]) -> Option<(&Value, &Layer)> {
        self.layers.iter().rev().find_map(|l| {
            let mut v = &l.value;
            for key in path {
                v = v.get(*key)?;
            }
            (!v.is_null()).then_some((v, l))
        })
    }

    /// Every string of an array at a nested path, across all layers, with its layer.
    pub fn strings(&self, path: &[&str]) -> Result<Vec<(String, &Layer)>, SettingsError> {
        let mut out = Vec::new();
        for layer in &self.layers {
            let mut v = &layer.value;
            let mut found = true;
            for key in path {
                match v.get(*key) {
                    Some(next) => v = next,
                    None => {
                        found = false;
                        break;
                    }
                }
            }
            if !found || v.is_null() {
                continue;
            }
            let arr = v.as_array().ok_or_else(|| SettingsError::Invalid {
                path: layer.label(),
                key: path.join("."),
                problem: "must be an array of strings".into(),
            })?;
            for item in arr {
                let s = item.as_str().ok_or_else(|| SettingsError::Invalid {
                    path: layer.label(),
                    key: path.join("."),
                    problem: format!("must contain strings, found {item}"),
                })?;
                out.push((s.to_string(), layer));
            }
        }
        Ok(out)
    }

    /// The managed layers (an operator's files), lowest first.
    pub fn managed(&self) -> impl DoubleEndedIterator<Item = &Layer> {
        self.layers.iter().filter(|l| l.scope == Scope::Managed)
    }

    /// A value at a nested path set by a managed layer (the last one wins).
    pub fn managed_value(&self, path: &[&str]) -> Option<(&Value, &Layer)> {
        self.managed()
            .rev()
            .find_map(|l| nested_in(&l.value, path).map(|v| (v, l)))
    }

    /// Whether a managed layer sets a boolean at `path` to true.
    pub fn managed_flag(&self, path: &[&str]) -> bool {
        self.managed_value(path).is_some_and(|(v, _)| v.as_bool() == Some(true))
    }

    /// A boolean at a nested path (last layer wins); a non-boolean is an error.
    pub fn flag(&self, path: &[&str]) -> Result<Option<bool>, SettingsError> {
        match self.nested(path) {
            None => Ok(None),
            Some((Value::Bool(b), _)) => Ok(Some(*b)),
            Some((other, layer)) => Err(SettingsError::Invalid {
                path: layer.label(),
                key: path.join("."),
                problem: format!("must be true or false, found {other}"),
            }),
        }
    }
}

/// The settings files below the command line and managed layers: scope, path, base directory.
fn file_layers(home: Option<&Path>, keel_home: &Path, project: &Path) -> Vec<(Scope, PathBuf, PathBuf)> {
    let mut candidates: Vec<(Scope, PathBuf, PathBuf)> = Vec::new();
    if let Some(home) = home {
        let claude = home.join(".claude");
        candidates.push((Scope::User, claude.join("settings.json"), claude.clone()));
    }
    candidates.push((Scope::User, keel_home.join("settings.json"), keel_home.to_path_buf()));
    for (scope, dir, file) in [
        (Scope::Project, ".claude", "settings.json"),
        (Scope::Project, ".keel", "settings.json"),
        (Scope::Local, ".claude", "settings.local.json"),
        (Scope::Local, ".keel", "settings.local.json"),
    ] {
        candidates.push((scope, project.join(dir).join(file), project.to_path_buf()));
    }
    candidates
}

/// The value at a nested path of one layer's JSON (null counts as absent).
pub fn nested_in<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for k in path {
        cur = cur.get(*k)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// Largest settings file read (a repository's settings could be a link to `/dev/zero`).
const MAX_SETTINGS_BYTES: u64 = 8 << 20;

fn read_file(path: &Path) -> Result<Option<Value>, SettingsError> {
    use crate::fsutil::open::{ReadError, read_file_capped};
    let err = |e: std::io::Error| SettingsError::Read {
        path: path.display().to_string(),
        source: e,
    };
    let text = match read_file_capped(path, MAX_SETTINGS_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map_err(|_| err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")))?,
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(ReadError::Io(e)) => return Err(err(e)),
        Err(other) => {
            return Err(err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                other.to_string(),
            )));
        }
    };
    parse(&text, &path.display().to_string()).map(Some)
}

fn parse(text: &str, label: &str) -> Result<Value, SettingsError> {
    let value: Value = serde_json::from_str(text).map_err(|e| SettingsError::Parse {
        path: label.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if !value.is_object() {
        return Err(SettingsError::NotObject {
            path: label.to_string(),
        });
    }
    Ok(value)
}

/// `--settings` takes a file path or inline JSON.
fn cli_layer(arg: &str, project: &Path) -> Result<Layer, SettingsError> {
    let trimmed = arg.trim_start();
    if trimmed.starts_with('{') {
        return Ok(Layer {
            scope: Scope::Cli,
            path: None,
            base_dir: project.to_path_buf(),
            value: parse(arg, "--settings")?,
        });
    }
    let path = crate::fsutil::paths::resolve(project, arg);
    let value = read_file(&path)?.ok_or_else(|| SettingsError::Read {
        path: path.display().to_string(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    })?;
    let base = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| project.to_path_buf());
    Ok(Layer {
        scope: Scope::Cli,
        path: Some(path),
        base_dir: base,
        value,
    })
}

impl Settings {
    /// One line per top-level key of a layer that keel neither reads nor knows from the
    /// reference's files (most often a misspelling), naming the nearest known key. Shown by
    /// every command that reads the settings: a session's start, `keel doctor`, `keel hooks`.
    pub fn unknown_keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        for layer in &self.layers {
            let Value::Object(map) = &layer.value else {
                continue;
            };
            for key in map.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())) {
                out.push(format!(
                    "{}: ignoring unknown setting `{key}`: it is not a setting keel knows{}",
                    layer.label(),
                    super::spelling::did_you_mean(key, KNOWN_KEYS.iter().copied())
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, s: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    }

    #[test]
    fn layers_merge_lists_and_later_scalars_win() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let proj = d.path().join("proj");
        write(
            &home.join(".claude/settings.json"),
            r#"{"permissions":{"allow":["Bash(ls:*)"],"defaultMode":"plan"}}"#,
        );
        write(
            &proj.join(".keel/settings.json"),
            r#"{"permissions":{"allow":["Read"],"deny":["Bash(rm:*)"]}}"#,
        );
        write(
            &proj.join(".claude/settings.local.json"),
            r#"{"permissions":{"defaultMode":"acceptEdits"}}"#,
        );
        let s = Settings::load(
            Some(&home),
            &home.join(".keel"),
            &proj,
            Some(r#"{"contextWindow": 1000}"#),
        )
        .unwrap();
        let allow: Vec<String> = s
            .strings(&["permissions", "allow"])
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(allow, vec!["Bash(ls:*)", "Read"]);
        assert_eq!(s.nested(&["permissions", "defaultMode"]).unwrap().0, "acceptEdits");
        assert_eq!(s.scalar("contextWindow").unwrap().0, 1000);
    }

    #[test]
    fn invalid_json_names_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let proj = d.path().join("proj");
        write(
            &proj.join(".claude/settings.json"),
            "{\n  \"permissions\": {\n    \"allow\": [\"Read\",]\n  }\n}\n",
        );
        let err = Settings::load(None, &d.path().join("k"), &proj, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains(".claude/settings.json:3:"), "{err}");
    }

    #[test]
    fn unknown_top_level_keys_are_named_with_the_nearest_known_one() {
        let d = tempfile::tempdir().unwrap();
        let s = Settings::load(
            None,
            &d.path().join("k"),
            d.path(),
            Some(r#"{"modle": "x", "permissions": {}, "enabledPlugins": {}, "zzzzzz": 1}"#),
        )
        .unwrap();
        let lines = s.unknown_keys();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("ignoring unknown setting `modle`") && lines[0].contains("did you mean `model`"));
        assert!(
            lines[1].contains("`zzzzzz`") && !lines[1].contains("did you mean"),
            "{lines:?}"
        );
    }

    #[test]
    fn wrong_types_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let s = Settings::load(
            None,
            &d.path().join("k"),
            d.path(),
            Some(r#"{"permissions":{"allow":"Read"}}"#),
        )
        .unwrap();
        assert!(s.strings(&["permissions", "allow"]).is_err());
    }
}
