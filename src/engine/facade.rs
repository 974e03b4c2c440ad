//! What front ends ask of an engine, as methods and values rather than field chains: the
//! session's facts, the commands that change it between turns, and the report a finished run
//! hands to its caller. Headless mode uses only these.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::Engine;
use super::session::Totals;
use crate::mcp::McpHub;
use crate::tools::agent::Denial;
use crate::types::permission::Mode;

/// What a finished run reports: the usage, the refused calls, the verification state, and
/// what the transcript could not save.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub session_id: String,
    pub totals: Totals,
    pub denials: Vec<Denial>,
    pub mode: Mode,
    /// The `verification` object of the result.
    pub verification: Value,
    /// The ledger's one-line summary, when there is something to say.
    pub verification_line: Option<String>,
    /// Transcript lines that could not be written even at the last try.
    pub unsaved: Option<String>,
    /// Changes keel could not record for undo (a full disk), one sentence each.
    pub undo: Vec<String>,
}

impl Engine {
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    pub fn cwd(&self) -> &Path {
        &self.session.services.cwd
    }

    pub fn mode(&self) -> Mode {
        self.session.services.mode()
    }

    pub fn set_mode(&self, mode: Mode) {
        self.session.services.set_mode(mode);
    }

    /// Whether a front end answers permission questions.
    pub fn interactive(&self) -> bool {
        self.config.interactive
    }

    pub fn totals(&self) -> &Totals {
        &self.session.totals
    }

    pub fn denials(&self) -> &[Denial] {
        &self.session.denials
    }

    /// The session's MCP servers.
    pub fn mcp(&self) -> Option<Arc<McpHub>> {
        self.session.services.mcp.clone()
    }

    /// The names of the tools the session registered (offered or deferred).
    pub fn tool_names(&self) -> Vec<String> {
        self.registry.names()
    }

    /// Ends what the session left running (background shells, background sub-agents).
    pub fn end_processes(&self) {
        self.session.services.end();
    }

    pub fn session_dir(&self) -> &Path {
        &self.session.services.session_dir
    }

    pub fn history(&self) -> &[crate::types::message::Message] {
        self.session.history()
    }

    /// Whether the session's transcript is written to disk.
    pub fn records_transcript(&self) -> bool {
        self.session.transcript.is_recording()
    }

    /// The session's skills.
    pub fn skills(&self) -> Arc<crate::skills::Catalog> {
        self.harness.skills.clone()
    }

    /// The system prompt's blocks.
    pub fn system(&self) -> &[crate::provider::SystemBlock] {
        &self.config.system
    }

    /// Continues with a recorded system prompt (a resumed session's); the fixed part of every
    /// request is counted anew.
    pub fn replace_system(&mut self, blocks: Vec<crate::provider::SystemBlock>) {
        self.config.system = blocks;
        let fixed = crate::context::tokens::system(&self.config.system)
            + crate::context::tokens::tool_set(&self.registry.tool_set());
        self.compactor.set_fixed_tokens(fixed);
    }

    /// The `/context` listing of what a request holds.
    pub fn context_report(&self) -> String {
        crate::context::report::render(&crate::context::report::Report {
            model: self.model(),
            window: self.compactor.window,
            threshold: self.compactor.threshold(),
            auto: self.compactor.settings.auto,
            project: &self.project,
            tools: self.registry.tool_set().as_slice(),
        })
    }

    /// The session's services, for a driving program's protocol (permission updates, MCP).
    pub fn services(&self) -> Arc<super::SessionServices> {
        self.session.services.clone()
    }

    /// Why the session may not use `model`, when managed settings enforce a model allowlist.
    pub fn model_refused(&self, model: &str) -> Option<String> {
        self.authorizer.model_refused(model)
    }

    /// Managed settings' model allowlist, when they enforce one.
    pub fn model_allowlist(&self) -> Option<crate::config::precedence::ModelAllowlist> {
        self.authorizer.model_allowlist.clone()
    }

    /// Why the session may not enter `mode`, if a ceiling forbids it.
    pub fn mode_refused(&self, mode: Mode) -> Option<String> {
        self.authorizer.mode_refused(mode)
    }

    /// The highest mode the session may enter, when a setting limits it.
    pub fn mode_ceiling(&self) -> Option<crate::config::precedence::Ceiling> {
        self.authorizer.ceiling.clone()
    }

    /// The system prompt's dynamic sections, when they travel in the first message instead.
    pub fn dynamic_context(&self) -> Option<String> {
        self.project.dynamic_text()
    }

    /// Takes the dynamic sections (environment, git snapshot, memory) out of the system prompt;
    /// a front end puts [`Engine::dynamic_context`] in front of the next message.
    pub fn move_dynamic_sections_to_messages(&mut self) {
        let mut project = self.project.clone();
        project.dynamic_in_message = true;
        self.set_project(project);
    }

    /// Hooks a driving program registered, answered through its link.
    pub fn set_client_hooks(
        &self,
        hooks: crate::hooks::HookConfig,
        link: Arc<dyn crate::hooks::HookCallbacks>,
    ) -> Result<(), String> {
        self.hooks.set_client_hooks(hooks, link)
    }

    pub fn provider(&self) -> Arc<dyn crate::provider::Provider> {
        self.provider.clone()
    }

    /// Where the session's transcript is written.
    pub fn transcript_path(&self) -> std::path::PathBuf {
        self.session.transcript.path()
    }

    /// The layers in front of the conversation (for `/context`).
    pub fn project(&self) -> &crate::context::ProjectContext {
        &self.project
    }

    /// The context window the session is fitted to.
    pub fn window(&self) -> crate::context::tokens::Window {
        self.compactor.window
    }

    /// The tool definitions every request carries.
    pub fn tool_set(&self) -> crate::provider::ToolSet {
        self.registry.tool_set()
    }

    /// The permission rules and working directories in force (for `/permissions` and checks).
    pub fn authorizer(&self) -> &Arc<crate::permissions::Authorizer> {
        &self.authorizer
    }

    /// The configured hooks (for `/hooks`).
    pub fn hook_config(&self) -> &crate::hooks::HookConfig {
        self.hooks.config()
    }

    /// Whether the context window comes from the model table (no setting or variable).
    pub fn window_from_model(&self) -> bool {
        self.config.context_window.is_none()
    }

    /// The session's skills, agent types, plugins and budgets.
    pub fn harness(&self) -> &super::harness::Harness {
        &self.harness
    }

    /// Continues in another session (a front end's `/clear` or `/resume`): the hooks follow its
    /// id and transcript.
    pub fn swap_session(&mut self, session: super::Session) {
        self.hooks.rebind(session.id.clone(), session.transcript.clone());
        self.session = session;
    }

    /// What the compactor did so far (for diagnostics).
    pub fn compactor_stats(&self) -> crate::compact::compactor::CompactStats {
        self.compactor.stats
    }

    /// The report of a finished run; transcript lines still held back get a last try first.
    pub fn report(&self) -> RunReport {
        let _ = self.session.transcript.retry_pending();
        let evidence = &self.session.services.evidence;
        RunReport {
            session_id: self.session.id.clone(),
            totals: self.session.totals.clone(),
            denials: self.session.denials.clone(),
            mode: self.mode(),
            verification: evidence.report_json(),
            verification_line: evidence.text_line(),
            unsaved: self.session.transcript.health(),
            undo: self.session.services.checkpoints.undo_warnings(),
        }
    }
}
