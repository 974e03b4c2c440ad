//! `--json-schema` / the SDK's output schema: the StructuredOutput tool offered with the
//! schema, and the engine made to require a valid answer.

use std::sync::Arc;

use serde_json::Value;

use super::Engine;
use crate::tools::Tool;
use crate::tools::registry::ToolRegistry;
use crate::tools::structured::{StructuredOutputTool, StructuredSlot};

/// Offers the StructuredOutput tool with `schema` and makes the engine require it.
impl Engine {
    pub fn require_structured_output(&mut self, schema: Value) -> Result<(), String> {
        let engine = self;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("the JSON schema for the answer must describe an object (\"type\": \"object\")".into());
        }
        let slot = StructuredSlot::default();
        let tool: Arc<dyn Tool> = Arc::new(StructuredOutputTool::new(schema.clone(), slot.clone()));
        if engine.registry.get(crate::tools::structured::NAME).is_none() {
            // Added in place: MCP servers that connect later register into this same registry.
            engine
                .registry
                .add(vec![tool], false)
                .map_err(|e| format!("the JSON schema for the answer is not usable: {e}"))?;
            engine.structured = Some(slot);
            let project = engine.project.clone();
            engine.set_project(project);
            return Ok(());
        }
        let mut tools: Vec<Arc<dyn Tool>> = engine
            .registry
            .names()
            .iter()
            .filter(|n| **n != crate::tools::structured::NAME)
            .filter_map(|n| engine.registry.get(n))
            .map(|t| t.tool.clone())
            .collect();
        tools.push(Arc::new(StructuredOutputTool::new(schema, slot.clone())));
        let registry =
            ToolRegistry::new(tools).map_err(|e| format!("the JSON schema for the answer is not usable: {e}"))?;
        engine.registry = Arc::new(registry);
        if let Some(hub) = &engine.session.services.mcp {
            hub.attach(&engine.registry);
        }
        engine.structured = Some(slot);
        // Recounts the fixed part of every request (the tool list grew).
        let project = engine.project.clone();
        engine.set_project(project);
        Ok(())
    }
}
