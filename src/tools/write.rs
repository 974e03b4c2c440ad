//! Write: creates a file, or replaces one the model has read completely and that has not
//! changed on disk since.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

use super::edit::guard::{self, Intent};
use super::edit::{disk, text};
use super::file_state::{FileView, ViewKind, file_mtime};
use super::{
    Body, Capability, Declared, Effects, FileAccess, RuleGrammar, Sight, Subject, Tool, ToolContext, ToolError,
    ToolOutput, parse_input, paths,
};
use crate::checkpoint::Hashed;

pub struct WriteTool;

#[derive(Deserialize)]
struct Input {
    file_path: String,
    content: String,
}

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &'static str {
        "Write"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::EDITS,
            grammar: RuleGrammar::Path,
            covered_by: &["Edit"],
        }
    }

    fn subject(&self, input: &Value, cwd: &std::path::Path) -> Subject {
        paths::file_path_subject(input, cwd)
    }

    fn preview(&self, input: &Value, cwd: &std::path::Path) -> Body {
        let str_of = |k: &str| input.get(k).and_then(Value::as_str);
        match str_of("file_path") {
            Some(p) => super::preview::write(&paths::resolve(cwd, p), str_of("content").unwrap_or("")),
            None => Body::Detail,
        }
    }

    fn detail(&self, input: &Value) -> Option<String> {
        Some(format!(
            "write {} ({} bytes)",
            input["file_path"].as_str().unwrap_or("?"),
            input["content"].as_str().map(str::len).unwrap_or(0)
        ))
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Files]
    }

    fn description(&self) -> &'static str {
        "Writes a whole file: creates it (and any missing parent directories) or replaces its entire content. \
         Creating a new file needs no preparation. Replacing an existing file requires that you have read all \
         of it in this session and that it has not changed on disk since; otherwise nothing is written and you \
         are told why. For changes to part of an existing file use Edit instead: it is safer and shorter. An \
         existing file keeps its permissions, its byte-order mark and its CRLF line endings. Use an absolute \
         path, and do not create documentation or README files unless asked to."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to write"},
                "content": {"type": "string", "description": "The complete new content of the file"}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        })
    }

    /// An existing file must have been read whole and be unchanged; a new file needs nothing.
    /// Without sight of the disk nothing can be told (the file may be new).
    async fn precheck(&self, input: &Value, ctx: &ToolContext, sight: Sight) -> Result<(), ToolError> {
        if sight != Sight::Disk {
            return Ok(());
        }
        let input: Input = parse_input(input.clone())?;
        let path = paths::resolve(ctx.cwd(), &input.file_path);
        let real = ctx.resolved_path(&path);
        let (ws, files) = (ctx.workspace.clone(), ctx.files()?.clone());
        tokio::task::spawn_blocking(move || {
            if let Some(existing) = disk::load(&path, &real, &ws.roots(), "Write")? {
                guard::check(&files.files(), &path, &existing.bytes, Intent::Overwrite)?;
            }
            Ok(())
        })
        .await
        .map_err(|e| ToolError::invalid(format!("the write task failed: {e}")))?
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let path = paths::resolve(ctx.cwd(), &input.file_path);
        let real = ctx.resolved_path(&path);
        let (ws, files) = (ctx.workspace.clone(), ctx.files()?.clone());
        let target = path.clone();
        let out = tokio::task::spawn_blocking(move || write_file(&target, &real, &input.content, &ws.roots(), &files))
            .await
            .map_err(|e| ToolError::invalid(format!("the write task failed: {e}")))??;
        Ok(super::lsp::attach(ctx, &path, out).await)
    }
}

fn write_file(
    path: &Path,
    real: &Path,
    content: &str,
    roots: &[PathBuf],
    shared: &FileAccess,
) -> Result<ToolOutput, ToolError> {
    let Some(existing) = disk::load(path, real, roots, "Write")? else {
        let new = Hashed::new(content.as_bytes());
        let undo_note = shared.checkpoint(real, None, new, "Write");
        let meta = disk::store(path, real, roots, content.as_bytes(), None)?;
        record(shared, path, &meta, new);
        return Ok(ToolOutput::text(format!(
            "Created {} ({} lines).{}",
            path.display(),
            content.lines().count(),
            undo_note.map(|n| format!("\n\n{n}")).unwrap_or_default()
        ))
        .with_structured(json!({
            "type": "create",
            "filePath": path.display().to_string(),
            "content": content,
            "structuredPatch": [],
            "originalFile": null,
            "userModified": false,
        })));
    };
    let old_bytes = &existing.bytes;
    let view = guard::check(&shared.files(), path, old_bytes, Intent::Overwrite)?;
    // The guard found the bytes unchanged since the read: the read's digest is theirs.
    let old = Hashed::known(old_bytes, view.hash);

    let old_text = String::from_utf8_lossy(old_bytes);
    let (had_bom, old_body) = text::split_bom(&old_text);
    let (_, new_body) = text::split_bom(content);
    let mut kept = Vec::new();
    let mut body = new_body.to_string();
    if text::mostly_crlf(old_body) && !body.contains("\r\n") && body.contains('\n') {
        body = text::to_crlf(&body);
        kept.push("CRLF line endings");
    }
    let mut new_text = String::with_capacity(body.len() + 3);
    if had_bom {
        new_text.push(text::BOM);
        kept.push("byte-order mark");
    }
    new_text.push_str(&body);

    let new = Hashed::new(new_text.as_bytes());
    let undo_note = shared.checkpoint(real, Some((old, &existing.meta)), new, "Write");
    let meta = disk::store(path, real, roots, new_text.as_bytes(), Some(&existing.meta))?;
    record(shared, path, &meta, new);

    let (added, removed) = line_changes(old_body, &body);
    let mut msg = format!(
        "Replaced the content of {}: {added} line{} added, {removed} removed ({} lines now).",
        path.display(),
        if added == 1 { "" } else { "s" },
        body.lines().count()
    );
    if !kept.is_empty() {
        msg.push_str(&format!(" Kept the file's {}.", kept.join(" and ")));
    }
    if let Some(n) = undo_note {
        msg.push_str(&format!("\n\n{n}"));
    }
    Ok(ToolOutput::text(msg).with_structured(json!({
        "type": "update",
        "filePath": path.display().to_string(),
        "content": content,
        "structuredPatch": super::edit::patch::structured_patch(&old_text, &new_text),
        "originalFile": old_text,
        "userModified": false,
    })))
}

fn record(shared: &FileAccess, path: &Path, meta: &std::fs::Metadata, content: Hashed<'_>) {
    shared.files().record(
        path.to_path_buf(),
        FileView::hashed(content, file_mtime(meta), ViewKind::Complete),
    );
}

fn line_changes(old: &str, new: &str) -> (usize, usize) {
    let diff = TextDiff::configure().timeout(guard::DIFF_TIMEOUT).diff_lines(old, new);
    diff.iter_all_changes().fold((0, 0), |(a, r), c| match c.tag() {
        ChangeTag::Insert => (a + 1, r),
        ChangeTag::Delete => (a, r + 1),
        ChangeTag::Equal => (a, r),
    })
}
