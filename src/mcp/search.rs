//! Deferred tools and ToolSearch: when the MCP tool definitions would take more than a share of
//! the context window, they are registered *deferred* — the model sees only their names (in
//! ToolSearch's description) and loads the definitions it needs with ToolSearch, which
//! activates them for the rest of the session (appended to the offered tools, never reordered).

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::registry::ToolRegistry;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput, parse_input};

pub const NAME: &str = "ToolSearch";

/// When MCP tools are deferred (setting `toolSearch`, environment `ENABLE_TOOL_SEARCH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Always deferred.
    On,
    /// Never deferred.
    Off,
    /// Deferred when their definitions exceed this percentage of the context window.
    Auto(u8),
}

impl Default for Mode {
    fn default() -> Self {
        Mode::Auto(10)
    }
}

impl Mode {
    /// `true`/`false`/`auto`/`auto:N` (N a percentage).
    pub fn parse(raw: &str) -> Result<Mode, String> {
        let v = raw.trim().to_ascii_lowercase();
        match v.as_str() {
            "true" | "on" | "1" | "always" => Ok(Mode::On),
            "false" | "off" | "0" | "never" => Ok(Mode::Off),
            "auto" => Ok(Mode::default()),
            _ => match v
                .strip_prefix("auto:")
                .map(|n| n.trim().trim_end_matches('%').parse::<u8>())
            {
                Some(Ok(n)) if n <= 100 => Ok(Mode::Auto(n)),
                _ => Err(format!(
                    "tool search must be true, false, auto or auto:N (N a percentage of the context window), got `{raw}`"
                )),
            },
        }
    }

    pub fn from_value(v: &Value) -> Result<Mode, String> {
        match v {
            Value::Bool(true) => Ok(Mode::On),
            Value::Bool(false) => Ok(Mode::Off),
            Value::String(s) => Mode::parse(s),
            other => Err(format!(
                "`toolSearch` must be true, false, \"auto\" or \"auto:N\", found {other}"
            )),
        }
    }

    /// Whether definitions of `tokens` tokens are deferred in a window of `window` tokens.
    pub fn defers(self, tokens: u64, window: u64) -> bool {
        match self {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto(pct) => tokens * 100 > window * pct as u64,
        }
    }
}

pub struct ToolSearch {
    registry: Weak<ToolRegistry>,
}

impl ToolSearch {
    pub fn new(registry: &Arc<ToolRegistry>) -> ToolSearch {
        ToolSearch {
            registry: Arc::downgrade(registry),
        }
    }
}

#[derive(Deserialize)]
struct Input {
    query: String,
    #[serde(default)]
    max_results: Option<usize>,
}

const DESCRIPTION: &str = "Loads the definitions of deferred tools so you can call them. The deferred tools are \
listed by name below; they cannot be called until loaded. `query` is either `select:Name1,Name2` (exact names) or \
keywords matched against tool names and descriptions (prefix a word with `+` to require it in the name). Matching \
tools are loaded for the rest of the session and their definitions are returned; call them in your next message.";

#[async_trait]
impl Tool for ToolSearch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "`select:Name1,Name2`, or keywords (`+word` must occur in the name)"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Most tools to load for a keyword query (default 5)"}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn lists_deferred(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let registry = self
            .registry
            .upgrade()
            .ok_or_else(|| ToolError::invalid("the tool registry is gone (the session is ending)"))?;
        let candidates: Vec<(String, String)> = registry
            .all()
            .iter()
            .filter(|t| t.tool.name() != NAME)
            .filter(|t| registry.is_deferred(t.tool.name()))
            .map(|t| (t.tool.name().to_string(), t.tool.description().to_string()))
            .collect();
        let query = input.query.trim();
        let (picked, missing) = if let Some(list) = query.strip_prefix("select:") {
            select(list, &candidates)
        } else {
            (
                rank(query, &candidates, input.max_results.unwrap_or(5).clamp(1, 50)),
                Vec::new(),
            )
        };
        if picked.is_empty() {
            let mut msg = if missing.is_empty() {
                format!("No deferred tool matches `{query}`.")
            } else {
                format!("No deferred tool is named {}.", missing.join(", "))
            };
            msg.push_str(" Use `select:` with names from the list in this tool's description, or other keywords.");
            return Ok(ToolOutput::error(msg));
        }
        registry.activate(&picked);
        let mut text = format!(
            "Loaded {} tool definition(s); call them from your next message:\n",
            picked.len()
        );
        for name in &picked {
            if let Some(t) = registry.get(name) {
                let def = json!({
                    "name": name,
                    "description": t.tool.description(),
                    "input_schema": t.tool.input_schema(),
                });
                text.push_str(&def.to_string());
                text.push('\n');
            }
        }
        if !missing.is_empty() {
            text.push_str(&format!("Not found: {}\n", missing.join(", ")));
        }
        Ok(ToolOutput::text(text).with_structured(json!({"matches": picked, "not_found": missing})))
    }
}

/// `select:A,B`: exact names (case-insensitive as a fallback).
fn select(list: &str, candidates: &[(String, String)]) -> (Vec<String>, Vec<String>) {
    let mut picked = Vec::new();
    let mut missing = Vec::new();
    for want in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let found = candidates
            .iter()
            .find(|(n, _)| n == want)
            .or_else(|| candidates.iter().find(|(n, _)| n.eq_ignore_ascii_case(want)));
        match found {
            Some((n, _)) if !picked.contains(n) => picked.push(n.clone()),
            Some(_) => {}
            None => missing.push(want.to_string()),
        }
    }
    (picked, missing)
}

/// Keyword search: every `+word` must occur in the name; other words score (a word in the name
/// counts more than one in the description). Ties keep registration order.
pub fn rank(query: &str, candidates: &[(String, String)], max: usize) -> Vec<String> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let required: Vec<&str> = words
        .iter()
        .filter_map(|w| w.strip_prefix('+'))
        .filter(|w| !w.is_empty())
        .collect();
    let optional: Vec<&str> = words
        .iter()
        .filter(|w| !w.starts_with('+'))
        .map(String::as_str)
        .collect();
    let mut scored: Vec<(usize, usize)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(i, (name, description))| {
            let name = name.to_lowercase();
            let description = description.to_lowercase();
            if !required.iter().all(|w| name.contains(w)) {
                return None;
            }
            let mut score = required.len() * 3;
            for w in &optional {
                if name.contains(w) {
                    score += 3;
                } else if description.contains(w) {
                    score += 1;
                }
            }
            (score > 0).then_some((score, i))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(max)
        .map(|(_, i)| candidates[i].0.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(Mode::parse("auto:5").unwrap(), Mode::Auto(5));
        assert_eq!(Mode::parse("TRUE").unwrap(), Mode::On);
        assert!(Mode::parse("sometimes").is_err());
        assert_eq!(Mode::from_value(&json!(false)).unwrap(), Mode::Off);
        assert!(Mode::Auto(10).defers(20_001, 200_000));
        assert!(!Mode::Auto(10).defers(20_000, 200_000));
        assert!(Mode::On.defers(0, 1));
        assert!(!Mode::Off.defers(u64::MAX / 200, 1));
    }

    #[test]
    fn ranking_and_selection() {
        let c = vec![
            (
                "mcp__gh__create_issue".to_string(),
                "Create an issue in a repository".to_string(),
            ),
            ("mcp__gh__list_issues".to_string(), "List issues".to_string()),
            (
                "mcp__db__query".to_string(),
                "Run a SQL query; returns issue rows too".to_string(),
            ),
        ];
        assert_eq!(
            rank("issue", &c, 5),
            vec!["mcp__gh__create_issue", "mcp__gh__list_issues", "mcp__db__query"]
        );
        assert_eq!(
            rank("+gh issue", &c, 5),
            vec!["mcp__gh__create_issue", "mcp__gh__list_issues"]
        );
        assert_eq!(rank("sql", &c, 5), vec!["mcp__db__query"]);
        assert_eq!(rank("issue", &c, 1).len(), 1);
        assert!(rank("weather", &c, 5).is_empty());
        let (p, m) = select("mcp__db__query, nope ,MCP__GH__LIST_ISSUES", &c);
        assert_eq!(p, vec!["mcp__db__query", "mcp__gh__list_issues"]);
        assert_eq!(m, vec!["nope"]);
    }
}
