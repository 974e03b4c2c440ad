//! StructuredOutput: offered only when the caller asked for a final answer in a JSON schema
//! (`--json-schema`). The schema is the tool's input schema, so the registry validates the
//! model's answer before the tool sees it; the tool keeps the validated value for the result.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{Declared, Effects, RuleGrammar, Tool, ToolContext, ToolError, ToolOutput};

pub const NAME: &str = "StructuredOutput";

/// The validated answer of the current turn, taken by the turn driver.
#[derive(Debug, Default, Clone)]
pub struct StructuredSlot(Arc<Mutex<Option<Value>>>);

impl StructuredSlot {
    pub fn take(&self) -> Option<Value> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn put(&self, v: Value) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
    }
}

pub struct StructuredOutputTool {
    schema: Value,
    slot: StructuredSlot,
}

impl StructuredOutputTool {
    pub fn new(schema: Value, slot: StructuredSlot) -> Self {
        StructuredOutputTool { schema, slot }
    }
}

#[async_trait]
impl Tool for StructuredOutputTool {
    fn name(&self) -> &'static str {
        NAME
    }

    fn declared(&self) -> Declared {
        // Only records the answer: checked like any call (its input is read-only), and not an
        // observation whose old result could fold away.
        Declared {
            effects: Effects::NONE,
            grammar: RuleGrammar::Key,
            covered_by: &[],
        }
    }

    fn description(&self) -> &'static str {
        "Gives your final answer in the structured form the caller requires. Call it exactly once, when \
         the work is done, with the answer as the input; its input schema is the required format. If the \
         input does not match, the error says which fields to fix: call it again with a corrected input."
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn schema_is_foreign(&self) -> bool {
        true
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.slot.put(input);
        Ok(ToolOutput::text("The structured output was recorded."))
    }
}
