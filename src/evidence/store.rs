//! Keeping the ledger on disk: `evidence.json` (saved when it changed), the test files'
//! baselines in `evidence-baselines.json`, and each run's log under `evidence/`.

use std::path::{Path, PathBuf};

use super::{Evidence, State};

impl Evidence {
    /// Where run `id`'s complete output goes (none without session persistence).
    pub(super) fn log_path(&self, id: u32) -> Option<PathBuf> {
        self.store.as_ref()?;
        Some(self.log_dir.join(format!("run-{id}.log")))
    }

    /// Writes a run's complete output (after the ledger's lock is released); the run keeps no
    /// log path when it cannot be written.
    pub(super) fn write_log(&self, path: &Path, text: &str) -> bool {
        std::fs::create_dir_all(&self.log_dir).is_ok() && std::fs::write(path, text).is_ok()
    }

    /// Writes the ledger when it changed since the last save (a command that changed nothing
    /// and ran no check costs no write); the test files' baselines, which can be large, go to
    /// their own file, written only when one is added.
    pub(super) fn save(&self, s: &mut State) {
        let Some(path) = &self.store else { return };
        let l = &s.ledger;
        let sig = (l.version, l.runs.len(), l.weakened.len(), l.digest);
        let mut result = Ok(());
        if s.saved != Some(sig) {
            result = serde_json::to_vec(l)
                .map_err(std::io::Error::other)
                .and_then(|b| crate::fsutil::write_atomic_copy(path, &b));
            if result.is_ok() {
                s.saved = Some(sig);
            }
        }
        if result.is_ok() && s.saved_baselines != l.baselines.len() {
            let file = baselines_path(path);
            result = serde_json::to_vec(&l.baselines)
                .map_err(std::io::Error::other)
                .and_then(|b| crate::fsutil::write_atomic_copy(&file, &b));
            if result.is_ok() {
                s.saved_baselines = l.baselines.len();
            }
        }
        if let Err(e) = result
            && s.write_error.is_none()
        {
            s.write_error = Some(format!("cannot save the evidence ledger {}: {e}", path.display()));
        }
    }
}

pub(super) fn baselines_path(store: &Path) -> PathBuf {
    store.with_file_name("evidence-baselines.json")
}
