//! What each settings layer may change. Layers merge as `settings.rs` says, but a layer can
//! only tighten the protections of the layers above it in authority:
//!
//! - **Managed** settings (an operator's, `managed.rs`) fix what they set: the hooks that run
//!   (`allowManagedHooksOnly`), the permission rules that allow (`allowManagedPermissionRulesOnly`),
//!   the sandbox, the lists that widen it, the permission-mode ceiling and the model allowlist.
//! - **Project and local** settings (files a cloned repository can ship) cannot weaken the
//!   sandbox (off, network on, run without it, more writable paths), cannot disable the user's
//!   hooks (`disableAllHooks` there turns off the project's own), cannot widen what commands read
//!   (`allowRead`; extra directories only in a trusted folder), cannot raise a per-command limit,
//!   cannot let WebFetch reach the private network or choose the search backend
//!   (`webFetch.allowPrivateNetwork`, `webSearch`),
//!   and cannot raise the permission mode above the user's own: never to `dontAsk` or
//!   `bypassPermissions`, to `acceptEdits` only in a folder the user trusted (headless: with
//!   `--trust-project`).
//!
//! Every value a layer may not set is removed from that layer, with a one-line notice naming the
//! file and the key. Deny and ask rules are lists that merge across layers, so no layer removes
//! another's.

use serde_json::Value;

use super::settings::{Layer, Scope, Settings, SettingsError, nested_in};
use crate::types::permission::Mode;

/// Booleans of the sandbox with a safe value: a project may set it, never the other one.
const PROTECTIONS: &[(&[&str], bool)] = &[
    (&["sandbox", "enabled"], true),
    (&["sandbox", "failIfUnavailable"], true),
    (&["sandbox", "allowNetwork"], false),
];

/// Lists that widen what commands may read or write; a managed layer that sets one fixes it.
const WIDENING_LISTS: &[&[&str]] = &[
    &["sandbox", "additionalWritePaths"],
    &["sandbox", "filesystem", "allowRead"],
    &["sandbox", "network", "allowedDomains"],
    &["permissions", "additionalDirectories"],
];

/// The managed keys that decide the model allowlist.
pub const AVAILABLE_MODELS: &str = "availableModels";
pub const ENFORCE_AVAILABLE_MODELS: &str = "enforceAvailableModels";

/// What the session knows about the folder when layers are weighed.
#[derive(Debug, Clone, Copy)]
pub struct Weigh<'a> {
    /// The user trusted this folder in the TUI, or a headless run was given `--trust-project`:
    /// the project's `acceptEdits` may apply.
    pub project_trusted: bool,
    /// Numeric limits a project may only lower, with keel's default for each (the sandbox's
    /// per-command limits).
    pub lower_only: &'a [(&'a [&'a str], u64)],
}

/// Removes from the layers what they may not set; returns one notice per removal.
pub fn enforce(settings: &mut Settings, weigh: Weigh<'_>) -> Vec<String> {
    let mut notices = Vec::new();
    managed_locks(settings, &mut notices);
    project_limits(settings, weigh, &mut notices);
    if let Some(ceiling) = mode_ceiling(settings) {
        for layer in settings.layers.iter_mut().filter(|l| l.scope != Scope::Managed) {
            let mode = nested_in(&layer.value, &["permissions", "defaultMode"])
                .and_then(Value::as_str)
                .and_then(Mode::parse);
            if let Some(m) = mode
                && m.latitude() > ceiling.mode.latitude()
            {
                remove(&mut layer.value, &["permissions", "defaultMode"]);
                notices.push(format!(
                    "{}: permissions.defaultMode `{}` is ignored: {}",
                    layer.label(),
                    m.as_str(),
                    ceiling.why
                ));
            }
        }
    }
    notices
}

/// The highest permission mode the managed layer allows, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ceiling {
    pub mode: Mode,
    pub why: String,
}

impl Ceiling {
    /// Why `mode` may not be entered, or `None` when it may.
    pub fn refuses(&self, mode: Mode) -> Option<String> {
        (mode.latitude() > self.mode.latitude()).then(|| self.why.clone())
    }
}

/// The permission-mode ceiling: the managed `permissions.modeCeiling`, and
/// `permissions.disableBypassPermissionsMode: "disable"` from any layer (it only tightens).
pub fn mode_ceiling(settings: &Settings) -> Option<Ceiling> {
    let mut ceiling = settings
        .managed_value(&["permissions", "modeCeiling"])
        .and_then(|(v, l)| v.as_str().and_then(Mode::parse).map(|m| (m, l)))
        .map(|(mode, l)| Ceiling {
            mode,
            why: format!("{} sets the highest permission mode to {}", l.label(), mode.as_str()),
        });
    let no_bypass = settings.layers.iter().rev().find(|l| {
        nested_in(&l.value, &["permissions", "disableBypassPermissionsMode"]).and_then(Value::as_str) == Some("disable")
    });
    if let Some(l) = no_bypass
        && ceiling.as_ref().is_none_or(|c| c.mode == Mode::BypassPermissions)
    {
        ceiling = Some(Ceiling {
            mode: Mode::AcceptEdits,
            why: format!("bypassPermissions mode is disabled by {}", l.label()),
        });
    }
    ceiling
}

/// Checks the managed keys' shapes: a typo in an operator's file must stop the session, not
/// leave a protection off.
pub fn check_managed(settings: &Settings) -> Result<(), SettingsError> {
    let bad = |layer: &Layer, key: &str, problem: &str| SettingsError::Invalid {
        path: layer.label(),
        key: key.to_string(),
        problem: problem.to_string(),
    };
    for layer in settings.managed() {
        for key in [
            "allowManagedHooksOnly",
            "allowManagedPermissionRulesOnly",
            ENFORCE_AVAILABLE_MODELS,
            "disableBundledSkills",
        ] {
            if layer.value.get(key).is_some_and(|v| !v.is_boolean() && !v.is_null()) {
                return Err(bad(layer, key, "must be true or false"));
            }
        }
        if let Some(v) = nested_in(&layer.value, &["permissions", "modeCeiling"])
            && v.as_str().and_then(Mode::parse).is_none()
        {
            let modes = Mode::ALL.map(Mode::as_str).join(", ");
            return Err(bad(
                layer,
                "permissions.modeCeiling",
                &format!("must be one of {modes}, found {v}"),
            ));
        }
        if let Some(v) = layer.value.get(AVAILABLE_MODELS).filter(|v| !v.is_null())
            && !v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
        {
            return Err(bad(layer, AVAILABLE_MODELS, "must be an array of model names"));
        }
    }
    Ok(())
}

/// The models a session may use when managed settings enforce a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelAllowlist {
    pub names: Vec<String>,
    /// The managed file that set it.
    pub file: String,
}

impl ModelAllowlist {
    pub fn allows(&self, model: &str) -> bool {
        model_allowed(&self.names, model)
    }

    /// Why `model` cannot be used, or `None` when it can.
    pub fn refuses(&self, model: &str) -> Option<String> {
        (!self.allows(model)).then(|| {
            format!(
                "the model `{model}` is not allowed: {} allows only {}",
                self.file,
                self.names.join(", ")
            )
        })
    }
}

/// The model allowlist when the managed layer enforces one (`availableModels` with
/// `enforceAvailableModels: true`).
pub fn model_allowlist(settings: &Settings) -> Option<ModelAllowlist> {
    if !settings.managed_flag(&[ENFORCE_AVAILABLE_MODELS]) {
        return None;
    }
    let (list, layer) = settings.managed_value(&[AVAILABLE_MODELS])?;
    let names = list
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    Some(ModelAllowlist {
        names,
        file: layer.label(),
    })
}

fn managed_locks(settings: &mut Settings, notices: &mut Vec<String>) {
    let hooks_only = settings.managed_flag(&["allowManagedHooksOnly"]);
    let rules_only = settings.managed_flag(&["allowManagedPermissionRulesOnly"]);
    let sandbox_on = settings.managed_flag(&["sandbox", "enabled"]);
    let domains_only = settings.managed_flag(&["sandbox", "network", "allowManagedDomainsOnly"]);
    let locked_lists: Vec<&[&str]> = WIDENING_LISTS
        .iter()
        .copied()
        .filter(|p| settings.managed_value(p).is_some())
        .collect();
    let allowlist = model_allowlist(settings);
    for layer in settings.layers.iter_mut().filter(|l| l.scope != Scope::Managed) {
        let label = layer.label();
        let value = &mut layer.value;
        let mut drop = |value: &mut Value, path: &[&str], why: &str| {
            if remove(value, path) {
                notices.push(format!("{label}: `{}` is ignored: {why}", path.join(".")));
            }
        };
        if hooks_only {
            drop(
                value,
                &["hooks"],
                "managed settings allow only their own hooks (allowManagedHooksOnly)",
            );
        }
        if rules_only {
            drop(
                value,
                &["permissions", "allow"],
                "managed settings allow only their own allow rules (allowManagedPermissionRulesOnly)",
            );
        }
        // A managed sandbox stays whole: not off, not off where it cannot work, no network,
        // unless the managed file itself says otherwise.
        for (path, unsafe_value) in [
            (&["sandbox", "enabled"][..], false),
            (&["sandbox", "failIfUnavailable"][..], false),
            (&["sandbox", "allowNetwork"][..], true),
        ] {
            if sandbox_on && nested_in(value, path).and_then(Value::as_bool) == Some(unsafe_value) {
                drop(value, path, "managed settings keep the sandbox on");
            }
        }
        for path in &locked_lists {
            drop(value, path, "managed settings fix this list");
        }
        if domains_only {
            drop(
                value,
                &["sandbox", "network", "allowedDomains"],
                "managed settings allow only their own domains (allowManagedDomainsOnly)",
            );
        }
        if let Some(list) = &allowlist {
            for key in ["model", "fallbackModel"] {
                // A fallback chain is a comma-separated string or an array of names.
                let names: Vec<String> = match value.get(key) {
                    Some(Value::String(s)) => s.split(',').map(|m| m.trim().to_string()).collect(),
                    Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
                    _ => Vec::new(),
                };
                let outside = names.iter().any(|m| !m.is_empty() && !list.allows(m));
                if outside {
                    drop(
                        value,
                        &[key],
                        &format!("the model is not in the allowlist of {}", list.file),
                    );
                }
            }
        }
    }
}

/// Whether `model` (as a user names it: an alias, a full id, `provider/model`) is on the list.
pub fn model_allowed(names: &[String], model: &str) -> bool {
    let resolved = super::models::resolve_alias(model);
    names.iter().any(|n| {
        n == model || super::models::resolve_alias(n) == resolved || model.rsplit_once('/').is_some_and(|(_, m)| m == n)
    })
}

fn project_limits(settings: &mut Settings, weigh: Weigh<'_>, notices: &mut Vec<String>) {
    for (path, default) in weigh.lower_only {
        let bound = settings
            .layers
            .iter()
            .rev()
            .filter(|l| l.scope.is_users())
            .find_map(|l| nested_in(&l.value, path).and_then(Value::as_u64))
            .unwrap_or(*default);
        for layer in settings.layers.iter_mut().filter(|l| l.scope.is_project()) {
            if let Some(v) = nested_in(&layer.value, path).and_then(Value::as_u64)
                && v > bound
            {
                remove(&mut layer.value, path);
                notices.push(format!(
                    "{}: `{}: {v}` is ignored: a project's settings may lower this limit, not raise it above {bound}",
                    layer.label(),
                    path.join(".")
                ));
            }
        }
    }
    let users_mode = settings
        .layers
        .iter()
        .rev()
        .filter(|l| l.scope.is_users())
        .find_map(|l| {
            nested_in(&l.value, &["permissions", "defaultMode"])
                .and_then(Value::as_str)
                .and_then(Mode::parse)
        })
        .unwrap_or(Mode::Default);
    let users_hooks = settings
        .layers
        .iter()
        .any(|l| l.scope.is_users() && l.value.get("hooks").is_some());
    let mut project_hooks_off = false;
    for layer in settings.layers.iter_mut().filter(|l| l.scope.is_project()) {
        for (path, safe) in PROTECTIONS {
            let set = nested_in(&layer.value, path).and_then(Value::as_bool);
            if set == Some(!safe) {
                remove(&mut layer.value, path);
                notices.push(format!(
                    "{}: `{}: {}` is ignored: a project's settings cannot weaken the sandbox",
                    layer.label(),
                    path.join("."),
                    !safe
                ));
            }
        }
        if remove(&mut layer.value, &["sandbox", "network", "allowedDomains"]) {
            notices.push(format!(
                "{}: `sandbox.network.allowedDomains` is ignored: only your own settings can open the network to \
                 sandboxed commands (a project may add deniedDomains)",
                layer.label()
            ));
        }
        for path in [
            &["sandbox", "filesystem", "allowRead"][..],
            &["sandbox", "additionalWritePaths"][..],
        ] {
            if remove(&mut layer.value, path) {
                notices.push(format!(
                    "{}: `{}` is ignored: only your own settings can open more of the disk to commands",
                    layer.label(),
                    path.join(".")
                ));
            }
        }
        web_limits(layer, notices);
        if !weigh.project_trusted && remove(&mut layer.value, &["permissions", "additionalDirectories"]) {
            notices.push(format!(
                "{}: `permissions.additionalDirectories` is ignored: a project's extra directories apply only in a \
                 folder you trusted (in a headless run: with --trust-project or KEEL_TRUST_PROJECT=1)",
                layer.label()
            ));
        }
        if layer.value.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
            remove(&mut layer.value, &["disableAllHooks"]);
            project_hooks_off = true;
            if users_hooks {
                notices.push(format!(
                    "{}: `disableAllHooks` turns off only this project's hooks; your own hooks still run",
                    layer.label()
                ));
            }
        }
        project_mode(layer, users_mode, weigh, notices);
    }
    if project_hooks_off {
        for layer in settings.layers.iter_mut().filter(|l| l.scope.is_project()) {
            remove(&mut layer.value, &["hooks"]);
        }
    }
}

/// What a project's settings may not say about the web tools: that pages on the user's own
/// network may be fetched, or where the model's search queries go.
fn web_limits(layer: &mut Layer, notices: &mut Vec<String>) {
    if nested_in(&layer.value, &["webFetch", "allowPrivateNetwork"]).and_then(Value::as_bool) == Some(true) {
        remove(&mut layer.value, &["webFetch", "allowPrivateNetwork"]);
        notices.push(format!(
            "{}: `webFetch.allowPrivateNetwork: true` is ignored: only your own settings can let WebFetch reach \
             this machine and its network",
            layer.label()
        ));
    }
    if remove(&mut layer.value, &["webSearch"]) {
        notices.push(format!(
            "{}: `webSearch` is ignored: only your own settings choose where search queries go",
            layer.label()
        ));
    }
}

/// A project's `permissions.defaultMode`: a mode at or below the user's applies; `acceptEdits`
/// in a trusted folder; nothing else.
fn project_mode(layer: &mut Layer, users: Mode, weigh: Weigh<'_>, notices: &mut Vec<String>) {
    let Some(mode) = nested_in(&layer.value, &["permissions", "defaultMode"])
        .and_then(Value::as_str)
        .and_then(Mode::parse)
    else {
        return; // absent, or invalid: the permission setup names a bad value
    };
    let applies = mode.latitude() <= users.latitude() && !matches!(mode, Mode::DontAsk | Mode::BypassPermissions)
        || mode == users
        || mode == Mode::AcceptEdits && weigh.project_trusted;
    if applies {
        return;
    }
    remove(&mut layer.value, &["permissions", "defaultMode"]);
    let why = if mode == Mode::AcceptEdits {
        "it applies only in a folder you trusted (in a headless run: with --trust-project or KEEL_TRUST_PROJECT=1)"
            .to_string()
    } else {
        format!(
            "a project's settings cannot raise the permission mode above yours ({})",
            users.as_str()
        )
    };
    notices.push(format!(
        "{}: permissions.defaultMode `{}` is ignored: {why}",
        layer.label(),
        mode.as_str()
    ));
}

/// Removes a nested key; true when it was there.
fn remove(value: &mut Value, path: &[&str]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut cur = value;
    for key in parents {
        match cur.get_mut(*key) {
            Some(next) => cur = next,
            None => return false,
        }
    }
    cur.as_object_mut()
        .and_then(|m| m.remove(*last))
        .is_some_and(|v| !v.is_null())
}

#[cfg(test)]
#[path = "precedence_tests.rs"]
mod tests;
