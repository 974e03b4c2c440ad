//! What keel knows of tools by name: the declarations of the tools it registers, and one
//! fallback table for names it does not register but meets in resumed transcripts and other
//! tools' histories. Code that meets names rather than tools (rule parsing, compaction of a
//! history) asks here; a call that reaches a registered tool asks the tool itself.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::registry::ToolRegistry;
use super::{Tool, builtin_tools};
use crate::types::tool::{Declared, Effects, RuleGrammar, Subject};

/// Reference tools keel does not register, as they would declare themselves.
const FALLBACK: &[(&str, Declared)] = &[
    (
        "MultiEdit",
        Declared {
            effects: Effects::EDITS,
            grammar: RuleGrammar::Path,
            covered_by: &["Edit"],
        },
    ),
    ("NotebookRead", reads()),
    ("LS", reads()),
    ("TaskOutput", reads()),
    // Registered only in some sessions (their own declarations win there), met by name in
    // histories and rules elsewhere.
    ("Skill", super::skill::DECLARED),
    ("ToolSearch", reads()),
    // Session tools of the reference keel does not offer.
    ("AskUserQuestion", session()),
    ("EnterPlanMode", session()),
    ("TaskStop", session()),
    ("KillBash", session()),
    // The reference's older name of Agent.
    (
        "Task",
        Declared {
            effects: Effects {
                spawns_agent: true,
                ..Effects::NONE
            },
            grammar: RuleGrammar::Key,
            covered_by: &[],
        },
    ),
];

const fn reads() -> Declared {
    Declared {
        effects: Effects::READS,
        grammar: RuleGrammar::Key,
        covered_by: &[],
    }
}

const fn session() -> Declared {
    Declared {
        effects: Effects::SESSION,
        grammar: RuleGrammar::Key,
        covered_by: &[],
    }
}

/// Whether keel knows the name: a built-in tool or one of the fallback table.
pub fn is_known(name: &str) -> bool {
    builtins().iter().any(|t| t.name() == name) || FALLBACK.iter().any(|(n, _)| *n == name)
}

/// The built-in tools, once (unit values: building them costs nothing).
fn builtins() -> &'static [Arc<dyn Tool>] {
    static TOOLS: OnceLock<Vec<Arc<dyn Tool>>> = OnceLock::new();
    TOOLS.get_or_init(builtin_tools)
}

/// The built-in tool of that name.
pub fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    builtins().iter().find(|t| t.name() == name).cloned()
}

/// What a tool of that name declares: a built-in's own declaration, the fallback table's, or
/// nothing (checked like any call that may change something).
pub fn declared(name: &str) -> Declared {
    if let Some(t) = builtins().iter().find(|t| t.name() == name) {
        return t.declared();
    }
    FALLBACK
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, d)| *d)
        .unwrap_or_default()
}

/// The subject of a call of the tool `name` (a built-in's own reading of its input; for other
/// names the path their input names, if any).
pub fn subject(name: &str, input: &Value, cwd: &Path) -> Subject {
    let str_of = |k: &str| input.get(k).and_then(Value::as_str);
    let effects = declared(name).effects;
    match builtin(name) {
        Some(t) => t.subject(input, cwd),
        None if effects.loads_skill => {
            Subject::Key(crate::skills::requested_name(str_of("skill").unwrap_or("")).into())
        }
        None if effects.spawns_agent => Subject::Key(str_of("subagent_type").unwrap_or("general-purpose").into()),
        None => ["file_path", "notebook_path", "path"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .map(|p| Subject::Path(crate::fsutil::paths::resolve(cwd, p)))
            .unwrap_or_default(),
    }
}

/// Declarations by name for a session's tools: those of its registry first, then [`declared`].
#[derive(Debug, Clone, Default)]
pub struct KindTable(Arc<HashMap<String, Declared>>);

impl KindTable {
    pub fn of(registry: &ToolRegistry) -> KindTable {
        let map = registry
            .names()
            .into_iter()
            .filter_map(|n| registry.get(&n).map(|t| (n, t.tool.declared())))
            .collect();
        KindTable(Arc::new(map))
    }

    pub fn get(&self, name: &str) -> Declared {
        self.0.get(name).copied().unwrap_or_else(|| declared(name))
    }

    /// Whether the tool only observes (its old results can be folded away).
    pub fn observes(&self, name: &str) -> bool {
        self.get(name).effects.read_only
    }

    /// Whether a result of the tool carries text from outside the session (a file, a command's
    /// output, an MCP server, the web), which the model must read as data. `failed`: the call's
    /// result is an error — a reading tool's error is keel's own words, a command's or a
    /// server's still carries what they printed.
    pub fn brings_outside_text(&self, name: &str, failed: bool) -> bool {
        let e = self.get(name).effects;
        if e.spawns_agent || e.loads_skill || e.leaves_plan {
            return false;
        }
        let speaks = name.starts_with("mcp__") || e.runs_commands || e.network;
        speaks || (e.read_only && !failed)
    }

    /// The file a call changes, when its tool edits the file its input names.
    pub fn edited_file<'a>(&self, name: &str, input: &'a Value) -> Option<&'a str> {
        if !self.get(name).effects.edits_files {
            return None;
        }
        input
            .get("file_path")
            .or_else(|| input.get("notebook_path"))
            .and_then(Value::as_str)
    }
}
