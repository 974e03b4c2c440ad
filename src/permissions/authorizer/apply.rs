//! Permission updates a driving program sends with an approval (`updatedPermissions`): rules
//! added, replaced or removed per behaviour, working directories added or removed, each for
//! this session or also saved to a settings file (`localSettings` → `.keel/settings.local.json`,
//! `projectSettings` → `.keel/settings.json`, `userSettings` → `$KEEL_HOME/settings.json`).
//! An update is checked whole before any of it is applied; the file is written atomically.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::Authorizer;
use crate::permissions::rules::{Behavior, Rule};
use crate::permissions::updates::{Destination, RuleOp};

impl Authorizer {
    /// The settings file a destination saves to; `None` for the session.
    fn settings_file(&self, d: Destination) -> Result<Option<PathBuf>, String> {
        let local = || {
            self.save_path
                .clone()
                .ok_or_else(|| "this session has no project settings file to save to".to_string())
        };
        Ok(match d {
            Destination::Session => None,
            Destination::LocalSettings => Some(local()?),
            Destination::ProjectSettings => Some(local()?.with_file_name("settings.json")),
            Destination::UserSettings => Some(
                crate::config::paths::keel_home()
                    .ok_or("cannot find the user settings folder (set KEEL_HOME)")?
                    .join("settings.json"),
            ),
        })
    }

    /// Adds, replaces or removes rules of one behaviour at a destination, in this session and
    /// (for a settings destination) in its file.
    pub fn update_rules(&self, op: RuleOp, behavior: Behavior, texts: &[String], d: Destination) -> Result<(), String> {
        if self.managed_rules_only && behavior == Behavior::Allow && op != RuleOp::Remove {
            return Err("allow rules cannot be added: managed settings allow only their own \
                        (allowManagedPermissionRulesOnly)"
                .into());
        }
        let file = self.settings_file(d)?;
        let source = file
            .as_ref()
            .map(|f| f.display().to_string())
            .unwrap_or_else(|| "session".into());
        let parsed = texts
            .iter()
            .map(|t| Rule::parse(t, behavior, &source, &self.anchors))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        if let Some(f) = &file {
            let key = behavior.as_str();
            edit_permissions(f, |perms| {
                let list = string_list(perms, key)?;
                let next: Vec<String> = match op {
                    RuleOp::Add => {
                        let mut l = list;
                        l.extend(texts.iter().filter(|t| !l.contains(t)).cloned().collect::<Vec<_>>());
                        l
                    }
                    RuleOp::Replace => texts.to_vec(),
                    RuleOp::Remove => list.into_iter().filter(|t| !texts.contains(t)).collect(),
                };
                perms.insert(key.into(), next.into());
                Ok(())
            })?;
        }
        let touched = |r: &Rule| {
            r.behavior == behavior && r.source == source && (op == RuleOp::Replace || texts.contains(&r.text))
        };
        if op != RuleOp::Add {
            // Rules read from that file at startup stop applying too.
            let gone: Vec<(Behavior, String, String)> = self
                .rules
                .iter()
                .filter(|r| touched(r))
                .map(|r| (r.behavior, r.text.clone(), r.source.clone()))
                .collect();
            self.masked.lock().unwrap_or_else(|p| p.into_inner()).extend(gone);
        }
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        // For Add, `touched` finds the same rules already there (added again, not twice).
        session.retain(|r| !touched(r));
        if op != RuleOp::Remove {
            session.extend(parsed);
        }
        Ok(())
    }

    /// Saves a permission mode as the destination's `permissions.defaultMode` (the session's
    /// mode is the caller's to change).
    pub fn save_mode(&self, mode: crate::permissions::Mode, d: Destination) -> Result<(), String> {
        match self.settings_file(d)? {
            None => Ok(()),
            Some(f) => edit_permissions(&f, |perms| {
                perms.insert("defaultMode".into(), mode.as_str().into());
                Ok(())
            }),
        }
    }

    /// Adds or removes working directories; returns the working directories after the change.
    /// The session's own directory is never removed.
    pub fn update_directories(&self, add: bool, dirs: &[String], d: Destination) -> Result<Vec<PathBuf>, String> {
        if add && self.managed_dirs {
            return Err("directories cannot be added: managed settings fix the extra working directories".into());
        }
        let cwd = self.anchors.cwd.clone();
        let resolved = dirs
            .iter()
            .map(|raw| {
                let p = crate::fsutil::paths::resolve(&cwd, raw);
                match p.canonicalize() {
                    Ok(c) if c.is_dir() => Ok(c),
                    Ok(_) => Err(format!("{} is not a directory", p.display())),
                    Err(_) if !add => Ok(p),
                    Err(e) => Err(format!("directory {}: {e}", p.display())),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(f) = self.settings_file(d)? {
            edit_permissions(&f, |perms| {
                let mut list = string_list(perms, "additionalDirectories")?;
                for p in &resolved {
                    let text = p.display().to_string();
                    if add && !list.contains(&text) {
                        list.push(text);
                    } else if !add {
                        list.retain(|t| Path::new(t) != p.as_path());
                    }
                }
                perms.insert("additionalDirectories".into(), list.into());
                Ok(())
            })?;
        }
        let mut current = self.dirs.write().unwrap_or_else(|p| p.into_inner());
        for p in resolved {
            if add && !current.contains(&p) {
                current.push(p);
            } else if !add {
                let first = current.first().cloned();
                current.retain(|c| *c != p || Some(c) == first.as_ref());
            }
        }
        Ok(current.clone())
    }
}

fn string_list(perms: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match perms.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("`permissions.{key}` holds something other than strings")),
        Some(_) => Err(format!("`permissions.{key}` is not an array")),
    }
}

/// Reads a settings file (a missing one is empty), changes its `permissions` object and
/// writes it back atomically. A file that is not a JSON object is left untouched.
fn edit_permissions(
    path: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<(), String>,
) -> Result<(), String> {
    let mut doc: Value = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let obj = doc
        .as_object_mut()
        .ok_or_else(|| format!("{} is not a JSON object", path.display()))?;
    let perms = obj
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("{}: `permissions` is not an object", path.display()))?;
    change(perms).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    text.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::Mode;
    use serde_json::json;

    fn authorizer(dir: &Path, rules: Vec<Rule>) -> Authorizer {
        Authorizer::new(
            rules,
            vec![dir.to_path_buf()],
            None,
            Some(dir.join(".keel/settings.local.json")),
        )
    }

    fn decide(a: &Authorizer, command: &str, cwd: &Path) -> super::super::Verdict {
        a.decide(
            "Bash",
            &json!({"command": command}),
            false,
            Mode::Default,
            cwd,
            None,
            &[],
        )
        .verdict
    }

    #[test]
    fn rules_of_every_behaviour_apply_at_once_and_are_saved_where_asked() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().canonicalize().unwrap();
        let local = dir.join(".keel/settings.local.json");
        std::fs::create_dir_all(local.parent().unwrap()).unwrap();
        std::fs::write(&local, r#"{"model": "kept", "permissions": {"deny": ["Bash(rm:*)"]}}"#).unwrap();
        let anchors = crate::permissions::rules::Anchors {
            cwd: dir.clone(),
            base_dir: dir.clone(),
            home: None,
        };
        let startup = Rule::parse("Bash(rm:*)", Behavior::Deny, &local.display().to_string(), &anchors).unwrap();
        let a = authorizer(&dir, vec![startup]);
        assert!(matches!(decide(&a, "rm -f x", &dir), super::super::Verdict::Deny(_)));

        a.update_rules(
            RuleOp::Add,
            Behavior::Deny,
            &["Bash(curl:*)".into()],
            Destination::Session,
        )
        .unwrap();
        assert!(matches!(
            decide(&a, "curl example.com", &dir),
            super::super::Verdict::Deny(_)
        ));
        // Removing the file's deny rule lifts it now and in the file; other keys stay.
        a.update_rules(
            RuleOp::Remove,
            Behavior::Deny,
            &["Bash(rm:*)".into()],
            Destination::LocalSettings,
        )
        .unwrap();
        assert!(!matches!(decide(&a, "rm -f x", &dir), super::super::Verdict::Deny(_)));
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&local).unwrap()).unwrap();
        assert_eq!(saved["model"], "kept");
        assert_eq!(saved["permissions"]["deny"], json!([]));
        // Ask rules saved to the project file; replace swaps the whole list.
        a.update_rules(
            RuleOp::Add,
            Behavior::Ask,
            &["Bash(git push:*)".into()],
            Destination::ProjectSettings,
        )
        .unwrap();
        assert!(matches!(
            decide(&a, "git push", &dir),
            super::super::Verdict::Ask { hard: true, .. }
        ));
        a.update_rules(
            RuleOp::Replace,
            Behavior::Ask,
            &["Bash(git tag:*)".into()],
            Destination::ProjectSettings,
        )
        .unwrap();
        assert!(!matches!(
            decide(&a, "git push", &dir),
            super::super::Verdict::Ask { hard: true, .. }
        ));
        let project: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(".keel/settings.json")).unwrap()).unwrap();
        assert_eq!(project["permissions"]["ask"], json!(["Bash(git tag:*)"]));
        // An invalid rule changes nothing.
        assert!(
            a.update_rules(
                RuleOp::Add,
                Behavior::Allow,
                &["Bash(".into()],
                Destination::LocalSettings
            )
            .is_err()
        );
        a.save_mode(Mode::AcceptEdits, Destination::LocalSettings).unwrap();
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&local).unwrap()).unwrap();
        assert_eq!(saved["permissions"]["defaultMode"], "acceptEdits");
    }

    #[test]
    fn directories_are_added_and_removed_but_never_the_session_one() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().canonicalize().unwrap();
        let other = tempfile::tempdir().unwrap();
        let other_path = other.path().canonicalize().unwrap();
        let a = authorizer(&dir, Vec::new());
        let dirs = a
            .update_directories(true, &[other_path.display().to_string()], Destination::LocalSettings)
            .unwrap();
        assert_eq!(dirs, vec![dir.clone(), other_path.clone()]);
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(".keel/settings.local.json")).unwrap()).unwrap();
        assert_eq!(
            saved["permissions"]["additionalDirectories"][0],
            other_path.display().to_string()
        );
        assert!(
            a.update_directories(true, &["does/not/exist".into()], Destination::Session)
                .is_err()
        );
        let dirs = a
            .update_directories(
                false,
                &[other_path.display().to_string(), dir.display().to_string()],
                Destination::Session,
            )
            .unwrap();
        assert_eq!(dirs, vec![dir]);
    }
}
