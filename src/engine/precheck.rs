//! The pipeline's precheck step: before a call is put to a person, a PermissionRequest hook or
//! a driving program, its tool runs its own deterministic checks (`Tool::precheck`), so a call
//! that cannot succeed — an Edit of a file never read, an anchor that is not there, a file
//! changed since it was read — goes straight back to the model and nobody is asked.

use std::path::Path;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::authorize::Refusal;
use super::pipeline::{Pipeline, ToolCall};
use crate::permissions::Verdict;
use crate::permissions::authorizer::Call;
use crate::tools::{Sight, Tool, ToolContext, ToolError, ToolOutput};

impl Pipeline<'_> {
    /// Runs the tool's precheck on `call` (its path resolved where the permission check
    /// resolved it); a failure is the call's result.
    pub(super) async fn precheck(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        resolved: Option<&Path>,
        cancel: &CancellationToken,
    ) -> Result<(), Refusal> {
        let mut ctx = ToolContext::new(self.services.workspace.clone(), cancel.child_token(), call.id.clone())
            .with_grants(self.grants.only(tool.capabilities()));
        ctx.resolved = resolved.map(Path::to_path_buf);
        let sight = self.sight(resolved);
        let checked = tokio::select! {
            _ = cancel.cancelled() => Err(ToolError::Cancelled),
            r = tool.precheck(&call.input, &ctx, sight) => r,
        };
        match checked {
            Ok(()) => Ok(()),
            Err(ToolError::Cancelled) => Err(Refusal {
                output: ToolOutput::error("The user interrupted this call before it ran; it did not run."),
                denied: false,
                failed_check: false,
            }),
            Err(e) => {
                tracing::debug!(error = %e, "precheck failed; nobody was asked");
                Err(Refusal {
                    output: ToolOutput::error(e.to_string()),
                    denied: false,
                    failed_check: true,
                })
            }
        }
    }

    /// A precheck opens the call's file only where a Read of it would be allowed without a
    /// question: it runs before the call was approved, and what it reports (whether the file
    /// exists, what changed in it) must tell the model nothing it could not read itself.
    fn sight(&self, resolved: Option<&Path>) -> Sight {
        let Some(path) = resolved else {
            return Sight::SessionOnly;
        };
        let input = json!({ "file_path": path });
        let read = Call::named("Read", &input, true, &self.services.cwd).in_session(&self.services.session_dir);
        let decision = self
            .authorizer
            .decide_call(&read, self.services.mode(), &self.services.cwd, None, &[]);
        match decision.verdict {
            Verdict::Allow | Verdict::AllowConfined(_) => Sight::Disk,
            Verdict::Ask { .. } | Verdict::Deny(_) => Sight::SessionOnly,
        }
    }
}
