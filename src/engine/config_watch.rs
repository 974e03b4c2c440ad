//! `ConfigChange`: the settings files a session read, watched for changes while it runs.
//! keel reads settings once, at the start of a session; a change made during it applies from
//! the next session. The hook lets an operator see (and log, or alert on) every change, and the
//! user is told the change waits for the next start.

use std::path::PathBuf;

use super::Engine;
use super::events::NoticeLevel;
use crate::config::settings::Scope;
use crate::hooks::{Event, fields};

/// What identifies one version of a file cheaply: size, modification time, inode. `None`: absent.
type Stamp = Option<(u64, i64, i64, u64)>;

/// One watched file.
struct Watched {
    path: PathBuf,
    source: &'static str,
    stamp: Stamp,
}

/// The settings files of a session and the version of each it started with.
pub struct ConfigWatch {
    files: Vec<Watched>,
}

/// The reference's names for the sources, which `ConfigChange` matchers use.
fn source_name(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "user_settings",
        Scope::Project => "project_settings",
        Scope::Local => "local_settings",
        Scope::Managed => "policy_settings",
        Scope::Cli => "cli_settings",
    }
}

fn stamp(path: &std::path::Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.mtime(), m.mtime_nsec(), m.ino()))
}

impl ConfigWatch {
    pub fn new(files: Vec<(Scope, PathBuf)>) -> Self {
        ConfigWatch {
            files: files
                .into_iter()
                .map(|(scope, path)| Watched {
                    stamp: stamp(&path),
                    source: source_name(scope),
                    path,
                })
                .collect(),
        }
    }

    /// The files changed (written, created or removed) since the last look, with their source.
    pub fn changed(&mut self) -> Vec<(&'static str, PathBuf)> {
        let mut out = Vec::new();
        for f in &mut self.files {
            let now = stamp(&f.path);
            if now != f.stamp {
                f.stamp = now;
                out.push((f.source, f.path.clone()));
            }
        }
        out
    }
}

impl Engine {
    /// Tells the user and fires `ConfigChange` for each settings file changed since the last
    /// look (between turns and after each tool round).
    pub(super) async fn config_changes(&mut self) {
        let Some(watch) = self.config_watch.as_mut() else {
            return;
        };
        for (source, path) in watch.changed() {
            let mut note = format!(
                "{} changed during the session; keel reads settings when a session starts, so the change takes \
                 effect in the next one (rules and modes keel saved itself already apply)",
                path.display()
            );
            if self.hooks.has(Event::ConfigChange) {
                let agg = self
                    .hooks
                    .fire(
                        Event::ConfigChange,
                        Some(source),
                        self.session.services.mode(),
                        fields([
                            ("source", source.into()),
                            ("file_path", path.display().to_string().into()),
                        ]),
                        &self.events,
                    )
                    .await;
                if agg.blocked() {
                    note.push_str(&format!(
                        " (a ConfigChange hook objected: {}; nothing of it applies to this session)",
                        agg.block_reason()
                    ));
                }
                self.pending_context.extend(agg.context);
            }
            self.events.notice(NoticeLevel::Warning, note);
        }
    }

    /// Watches the session's settings files for `ConfigChange` (the main session only).
    pub fn watch_settings(&mut self, files: Vec<(Scope, PathBuf)>) {
        self.config_watch = Some(ConfigWatch::new(files));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_creations_and_removals_are_changes_and_each_is_seen_once() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.json");
        let b = d.path().join("b.json");
        std::fs::write(&a, "{}").unwrap();
        let mut w = ConfigWatch::new(vec![(Scope::User, a.clone()), (Scope::Project, b.clone())]);
        assert!(w.changed().is_empty());
        std::fs::write(&a, r#"{"model": "opus"}"#).unwrap();
        std::fs::write(&b, "{}").unwrap();
        let seen = w.changed();
        assert_eq!(seen, [("user_settings", a.clone()), ("project_settings", b)]);
        assert!(w.changed().is_empty(), "a change is reported once");
        std::fs::remove_file(&a).unwrap();
        assert_eq!(w.changed(), [("user_settings", a)]);
    }
}
