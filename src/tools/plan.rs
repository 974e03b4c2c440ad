//! ExitPlanMode: present the plan for approval. The approval itself happens in the pipeline's
//! authorization step (the plan is shown to the human, who picks the next mode); the tool
//! reports the outcome.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Body, Capability, Declared, Effects, RuleGrammar, Tool, ToolContext, ToolError, ToolOutput};
use crate::types::permission::Mode;

pub struct ExitPlanModeTool;

#[async_trait]
impl Tool for ExitPlanModeTool {
    fn name(&self) -> &'static str {
        "ExitPlanMode"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects {
                leaves_plan: true,
                ..Effects::NONE
            },
            grammar: RuleGrammar::Key,
            covered_by: &[],
        }
    }

    fn preview(&self, input: &Value, _cwd: &std::path::Path) -> Body {
        Body::Plan(
            input
                .get("plan")
                .and_then(Value::as_str)
                .unwrap_or("(no plan text given)")
                .to_string(),
        )
    }

    fn detail(&self, input: &Value) -> Option<String> {
        Some(input["plan"].as_str().unwrap_or("(no plan text given)").to_string())
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Mode]
    }

    fn description(&self) -> &'static str {
        "In plan mode (only read-only tools run), presents your plan (markdown, in `plan`) for the user's \
         approval; once approved, you may make changes. If not, revise it with the user's feedback."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string", "description": "The plan, in markdown: steps, files to change, how it will be verified"}
            },
            "additionalProperties": false
        })
    }

    async fn call(&self, _input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match ctx.mode()? {
            Mode::Plan => Err(ToolError::invalid("the plan was not approved; plan mode is still on")),
            mode => Ok(ToolOutput::text(format!(
                "The plan is approved. Permission mode is now {}; go ahead with the implementation.",
                mode.as_str()
            ))),
        }
    }
}
