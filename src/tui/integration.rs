//! The TUI's seams to capabilities that live outside it: compaction and the context listing,
//! permission rules, hooks, and read rules for `@path` mentions.
//!
//! Each function has the shape the TUI renders. Where this build has no backing for one, it
//! says so with [`IntegrationError::Unavailable`]; nothing here invents data.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::engine::Engine;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegrationError {
    /// The capability is not part of this build.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Failed(String),
}

/// The result of `/compact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactReport {
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    /// One line on what was kept (e.g. where the summary and spill files are).
    pub note: String,
}

/// One category of `/context` (system prompt, tools, memory files, messages, free space…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextCategory {
    pub name: String,
    pub tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextReport {
    pub window: u64,
    pub categories: Vec<ContextCategory>,
    /// Files that contributed (instruction files, attachments), with their token estimates.
    pub files: Vec<(PathBuf, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSet {
    /// Where the rules come from (a settings file, a flag).
    pub source: String,
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionsReport {
    pub rule_sets: Vec<RuleSet>,
    pub additional_directories: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEntry {
    pub event: String,
    pub matcher: Option<String>,
    pub command: String,
    /// The settings file that defines it.
    pub source: String,
}

/// `/compact [instructions]`: summarise the conversation now.
pub async fn compact(
    _engine: &mut Engine,
    _instructions: Option<&str>,
    _cancel: &CancellationToken,
) -> Result<CompactReport, IntegrationError> {
    Err(IntegrationError::Unavailable(
        "compaction is not part of this build of keel".into(),
    ))
}

/// `/context`: what fills the context window, by category.
pub fn context(_engine: &Engine) -> Result<ContextReport, IntegrationError> {
    Err(IntegrationError::Unavailable(
        "the per-category context listing is not part of this build of keel".into(),
    ))
}

/// `/permissions`: the rules in force and the extra working directories.
pub fn permissions(_engine: &Engine) -> Result<PermissionsReport, IntegrationError> {
    Err(IntegrationError::Unavailable(
        "permission rules are not part of this build of keel".into(),
    ))
}

/// `/hooks`: the configured hooks.
pub fn hooks(_engine: &Engine) -> Result<Vec<HookEntry>, IntegrationError> {
    Err(IntegrationError::Unavailable(
        "hooks are not part of this build of keel".into(),
    ))
}

/// Why reading `path` for an `@path` mention is refused (Read deny rules), if it is.
/// This build has no read rules, so nothing is refused.
pub fn mention_denied(_engine: &Engine, _path: &Path) -> Option<String> {
    None
}
