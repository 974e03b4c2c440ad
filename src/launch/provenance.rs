//! Where each value that decides a session came from: a flag, the environment, a settings
//! layer (user, project, local, `--settings`), a driving program, or keel's default. Setup
//! applies the precedence (flag > environment > settings, the last settings layer winning);
//! this records its outcome so `keel doctor` and the start-up record can say which layer won.

use serde_json::Value;

use super::options::Options;
use crate::config::settings::Settings;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Nothing set it: keel's default.
    Default,
    /// A command-line flag.
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// A settings layer: its scope (`user`, `project`, `local`, `cli`) and file.
    Settings { scope: &'static str, file: String },
}

impl Origin {
    pub fn describe(&self) -> String {
        match self {
            Origin::Default => "keel's default".into(),
            Origin::Flag(f) => format!("the flag {f}"),
            Origin::Env(v) => format!("the environment variable {v}"),
            Origin::Settings { scope, file } => format!("{scope} settings ({file})"),
        }
    }
}

/// One value in force and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced {
    /// The setting's name as a user writes it (`permissions.defaultMode`).
    pub key: &'static str,
    pub value: String,
    pub origin: Origin,
}

fn env(name: &'static str) -> Option<(String, Origin)> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(|v| (v, Origin::Env(name)))
}

fn setting(settings: &Settings, path: &[&str]) -> Option<(String, Origin)> {
    settings.nested(path).map(|(v, layer)| {
        let value = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let origin = Origin::Settings {
            scope: layer.scope.as_str(),
            file: layer.label(),
        };
        (value, origin)
    })
}

fn flag<T: ToString>(v: Option<T>, name: &'static str) -> Option<(String, Origin)> {
    v.map(|v| (v.to_string(), Origin::Flag(name)))
}

/// The values that decide a session, each with the layer that set it, in the order the
/// precedence rules apply (the first source present wins).
pub fn in_force(options: &Options, settings: &Settings) -> Vec<Sourced> {
    let sourced = |key: &'static str, candidates: Vec<Option<(String, Origin)>>, default: &str| {
        let (value, origin) = candidates
            .into_iter()
            .flatten()
            .next()
            .unwrap_or_else(|| (default.to_string(), Origin::Default));
        Sourced { key, value, origin }
    };
    let mode_flag = if options.dangerously_skip_permissions {
        Some((
            "bypassPermissions".to_string(),
            Origin::Flag("--dangerously-skip-permissions"),
        ))
    } else {
        flag(options.permission_mode.as_deref(), "--permission-mode")
    };
    vec![
        sourced(
            "model",
            vec![
                flag(options.model.as_deref(), "--model"),
                env("ANTHROPIC_MODEL"),
                setting(settings, &["model"]),
            ],
            crate::config::models::DEFAULT_MODEL,
        ),
        sourced(
            "permissions.defaultMode",
            vec![mode_flag, setting(settings, &["permissions", "defaultMode"])],
            "default",
        ),
        sourced(
            "sandbox.enabled",
            vec![
                options.sandbox.then(|| ("true".to_string(), Origin::Flag("--sandbox"))),
                setting(settings, &["sandbox", "enabled"]),
            ],
            "false",
        ),
        sourced(
            "contextWindow",
            vec![env("KEEL_CONTEXT_WINDOW"), setting(settings, &["contextWindow"])],
            "the model's window",
        ),
        sourced(
            "verification.stopGate",
            vec![
                env("KEEL_VERIFICATION_GATE"),
                setting(settings, &["verification", "stopGate"]),
            ],
            crate::evidence::GateMode::default().as_str(),
        ),
        sourced(
            "shellOutputMaxBytes",
            vec![setting(settings, &["shellOutputMaxBytes"])],
            &crate::sandbox::contain::DEFAULT_OUTPUT_CAP.to_string(),
        ),
        sourced(
            "sandbox.limits.maxProcesses",
            vec![setting(settings, &["sandbox", "limits", "maxProcesses"])],
            &crate::sandbox::limits::DEFAULT_MAX_PROCESSES.to_string(),
        ),
        sourced(
            "sandbox.limits.maxMemoryMiB",
            vec![setting(settings, &["sandbox", "limits", "maxMemoryMiB"])],
            &crate::sandbox::Limits::default().memory_mib().map_or_else(
                || "none (the machine's memory is unknown)".to_string(),
                |m| format!("{m} (half the machine's memory)"),
            ),
        ),
    ]
}

/// The protections settings decide and the layer that set each (`keel doctor`). Keys only a
/// managed file may set are read from the managed layers alone.
pub fn protections(settings: &Settings) -> Vec<Sourced> {
    let origin = |layer: &crate::config::settings::Layer| Origin::Settings {
        scope: layer.scope.as_str(),
        file: layer.label(),
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let any_layer: [(&'static str, &[&str], &str); 6] = [
        ("sandbox.enabled", &["sandbox", "enabled"], "false"),
        ("sandbox.failIfUnavailable", &["sandbox", "failIfUnavailable"], "true"),
        ("sandbox.allowNetwork", &["sandbox", "allowNetwork"], "false"),
        ("disableAllHooks", &["disableAllHooks"], "false"),
        ("permissions.defaultMode", &["permissions", "defaultMode"], "default"),
        (
            "permissions.disableBypassPermissionsMode",
            &["permissions", "disableBypassPermissionsMode"],
            "not set",
        ),
    ];
    let managed_only: [(&'static str, &[&str], &str); 6] = [
        ("allowManagedHooksOnly", &["allowManagedHooksOnly"], "false"),
        (
            "allowManagedPermissionRulesOnly",
            &["allowManagedPermissionRulesOnly"],
            "false",
        ),
        ("permissions.modeCeiling", &["permissions", "modeCeiling"], "none"),
        ("availableModels", &["availableModels"], "any model"),
        ("enforceAvailableModels", &["enforceAvailableModels"], "false"),
        (
            "disableBundledSkills",
            &["disableBundledSkills"],
            "false (keel ships no bundled skills)",
        ),
    ];
    let sourced =
        |key: &'static str, found: Option<(&Value, &crate::config::settings::Layer)>, default: &str| match found {
            Some((v, layer)) => Sourced {
                key,
                value: text(v),
                origin: origin(layer),
            },
            None => Sourced {
                key,
                value: default.to_string(),
                origin: Origin::Default,
            },
        };
    let mut out: Vec<Sourced> = any_layer
        .iter()
        .map(|(key, path, default)| sourced(key, settings.nested(path), default))
        .collect();
    out.extend(
        managed_only
            .iter()
            .map(|(key, path, default)| sourced(key, settings.managed_value(path), default)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings_with(dir: &std::path::Path, user: &str, project: &str) -> Settings {
        let home = dir.join("home");
        let keel_home = home.join(".keel");
        let work = dir.join("work");
        std::fs::create_dir_all(&keel_home).unwrap();
        std::fs::create_dir_all(work.join(".keel")).unwrap();
        std::fs::write(keel_home.join("settings.json"), user).unwrap();
        std::fs::write(work.join(".keel/settings.json"), project).unwrap();
        Settings::load(Some(&home), &keel_home, &work, None).unwrap()
    }

    #[test]
    fn each_value_names_the_layer_that_won() {
        let dir = tempfile::tempdir().unwrap();
        let s = settings_with(
            dir.path(),
            r#"{"model": "opus", "sandbox": {"enabled": true}}"#,
            r#"{"model": "haiku", "permissions": {"defaultMode": "plan"}}"#,
        );
        let options = Options {
            permission_mode: Some("acceptEdits".into()),
            ..Options::default()
        };
        let all = in_force(&options, &s);
        let get = |k: &str| all.iter().find(|x| x.key == k).unwrap().clone();
        // The project layer comes after the user's: it wins (unless the environment sets one).
        let model = get("model");
        if std::env::var("ANTHROPIC_MODEL").is_err() {
            assert_eq!(model.value, "haiku");
            assert!(
                matches!(model.origin, Origin::Settings { scope: "project", .. }),
                "{model:?}"
            );
        }
        // A flag wins over every settings layer.
        assert_eq!(get("permissions.defaultMode").origin, Origin::Flag("--permission-mode"));
        assert_eq!(get("permissions.defaultMode").value, "acceptEdits");
        assert!(matches!(
            get("sandbox.enabled").origin,
            Origin::Settings { scope: "user", .. }
        ));
        assert_eq!(get("shellOutputMaxBytes").origin, Origin::Default);
    }
}
