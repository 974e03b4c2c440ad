//! Output of commands while they run: the runtime reads their output files (it does the I/O)
//! and hands the new text here.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;

use super::App;
use crate::tui::transcript::live::LiveOutput;
use crate::tui::transcript::{CellKind, ToolStatus};

/// Most bytes read from one output file per poll (the rest comes next time).
pub const LIVE_READ_MAX: u64 = 64 * 1024;
/// How often running commands' output is read.
pub const LIVE_POLL: std::time::Duration = std::time::Duration::from_millis(400);
/// A command's output shows in its cell once it has run this long (quick ones just finish).
pub const LIVE_AFTER_MS: u64 = 1000;

/// A running command's output file and how far it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSource {
    pub id: String,
    pub path: PathBuf,
    pub offset: u64,
}

impl App {
    /// The foreground Bash calls running now, with where their output is.
    pub fn live_sources(&self) -> Vec<LiveSource> {
        let dir = &self.shared.session_dir;
        self.request_tools
            .iter()
            .filter_map(|id| {
                let i = self.transcript.tool_index(id)?;
                let CellKind::Tool(t) = self.transcript.get(i)? else {
                    return None;
                };
                let background = t.input.get("run_in_background").and_then(Value::as_bool) == Some(true);
                (t.name == "Bash" && t.status == ToolStatus::Running && !background).then(|| LiveSource {
                    id: id.clone(),
                    path: crate::tools::bash::foreground_log(dir, id),
                    offset: t.live.as_ref().map_or(0, |l| l.offset),
                })
            })
            .collect()
    }

    /// New output of a running call (`text` read up to `offset`).
    pub fn on_live_output(&mut self, id: &str, text: &str, offset: u64, now: Instant) {
        let Some(t) = self.transcript.tool_mut(id) else {
            return;
        };
        if t.status != ToolStatus::Running {
            return;
        }
        let live = t.live.get_or_insert_with(LiveOutput::default);
        live.feed(text);
        live.offset = offset;
        live.elapsed_ms = t
            .run_started
            .map_or(0, |s| now.saturating_duration_since(s).as_millis() as u64);
        self.dirty = true;
    }
}
