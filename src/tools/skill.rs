//! Skill: loads a skill's instructions into the conversation when the task matches its
//! description. The listing of skills (names and descriptions) is in the system prompt; the
//! body arrives only when loaded. Loading a skill that grants tools (`allowed-tools`) is a
//! permission-checked call (`Skill(name)` rules); the engine's runner does the loading.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Capability, Declared, Effects, RuleGrammar, Subject, Tool, ToolContext, ToolError, ToolOutput, parse_input,
};
use crate::skills::Catalog;

/// Loads skills; implemented by the engine, installed in the session state.
#[async_trait]
pub trait SkillRunner: Send + Sync + std::fmt::Debug {
    async fn load(&self, skill: &str, args: &str, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// The rules loading `skill` would allow (for the approval question).
    fn grants(&self, _skill: &str) -> Vec<String> {
        Vec::new()
    }
}

/// The Skill tool's declaration (also what keel knows of the name where it is not registered).
pub const DECLARED: Declared = Declared {
    effects: Effects {
        loads_skill: true,
        ..Effects::NONE
    },
    grammar: RuleGrammar::Key,
    covered_by: &[],
};

pub struct SkillTool {
    catalog: Arc<Catalog>,
}

impl SkillTool {
    pub fn new(catalog: Arc<Catalog>) -> Self {
        SkillTool { catalog }
    }
}

#[derive(Deserialize)]
struct Input {
    skill: String,
    #[serde(default)]
    args: Option<String>,
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &'static str {
        "Skill"
    }

    fn declared(&self) -> Declared {
        DECLARED
    }

    fn subject(&self, input: &Value, _cwd: &std::path::Path) -> Subject {
        let name = input.get("skill").and_then(Value::as_str).unwrap_or("");
        Subject::Key(crate::skills::requested_name(name).to_string())
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Skills]
    }

    fn description(&self) -> &'static str {
        "Loads a skill: instructions (and sometimes scripts) for a kind of task. The skills available are listed in \
         the system prompt by name and description; when the task matches one, load it first and follow what it \
         says. `skill`: the name exactly as listed (without a slash); `args`: optional arguments for it. A skill \
         that unlocks tools may need the user's approval."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "minLength": 1, "description": "The skill's name, as listed"},
                "args": {"type": "string", "description": "Arguments for the skill"}
            },
            "required": ["skill"],
            "additionalProperties": false
        })
    }

    /// A skill that grants nothing only adds instructions; one that grants tools is not
    /// read-only, so the permission layer asks.
    fn is_read_only(&self, input: &Value) -> bool {
        let name = input.get("skill").and_then(Value::as_str).unwrap_or("");
        self.catalog.get(name).is_none_or(|s| !s.grants())
    }

    fn result_budget(&self) -> usize {
        200_000
    }

    fn handles_cancellation(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let runner = ctx.skills()?;
        let name = crate::skills::requested_name(&input.skill);
        runner.load(name, input.args.as_deref().unwrap_or(""), ctx).await
    }
}
