//! Spawn budgets: how deep sub-agents may nest (`agents.maxDepth`), how many one parent may
//! have running at once (`agents.maxChildren`) and how many a session may start in all
//! (`agents.maxTotal`). A depth limit alone misses width: twenty agents at depth 1 are still
//! "depth 1".

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::config::settings::{Scope, Settings, SettingsError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_depth: u32,
    pub max_children: u32,
    pub max_total: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 2,
            max_children: 5,
            max_total: 20,
        }
    }
}

impl Limits {
    /// The `agents` settings (`maxDepth`, `maxChildren`, `maxTotal`); absent keys keep defaults.
    /// A repository's settings (project and local files) may lower a budget but not raise it
    /// above the default or the user's own value: a cloned repository must not let a model
    /// spawn a thousand sub-agents. Returns the limits and one warning per value refused.
    pub fn from_settings(settings: &Settings) -> Result<(Limits, Vec<String>), SettingsError> {
        let mut l = Limits::default();
        let mut warnings = Vec::new();
        for (key, slot) in [
            ("maxDepth", &mut l.max_depth),
            ("maxChildren", &mut l.max_children),
            ("maxTotal", &mut l.max_total),
        ] {
            let mut ceiling = *slot;
            for layer in &settings.layers {
                let Some(v) = layer
                    .value
                    .get("agents")
                    .and_then(|a| a.get(key))
                    .filter(|v| !v.is_null())
                else {
                    continue;
                };
                let n = v
                    .as_u64()
                    .filter(|n| *n <= 1000)
                    .ok_or_else(|| SettingsError::Invalid {
                        path: layer.label(),
                        key: format!("agents.{key}"),
                        problem: format!("must be a whole number from 0 to 1000, found {v}"),
                    })? as u32;
                match layer.scope {
                    Scope::Project | Scope::Local if n > ceiling => warnings.push(format!(
                        "{}: agents.{key} = {n} is ignored: a project's settings may lower a spawn budget, not raise \
                         it above {ceiling} (set it in your user settings)",
                        layer.label()
                    )),
                    Scope::Project | Scope::Local => *slot = n,
                    Scope::User | Scope::Cli | Scope::Managed => {
                        *slot = n;
                        ceiling = n;
                    }
                }
            }
        }
        Ok((l, warnings))
    }
}

/// The session-wide part of the budget, shared by every runner of the session's agent tree.
#[derive(Debug)]
pub struct SpawnBudget {
    pub limits: Limits,
    started: AtomicU32,
}

/// One parent's count of running children.
#[derive(Debug, Default)]
pub struct Children(AtomicU32);

impl Children {
    #[cfg(test)]
    pub fn running(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A reserved place for one child. Dropping it frees the parent's slot; a slot never started
/// (the call was refused later, e.g. by a permission rule) also gives its session count back.
#[derive(Debug)]
pub struct Slot {
    budget: Arc<SpawnBudget>,
    children: Arc<Children>,
    started: bool,
}

impl Slot {
    pub fn start(&mut self) {
        self.started = true;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.children.0.fetch_sub(1, Ordering::SeqCst);
        if !self.started {
            self.budget.started.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl SpawnBudget {
    pub fn new(limits: Limits) -> Arc<SpawnBudget> {
        Arc::new(SpawnBudget {
            limits,
            started: AtomicU32::new(0),
        })
    }

    #[cfg(test)]
    /// How many sub-agents the session has started (or reserved).
    pub fn started(&self) -> u32 {
        self.started.load(Ordering::SeqCst)
    }

    /// Reserves a place for a child at `depth` (the main agent is depth 0) of a parent with
    /// `children`; the error names the budget that refuses it.
    pub fn reserve(self: &Arc<Self>, depth: u32, children: &Arc<Children>) -> Result<Slot, String> {
        let l = self.limits;
        if depth > l.max_depth {
            return Err(format!(
                "Sub-agent refused by the spawn budget agents.maxDepth = {}: it would run at depth {depth}. Do \
                 this part of the work yourself.",
                l.max_depth
            ));
        }
        let running = children.0.fetch_add(1, Ordering::SeqCst);
        if running >= l.max_children {
            children.0.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "Sub-agent refused by the spawn budget agents.maxChildren = {}: this agent already has {running} \
                 sub-agent(s) running. Wait for their results, then start more if still needed.",
                l.max_children
            ));
        }
        let started = self.started.fetch_add(1, Ordering::SeqCst);
        if started >= l.max_total {
            self.started.fetch_sub(1, Ordering::SeqCst);
            children.0.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "Sub-agent refused by the spawn budget agents.maxTotal = {}: this session has started {started} \
                 sub-agents. Finish the work without more delegation.",
                l.max_total
            ));
        }
        Ok(Slot {
            budget: self.clone(),
            children: children.clone(),
            started: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_refuse_in_order_and_name_themselves() {
        let b = SpawnBudget::new(Limits {
            max_depth: 2,
            max_children: 2,
            max_total: 3,
        });
        let kids = Arc::new(Children::default());
        let mut a = b.reserve(1, &kids).unwrap();
        let mut c = b.reserve(1, &kids).unwrap();
        let err = b.reserve(1, &kids).unwrap_err();
        assert!(err.contains("agents.maxChildren = 2"), "{err}");
        a.start();
        c.start();
        drop(a);
        assert_eq!(kids.running(), 1);
        let mut d = b.reserve(1, &kids).unwrap();
        d.start();
        drop(d);
        let err = b.reserve(1, &kids).unwrap_err();
        assert!(err.contains("agents.maxTotal = 3"), "{err}");
        assert!(b.reserve(3, &kids).unwrap_err().contains("agents.maxDepth = 2"));
        // A reservation that never started gives its place back.
        drop(c);
        let fresh = SpawnBudget::new(Limits::default());
        let r = fresh.reserve(1, &kids).unwrap();
        assert_eq!(fresh.started(), 1);
        drop(r);
        assert_eq!(fresh.started(), 0);
        assert_eq!(kids.running(), 0);
    }

    #[test]
    fn settings_override_defaults() {
        let d = tempfile::tempdir().unwrap();
        let s = Settings::load(
            None,
            &d.path().join("k"),
            d.path(),
            Some(r#"{"agents": {"maxTotal": 4}}"#),
        )
        .unwrap();
        assert_eq!(
            Limits::from_settings(&s).unwrap(),
            (
                Limits {
                    max_total: 4,
                    ..Limits::default()
                },
                Vec::new()
            )
        );
        let s = Settings::load(
            None,
            &d.path().join("k"),
            d.path(),
            Some(r#"{"agents": {"maxDepth": "two"}}"#),
        )
        .unwrap();
        assert!(
            Limits::from_settings(&s)
                .unwrap_err()
                .to_string()
                .contains("agents.maxDepth")
        );
    }

    /// A cloned repository's settings cannot lift the budgets a hostile model would need to
    /// spawn without end; they may still lower them, and the user's own settings may raise them.
    #[test]
    fn a_repository_may_lower_budgets_but_not_raise_them() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let repo = d.path().join("repo");
        let write = |p: std::path::PathBuf, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            repo.join(".claude/settings.json"),
            r#"{"agents": {"maxDepth": 1000, "maxChildren": 3, "maxTotal": 1000}}"#,
        );
        write(
            repo.join(".claude/settings.local.json"),
            r#"{"agents": {"maxDepth": 50}}"#,
        );
        let load = |cli: Option<&str>| Settings::load(Some(&home), &d.path().join("k"), &repo, cli).unwrap();
        let (l, warnings) = Limits::from_settings(&load(None)).unwrap();
        assert_eq!(
            l,
            Limits {
                max_depth: 2,
                max_children: 3,
                max_total: 20
            }
        );
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("settings.json") && w.contains("agents.maxTotal = 1000") && w.contains("above 20")),
            "{warnings:?}"
        );
        // The user's own settings set the ceiling the repository stays under.
        write(
            home.join(".claude/settings.json"),
            r#"{"agents": {"maxDepth": 60, "maxTotal": 100}}"#,
        );
        let (l, warnings) = Limits::from_settings(&load(None)).unwrap();
        assert_eq!(
            l,
            Limits {
                max_depth: 50,
                max_children: 3,
                max_total: 100
            }
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        // `--settings` is the user's too.
        let (l, _) = Limits::from_settings(&load(Some(r#"{"agents": {"maxTotal": 300}}"#))).unwrap();
        assert_eq!(l.max_total, 300);
    }
}
