//! Tier 1, the tool result budget: an oversized result is written whole to a file in the
//! session directory; the context keeps its head, its tail (errors live at the end), its size
//! and the file's path, so the model can Read or Grep the rest.

use std::path::{Path, PathBuf};

use crate::types::message::ToolResultContent;
use crate::types::tool::ToolOutput;

/// Characters kept from each end of a spilled result.
pub const PREVIEW_CHARS: usize = 3_000;

/// Where the full output of `tool_use_id` is kept.
pub fn spill_path(session_dir: &Path, tool_use_id: &str) -> PathBuf {
    let safe: String = tool_use_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    session_dir
        .join(crate::tools::services::SPILL_DIR)
        .join(format!("{safe}.txt"))
}

/// Makes sure the full output of `tool_use_id` is on disk (later tiers clear results from the
/// view and point at this file). An existing file is kept: tier 1 wrote the whole output there.
/// A result written here is also in the transcript, so it is not forced to disk.
pub fn ensure_spilled(session_dir: &Path, tool_use_id: &str, text: &str) -> std::io::Result<PathBuf> {
    let path = spill_path(session_dir, tool_use_id);
    if !path.is_file() {
        crate::fsutil::write_atomic_copy(&path, crate::redact::redact(text).0.as_bytes())?;
    }
    Ok(path)
}

/// Whether a result text is a tier 1 preview (its full output is in the spill file).
pub fn is_preview(text: &str) -> bool {
    crate::types::untrusted::body(text).starts_with("<persisted-output>")
}

/// Applies the budget to a text result. Image results and results within budget pass through.
pub fn apply(output: ToolOutput, budget: usize, session_dir: &Path, tool_use_id: &str) -> ToolOutput {
    let ToolResultContent::Text(text) = &output.content else {
        return output;
    };
    if text.len() <= budget {
        return output;
    }
    let path = spill_path(session_dir, tool_use_id);
    // The stored copy has credentials redacted, like the transcript.
    let saved = crate::fsutil::write_atomic(&path, crate::redact::redact(text).0.as_bytes());
    let preview = preview(text, path.as_path(), saved.as_ref().err());
    ToolOutput {
        content: ToolResultContent::Text(preview),
        is_error: output.is_error,
        structured: output.structured,
    }
}

fn preview(text: &str, path: &Path, save_error: Option<&std::io::Error>) -> String {
    let head = cut_at_line(text, PREVIEW_CHARS, true);
    let tail = cut_at_line(text, PREVIEW_CHARS, false);
    let lines = text.lines().count();
    let omitted = text.len().saturating_sub(head.len() + tail.len());
    let location = match save_error {
        None => format!(
            "The full output is saved in {} — Read or Grep it for the omitted part.",
            path.display()
        ),
        Some(e) => {
            format!("The full output could NOT be saved ({e}); only this excerpt is available.")
        }
    };
    format!(
        "<persisted-output>\nOutput too large for the context: {} bytes, {lines} lines. {location}\n\n--- first part ---\n{head}\n--- [{omitted} bytes omitted] ---\n--- last part ---\n{tail}\n</persisted-output>",
        text.len()
    )
}

/// Up to `max` bytes from the start (or end), cut at a line boundary when one is near.
fn cut_at_line(text: &str, max: usize, from_start: bool) -> &str {
    if text.len() <= max {
        return text;
    }
    if from_start {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let slice = &text[..end];
        match slice.rfind('\n') {
            Some(i) if i > max / 2 => &slice[..i],
            _ => slice,
        }
    } else {
        let mut start = text.len() - max;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let slice = &text[start..];
        match slice.find('\n') {
            Some(i) if i < max / 2 => &slice[i + 1..],
            _ => slice,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_whole_output_and_keeps_both_ends() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let text = format!("{body}FATAL: the error at the end\n");
        let out = apply(ToolOutput::text(text.clone()), 10_000, dir.path(), "toolu_1");
        let shown = match &out.content {
            ToolResultContent::Text(t) => t.clone(),
            _ => unreachable!(),
        };
        assert!(shown.len() < 10_000);
        assert!(shown.contains("line 0\n"));
        assert!(shown.contains("FATAL: the error at the end"));
        let path = spill_path(dir.path(), "toolu_1");
        assert!(shown.contains(&path.display().to_string()));
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    }

    #[test]
    fn small_output_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let out = apply(ToolOutput::text("ok"), 10, dir.path(), "t");
        assert_eq!(out, ToolOutput::text("ok"));
    }
}
