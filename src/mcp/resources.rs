//! ListMcpResources and ReadMcpResource: the model's way to the servers' resources.

use std::sync::Weak;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::McpHub;
use super::result;
use super::server::CallError;
use crate::tools::{Declared, Effects, Tool, ToolContext, ToolError, ToolOutput, parse_input};

pub struct ListResources {
    pub hub: Weak<McpHub>,
}

pub struct ReadResource {
    pub hub: Weak<McpHub>,
}

#[derive(Deserialize)]
struct ListInput {
    #[serde(default)]
    server: Option<String>,
}

#[derive(Deserialize)]
struct ReadInput {
    server: String,
    uri: String,
}

fn hub(weak: &Weak<McpHub>) -> Result<std::sync::Arc<McpHub>, ToolError> {
    weak.upgrade()
        .ok_or_else(|| ToolError::invalid("the MCP connections are closed (the session is ending)"))
}

#[async_trait]
impl Tool for ListResources {
    fn name(&self) -> &str {
        "ListMcpResources"
    }

    fn description(&self) -> &str {
        "Lists the resources (files, records, documents) that the connected MCP servers offer, with their URIs. \
         Give `server` to list one server's resources only. Read one with ReadMcpResource."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"server": {"type": "string", "description": "Only this server's resources"}},
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn declared(&self) -> Declared {
        // A server's answer: not folded away like a file read.
        Declared {
            effects: Effects {
                network: true,
                ..Effects::NONE
            },
            ..Declared::default()
        }
    }

    fn handles_cancellation(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: ListInput = parse_input(input)?;
        let hub = hub(&self.hub)?;
        let servers = match &input.server {
            Some(name) => vec![
                hub.server(name)
                    .ok_or_else(|| ToolError::invalid(hub.unknown_server(name)))?,
            ],
            None => hub.servers(),
        };
        let mut all = Vec::new();
        let mut problems = Vec::new();
        for server in servers {
            if !server.startable() || !server.has_capability("resources").await {
                continue;
            }
            match server.list_resources(&ctx.cancel).await {
                Ok(list) => {
                    for r in list.as_array().cloned().unwrap_or_default() {
                        let mut r = r;
                        r["server"] = json!(server.name);
                        all.push(r);
                    }
                }
                Err(CallError::Cancelled) => return Err(ToolError::Cancelled),
                Err(e) => problems.push(e.message(&server.name)),
            }
        }
        let mut text = if all.is_empty() {
            "No MCP server offers resources.".to_string()
        } else {
            all.iter()
                .map(|r| {
                    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
                    let mut line = format!("{}: {} <{}>", s("server"), s("name"), s("uri"));
                    if !s("mimeType").is_empty() {
                        line.push_str(&format!(" ({})", s("mimeType")));
                    }
                    if !s("description").is_empty() {
                        line.push_str(&format!(" — {}", s("description")));
                    }
                    line
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        for p in &problems {
            text.push_str(&format!("\n{p}"));
        }
        let out = ToolOutput::text(text).with_structured(Value::Array(all));
        Ok(if problems.is_empty() {
            out
        } else {
            ToolOutput { is_error: true, ..out }
        })
    }
}

#[async_trait]
impl Tool for ReadResource {
    fn name(&self) -> &str {
        "ReadMcpResource"
    }

    fn description(&self) -> &str {
        "Reads one resource of an MCP server by its URI (as listed by ListMcpResources)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server's name"},
                "uri": {"type": "string", "description": "The resource's URI"}
            },
            "required": ["server", "uri"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn declared(&self) -> Declared {
        // A server's answer: not folded away like a file read.
        Declared {
            effects: Effects {
                network: true,
                ..Effects::NONE
            },
            ..Declared::default()
        }
    }

    fn handles_cancellation(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: ReadInput = parse_input(input)?;
        let hub = hub(&self.hub)?;
        let server = hub
            .server(&input.server)
            .ok_or_else(|| ToolError::invalid(hub.unknown_server(&input.server)))?;
        match server.read_resource(&input.uri, &ctx.cancel).await {
            Ok(v) => Ok(result::read_resource_output(&v)),
            Err(CallError::Cancelled) => Err(ToolError::Cancelled),
            Err(e) => Ok(ToolOutput::error(e.message(&server.name))),
        }
    }
}
