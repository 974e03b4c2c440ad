//! Builds the permission setup from the settings layers and the command line.

use std::path::{Path, PathBuf};

use super::Mode;
use super::authorizer::Authorizer;
use super::rules::{Anchors, Behavior, Rule, RuleError, split_cli_rules};
use crate::config::settings::{Settings, SettingsError};

#[derive(Debug, thiserror::Error)]
pub enum PermissionConfigError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("{0}")]
    Invalid(String),
}

/// Command-line inputs that shape permissions.
#[derive(Debug, Default, Clone)]
pub struct CliPermissions {
    pub allowed_tools: Vec<String>,
    pub disallowed_tools: Vec<String>,
    pub add_dirs: Vec<PathBuf>,
    pub mode: Option<Mode>,
}

pub struct PermissionSetup {
    pub authorizer: Authorizer,
    pub mode: Mode,
    /// Rules that name no tool keel knows (a typo, or a prompt swallowed by `--allowedTools`).
    pub warnings: Vec<String>,
}

pub fn build(
    settings: &Settings,
    cli: &CliPermissions,
    cwd: &Path,
    home: Option<&Path>,
    known_tools: &[&str],
) -> Result<PermissionSetup, PermissionConfigError> {
    let mut rules = Vec::new();
    for (key, behavior) in [
        ("allow", Behavior::Allow),
        ("ask", Behavior::Ask),
        ("deny", Behavior::Deny),
    ] {
        for (text, layer) in settings.strings(&["permissions", key])? {
            let anchors = Anchors {
                cwd: cwd.to_path_buf(),
                base_dir: layer.base_dir.clone(),
                home: home.map(Path::to_path_buf),
            };
            rules.push(Rule::parse(&text, behavior, &layer.label(), &anchors)?);
        }
    }
    let cli_anchors = Anchors {
        cwd: cwd.to_path_buf(),
        base_dir: cwd.to_path_buf(),
        home: home.map(Path::to_path_buf),
    };
    let managed_rules_only = settings.managed_flag(&["allowManagedPermissionRulesOnly"]);
    let mut warnings = Vec::new();
    if managed_rules_only && !cli.allowed_tools.is_empty() {
        warnings.push(
            "--allowedTools is ignored: managed settings allow only their own allow rules \
             (allowManagedPermissionRulesOnly)"
                .to_string(),
        );
    } else {
        for text in split_cli_rules(&cli.allowed_tools) {
            rules.push(Rule::parse(&text, Behavior::Allow, "--allowedTools", &cli_anchors)?);
        }
    }
    for text in split_cli_rules(&cli.disallowed_tools) {
        rules.push(Rule::parse(&text, Behavior::Deny, "--disallowedTools", &cli_anchors)?);
    }

    let mut dirs = vec![cwd.to_path_buf()];
    for (dir, layer) in settings.strings(&["permissions", "additionalDirectories"])? {
        dirs.push(crate::fsutil::paths::resolve(&layer.base_dir, &dir));
    }
    // Managed settings that name the extra directories fix the list.
    let managed_dirs = settings.managed_value(&["permissions", "additionalDirectories"]);
    if let Some((_, layer)) = managed_dirs.filter(|_| !cli.add_dirs.is_empty()) {
        warnings.push(format!(
            "--add-dir is ignored: {} fixes the extra working directories",
            layer.label()
        ));
    } else {
        for d in &cli.add_dirs {
            dirs.push(crate::fsutil::paths::resolve(cwd, &d.to_string_lossy()));
        }
    }
    for d in dirs.iter_mut() {
        if let Ok(c) = d.canonicalize() {
            *d = c;
        } else {
            return Err(PermissionConfigError::Invalid(format!(
                "additional directory {} does not exist",
                d.display()
            )));
        }
    }

    let ceiling = crate::config::precedence::mode_ceiling(settings);
    let refused = |m: Mode| ceiling.as_ref().and_then(|c| c.refuses(m));
    let mode = match cli.mode {
        Some(m) => {
            if let Some(why) = refused(m) {
                return Err(PermissionConfigError::Invalid(format!(
                    "the permission mode {} cannot be used: {why}",
                    m.as_str()
                )));
            }
            m
        }
        None => match settings.nested(&["permissions", "defaultMode"]) {
            None => Mode::Default,
            Some((v, layer)) => v.as_str().and_then(Mode::parse).ok_or_else(|| {
                PermissionConfigError::Invalid(format!(
                    "{}: permissions.defaultMode must be one of {}, found {v}",
                    layer.label(),
                    Mode::ALL.map(Mode::as_str).join(", ")
                ))
            })?,
        },
    };
    // A mode from settings above the ceiling was removed with a notice; what remains is the
    // default, which a `plan` ceiling lowers.
    let mode = match &ceiling {
        Some(c) if c.refuses(mode).is_some() => c.mode,
        _ => mode,
    };
    warnings.extend(
        rules
            .iter()
            .filter(|r| {
                !(r.tool.contains('*')
                    || r.tool.starts_with("mcp__")
                    || known_tools.contains(&r.tool.as_str())
                    || crate::tools::kinds::is_known(&r.tool))
            })
            .map(|r| {
                format!(
                    "the {} rule `{}` ({}) names no tool keel knows; check its spelling",
                    r.behavior.as_str(),
                    r.text,
                    r.source
                )
            }),
    );
    let save_path = Some(cwd.join(".keel").join("settings.local.json"));
    let mut authorizer = Authorizer::new(rules, dirs, home.map(Path::to_path_buf), save_path);
    authorizer.ceiling = ceiling;
    authorizer.managed_rules_only = managed_rules_only;
    authorizer.managed_dirs = managed_dirs.is_some();
    authorizer.model_allowlist = crate::config::precedence::model_allowlist(settings);
    Ok(PermissionSetup {
        authorizer,
        mode,
        warnings,
    })
}
