//! An index of the tool calls in a stored history: each call with where its `tool_use` and its
//! `tool_result` sit. The view tiers decide on calls; this finds them once per rebuild.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::types::message::{ContentBlock, Message, ToolResultContent};

#[derive(Debug, Clone, PartialEq)]
pub struct CallSite {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// (message, block) of the `tool_use`.
    pub use_at: (usize, usize),
    /// (message, block) of the `tool_result`, when there is one.
    pub result_at: Option<(usize, usize)>,
    pub is_error: bool,
}

#[derive(Debug, Clone, Default)]
pub struct CallIndex {
    pub calls: Vec<CallSite>,
    by_id: HashMap<String, usize>,
}

impl CallIndex {
    pub fn build(store: &[Message]) -> Self {
        Self::build_from(store, 0)
    }

    /// The calls from store message `from` on (with their store positions): what a frontier
    /// step needs, since its tiers shape only messages from there and take evidence from later.
    pub fn build_from(store: &[Message], from: usize) -> Self {
        let mut index = CallIndex::default();
        for (m, message) in store.iter().enumerate().skip(from) {
            for (b, block) in message.content.iter().enumerate() {
                match block {
                    ContentBlock::ToolUse { id, name, input } => {
                        index.by_id.insert(id.clone(), index.calls.len());
                        index.calls.push(CallSite {
                            id: id.clone(),
                            name: name.clone(),
                            input: input.clone(),
                            use_at: (m, b),
                            result_at: None,
                            is_error: false,
                        });
                    }
                    ContentBlock::ToolResult {
                        tool_use_id, is_error, ..
                    } => {
                        if let Some(&i) = index.by_id.get(tool_use_id) {
                            index.calls[i].result_at = Some((m, b));
                            index.calls[i].is_error = *is_error;
                        }
                    }
                    _ => {}
                }
            }
        }
        index
    }

    pub fn get(&self, id: &str) -> Option<&CallSite> {
        self.by_id.get(id).map(|&i| &self.calls[i])
    }

    /// Calls whose `tool_use` sits in store message `m`.
    pub fn in_message(&self, m: usize) -> impl Iterator<Item = &CallSite> {
        self.calls.iter().filter(move |c| c.use_at.0 == m)
    }
}

impl CallSite {
    /// The result content of this call in `store`.
    pub fn result<'a>(&self, store: &'a [Message]) -> Option<&'a ToolResultContent> {
        let (m, b) = self.result_at?;
        match store.get(m)?.content.get(b)? {
            ContentBlock::ToolResult { content, .. } => Some(content),
            _ => None,
        }
    }

    /// `Name(key argument)`, as progress lines and placeholders show a call.
    pub fn label(&self) -> String {
        label(&self.name, &self.input)
    }

    /// What the call worked on, in full: a path, a command, a pattern (with its path), a URL.
    pub fn target(&self) -> String {
        target(&self.input)
    }
}

pub fn label(name: &str, input: &Value) -> String {
    format!("{name}({})", crate::tools::summarize_input(input))
}

pub fn target(input: &Value) -> String {
    named_target(input).unwrap_or_else(|| input.to_string())
}

/// The target from the input's path, command, pattern, URL or query field; `None` when it has
/// none of them (then [`target`] is the whole input's JSON, whose key order equal inputs need
/// not share).
pub fn named_target(input: &Value) -> Option<String> {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    if let Some(p) = s("file_path").or(s("notebook_path")) {
        return Some(p.to_string());
    }
    if let Some(c) = s("command") {
        return Some(c.to_string());
    }
    if let Some(p) = s("pattern") {
        return Some(match s("path") {
            Some(path) => format!("{p} in {path}"),
            None => p.to_string(),
        });
    }
    ["path", "url", "query"]
        .into_iter()
        .find_map(|k| s(k).map(str::to_string))
}

/// The paths a call's input names (for lazily loaded instruction files).
pub fn input_paths(input: &Value, cwd: &Path) -> Vec<std::path::PathBuf> {
    ["file_path", "notebook_path", "path"]
        .iter()
        .filter_map(|k| input.get(*k).and_then(Value::as_str))
        .filter(|s| !s.trim().is_empty())
        .map(|s| crate::fsutil::paths::resolve(cwd, s))
        .collect()
}

/// An error result for a call that never ran (schema violation, unknown tool, broken JSON).
pub fn is_not_run(text: &str) -> bool {
    text.contains("was not run") || text.contains("No tool named")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn index_pairs_uses_with_results() {
        let store = vec![
            Message::user_text("go"),
            Message::assistant(vec![
                ContentBlock::text("look"),
                ContentBlock::ToolUse {
                    id: "a".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "/r/x.rs"}),
                },
                ContentBlock::ToolUse {
                    id: "b".into(),
                    name: "Grep".into(),
                    input: json!({"pattern": "fn", "path": "/r"}),
                },
            ]),
            Message {
                role: crate::types::message::Role::User,
                content: vec![
                    ContentBlock::tool_result("a", "text".to_string().into(), false),
                    ContentBlock::tool_result("b", "bad".to_string().into(), true),
                ],
            },
        ];
        let idx = CallIndex::build(&store);
        assert_eq!(idx.calls.len(), 2);
        let a = idx.get("a").unwrap();
        assert_eq!((a.use_at, a.result_at), ((1, 1), Some((2, 0))));
        assert_eq!(a.result(&store).unwrap().as_text(), "text");
        assert!(idx.get("b").unwrap().is_error);
        assert_eq!(idx.in_message(1).count(), 2);
        assert_eq!(a.label(), "Read(/r/x.rs)");
        assert_eq!(idx.get("b").unwrap().target(), "fn in /r");
        let kinds = crate::tools::kinds::KindTable::default();
        assert_eq!(
            kinds.edited_file("Edit", &json!({"file_path": "/r/x.rs"})),
            Some("/r/x.rs")
        );
        assert_eq!(kinds.edited_file("Read", &json!({"file_path": "/r/x.rs"})), None);
    }
}
