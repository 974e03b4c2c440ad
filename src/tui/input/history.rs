//! Prompt history kept across sessions, per project: `<project dir>/prompt-history.ndjson`, one
//! `{"display": …, "timestamp": …}` line per prompt (private to the user, like transcripts).
//! Not `.jsonl`: that extension marks a session transcript (`--continue`, `/resume`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub const FILE: &str = "prompt-history.ndjson";
/// Prompts recalled (the newest); the file is trimmed to these when it grows past twice as many.
pub const KEEP: usize = 1000;
/// Longer prompts are not kept (a huge paste is not worth recalling).
const MAX_PROMPT_BYTES: usize = 100_000;

pub fn path(project_dir: &Path) -> PathBuf {
    project_dir.join(FILE)
}

/// The newest [`KEEP`] prompts, oldest first. A missing file is an empty history; unreadable
/// lines are skipped.
pub fn load(project_dir: &Path) -> Vec<String> {
    let Ok(f) = std::fs::File::open(path(project_dir)) else {
        return Vec::new();
    };
    let mut all: Vec<String> = BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter_map(|v| v.get("display").and_then(Value::as_str).map(str::to_string))
        .collect();
    if all.len() > 2 * KEEP {
        // Trim the file (atomically) so it does not grow without end.
        let keep = all.split_off(all.len() - KEEP);
        let mut text = String::new();
        for p in &keep {
            text.push_str(&json!({"display": p}).to_string());
            text.push('\n');
        }
        let _ = crate::fsutil::write_atomic(&path(project_dir), text.as_bytes());
        return keep;
    }
    let skip = all.len().saturating_sub(KEEP);
    all.split_off(skip)
}

/// Appends one prompt.
pub fn append(project_dir: &Path, prompt: &str) -> std::io::Result<()> {
    if prompt.trim().is_empty() || prompt.len() > MAX_PROMPT_BYTES {
        return Ok(());
    }
    std::fs::create_dir_all(project_dir)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(path(project_dir))?;
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut line = json!({"display": prompt, "timestamp": ms}).to_string();
    line.push('\n');
    f.write_all(line.as_bytes())
}

/// The newest entry before `before` (exclusive; `None`: from the newest) that contains
/// `query` (ignoring case).
pub fn search(history: &[String], query: &str, before: Option<usize>) -> Option<usize> {
    let q = query.to_lowercase();
    let end = before.unwrap_or(history.len()).min(history.len());
    (0..end).rev().find(|&i| history[i].to_lowercase().contains(&q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_survive_sessions_and_the_file_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).is_empty());
        append(dir.path(), "fix the parser\nand its tests").unwrap();
        append(dir.path(), "   ").unwrap();
        append(dir.path(), "run cargo test").unwrap();
        assert_eq!(
            load(dir.path()),
            vec!["fix the parser\nand its tests", "run cargo test"]
        );
        for i in 0..(2 * KEEP + 5) {
            append(dir.path(), &format!("p{i}")).unwrap();
        }
        let h = load(dir.path());
        assert_eq!(h.len(), KEEP);
        assert_eq!(h.last().unwrap(), &format!("p{}", 2 * KEEP + 4));
        let lines = std::fs::read_to_string(path(dir.path())).unwrap().lines().count();
        assert_eq!(lines, KEEP, "trimmed on load");
    }

    #[test]
    fn the_history_is_never_taken_for_a_session() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), "a prompt").unwrap();
        assert!(crate::transcript::latest_in(dir.path()).is_err());
        assert!(crate::tui::sessions::list(dir.path(), "").is_empty());
    }

    #[test]
    fn search_goes_back_from_the_newest_match() {
        let h: Vec<String> = ["cargo build", "git status", "Cargo test", "ls"]
            .map(String::from)
            .to_vec();
        assert_eq!(search(&h, "cargo", None), Some(2));
        assert_eq!(search(&h, "cargo", Some(2)), Some(0));
        assert_eq!(search(&h, "cargo", Some(0)), None);
        assert_eq!(search(&h, "", None), Some(3));
    }
}
