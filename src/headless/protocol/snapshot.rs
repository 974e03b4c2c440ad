//! `initialize`'s `systemPromptSnapshot: true`: the session keeps the system prompt of its
//! first request. keel records it in the session's folder (`system-prompt.json`); a resumed
//! session with the option sends the recorded prompt instead of rebuilding it, until a
//! compaction rebuilds the project layer (as the reference does). A forked session has a new
//! folder and records its own.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::engine::Engine;
use crate::provider::SystemBlock;
use crate::types::message::CacheControl;

const FILE: &str = "system-prompt.json";

fn path(engine: &Engine) -> PathBuf {
    engine.session_dir().join(FILE)
}

/// Uses the recorded prompt when the session has one (a resumed session), else records the
/// current one. Returns a warning when the record cannot be read or written.
pub fn keep(engine: &mut Engine, persist: bool) -> Option<String> {
    let file = path(engine);
    if !engine.history().is_empty() {
        match read(&file) {
            Ok(Some(blocks)) => {
                engine.replace_system(blocks);
                return None;
            }
            Ok(None) => {}
            Err(e) => return Some(format!("systemPromptSnapshot: {e}; the system prompt was rebuilt")),
        }
    }
    if !persist {
        return None;
    }
    write(&file, engine.system()).err().map(|e| {
        format!(
            "systemPromptSnapshot: cannot record the system prompt in {}: {e}",
            file.display()
        )
    })
}

fn write(file: &Path, blocks: &[SystemBlock]) -> std::io::Result<()> {
    let list: Vec<Value> = blocks
        .iter()
        .map(|b| json!({"text": b.text, "cache": b.cache_control.is_some()}))
        .collect();
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&list).map_err(std::io::Error::other)?;
    crate::fsutil::write_atomic(file, text.as_bytes())
}

fn read(file: &Path) -> Result<Option<Vec<SystemBlock>>, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let bad = || format!("{} is not a recorded system prompt", file.display());
    let list: Vec<Value> = serde_json::from_str(&text).map_err(|_| bad())?;
    list.iter()
        .map(|b| {
            let mut block = SystemBlock::text(b.get("text")?.as_str()?);
            if b.get("cache").and_then(Value::as_bool) == Some(true) {
                block.cache_control = Some(CacheControl::ephemeral());
            }
            Some(block)
        })
        .collect::<Option<Vec<_>>>()
        .filter(|l| !l.is_empty() && l.iter().all(|b| !b.text.trim().is_empty()))
        .map(Some)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_prompt_reads_back_as_it_was() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("s").join(FILE);
        let mut first = SystemBlock::text("core");
        first.cache_control = Some(CacheControl::ephemeral());
        let blocks = vec![first, SystemBlock::text("project")];
        write(&file, &blocks).unwrap();
        assert_eq!(read(&file).unwrap(), Some(blocks));
        assert_eq!(read(&t.path().join("none.json")).unwrap(), None);
        std::fs::write(&file, r#"[{"text": ""}]"#).unwrap();
        assert!(read(&file).is_err(), "an empty block is not sent");
        std::fs::write(&file, "{").unwrap();
        assert!(read(&file).is_err());
    }
}
