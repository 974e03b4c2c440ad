//! BashOutput and KillShell: watching and stopping background shells.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::background::ShellStatus;
use crate::tools::{Capability, Declared, Effects, RuleGrammar, Tool, ToolContext, ToolError, ToolOutput, parse_input};

pub struct BashOutputTool;

#[derive(Deserialize)]
struct OutputInput {
    bash_id: String,
    filter: Option<String>,
}

#[async_trait]
impl Tool for BashOutputTool {
    fn name(&self) -> &'static str {
        "BashOutput"
    }

    fn declared(&self) -> Declared {
        // Reads only the session's own shells: no approval, and its old output folds away.
        Declared {
            effects: Effects {
                session_only: true,
                ..Effects::READS
            },
            grammar: RuleGrammar::Key,
            covered_by: &[],
        }
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Shell]
    }

    fn description(&self) -> &'static str {
        "What a background shell (Bash with run_in_background) printed since the last check, with its status \
         (`running`, `completed`, `failed`, `killed`) and exit code. `filter`: a regular expression; only \
         matching lines are shown, the others are discarded. Check back later, not in a tight loop."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "bash_id": {"type": "string", "description": "The id Bash returned, e.g. bash_1"},
                "filter": {"type": "string", "description": "Only show lines matching this regular expression"}
            },
            "required": ["bash_id"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn result_budget(&self) -> usize {
        super::OUTPUT_BUDGET
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: OutputInput = parse_input(input)?;
        let filter = match input.filter.as_deref() {
            None => None,
            Some(f) => Some(
                regex::Regex::new(f)
                    .map_err(|e| ToolError::invalid(format!("`filter` is not a valid regular expression: {e}")))?,
            ),
        };
        let poll = ctx.shell()?.shells.poll(&input.bash_id, filter.as_ref())?;
        let status = match poll.status.exit_code() {
            Some(code) => format!("{} (exit code {code})", poll.status.as_str()),
            None => poll.status.as_str().to_string(),
        };
        let mut text = format!("Shell {} (`{}`): {status}.\n", poll.id, poll.command);
        if poll.new_output.is_empty() {
            text.push_str("No new output since the last check.");
        } else {
            text.push_str("New output:\n");
            text.push_str(poll.new_output.trim_end_matches('\n'));
        }
        if poll.filtered_out > 0 {
            let n = poll.filtered_out;
            let lines = if n == 1 { "line" } else { "lines" };
            text.push_str(&format!("\n({n} {lines} did not match the filter and were dropped.)"));
        }
        if poll.more {
            text.push_str(&format!(
                "\n(More output is waiting; call BashOutput again, or Read {}.)",
                poll.log.display()
            ));
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "shellId": poll.id,
            "command": poll.command,
            "status": poll.status.as_str(),
            "exitCode": poll.status.exit_code(),
            "stdout": poll.new_output,
            "stderr": "",
        })))
    }
}

pub struct KillShellTool;

#[derive(Deserialize)]
struct KillInput {
    shell_id: String,
}

#[async_trait]
impl Tool for KillShellTool {
    fn name(&self) -> &'static str {
        "KillShell"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::SESSION,
            grammar: RuleGrammar::Key,
            covered_by: &[],
        }
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Shell]
    }

    fn description(&self) -> &'static str {
        "Stops a background shell (Bash with run_in_background) and every process it started: servers and \
         watchers you no longer need. BashOutput still shows what it printed."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "shell_id": {"type": "string", "description": "The id of the background shell, e.g. bash_1"}
            },
            "required": ["shell_id"],
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: KillInput = parse_input(input)?;
        let (command, before) = ctx.shell()?.shells.kill(&input.shell_id)?;
        let text = match before {
            ShellStatus::Running => format!(
                "Stopped background shell {} (`{command}`) and every process it started.",
                input.shell_id
            ),
            other => format!(
                "Background shell {} (`{command}`) was no longer running ({}); nothing to stop.",
                input.shell_id,
                match other.exit_code() {
                    Some(code) => format!("{}, exit code {code}", other.as_str()),
                    None => other.as_str().to_string(),
                }
            ),
        };
        Ok(ToolOutput::text(text.clone()).with_structured(json!({
            "message": text,
            "shell_id": input.shell_id,
        })))
    }
}
