//! Language-server diagnostics after an edit.

use std::path::Path;

use super::{ToolContext, ToolOutput};

/// Adds the file's new diagnostics to an edit's result (stub).
pub async fn attach(_ctx: &ToolContext, _path: &Path, out: ToolOutput) -> ToolOutput {
    out
}
