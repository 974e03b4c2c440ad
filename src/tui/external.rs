//! Programs the TUI hands the terminal to: the user's editor for the memory file (`/memory`)
//! and for the prompt (Ctrl+G).

use std::path::Path;

/// The user's editor command: `$VISUAL`, `$EDITOR`, or `vi`.
fn editor_command() -> String {
    std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".into())
}

/// Runs the editor on `file` and waits for it to exit.
async fn run_editor(file: &Path) -> Result<(), String> {
    let editor = editor_command();
    let mut words = editor.split_whitespace().map(str::to_string);
    let program = words.next().unwrap_or_else(|| "vi".into());
    let args: Vec<String> = words.collect();
    let file = file.to_path_buf();
    let status =
        tokio::task::spawn_blocking(move || std::process::Command::new(&program).args(&args).arg(&file).status())
            .await
            .map_err(|e| format!("the editor did not run: {e}"))?
            .map_err(|e| format!("cannot start the editor `{editor}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the editor `{editor}` exited with {status}"))
    }
}

/// Opens `path` in the editor (creating the file and its folder first) and waits for it.
pub async fn edit_file(path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    if !path.exists() {
        crate::fsutil::write_atomic(path, b"# Memory\n\n")
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    }
    run_editor(path).await
}

/// Ctrl+G: the prompt's text in the editor; returns the text as saved (the final newline
/// editors add is dropped). The file is private and removed afterwards.
pub async fn edit_prompt(text: &str) -> Result<String, String> {
    let file = tempfile::Builder::new()
        .prefix("keel-prompt-")
        .suffix(".md")
        .tempfile()
        .map_err(|e| format!("cannot create a file for the prompt: {e}"))?;
    std::fs::write(file.path(), text).map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
    run_editor(file.path()).await?;
    let edited =
        std::fs::read_to_string(file.path()).map_err(|e| format!("cannot read {}: {e}", file.path().display()))?;
    Ok(edited.strip_suffix('\n').unwrap_or(&edited).to_string())
}
