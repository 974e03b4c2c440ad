//! Tools the model can call, and the context they run in.
//!
//! A tool validates nothing itself that the JSON schema already checks (the registry does that
//! once, before the call); it reports every failure as an error result the model can act on.

pub mod agent;
pub mod bash;
pub mod edit;
pub mod file_state;
pub mod glob;
pub mod grep;
pub mod kinds;
pub mod lsp;
pub mod notebook;
pub mod plan;
pub mod preview;
pub mod read;
pub mod registry;
pub mod services;
pub mod skill;
pub mod structured;
pub mod todo;
pub mod web;
pub mod write;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::fsutil::{paths, walk};
pub use crate::types::permission::Body;
pub use crate::types::tool::{Declared, Effects, RuleGrammar, Subject, Todo, TodoStatus, ToolError, ToolOutput};
pub use services::{Capability, FileAccess, ModeCell, ReadGuard, ShellEnv, TaskList, Workspace};

/// What one tool call gets to work with: the workspace, the call's own facts, and the
/// capabilities its tool declared (nothing else of the session).
#[derive(Clone)]
pub struct ToolContext {
    pub workspace: Arc<Workspace>,
    pub cancel: CancellationToken,
    pub tool_use_id: String,
    /// How the permission step approved this call (Bash confines the command accordingly).
    pub confinement: crate::sandbox::Confinement,
    /// The call's path as the permission check resolved it (symbolic links followed once).
    pub resolved: Option<PathBuf>,
    /// Model requests the call made on the side (a provider's web search): they count in the
    /// session's usage and cost.
    pub side_requests: Arc<SideRequests>,
    grants: Grants,
}

/// The usage of a call's own model requests, by model, as they are answered.
#[derive(Debug, Default)]
pub struct SideRequests(std::sync::Mutex<Vec<(String, crate::types::message::Usage)>>);

impl SideRequests {
    pub fn record(&self, model: &str, usage: crate::types::message::Usage) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((model.to_string(), usage));
    }

    pub fn take(&self) -> Vec<(String, crate::types::message::Usage)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What a call's precheck may look at. It runs before anyone approved the call, so it opens a
/// file only where a Read of that file would need nobody's approval either; elsewhere it judges
/// from what the session already knows (the read state), and `call` finds out the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sight {
    /// The file may be opened and read.
    Disk,
    /// Nothing is opened: only the input and the session's read state count.
    SessionOnly,
}

/// Everything a session can grant a call; the pipeline hands each call the part its tool
/// declared ([`Grants::only`]).
#[derive(Clone, Default)]
pub struct Grants {
    pub files: Option<Arc<FileAccess>>,
    pub shell: Option<Arc<ShellEnv>>,
    pub tasks: Option<Arc<TaskList>>,
    pub mode: Option<Arc<ModeCell>>,
    pub agents: Option<Arc<dyn agent::AgentRunner>>,
    pub skills: Option<Arc<dyn skill::SkillRunner>>,
}

impl Grants {
    /// The declared capabilities, and none of the others.
    pub fn only(&self, wanted: &[Capability]) -> Grants {
        let has = |c| wanted.contains(&c);
        Grants {
            files: self.files.clone().filter(|_| has(Capability::Files)),
            shell: self.shell.clone().filter(|_| has(Capability::Shell)),
            tasks: self.tasks.clone().filter(|_| has(Capability::Tasks)),
            mode: self.mode.clone().filter(|_| has(Capability::Mode)),
            agents: self.agents.clone().filter(|_| has(Capability::Agents)),
            skills: self.skills.clone().filter(|_| has(Capability::Skills)),
        }
    }
}

fn missing(what: &str) -> ToolError {
    ToolError::invalid(format!(
        "{what} is not available to this tool call (the tool did not declare it, or this session has none)"
    ))
}

impl ToolContext {
    pub fn new(workspace: Arc<Workspace>, cancel: CancellationToken, tool_use_id: impl Into<String>) -> Self {
        ToolContext {
            workspace,
            cancel,
            tool_use_id: tool_use_id.into(),
            confinement: Default::default(),
            resolved: None,
            side_requests: Arc::default(),
            grants: Grants::default(),
        }
    }

    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    pub fn cwd(&self) -> &std::path::Path {
        &self.workspace.cwd
    }

    pub fn files(&self) -> Result<&Arc<FileAccess>, ToolError> {
        self.grants.files.as_ref().ok_or_else(|| missing("file access"))
    }

    pub fn shell(&self) -> Result<&Arc<ShellEnv>, ToolError> {
        self.grants.shell.as_ref().ok_or_else(|| missing("the shell"))
    }

    pub fn tasks(&self) -> Result<&TaskList, ToolError> {
        self.grants.tasks.as_deref().ok_or_else(|| missing("the task list"))
    }

    pub fn mode(&self) -> Result<crate::types::permission::Mode, ToolError> {
        self.grants
            .mode
            .as_deref()
            .map(ModeCell::get)
            .ok_or_else(|| missing("the permission mode"))
    }

    pub fn agents(&self) -> Result<Arc<dyn agent::AgentRunner>, ToolError> {
        self.grants
            .agents
            .clone()
            .ok_or_else(|| ToolError::invalid("sub-agents are not available in this session"))
    }

    pub fn skills(&self) -> Result<Arc<dyn skill::SkillRunner>, ToolError> {
        self.grants
            .skills
            .clone()
            .ok_or_else(|| ToolError::invalid("skills are not available in this session"))
    }

    /// Where to open `path`: exactly where the permission check resolved it, so nothing
    /// swapped in since can redirect the tool; resolved now for a call that had no check.
    pub fn resolved_path(&self, path: &std::path::Path) -> PathBuf {
        self.resolved.clone().unwrap_or_else(|| paths::real_path(path))
    }
}

#[async_trait]
pub trait Tool: Send + Sync {
    /// The exact name the model calls (same string as in permission rules and hook matchers).
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> Value;
    /// Whether the input schema comes from outside keel (an MCP server, a driving program's
    /// answer schema): such a schema is compiled when the tool is registered, so a bad one is
    /// refused there. keel's own schemas are compiled on the tool's first call, so a session
    /// pays only for the tools it uses.
    fn schema_is_foreign(&self) -> bool {
        false
    }
    /// Whether this call only observes. Read-only calls of one message run concurrently.
    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }
    /// Whether this call may run at the same time as the other concurrent calls of its message
    /// (read-only calls; sub-agents, which work in their own conversations).
    fn runs_concurrently(&self, input: &Value) -> bool {
        self.is_read_only(input)
    }
    /// What the tool's calls may do, the grammar of its permission rules, and the rule names
    /// that cover it besides its own. Permissions, compaction and the ledger decide on this.
    fn declared(&self) -> Declared {
        Declared {
            effects: Effects {
                read_only: self.is_read_only(&Value::Null),
                ..Effects::NONE
            },
            ..Declared::default()
        }
    }
    /// What a call acts on (the path, command or key its permission check decides on).
    fn subject(&self, _input: &Value, _cwd: &std::path::Path) -> Subject {
        Subject::None
    }
    /// The approval question's text form of a call (programs and plain front ends show it);
    /// `None`: the input as JSON.
    fn detail(&self, _input: &Value) -> Option<String> {
        None
    }
    /// What the approval dialog shows of a call (by default its input, as `detail`).
    fn preview(&self, _input: &Value, _cwd: &std::path::Path) -> Body {
        Body::Detail
    }
    /// Characters of output kept in context before the rest is spilled to a file.
    fn result_budget(&self) -> usize {
        50_000
    }
    /// Whether the tool watches `ctx.cancel` itself and then returns a result that says what
    /// was stopped (Bash kills its process group). The pipeline waits for such a tool instead of
    /// dropping its future on cancellation.
    fn handles_cancellation(&self) -> bool {
        false
    }
    /// The session capabilities the tool's calls use besides the workspace; a call is given
    /// these and no others.
    fn capabilities(&self) -> &'static [Capability] {
        &[]
    }
    /// Whether the registry appends the names of deferred tools to this tool's description
    /// (the tool that loads them: ToolSearch).
    fn lists_deferred(&self) -> bool {
        false
    }
    /// The call's own deterministic checks (bad input, a file never read, an anchor that does
    /// not match, a file changed since it was read), run before a person, a PermissionRequest
    /// hook or a driving program is asked to approve it: a call that cannot succeed goes back
    /// to the model with its error and nobody is asked. `call` makes the same checks again,
    /// since the file may change while the question is open.
    async fn precheck(&self, _input: &Value, _ctx: &ToolContext, _sight: Sight) -> Result<(), ToolError> {
        Ok(())
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Deserializes an already schema-validated input into the tool's parameter struct.
pub fn parse_input<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::invalid(format!("invalid input: {e}")))
}

/// The built-in tool set, the web tools with the defaults (no private network, no search
/// backend).
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    builtin_tools_with(&web::Web::new(web::WebConfig::default()))
}

/// The built-in tool set, the web tools sharing `web` (the session's web settings and cache).
pub fn builtin_tools_with(web: &Arc<web::Web>) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(read::ReadTool),
        Arc::new(glob::GlobTool),
        Arc::new(grep::GrepTool),
        Arc::new(edit::EditTool),
        Arc::new(write::WriteTool),
        Arc::new(notebook::NotebookEditTool),
        Arc::new(bash::BashTool),
        Arc::new(bash::manage::BashOutputTool),
        Arc::new(bash::manage::KillShellTool),
        Arc::new(todo::TodoWriteTool),
        Arc::new(plan::ExitPlanModeTool),
        Arc::new(agent::AgentTool),
    ];
    tools.extend(web::tools(web));
    tools
}

/// A one-line summary of a call's input (its key argument), for progress lines and placeholders.
pub fn summarize_input(input: &Value) -> String {
    const KEYS: &[&str] = &[
        "file_path",
        "command",
        "pattern",
        "path",
        "url",
        "query",
        "description",
        "prompt",
    ];
    let key_value = KEYS
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str).map(|v| v.to_string()));
    let text = key_value.unwrap_or_else(|| {
        let s = input.to_string();
        if s == "{}" { String::new() } else { s }
    });
    let first_line = text.lines().next().unwrap_or("").to_string();
    if first_line.chars().count() > 80 {
        let cut: String = first_line.chars().take(77).collect();
        format!("{cut}...")
    } else {
        first_line
    }
}
