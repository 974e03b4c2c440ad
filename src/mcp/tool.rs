//! An MCP server's tool as a keel [`Tool`]: the registry validates its input against the
//! server's `inputSchema` like any built-in tool's, the pipeline runs hooks and permissions
//! unchanged, and the result is mapped to content blocks and capped.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::result;
use super::server::{RemoteTool, Server};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use crate::types::message::{ToolResultBlock, ToolResultContent};

/// Longest description kept from a server (a hostile or verbose server cannot fill the prompt).
const MAX_DESCRIPTION: usize = 2_048;

pub struct McpTool {
    name: String,
    remote: String,
    description: String,
    schema: Value,
    server: Arc<Server>,
    /// Characters of output kept before the rest is spilled (`MAX_MCP_OUTPUT_TOKENS`).
    budget: usize,
    /// To pick up tools the server adds (`notifications/tools/list_changed`).
    hub: Weak<super::McpHub>,
}

impl McpTool {
    pub fn new(
        name: String,
        remote: RemoteTool,
        server: Arc<Server>,
        budget: usize,
        hub: Weak<super::McpHub>,
    ) -> McpTool {
        let (schema, schema_note) = usable_schema(remote.input_schema);
        let mut description = if remote.description.trim().is_empty() {
            format!("Tool `{}` of the MCP server `{}`.", remote.name, server.name)
        } else {
            remote.description.trim().to_string()
        };
        if description.chars().count() > MAX_DESCRIPTION {
            description = format!("{}…", description.chars().take(MAX_DESCRIPTION).collect::<String>());
        }
        if let Some(note) = schema_note {
            description.push_str(&format!("\n({note})"));
        }
        McpTool {
            name,
            remote: remote.name,
            description,
            schema,
            server,
            budget,
            hub,
        }
    }
}

/// The server's schema if it can be used to validate input; a permissive object schema (and a
/// note) otherwise. The API needs `"type": "object"` at the top.
pub fn usable_schema(schema: Value) -> (Value, Option<&'static str>) {
    let mut schema = match schema {
        Value::Object(m) => Value::Object(m),
        _ => return (json!({"type": "object"}), None),
    };
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    if schema.get("type") != Some(&json!("object")) {
        return (
            json!({"type": "object"}),
            Some("the server's input schema is not an object schema, so its input is not checked before the call"),
        );
    }
    if jsonschema::validator_for(&schema).is_err() {
        return (
            json!({"type": "object"}),
            Some("the server's input schema could not be compiled, so its input is not checked before the call"),
        );
    }
    (schema, None)
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn schema_is_foreign(&self) -> bool {
        true
    }

    fn result_budget(&self) -> usize {
        self.budget
    }

    /// The call watches the cancellation itself, so the server hears `notifications/cancelled`
    /// before the turn ends.
    fn handles_cancellation(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let result = self.server.call_tool(&self.remote, input, &ctx.cancel).await;
        // The client library handles notifications on their own tasks: let one that arrived
        // with the result run first.
        tokio::task::yield_now().await;
        if self.server.take_tools_changed()
            && let Some(hub) = self.hub.upgrade()
        {
            hub.refresh(&self.server).await;
        }
        match result {
            Ok(value) => Ok(cap_mixed(
                result::tool_output(&value),
                self.budget,
                &ctx.workspace.session_dir,
                &ctx.tool_use_id,
            )),
            Err(super::server::CallError::Cancelled) => Err(ToolError::Cancelled),
            Err(e) => Ok(ToolOutput::error(e.message(&self.server.name))),
        }
    }
}

/// Text results are capped by the pipeline; a result with images has its text capped here
/// (spilled like any other output) and keeps its images.
fn cap_mixed(out: ToolOutput, budget: usize, session_dir: &std::path::Path, id: &str) -> ToolOutput {
    let ToolResultContent::Blocks(blocks) = &out.content else {
        return out;
    };
    if out.content.text_len() <= budget {
        return out;
    }
    let text: String = blocks
        .iter()
        .filter_map(|b| match b {
            ToolResultBlock::Text { text } => Some(text.as_str()),
            ToolResultBlock::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let capped = crate::compact::budget::apply(
        ToolOutput {
            content: ToolResultContent::Text(text),
            is_error: out.is_error,
            structured: Value::Null,
        },
        budget,
        session_dir,
        id,
    );
    let mut new_blocks = vec![ToolResultBlock::Text {
        text: capped.content.as_text(),
    }];
    new_blocks.extend(
        blocks
            .iter()
            .filter(|b| matches!(b, ToolResultBlock::Image { .. }))
            .cloned(),
    );
    ToolOutput {
        content: ToolResultContent::Blocks(new_blocks),
        ..out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_made_usable() {
        let (s, note) = usable_schema(json!({"properties": {"a": {"type": "string"}}, "required": ["a"]}));
        assert_eq!(s["type"], "object");
        assert!(note.is_none());
        let (s, note) = usable_schema(json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}}));
        assert_eq!(s, json!({"type": "object"}));
        assert!(note.is_some());
        let (s, note) =
            usable_schema(json!({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/x.json"}}}));
        assert_eq!(s, json!({"type": "object"}), "remote references are never fetched");
        assert!(note.is_some());
        assert!(usable_schema(json!({"type": "array"})).1.is_some());
        assert_eq!(usable_schema(Value::Null).0, json!({"type": "object"}));
    }

    #[test]
    fn images_survive_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let out = ToolOutput {
            content: ToolResultContent::Blocks(vec![
                ToolResultBlock::Text { text: "x".repeat(500) },
                ToolResultBlock::Image {
                    source: crate::types::message::ImageSource {
                        kind: "base64".into(),
                        media_type: "image/png".into(),
                        data: "AAAA".into(),
                    },
                },
            ]),
            is_error: false,
            structured: Value::Null,
        };
        let capped = cap_mixed(out, 100, dir.path(), "toolu_1");
        let ToolResultContent::Blocks(blocks) = &capped.content else {
            panic!()
        };
        assert_eq!(blocks.len(), 2);
        assert!(matches!(blocks[1], ToolResultBlock::Image { .. }));
        assert!(crate::compact::budget::is_preview(&capped.content.as_text()));
        assert!(dir.path().join("tool-results/toolu_1.txt").is_file());
    }
}
