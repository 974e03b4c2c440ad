//! The managed layer: settings an operator installs for every user of a machine (teams, CI,
//! regulated environments). Nothing below it — user, project or local settings, flags, a
//! driving program's options — can widen what it sets (`precedence.rs` enforces that).
//!
//! Read, lowest first: the file `$KEEL_MANAGED_SETTINGS` names (for deployments that keep
//! policy elsewhere; it can only add to the system files, which are read after it), the
//! reference's `/etc/claude-code/managed-settings.json` and `managed-settings.d/*.json`, then
//! keel's own `/etc/keel/managed-settings.json` and `managed-settings.d/*.json`.

use std::path::PathBuf;

/// The environment variable naming one more managed file.
pub const ENV: &str = "KEEL_MANAGED_SETTINGS";

/// The system directories holding managed settings, lowest first.
pub const SYSTEM_DIRS: &[&str] = &["/etc/claude-code", "/etc/keel"];

/// Every managed settings file that may exist, lowest precedence first. Files that do not
/// exist are skipped by the reader.
pub fn files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        out.push(PathBuf::from(p));
    }
    for dir in SYSTEM_DIRS {
        let dir = PathBuf::from(dir);
        out.push(dir.join("managed-settings.json"));
        out.extend(drop_ins(&dir.join("managed-settings.d")));
    }
    out
}

/// `*.json` files of a drop-in directory, in name order (`10-base.json` before `20-ci.json`).
fn drop_ins(dir: &std::path::Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_ins_are_read_in_name_order_and_only_json() {
        let d = tempfile::tempdir().unwrap();
        for name in ["20-ci.json", "10-base.json", "notes.txt"] {
            std::fs::write(d.path().join(name), "{}").unwrap();
        }
        let names: Vec<String> = drop_ins(d.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["10-base.json", "20-ci.json"]);
    }
}
