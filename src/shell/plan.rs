//! One shell command line as keel reads it, once per call: the strict judgement (what the
//! permission layer may approve) and the tolerant split (what the ledger and shell undo need
//! to see inside `$(…)`, subshells and loops). The pipeline makes it once and hands the same
//! value to the permission check, the evidence ledger and shell undo.

use std::sync::Arc;

use super::parse::{self, SimpleCommand};
use super::split::{self, Segment};

#[derive(Debug)]
pub struct CommandPlan {
    /// The command line as given.
    pub line: String,
    /// Its simple commands as the permission layer judges them, or why it cannot.
    pub strict: Result<Vec<SimpleCommand>, String>,
    /// Its simple commands split through every construct, with what joins them.
    pub segments: Vec<Segment>,
}

impl CommandPlan {
    pub fn new(line: &str) -> Arc<CommandPlan> {
        Arc::new(CommandPlan {
            line: line.to_string(),
            strict: parse::parse(line),
            segments: split::split(line),
        })
    }

    /// Whether every part only reads (so shell undo need keep no copies before it).
    pub fn only_reads(&self) -> bool {
        self.strict.as_ref().is_ok_and(|parts| {
            !parts.is_empty()
                && parts.iter().all(|p| {
                    super::commands::analyze(p, true).observes && p.writes.iter().all(|w| w.text == "/dev/null")
                })
        })
    }
}
