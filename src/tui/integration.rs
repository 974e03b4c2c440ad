//! The TUI's seams to capabilities that live outside it: compaction and the context listing,
//! permission rules and hooks.
//!
//! Each function has the shape the TUI renders; nothing here invents data.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::context::tokens;
use crate::engine::{CompactTrigger, Engine};
use crate::permissions::rules::Behavior;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegrationError {
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
    engine: &mut Engine,
    instructions: Option<&str>,
    cancel: &CancellationToken,
) -> Result<CompactReport, IntegrationError> {
    let report = engine
        .compact(instructions, CompactTrigger::Manual, cancel)
        .await
        .map_err(|e| IntegrationError::Failed(e.to_string()))?;
    let mut note = format!(
        "The conversation now starts from a hand-off; the full transcript stays in {}.",
        engine.transcript_path().display()
    );
    if report.omitted_exchanges > 0 {
        note.push_str(&format!(
            " {} early exchange(s) did not fit the summary request; keel's record of failed checks and changed files still covers them.",
            report.omitted_exchanges
        ));
    }
    Ok(CompactReport {
        tokens_before: Some(report.pre_tokens),
        tokens_after: Some(report.post_tokens),
        note,
    })
}

/// `/context`: what fills the context window, by category.
pub fn context(engine: &Engine) -> Result<ContextReport, IntegrationError> {
    let p = engine.project();
    let files: Vec<(PathBuf, u64)> = p
        .instructions
        .files
        .iter()
        .map(|f| (f.path.clone(), tokens::text(&f.content)))
        .collect();
    let instructions: u64 = files.iter().map(|(_, t)| t).sum();
    let env = tokens::text(p.environment_text()) + p.git.as_ref().map(|g| tokens::text(&g.render())).unwrap_or(0);
    let messages = tokens::messages(engine.history());
    let window = engine.window();
    let mut categories = vec![
        ContextCategory {
            name: "system prompt".into(),
            tokens: tokens::text(p.core_text()),
        },
        ContextCategory {
            name: "tool definitions".into(),
            tokens: tokens::tool_set(&engine.tool_set()),
        },
        ContextCategory {
            name: "environment and git".into(),
            tokens: env,
        },
        ContextCategory {
            name: "instruction files".into(),
            tokens: instructions,
        },
        ContextCategory {
            name: "skills and sub-agent types".into(),
            tokens: p.listings.iter().map(|l| tokens::text(l)).sum(),
        },
        ContextCategory {
            name: "project memory".into(),
            tokens: p.memory.as_ref().map(|m| tokens::text(&m.render())).unwrap_or(0),
        },
        ContextCategory {
            name: "messages (stored; the request view may be smaller)".into(),
            tokens: messages,
        },
    ];
    let used: u64 = categories.iter().map(|c| c.tokens).sum();
    categories.push(ContextCategory {
        name: "reserved for the answer".into(),
        tokens: window.output_reserve,
    });
    categories.push(ContextCategory {
        name: "free".into(),
        tokens: window.total.saturating_sub(used + window.output_reserve),
    });
    Ok(ContextReport {
        window: window.total,
        categories,
        files,
    })
}

/// `/permissions`: the rules in force and the extra working directories.
pub fn permissions(engine: &Engine) -> Result<PermissionsReport, IntegrationError> {
    let mut rule_sets: Vec<RuleSet> = Vec::new();
    for rule in engine.authorizer().rules() {
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
        additional_directories: engine.authorizer().working_dirs().iter().skip(1).cloned().collect(),
    })
}

/// `/mcp`: each server's status, transport, tools and problems, as markdown.
pub fn mcp(engine: &Engine) -> String {
    match &engine.mcp() {
        Some(hub) if !hub.is_empty() => crate::mcp::report::markdown(&hub.statuses()),
        _ => crate::mcp::report::markdown(&[]),
    }
}

/// `/hooks`: the configured hooks.
pub fn hooks(engine: &Engine) -> Result<Vec<HookEntry>, IntegrationError> {
    let mut out = Vec::new();
    for (event, groups) in &engine.hook_config().events {
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

/// What `/rewind` did: text to show, and the conversation to show when it was rewound.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewound {
    pub text: String,
    pub history: Option<Vec<crate::types::message::Message>>,
    /// The points there are (when none was named), for the picker.
    pub points: Option<Vec<crate::checkpoint::Point>>,
    /// The prompt of the point rewound to, when the conversation went back before it (the
    /// editor offers it again).
    pub prompt: Option<String>,
}

/// `/rewind N preview`: what rewinding the code to before point N would do, doing nothing.
fn rewind_preview(engine: &Engine, n: u32) -> Result<Rewound, IntegrationError> {
    let plan = engine
        .rewind_plan(n)
        .map_err(|e| IntegrationError::Failed(e.to_string()))?;
    let mut text = format!("Rewinding the code to before point {n} would:");
    for f in &plan.files {
        text.push_str(&format!("\n  restore {}", f.path.display()));
    }
    for c in &plan.conflicts {
        text.push_str(&format!(
            "\n  refuse: {} changed outside keel since\n{}",
            c.path.display(),
            c.diff
        ));
    }
    for p in &plan.too_big {
        text.push_str(&format!("\n  refuse: {} was too big to have been kept", p.display()));
    }
    for u in &plan.not_restorable {
        text.push_str(&format!(
            "\n  {}, left as it is: {} — {}",
            u.label(),
            u.path.display(),
            u.why
        ));
    }
    if plan.files.is_empty() && plan.conflicts.is_empty() && plan.too_big.is_empty() && plan.not_restorable.is_empty() {
        text.push_str("\n  nothing: no file changed since");
    }
    Ok(Rewound {
        text,
        history: None,
        points: None,
        prompt: None,
    })
}

/// `/rewind`: without an argument, the points; with `N [code|conversation]`, a rewind to before
/// point N (code and conversation unless one is named); `N preview` shows what it would do.
pub fn rewind(engine: &mut Engine, arg: Option<&str>) -> Result<Rewound, IntegrationError> {
    use crate::checkpoint::{PointKind, Restore};
    let Some(arg) = arg else {
        let points = engine.rewind_points();
        let mut text = String::from(
            "Points to rewind to (/rewind N, optionally `code` or `conversation`; `/rewind N preview` first):",
        );
        if points.is_empty() {
            text = "Nothing to rewind yet: each prompt you send becomes a point.".into();
        }
        for p in points {
            let kind = if p.kind == PointKind::Rewind {
                "rewind"
            } else {
                "prompt"
            };
            let lost = match p.not_restorable {
                0 => String::new(),
                n => format!(" ({n} not restorable: no earlier content kept)"),
            };
            text.push_str(&format!(
                "\n  {}  {kind}  {} file(s) changed since{lost}  {}",
                p.point, p.files_changed, p.text
            ));
        }
        return Ok(Rewound {
            text,
            history: None,
            points: Some(engine.rewind_points()),
            prompt: None,
        });
    };
    let mut words = arg.split_whitespace();
    let n: u32 = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| IntegrationError::Failed(format!("`{arg}`: give a point number, e.g. /rewind 3")))?;
    let restore = match words.next() {
        Some("preview") => return rewind_preview(engine, n),
        None | Some("both") => Restore::Both,
        Some("code") => Restore::Code,
        Some("conversation") => Restore::Conversation,
        Some(w) => {
            return Err(IntegrationError::Failed(format!(
                "`{w}`: say code, conversation, preview or nothing"
            )));
        }
    };
    let report = engine
        .rewind(n, restore)
        .map_err(|e| IntegrationError::Failed(e.to_string()))?;
    let mut text = format!("Rewound to before point {n}.");
    if restore.code() {
        text.push_str(&format!(" {} file(s) restored.", report.files.len()));
        for u in &report.not_restorable {
            text.push_str(&format!(
                "\n  {}, left as it is: {} — {}",
                u.label(),
                u.path.display(),
                u.why
            ));
        }
    }
    if let Some(prompt) = &report.prompt
        && restore.conversation()
    {
        text.push_str(&format!(" The prompt was: {prompt}"));
    }
    text.push_str(&format!(" `/rewind {}` undoes this.", report.point));
    Ok(Rewound {
        text,
        history: report.messages.map(|_| engine.history().to_vec()),
        points: None,
        prompt: report.prompt.filter(|_| restore.conversation()),
    })
}
