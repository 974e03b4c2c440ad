//! Context compaction in five tiers, cheapest and most faithful first:
//!
//! 1. [`budget`]: an oversized tool result is spilled whole to a file; the context keeps its
//!    head, tail, size and path (runs on every tool result, in the pipeline).
//! 2. [`snip`]: exchanges a later call made redundant leave the view with a one-line trace.
//! 3. [`microcompact`]: old, answered tool results become placeholders naming the call and the
//!    file with the full output.
//! 4. [`collapse`]: runs of exploration steps fold into one trace in the view.
//! 5. [`autocompact`]: near the window, a summary request produces a hand-off whose failed
//!    checks and changed files keel fills from its own record ([`record`]); hot state is
//!    re-mounted.
//!
//! Tiers 2–4 shape only the request *view* ([`view`]); the stored history and transcript stay
//! complete. [`compactor`] decides when they run.

pub mod autocompact;
pub mod breaker;
pub mod budget;
pub mod calls;
pub mod collapse;
pub mod compactor;
pub mod layout;
pub mod microcompact;
pub mod record;
pub mod snip;
pub mod view;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

use crate::types::message::Message;

pub use compactor::{Anchors, CompactSettings, Compactor, RequestView, ViewPolicy};

/// What a view tier works with.
pub struct TierContext<'a> {
    /// The complete stored history.
    pub store: &'a [Message],
    pub index: &'a calls::CallIndex,
    /// Store index where the messages the tiers shape start (the old frontier of a step).
    pub from: usize,
    /// Store index of the frontier: only messages before it are changed.
    pub upto: usize,
    /// Where full outputs are kept (`tool-results/`).
    pub session_dir: &'a Path,
    /// What earlier rebuilds worked out per call (valid while the store only grows).
    pub memo: &'a RefCell<Memo>,
    /// What the session's tools declare (which calls only observe).
    pub kinds: &'a crate::tools::kinds::KindTable,
}

/// Per-call results of tiers 3 and 4, kept between rebuilds of the view so that moving the
/// frontier only works on the calls that became old since the last move.
#[derive(Debug, Default)]
pub struct Memo {
    /// Tier 3: the placeholder of a call's result (`None`: the result stays as it is).
    pub placeholders: HashMap<String, Option<String>>,
    /// Tier 4: a call's line in a fold trace.
    pub trace_lines: HashMap<String, String>,
}
