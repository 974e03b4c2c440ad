//! PreToolUse and PostToolUse/PostToolUseFailure around each tool call.

use serde_json::{Map, Value};

use super::authorize::Refusal;
use super::pipeline::{Pipeline, ToolCall};
use crate::hooks::{Event, Permission, fields};
use crate::permissions::HookDecision;
use crate::tools::registry::RegisteredTool;
use crate::tools::{ToolOutput, file_state};
use crate::types::message::ToolResultContent;

/// What the PreToolUse hooks left for the call.
pub struct PreOutcome {
    pub input: Value,
    pub decision: Option<HookDecision>,
    pub context: Vec<String>,
    pub stop: Option<String>,
}

/// Tool inputs as hooks see them: paths made absolute (and `~` expanded).
pub fn absolute_input(input: &Value, cwd: &std::path::Path) -> Value {
    let mut v = input.clone();
    if let Value::Object(m) = &mut v {
        for key in ["file_path", "path", "notebook_path"] {
            if let Some(Value::String(p)) = m.get_mut(key) {
                *p = crate::fsutil::paths::resolve(cwd, p).display().to_string();
            }
        }
    }
    v
}

impl Pipeline<'_> {
    pub(super) async fn pre_tool_hooks(&self, call: &ToolCall, tool: &RegisteredTool) -> Result<PreOutcome, Refusal> {
        let mut out = PreOutcome {
            input: call.input.clone(),
            decision: None,
            context: Vec::new(),
            stop: None,
        };
        if !self.hooks.has(Event::PreToolUse) {
            return Ok(out);
        }
        let agg = self
            .hooks
            .fire(
                Event::PreToolUse,
                Some(&call.name),
                self.services.mode(),
                self.tool_fields(call, &call.input),
                self.events,
            )
            .await;
        if agg.blocked() {
            return Err(Refusal {
                output: ToolOutput::error(format!(
                    "A PreToolUse hook blocked this {} call; it was not run. The hook says:\n{}",
                    call.name,
                    agg.block_reason()
                )),
                denied: true,
                failed_check: false,
            });
        }
        match agg.permission {
            Some(Permission::Deny) => {
                let why = if agg.permission_reasons.is_empty() {
                    "no reason given".to_string()
                } else {
                    agg.permission_reasons.join("; ")
                };
                return Err(Refusal {
                    output: ToolOutput::error(format!(
                        "A PreToolUse hook denied this {} call; it was not run. Reason: {why}",
                        call.name
                    )),
                    denied: true,
                    failed_check: false,
                });
            }
            Some(Permission::Ask) => out.decision = Some(HookDecision::Ask),
            Some(Permission::Allow) => out.decision = Some(HookDecision::Allow),
            None => {}
        }
        if let Some(updated) = agg.updated_input {
            if let Err(problems) = tool.validate(&updated) {
                return Err(Refusal {
                    output: ToolOutput::error(format!(
                        "A PreToolUse hook rewrote the input of this {} call into one that does not match the \
                         tool's schema, so it was not run:\n- {}",
                        call.name,
                        problems.join("\n- ")
                    )),
                    denied: false,
                    failed_check: false,
                });
            }
            out.input = updated;
        }
        out.context = agg.context;
        out.stop = agg.stop;
        Ok(out)
    }

    /// Runs PostToolUse (success) or PostToolUseFailure (error) and folds their feedback into
    /// the result the model sees. Returns a stop request (`continue: false`).
    pub(super) async fn post_tool_hooks(
        &self,
        call: &ToolCall,
        input: &Value,
        output: &mut ToolOutput,
        duration_ms: u64,
        interrupted: bool,
        mut notes: Vec<String>,
    ) -> Option<String> {
        let event = if output.is_error {
            Event::PostToolUseFailure
        } else {
            Event::PostToolUse
        };
        let mut stop = None;
        if self.hooks.has(event) {
            let mut f = self.tool_fields(call, input);
            if output.is_error {
                f.insert("error".into(), output.content.as_text().into());
                f.insert("is_interrupt".into(), interrupted.into());
            } else {
                f.insert("tool_response".into(), output.structured.clone());
            }
            f.insert("duration_ms".into(), duration_ms.into());
            let agg = self
                .hooks
                .fire(event, Some(&call.name), self.services.mode(), f, self.events)
                .await;
            if agg.blocked() {
                notes.push(format!("{} hook feedback:\n{}", event.as_str(), agg.block_reason()));
            }
            notes.extend(agg.context);
            stop = agg.stop;
            if !output.is_error
                && let Some(note) = self.refresh_after_hooks(call, input)
            {
                notes.push(note);
            }
        }
        if !notes.is_empty() {
            let extra: String = notes
                .iter()
                .map(|n| format!("\n\n<system-reminder>\n{n}\n</system-reminder>"))
                .collect();
            output.content = match std::mem::replace(&mut output.content, ToolResultContent::Text(String::new())) {
                ToolResultContent::Text(t) => ToolResultContent::Text(format!("{t}{extra}")),
                ToolResultContent::Blocks(mut b) => {
                    b.push(crate::types::message::ToolResultBlock::Text { text: extra });
                    ToolResultContent::Blocks(b)
                }
            };
        }
        stop
    }

    /// A hook that rewrites the file just edited (a formatter) would make the next edit look
    /// like a conflict. keel re-reads the file, shows the model exactly what the hook changed,
    /// and records the new content as seen, so nobody's change is lost and no re-read is needed.
    fn refresh_after_hooks(&self, call: &ToolCall, input: &Value) -> Option<String> {
        let edits = self
            .registry
            .get(&call.name)
            .is_some_and(|t| t.tool.declared().effects.edits_files);
        if !edits {
            return None;
        }
        let raw = input
            .get("file_path")
            .or_else(|| input.get("notebook_path"))?
            .as_str()?;
        let path = crate::fsutil::paths::resolve(&self.services.cwd, raw);
        let view = self.services.files().get(&path).cloned()?;
        let bytes = std::fs::read(&path).ok()?;
        if file_state::content_hash(&bytes) == view.hash {
            return None;
        }
        let mtime = std::fs::metadata(&path).ok().and_then(|m| m.modified().ok());
        let now = String::from_utf8_lossy(&bytes);
        let (diff, kind) = match &view.snapshot {
            Some(before) => (
                crate::tools::edit::guard::compact_diff(before, &now),
                file_state::ViewKind::Complete,
            ),
            None => (
                "(the file is too large to show the difference)".to_string(),
                file_state::ViewKind::Partial,
            ),
        };
        self.services
            .files()
            .record(path.clone(), file_state::FileView::new(&bytes, mtime, kind));
        Some(format!(
            "A hook changed {} after this {}:\n{diff}\nkeel has recorded the new content; later edits apply to it.",
            path.display(),
            call.name
        ))
    }

    pub(super) fn tool_fields(&self, call: &ToolCall, input: &Value) -> Map<String, Value> {
        let mut f = fields([
            ("tool_name", call.name.clone().into()),
            ("tool_input", absolute_input(input, &self.services.cwd)),
            ("tool_use_id", call.id.clone().into()),
        ]);
        // Inside a sub-agent, hooks can tell whose call it is.
        if let Some(a) = self.agent {
            f.insert("agent_id".into(), a.agent_id.clone().into());
            f.insert("agent_type".into(), a.agent_type.clone().into());
        }
        f
    }
}
