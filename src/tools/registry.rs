//! The tool registry: lookup by name and schema validation (schemas compiled once).

use std::collections::BTreeMap;
use std::sync::Arc;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::Tool;
use crate::provider::{ToolDefinition, ToolSet};

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("tool {name}: its input schema does not compile: {message}")]
    BadSchema { name: String, message: String },
    #[error("tool {0} is registered twice")]
    Duplicate(String),
}

pub struct RegisteredTool {
    pub tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

pub struct ToolRegistry {
    tools: BTreeMap<String, RegisteredTool>,
    /// Registration order, which is also the order offered to the model (stable for caching).
    order: Vec<String>,
    definitions: ToolSet,
}

impl ToolRegistry {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        let mut map = BTreeMap::new();
        let mut order = Vec::new();
        for tool in tools {
            let name = tool.name().to_string();
            let schema = tool.input_schema();
            let validator = jsonschema::validator_for(&schema).map_err(|e| RegistryError::BadSchema {
                name: name.clone(),
                message: e.to_string(),
            })?;
            if map.insert(name.clone(), RegisteredTool { tool, validator }).is_some() {
                return Err(RegistryError::Duplicate(name));
            }
            order.push(name);
        }
        let mut registry = ToolRegistry {
            tools: map,
            order,
            definitions: ToolSet::default(),
        };
        registry.rebuild_definitions();
        Ok(registry)
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.order.iter().map(String::as_str).collect()
    }

    /// A registry of the tools `keep` accepts, in the same order (a sub-agent's tool set: the
    /// filter is enforced here, where calls are looked up, not by the prompt).
    pub fn subset(&self, mut keep: impl FnMut(&str) -> bool) -> Result<ToolRegistry, RegistryError> {
        ToolRegistry::new(
            self.order
                .iter()
                .filter(|n| keep(n))
                .filter_map(|n| self.tools.get(n).map(|t| t.tool.clone()))
                .collect(),
        )
    }

    /// Adds a tool after the others (session-specific tools such as Skill).
    pub fn with(self, tool: Arc<dyn Tool>) -> Result<ToolRegistry, RegistryError> {
        let mut tools: Vec<Arc<dyn Tool>> = self
            .order
            .iter()
            .filter_map(|n| self.tools.get(n).map(|t| t.tool.clone()))
            .collect();
        tools.push(tool);
        ToolRegistry::new(tools)
    }

    /// Removes tools the model must not be offered (e.g. bare-name deny rules).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.order.retain(|n| keep(n));
        let order = &self.order;
        self.tools.retain(|n, _| order.contains(n));
        self.rebuild_definitions();
    }

    /// What the model is offered, in a stable order (built once; byte-identical per session).
    pub fn definitions(&self) -> &[ToolDefinition] {
        self.definitions.as_slice()
    }

    /// The definitions as sent with every request (shared, encoded once).
    pub fn tool_set(&self) -> &ToolSet {
        &self.definitions
    }

    fn rebuild_definitions(&mut self) {
        self.definitions = ToolSet::new(
            self.order
                .iter()
                .filter_map(|n| self.tools.get(n))
                .map(|t| ToolDefinition {
                    name: t.tool.name().to_string(),
                    description: t.tool.description().to_string(),
                    input_schema: t.tool.input_schema(),
                    cache_control: None,
                })
                .collect(),
        );
    }

    /// The message for a call to a tool that does not exist.
    pub fn unknown_tool_message(&self, name: &str) -> String {
        format!(
            "No tool named `{name}` exists. Available tools: {}. Call one of these by its exact name.",
            self.order.join(", ")
        )
    }
}

impl RegisteredTool {
    /// Validates an input; on failure returns one line per offending field.
    pub fn validate(&self, input: &Value) -> Result<(), Vec<String>> {
        if !input.is_object() {
            return Err(vec![format!(
                "the input must be a JSON object, got {}",
                type_name(input)
            )]);
        }
        let problems: Vec<String> = self.validator.iter_errors(input).map(|e| describe(&e)).collect();
        if problems.is_empty() { Ok(()) } else { Err(problems) }
    }
}

fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    let path = e.instance_path().as_str().to_string();
    let field = path.trim_start_matches('/').replace('/', ".");
    match e.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            if field.is_empty() {
                format!("`{name}` is required but missing")
            } else {
                format!("`{field}.{name}` is required but missing")
            }
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let list = unexpected
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if field.is_empty() {
                format!("unexpected parameter(s) {list}; remove them or check their spelling")
            } else {
                format!("`{field}` has unexpected field(s) {list}")
            }
        }
        _ => {
            let at = if field.is_empty() {
                "input".to_string()
            } else {
                format!("`{field}`")
            };
            format!("{at}: {e}")
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin_tools;
    use serde_json::json;

    #[test]
    fn field_level_messages() {
        let reg = ToolRegistry::new(builtin_tools()).unwrap();
        let read = reg.get("Read").unwrap();
        let errs = read.validate(&json!({"offset": "ten", "path": "x"})).unwrap_err();
        let all = errs.join("\n");
        assert!(all.contains("`file_path` is required"), "{all}");
        assert!(all.contains("`offset`"), "{all}");
        assert!(all.contains("`path`"), "{all}");
        assert!(read.validate(&json!({"file_path": "/x", "limit": 3})).is_ok());
    }

    #[test]
    fn unknown_tool_lists_names() {
        let reg = ToolRegistry::new(builtin_tools()).unwrap();
        let msg = reg.unknown_tool_message("ReadFile");
        assert!(msg.contains("Read, Glob, Grep"), "{msg}");
    }
}
