//! Read: line-numbered file contents, recorded in the read-file state.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

pub mod lines;

use super::file_state::{FileView, ViewKind, file_mtime};
use super::{
    Capability, Declared, Effects, ReadGuard, RuleGrammar, Subject, Tool, ToolContext, ToolError, ToolOutput,
    parse_input, paths,
};
use crate::fsutil::{self, open::OpenError, open::Opened};
use crate::types::message::{ImageSource, ToolResultBlock, ToolResultContent};
use lines::ScanError;

pub const DEFAULT_LINE_LIMIT: usize = 2000;
pub const MAX_LINE_CHARS: usize = 2000;
/// Most text one read may return; larger selections must be narrowed with offset/limit.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// Files above this size are not loaded at all.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest image sent to the model (the API's base64 limit is 5 MB).
pub const MAX_IMAGE_BYTES: u64 = 3_750_000;

const BINARY_EXTENSIONS: &[&str] = &[
    "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "jar", "war", "exe", "dll", "so", "dylib", "o", "a",
    "lib", "bin", "class", "pyc", "wasm", "mp3", "mp4", "mov", "avi", "mkv", "wav", "flac", "ogg", "ico", "bmp",
    "tiff", "psd", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "sqlite", "db", "ttf", "otf", "woff", "woff2",
];

pub struct ReadTool;

#[derive(Deserialize)]
struct Input {
    file_path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &'static str {
        "Read"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::READS,
            grammar: RuleGrammar::Path,
            covered_by: &[],
        }
    }

    fn subject(&self, input: &Value, cwd: &std::path::Path) -> Subject {
        match input.get("file_path").and_then(Value::as_str) {
            Some(p) => Subject::Path(paths::resolve(cwd, p)),
            None => Subject::Path(cwd.to_path_buf()),
        }
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Files]
    }

    fn description(&self) -> &'static str {
        "Reads a file from the local file system and returns its lines numbered as `<number>\\t<text>` \
         (the number and tab are not part of the file). Reads up to 2000 lines from the start by default; \
         use `offset` (1-based line) and `limit` for a part of a large file. Lines longer than 2000 \
         characters are cut with a marker. A read that does not cover the whole file is a partial view: \
         Edit works after it, but overwriting the file with Write needs a complete read. Images \
         (png, jpg, gif, webp) are returned as images. Use Glob or Grep to find files first; use an \
         absolute path."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file to read"},
                "offset": {"type": "integer", "minimum": 0, "description": "1-based line to start from"},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read"}
            },
            "required": ["file_path"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn result_budget(&self) -> usize {
        // Read limits itself (MAX_OUTPUT_BYTES); spilling its output would only hide it.
        usize::MAX
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let path = paths::resolve(ctx.cwd(), &input.file_path);
        let real = ctx.resolved_path(&path);
        let ctx = ctx.clone();
        tokio::task::spawn_blocking(move || read_file(&path, &real, input.offset, input.limit, &ctx))
            .await
            .map_err(|e| ToolError::invalid(format!("the read task failed: {e}")))?
    }
}

fn read_file(
    path: &Path,
    real: &Path,
    offset: Option<u64>,
    limit: Option<u64>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let opened = match fsutil::open::regular(real, &ctx.workspace.roots()) {
        Ok(o) => o,
        Err(OpenError::NotFound(_)) => return Err(ToolError::invalid(missing_message(path, ctx))),
        Err(OpenError::Directory(_)) => {
            return Err(ToolError::invalid(format!(
                "{} is a directory, not a file. Use Glob to list its files, or Bash `ls`.",
                path.display()
            )));
        }
        Err(e) => return Err(paths::open_failure(e, path, "Read")),
    };
    let Opened { mut file, meta } = opened;
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(path, meta.len()));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if let Some(media_type) = image_media_type(&ext) {
        return read_image(path, &mut file, meta.len(), media_type);
    }
    let binary = |size: u64| {
        ToolError::invalid(format!(
            "{} is a binary file ({size} bytes{}); Read only shows text. Inspect it with a suitable command via Bash \
             (e.g. `file`, `xxd | head`).",
            path.display(),
            if ext.is_empty() {
                String::new()
            } else {
                format!(", .{ext}")
            }
        ))
    };
    if BINARY_EXTENSIONS.contains(&ext.as_str()) && meta.len() > 0 {
        return Err(binary(meta.len()));
    }
    if ext == "ipynb" && offset.is_none() && limit.is_none() {
        if let Some(out) = read_notebook(path, &mut file, &meta, ctx)? {
            return Ok(out);
        }
        // Not a notebook after all: shown as text, as any file.
        std::io::Seek::rewind(&mut file).map_err(|e| ToolError::io(format!("cannot read {}", path.display()), e))?;
    }
    let start = offset.unwrap_or(1).max(1) as usize;
    let request = lines::Request {
        start,
        limit: limit.map(|l| l as usize).unwrap_or(DEFAULT_LINE_LIMIT),
        max_line_chars: MAX_LINE_CHARS,
        max_output: MAX_OUTPUT_BYTES,
        max_bytes: MAX_FILE_BYTES,
    };
    let scan = match lines::scan(&mut file, request) {
        Ok(s) => s,
        Err(ScanError::Binary) => return Err(binary(meta.len())),
        Err(ScanError::TooLarge(n)) => return Err(too_large(path, n)),
        Err(ScanError::Io(e)) => return Err(ToolError::io(format!("cannot read {}", path.display()), e)),
    };
    let mtime = file_mtime(&meta);
    let view = |kind| FileView::streamed(scan.hash, scan.size, scan.snapshot.clone(), mtime, kind);

    if scan.empty {
        ctx.files()?
            .files()
            .record(path.to_path_buf(), view(ViewKind::Complete));
        return Ok(ToolOutput::text(format!(
            "<system-reminder>{} exists and is empty (0 bytes).</system-reminder>",
            path.display()
        ))
        .with_structured(structured(path, "", 0, 1, 0)));
    }
    let total = scan.total;
    if start > total {
        ctx.files()?.files().record(path.to_path_buf(), view(ViewKind::Partial));
        return Ok(ToolOutput::text(format!(
            "<system-reminder>{} has {total} lines; offset {start} is past its end. Read from a smaller offset.</system-reminder>",
            path.display()
        ))
        .with_structured(structured(path, "", 0, start, total)));
    }
    if scan.over_budget {
        return Err(ToolError::invalid(format!(
            "the selected lines of {} exceed {} KB, the most one read returns. Read a smaller range with \
             offset and limit (the file has {total} lines), or use Grep to find what you need.",
            path.display(),
            MAX_OUTPUT_BYTES / 1024
        )));
    }
    let end = scan.end;
    let complete = start == 1 && end == total && scan.cut_lines == 0;
    ctx.files()?.files().record(
        path.to_path_buf(),
        view(if complete {
            ViewKind::Complete
        } else {
            ViewKind::Partial
        }),
    );
    let mut out = scan.numbered;
    if !complete {
        let mut note = format!("\n[Partial view: lines {start}-{end} of {total}");
        if scan.cut_lines > 0 {
            note.push_str(&format!(", {} long line(s) cut", scan.cut_lines));
        }
        if end < total {
            note.push_str(&format!(". Continue with offset {}", end + 1));
        }
        note.push_str(". Edit works on this view; Write needs a complete read.]\n");
        out.push_str(&note);
    }
    Ok(ToolOutput::text(out).with_structured(structured(path, &scan.plain, end + 1 - start, start, total)))
}

/// A notebook shown as its cells (ids, types, sources, text outputs) and recorded as read whole;
/// `None` when the file is not notebook JSON.
fn read_notebook(
    path: &Path,
    file: &mut std::fs::File,
    meta: &std::fs::Metadata,
    ctx: &ToolContext,
) -> Result<Option<ToolOutput>, ToolError> {
    let bytes = match fsutil::open::read_capped(file, MAX_FILE_BYTES) {
        Ok(Ok(b)) => b,
        Ok(Err(seen)) => return Err(too_large(path, seen)),
        Err(e) => return Err(ToolError::io(format!("cannot read {}", path.display()), e)),
    };
    let Ok(notebook) = crate::tools::notebook::cells::Notebook::parse(&bytes) else {
        return Ok(None);
    };
    let text = notebook.render(path);
    if text.len() > MAX_OUTPUT_BYTES {
        return Err(ToolError::invalid(format!(
            "the cells of {} exceed {} KB, the most one read returns. Read its raw JSON in parts with offset \
             and limit, or search it with Grep.",
            path.display(),
            MAX_OUTPUT_BYTES / 1024
        )));
    }
    ctx.files()?.files().record(
        path.to_path_buf(),
        FileView::new(&bytes, file_mtime(meta), ViewKind::Complete),
    );
    let total = text.lines().count();
    Ok(Some(ToolOutput::text(text.clone()).with_structured(json!({
        "type": "notebook",
        "file": {"filePath": path.display().to_string(), "cells": total, "content": text},
    }))))
}

fn too_large(path: &Path, len: u64) -> ToolError {
    ToolError::invalid(format!(
        "{} is {} MB, too large to load (the limit is {} MB). Use Grep to find the relevant lines, or Bash \
         `head`/`sed -n` for a range.",
        path.display(),
        len / (1024 * 1024),
        MAX_FILE_BYTES / (1024 * 1024)
    ))
}

fn structured(path: &Path, content: &str, num_lines: usize, start: usize, total: usize) -> Value {
    json!({
        "type": "text",
        "file": {
            "filePath": path.display().to_string(),
            "content": content,
            "numLines": num_lines,
            "startLine": start,
            "totalLines": total,
        }
    })
}

fn read_image(
    path: &Path,
    file: &mut std::fs::File,
    len: u64,
    media_type: &'static str,
) -> Result<ToolOutput, ToolError> {
    if len == 0 {
        return Err(ToolError::invalid(format!(
            "{} is an empty image file.",
            path.display()
        )));
    }
    let too_big = |len: u64| {
        ToolError::invalid(format!(
            "{} is a {} KB image, larger than the {} KB that can be sent to the model. Scale it down first \
             (e.g. with ImageMagick via Bash).",
            path.display(),
            len / 1024,
            MAX_IMAGE_BYTES / 1024
        ))
    };
    if len > MAX_IMAGE_BYTES {
        return Err(too_big(len));
    }
    let bytes = match fsutil::open::read_capped(file, MAX_IMAGE_BYTES) {
        Ok(Ok(b)) => b,
        Ok(Err(n)) => return Err(too_big(n)),
        Err(e) => return Err(ToolError::io(format!("cannot read {}", path.display()), e)),
    };
    let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes);
    Ok(ToolOutput {
        content: ToolResultContent::Blocks(vec![ToolResultBlock::Image {
            source: ImageSource {
                kind: "base64".into(),
                media_type: media_type.into(),
                data,
            },
        }]),
        is_error: false,
        structured: json!({"type": "image", "file": {"filePath": path.display().to_string(), "type": media_type, "originalSize": len}}),
    })
}

fn image_media_type(ext: &str) -> Option<&'static str> {
    match ext {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// Content sniffing: a NUL byte in the first 8 KiB marks a binary file (as git and ripgrep do).
pub use crate::fsutil::looks_binary;

fn missing_message(path: &Path, ctx: &ToolContext) -> String {
    if let Some(actual) = paths::non_utf8_sibling(path) {
        return paths::non_utf8_message(path, &actual);
    }
    let mut msg = format!(
        "{} does not exist. Current working directory: {}.",
        path.display(),
        ctx.cwd().display()
    );
    if let Some(similar) = ctx.files().ok().and_then(|f| similar_name(path, &f.read_guard)) {
        msg.push_str(&format!(" Did you mean {}?", similar.display()));
    }
    msg.push_str(" Use Glob to find the right path.");
    msg
}

/// A sibling whose name differs only in case or extension, to catch near-miss paths. Files
/// Read may not show are never suggested (that would reveal them).
fn similar_name(path: &Path, guard: &ReadGuard) -> Option<std::path::PathBuf> {
    let parent = path.parent()?;
    let name = path.file_name()?.to_str()?.to_lowercase();
    let stem = path.file_stem()?.to_str()?.to_lowercase();
    let entries = std::fs::read_dir(parent).ok()?;
    let mut candidates: Vec<_> = entries
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.to_string();
            let lower = n.to_lowercase();
            let n_stem = Path::new(&lower).file_stem()?.to_str()?.to_string();
            (lower == name || n_stem == stem).then(|| e.path())
        })
        .filter(|p| !guard.denies(p))
        .collect();
    candidates.sort();
    candidates.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_byte_means_binary() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary("héllo\n".as_bytes()));
    }
}
