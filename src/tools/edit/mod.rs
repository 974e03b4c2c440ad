//! Edit: an exact, content-anchored replacement in a file the model has read.
//!
//! Order of checks (each a distinct error): identical strings → missing file (an empty
//! `old_string` creates it) → directory or special file → read-before-edit and unchanged-on-disk (`guard`) →
//! UTF-8 → anchor found exactly once (or `replace_all`). The write is atomic and keeps the file's
//! BOM, line endings, final newline and permissions; the read state is updated afterwards so a
//! second edit needs no re-read. The same checks run as the call's precheck, before anyone is
//! asked to approve it (`Stage::Check` stops short of the write), and again when it runs.

pub mod apply;
pub mod disk;
pub mod guard;
pub mod patch;
pub mod text;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::file_state::{FileView, ViewKind, file_mtime};
use super::{
    Body, Capability, Declared, Effects, FileAccess, RuleGrammar, Sight, Subject, Tool, ToolContext, ToolError,
    ToolOutput, Workspace, parse_input, paths,
};
use crate::checkpoint::Hashed;
use apply::ApplyError;
use guard::Intent;

pub struct EditTool;

#[derive(Deserialize)]
struct Input {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &'static str {
        "Edit"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::EDITS,
            grammar: RuleGrammar::Path,
            covered_by: &[],
        }
    }

    fn subject(&self, input: &Value, cwd: &std::path::Path) -> Subject {
        paths::file_path_subject(input, cwd)
    }

    fn preview(&self, input: &Value, cwd: &std::path::Path) -> Body {
        let str_of = |k: &str| input.get(k).and_then(Value::as_str);
        match str_of("file_path") {
            Some(p) => super::preview::edit(
                &paths::resolve(cwd, p),
                str_of("old_string").unwrap_or(""),
                str_of("new_string").unwrap_or(""),
                input.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
            ),
            None => Body::Detail,
        }
    }

    fn detail(&self, input: &Value) -> Option<String> {
        let old = input["old_string"].as_str().unwrap_or("");
        let new = input["new_string"].as_str().unwrap_or("");
        let diff = similar::TextDiff::from_lines(old, new);
        Some(format!(
            "edit {}\n{}",
            input["file_path"].as_str().unwrap_or("?"),
            diff.unified_diff().context_radius(2).header("before", "after")
        ))
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Files]
    }

    fn description(&self) -> &'static str {
        "Changes a file by replacing an exact piece of its text. `old_string` is the anchor: copy it from \
         Read's output without the line-number prefix (number and tab), keeping every space and tab. It must \
         occur exactly once; if it occurs several times, include a few surrounding lines to make it unique, \
         or set `replace_all` to change every occurrence (useful for renames). The file must have been read \
         in this session (a partial read is enough) and must not have changed on disk since: if it did, \
         nothing is written and you get a diff of the change; read it again and redo the edit. Line endings \
         (CRLF or LF), a byte-order mark and permissions are kept; write `\\n` in both strings. An empty \
         `old_string` creates a new file. Prefer Edit over Write for changes to existing files."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to change"},
                "old_string": {"type": "string", "description": "The exact text to replace"},
                "new_string": {"type": "string", "description": "The text to put in its place (must differ from old_string)"},
                "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    async fn precheck(&self, input: &Value, ctx: &ToolContext, sight: Sight) -> Result<(), ToolError> {
        let input: Input = parse_input(input.clone())?;
        check_strings(&input)?;
        let path = paths::resolve(ctx.cwd(), &input.file_path);
        let files = ctx.files()?.clone();
        match sight {
            // An anchor needs a file that was read (whether it exists or not, `call` would refuse).
            Sight::SessionOnly if !input.old_string.is_empty() && files.files().get(&path).is_none() => {
                Err(guard::unread(&path, Intent::Edit))
            }
            Sight::SessionOnly => Ok(()),
            Sight::Disk => run(ctx, path, input, Stage::Check).await.map(|_| ()),
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        check_strings(&input)?;
        let path = paths::resolve(ctx.cwd(), &input.file_path);
        let out = run(ctx, path.clone(), input, Stage::Write).await?;
        Ok(super::lsp::attach(ctx, &path, out).await)
    }
}

/// How far an edit goes: only its checks (before the call is approved), or to the disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Check,
    Write,
}

fn check_strings(input: &Input) -> Result<(), ToolError> {
    if input.old_string == input.new_string {
        return Err(ToolError::invalid(
            "old_string and new_string are identical, so the edit would change nothing. Put the new text in \
             new_string.",
        ));
    }
    Ok(())
}

async fn run(ctx: &ToolContext, path: PathBuf, input: Input, stage: Stage) -> Result<ToolOutput, ToolError> {
    if path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"))
    {
        return Err(ToolError::invalid(format!(
            "{} is a Jupyter notebook; change its cells with NotebookEdit (Read shows their ids).",
            path.display()
        )));
    }
    let real = ctx.resolved_path(&path);
    let (ws, files) = (ctx.workspace.clone(), ctx.files()?.clone());
    tokio::task::spawn_blocking(move || edit_file(&path, &real, &input, &ws, &files, stage))
        .await
        .map_err(|e| ToolError::invalid(format!("the edit task failed: {e}")))?
}

/// What a precheck that passed returns (nobody sees it).
fn checked() -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("the edit's checks passed"))
}

fn edit_file(
    path: &Path,
    real: &Path,
    input: &Input,
    ws: &Workspace,
    shared: &FileAccess,
    stage: Stage,
) -> Result<ToolOutput, ToolError> {
    let roots = ws.roots();
    let Some(existing) = disk::load(path, real, &roots, "Edit")? else {
        if input.old_string.is_empty() {
            if stage == Stage::Check {
                return checked();
            }
            return create_file(path, real, &input.new_string, &roots, shared);
        }
        return Err(ToolError::invalid(format!(
            "{} does not exist, so there is nothing to edit. Check the path with Glob; to create a new file \
             use Write (or Edit with an empty old_string).",
            path.display()
        )));
    };
    let bytes = &existing.bytes;
    let view = guard::check(&shared.files(), path, bytes, Intent::Edit)?;
    // The guard found the bytes unchanged since the read: the read's digest is theirs.
    let old = Hashed::known(bytes, view.hash);
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(ToolError::invalid(format!(
            "{} is not UTF-8 text; editing it as text could corrupt it. Change it with a suitable command via Bash.",
            path.display()
        )));
    };
    let (bom, body) = text::split_bom(text);
    let target = Target {
        path,
        real,
        existing: &existing.meta,
    };
    if input.old_string.is_empty() {
        if !body.is_empty() {
            return Err(ToolError::invalid(format!(
                "old_string is empty, which only works for creating a file, and {} already has content. Give \
                 the exact text to replace, or use Write to replace the whole file.",
                path.display()
            )));
        }
        let change = Change {
            bom,
            body: input.new_string.clone(),
            changed: 0..input.new_string.len(),
            replacements: 1,
        };
        if stage == Stage::Check {
            return checked();
        }
        return write_change(target, body, change, view.kind, (&roots, shared), input, old);
    }
    let applied = apply::apply(body, &input.old_string, &input.new_string, input.replace_all)
        .map_err(|e| anchor_error(e, path, &input.old_string, view.kind))?;
    let change = Change {
        bom,
        body: applied.text,
        changed: applied.first,
        replacements: applied.replacements,
    };
    if stage == Stage::Check {
        return checked();
    }
    write_change(target, body, change, view.kind, (&roots, shared), input, old)
}

/// The file an edit goes to: the tool's path, where it resolved, and the file that was read.
#[derive(Clone, Copy)]
struct Target<'a> {
    path: &'a Path,
    real: &'a Path,
    existing: &'a std::fs::Metadata,
}

/// The new content of an edited file (without its BOM) and where it changed.
struct Change {
    bom: bool,
    body: String,
    changed: std::ops::Range<usize>,
    replacements: usize,
}

fn write_change(
    target: Target<'_>,
    original: &str,
    change: Change,
    kind: ViewKind,
    (roots, shared): (&[PathBuf], &FileAccess),
    input: &Input,
    old: Hashed<'_>,
) -> Result<ToolOutput, ToolError> {
    let path = target.path;
    let mut new_text = String::with_capacity(change.body.len() + 3);
    if change.bom {
        new_text.push(text::BOM);
    }
    new_text.push_str(&change.body);
    let new = Hashed::new(new_text.as_bytes());
    let undo_note = shared.checkpoint(target.real, Some((old, target.existing)), new, "Edit");
    let meta = disk::store(path, target.real, roots, new_text.as_bytes(), Some(target.existing))?;
    shared
        .files()
        .record(path.to_path_buf(), FileView::hashed(new, file_mtime(&meta), kind));
    let replacements = change.replacements;
    let what = if replacements == 1 {
        "replaced 1 occurrence".to_string()
    } else {
        format!("replaced all {replacements} occurrences (the first is shown)")
    };
    let snippet = text::numbered_snippet(&change.body, change.changed);
    let undo_note = undo_note.map(|n| format!("\n\n{n}")).unwrap_or_default();
    Ok(ToolOutput::text(format!(
        "Edited {}: {what}. The lines around the change now read:\n{snippet}{undo_note}",
        path.display()
    ))
    .with_structured(json!({
        "filePath": path.display().to_string(),
        "oldString": input.old_string,
        "newString": input.new_string,
        "originalFile": original,
        "structuredPatch": patch::structured_patch(original, &change.body),
        "replaceAll": input.replace_all,
        "replacements": replacements,
        "userModified": false,
    })))
}

fn create_file(
    path: &Path,
    real: &Path,
    content: &str,
    roots: &[PathBuf],
    shared: &FileAccess,
) -> Result<ToolOutput, ToolError> {
    let new = Hashed::new(content.as_bytes());
    let undo_note = shared.checkpoint(real, None, new, "Edit");
    let meta = disk::store(path, real, roots, content.as_bytes(), None)?;
    shared.files().record(
        path.to_path_buf(),
        FileView::hashed(new, file_mtime(&meta), ViewKind::Complete),
    );
    Ok(ToolOutput::text(format!(
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
    })))
}

fn anchor_error(e: ApplyError, path: &Path, old: &str, kind: ViewKind) -> ToolError {
    let shown = excerpt(old);
    match e {
        ApplyError::NotFound => {
            let mut msg = format!(
                "old_string was not found in {}. It must match the file exactly, including indentation and \
                 whitespace, and must not contain Read's line-number prefixes.",
                path.display()
            );
            if kind == ViewKind::Partial {
                msg.push_str(" You have seen only part of this file; the text may be in a part you have not read.");
            }
            msg.push_str(&format!(
                " Read the lines again and copy them exactly.\nString searched for:\n{shown}"
            ));
            ToolError::invalid(msg)
        }
        ApplyError::Ambiguous(n) => ToolError::invalid(format!(
            "old_string occurs {n} times in {}, but an edit needs exactly one place. Add surrounding lines to \
             old_string until it identifies one occurrence, or set replace_all to true to change all {n}.\n\
             String searched for:\n{shown}",
            path.display()
        )),
    }
}

fn excerpt(s: &str) -> String {
    const MAX: usize = 400;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}… ({} characters in all)", s.chars().count())
    }
}
