//! NotebookEdit: replaces, inserts or deletes one cell of a Jupyter notebook, addressed by its
//! id. The guards are Edit's: the notebook must have been read in this session and be unchanged
//! on disk since; the write is atomic, keeps the file's permissions, its JSON layout and every
//! field keel does not touch, and is checkpointed for rewinding.

pub mod cells;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::edit::disk;
use super::edit::guard::{self, Intent};
use super::file_state::{FileView, file_mtime};
use super::{
    Body, Capability, Declared, Effects, FileAccess, RuleGrammar, Sight, Subject, Tool, ToolContext, ToolError,
    ToolOutput, parse_input, paths,
};
use crate::checkpoint::Hashed;
use cells::{CellKind, Mode, Notebook};

pub struct NotebookEditTool;

#[derive(Deserialize, Clone)]
struct Input {
    notebook_path: String,
    #[serde(default)]
    new_source: String,
    cell_id: Option<String>,
    cell_type: Option<String>,
    edit_mode: Option<String>,
}

impl Input {
    fn mode(&self) -> Result<Mode, ToolError> {
        match self.edit_mode.as_deref().unwrap_or("replace") {
            "replace" => Ok(Mode::Replace),
            "insert" => Ok(Mode::Insert),
            "delete" => Ok(Mode::Delete),
            other => Err(ToolError::invalid(format!(
                "edit_mode \"{other}\" is not one of replace, insert, delete."
            ))),
        }
    }

    fn kind(&self) -> Result<Option<CellKind>, ToolError> {
        match self.cell_type.as_deref() {
            None => Ok(None),
            Some(s) => CellKind::parse(s)
                .map(Some)
                .ok_or_else(|| ToolError::invalid(format!("cell_type \"{s}\" is not code or markdown."))),
        }
    }
}

fn notebook_subject(input: &Value, cwd: &Path) -> Subject {
    input
        .get("notebook_path")
        .and_then(Value::as_str)
        .map(|p| Subject::Path(paths::resolve(cwd, p)))
        .unwrap_or_default()
}

#[async_trait]
impl Tool for NotebookEditTool {
    fn name(&self) -> &'static str {
        "NotebookEdit"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::EDITS,
            grammar: RuleGrammar::Path,
            covered_by: &["Edit"],
        }
    }

    fn subject(&self, input: &Value, cwd: &Path) -> Subject {
        notebook_subject(input, cwd)
    }

    fn preview(&self, _input: &Value, _cwd: &Path) -> Body {
        Body::Detail
    }

    fn detail(&self, input: &Value) -> Option<String> {
        let s = |k: &str| input.get(k).and_then(Value::as_str);
        Some(format!(
            "notebook {} {} cell {}\n{}",
            s("notebook_path").unwrap_or("?"),
            s("edit_mode").unwrap_or("replace"),
            s("cell_id").unwrap_or("(first)"),
            s("new_source").unwrap_or("")
        ))
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Files]
    }

    fn description(&self) -> &'static str {
        "Changes one cell of a Jupyter notebook (.ipynb); Read it first (cells show their ids; one without \
         an id is `cell-N`, from 0). `edit_mode`: `replace` (default; clears a code cell's outputs; \
         `cell_type` converts it), `insert` (after `cell_id`, or at the top) or `delete`. Refused when the \
         file changed since the read. Use it, not Edit or Write, for notebooks."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "notebook_path": {"type": "string", "description": "Absolute path of the .ipynb file"},
                "cell_id": {"type": "string", "description": "Id of the cell to change; for insert, the cell the new one follows"},
                "new_source": {"type": "string", "description": "The cell's new source (ignored for delete)"},
                "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "Type of the cell; required for insert"},
                "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "What to do; replace by default"}
            },
            "required": ["notebook_path", "new_source"],
            "additionalProperties": false
        })
    }

    async fn precheck(&self, input: &Value, ctx: &ToolContext, sight: Sight) -> Result<(), ToolError> {
        let input: Input = parse_input(input.clone())?;
        let path = checked_path(ctx, &input)?;
        match sight {
            Sight::SessionOnly if ctx.files()?.files().get(&path).is_none() => Err(guard::unread(&path, Intent::Edit)),
            Sight::SessionOnly => Ok(()),
            Sight::Disk => run(ctx, path, input, false).await.map(|_| ()),
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let path = checked_path(ctx, &input)?;
        let out = run(ctx, path.clone(), input, true).await?;
        Ok(super::lsp::attach(ctx, &path, out).await)
    }
}

fn checked_path(ctx: &ToolContext, input: &Input) -> Result<PathBuf, ToolError> {
    input.mode()?;
    input.kind()?;
    let path = paths::resolve(ctx.cwd(), &input.notebook_path);
    let is_notebook = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"));
    if !is_notebook {
        return Err(ToolError::invalid(format!(
            "{} is not a Jupyter notebook (.ipynb); change other files with Edit or Write.",
            path.display()
        )));
    }
    Ok(path)
}

async fn run(ctx: &ToolContext, path: PathBuf, input: Input, write: bool) -> Result<ToolOutput, ToolError> {
    let real = ctx.resolved_path(&path);
    let (ws, files) = (ctx.workspace.clone(), ctx.files()?.clone());
    tokio::task::spawn_blocking(move || edit_notebook(&path, &real, &input, &ws.roots(), &files, write))
        .await
        .map_err(|e| ToolError::invalid(format!("the notebook edit task failed: {e}")))?
}

fn edit_notebook(
    path: &Path,
    real: &Path,
    input: &Input,
    roots: &[PathBuf],
    shared: &FileAccess,
    write: bool,
) -> Result<ToolOutput, ToolError> {
    let Some(existing) = disk::load(path, real, roots, "NotebookEdit")? else {
        return Err(ToolError::invalid(format!(
            "{} does not exist. NotebookEdit changes an existing notebook; create one with Write (nbformat \
             JSON) first.",
            path.display()
        )));
    };
    let view = guard::check(&shared.files(), path, &existing.bytes, Intent::Edit)?;
    let old = Hashed::known(&existing.bytes, view.hash);
    let mut notebook = Notebook::parse(&existing.bytes)
        .map_err(|e| ToolError::invalid(format!("{} {e}. Fix the file with Write or Bash.", path.display())))?;
    let (mode, kind) = (input.mode()?, input.kind()?);
    let done = notebook
        .edit(mode, input.cell_id.as_deref(), &input.new_source, kind)
        .map_err(|e| ToolError::invalid(format!("{} {e}", path.display())))?;
    if !write {
        return Ok(ToolOutput::text("the notebook edit's checks passed"));
    }
    let bytes = notebook.to_bytes();
    let new = Hashed::new(&bytes);
    let undo_note = shared.checkpoint(real, Some((old, &existing.meta)), new, "NotebookEdit");
    let meta = disk::store(path, real, roots, &bytes, Some(&existing.meta))?;
    shared
        .files()
        .record(path.to_path_buf(), FileView::hashed(new, file_mtime(&meta), view.kind));
    let what = match mode {
        Mode::Replace => format!(
            "replaced the source of {} cell {}{}",
            done.cell_type,
            done.cell_id,
            if done.cleared_outputs {
                " (its old outputs were cleared)"
            } else {
                ""
            }
        ),
        Mode::Insert => format!(
            "inserted {} cell {} at position {}",
            done.cell_type, done.cell_id, done.index
        ),
        Mode::Delete => format!(
            "deleted {} cell {} (it was at position {})",
            done.cell_type, done.cell_id, done.index
        ),
    };
    let undo_note = undo_note.map(|n| format!("\n\n{n}")).unwrap_or_default();
    let mode_name = input.edit_mode.clone().unwrap_or_else(|| "replace".into());
    Ok(
        ToolOutput::text(format!("Updated {}: {what}.{undo_note}", path.display())).with_structured(json!({
            "new_source": input.new_source,
            "cell_id": done.cell_id,
            "cell_type": done.cell_type,
            "language": notebook.language(),
            "edit_mode": mode_name,
            "error": "",
            "notebook_path": path.display().to_string(),
            "original_file": String::from_utf8_lossy(&existing.bytes),
            "updated_file": String::from_utf8_lossy(&bytes),
        })),
    )
}
