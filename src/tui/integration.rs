//! The TUI's seams to capabilities that live outside it: compaction and the context listing,
//! permission rules, hooks, and read rules for `@path` mentions.
//!
//! Each function has the shape the TUI renders. Where this build has no backing for one, it
//! says so with [`IntegrationError::Unavailable`]; nothing here invents data.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::permissions::Verdict;
use crate::permissions::rules::Behavior;

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
pub fn permissions(engine: &Engine) -> Result<PermissionsReport, IntegrationError> {
    let mut rule_sets: Vec<RuleSet> = Vec::new();
    for rule in engine.authorizer.rules() {
        let set = match rule_sets.iter_mut().position(|s| s.source == rule.source) {
            Some(i) => &mut rule_sets[i],
            None => {
                rule_sets.push(RuleSet {
                    source: rule.source.clone(),
                    allow: Vec::new(),
                    ask: Vec::new(),
                    deny: Vec::new(),
                });
                let last = rule_sets.len() - 1;
                &mut rule_sets[last]
            }
        };
        match rule.behavior {
            Behavior::Allow => set.allow.push(rule.text.clone()),
            Behavior::Ask => set.ask.push(rule.text.clone()),
            Behavior::Deny => set.deny.push(rule.text.clone()),
        }
    }
    Ok(PermissionsReport {
        rule_sets,
        additional_directories: engine.authorizer.working_dirs().iter().skip(1).cloned().collect(),
    })
}

/// `/hooks`: the configured hooks.
pub fn hooks(engine: &Engine) -> Result<Vec<HookEntry>, IntegrationError> {
    let mut out = Vec::new();
    for (event, groups) in &engine.hooks.config().events {
        for g in groups {
            for h in &g.handlers {
                out.push(HookEntry {
                    event: event.as_str().to_string(),
                    matcher: (!g.matcher_text.is_empty()).then(|| g.matcher_text.clone()),
                    command: h.label(),
                    source: g.source.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// Why reading `path` for an `@path` mention is refused (Read deny rules, credential files),
/// if it is. A mention outside the working directories is the user's explicit choice.
pub fn mention_denied(engine: &Engine, path: &Path) -> Option<String> {
    let shared = &engine.session.shared;
    match engine.authorizer.check(
        "Read",
        &serde_json::json!({"file_path": path}),
        true,
        shared.mode(),
        &shared.cwd,
        None,
    ) {
        Verdict::Deny(reason) => Some(reason),
        _ => None,
    }
}
