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
pub mod paths;
pub mod plan;
pub mod read;
pub mod registry;
pub mod skill;
pub mod structured;
pub mod todo;
pub mod walk;
pub mod write;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::checkpoint::Hashed;
use crate::message::ToolResultContent;
use file_state::FileStateMap;

/// State shared by the tools of one session (cloned, not shared, into sub-agents).
#[derive(Debug)]
pub struct SessionShared {
    /// The workspace root: the directory keel was started in.
    pub cwd: PathBuf,
    /// Where spill files and other per-session artefacts live.
    pub session_dir: PathBuf,
    pub file_state: Mutex<FileStateMap>,
    /// The current permission mode; front ends change it between or during turns.
    pub mode: Mutex<crate::permissions::Mode>,
    /// The session's task list (TodoWrite).
    pub todos: Mutex<Vec<Todo>>,
    /// How shell commands a human or rule approved are confined (set once at startup).
    pub sandbox: crate::sandbox::SandboxMode,
    /// The session's confinement state (read-only jail, credential scan); none in bare test
    /// sessions, whose commands then run as `sandbox` says.
    pub confiner: Option<Arc<crate::sandbox::Confiner>>,
    /// Most bytes one shell command's output file keeps (head and tail; `shellOutputMaxBytes`).
    pub output_cap: u64,
    /// Working directories besides `cwd` (`--add-dir`, `permissions.additionalDirectories`,
    /// and those a driving program adds during the session).
    pub extra_dirs: std::sync::RwLock<Vec<PathBuf>>,
    /// Files whose content Read-like tools must not show (set once at startup).
    pub read_guard: ReadGuard,
    /// Runs sub-agents for the Agent tool (installed by the engine; none inside a sub-agent).
    pub agents: Option<Arc<dyn agent::AgentRunner>>,
    /// Usage and denials of finished sub-agents, for the session's totals and result.
    pub subagent_tally: Mutex<agent::SubagentTally>,
    /// Where the next Bash command starts: `cd` persists while it stays inside the workspace.
    pub shell_cwd: Mutex<PathBuf>,
    /// Background shells; all of them are killed when the session ends (and on drop).
    pub shells: bash::background::BackgroundShells,
    /// The verification ledger (shared with sub-agents: their runs and changes are the session's).
    pub evidence: Arc<crate::evidence::Evidence>,
    /// Previous contents of changed files, for rewinding (shared with sub-agents).
    pub checkpoints: Arc<crate::checkpoint::Checkpoints>,
    /// The session's MCP servers (shared with sub-agents and sessions swapped in by /clear).
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
    /// Loads skills for the Skill tool (installed by the engine).
    pub skill_runner: Option<Arc<dyn skill::SkillRunner>>,
    /// Temporary allow rules, pending instructions and the record of loaded skills.
    pub skills: crate::skills::SkillState,
    /// Sub-agents running in the background, and their notifications.
    pub tasks: Arc<crate::agents::tasks::BackgroundTasks>,
    /// What the turn driver knows of the work so far, for a verifier sub-agent's brief.
    pub verifier_facts: Mutex<crate::agents::verifier::Facts>,
}

/// Decides which files Grep and Glob leave out (credential files, Read deny rules), so a search
/// never shows what Read would refuse.
#[derive(Clone, Default)]
pub struct ReadGuard(Option<Arc<DenyFn>>);

type DenyFn = dyn Fn(&std::path::Path) -> bool + Send + Sync;

impl ReadGuard {
    pub fn new(denies: impl Fn(&std::path::Path) -> bool + Send + Sync + 'static) -> Self {
        ReadGuard(Some(Arc::new(denies)))
    }

    pub fn denies(&self, path: &std::path::Path) -> bool {
        self.0.as_ref().is_some_and(|f| f(path))
    }
}

impl std::fmt::Debug for ReadGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ReadGuard(active)"
        } else {
            "ReadGuard(none)"
        })
    }
}

/// One entry of the session's task list, in the reference's TodoWrite shape.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl SessionShared {
    pub fn new(cwd: PathBuf, session_dir: PathBuf) -> Self {
        SessionShared {
            session_dir: session_dir.clone(),
            file_state: Mutex::new(FileStateMap::default()),
            mode: Mutex::new(crate::permissions::Mode::Default),
            todos: Mutex::new(Vec::new()),
            sandbox: crate::sandbox::SandboxMode::Off,
            confiner: None,
            output_cap: crate::sandbox::contain::DEFAULT_OUTPUT_CAP,
            extra_dirs: Default::default(),
            read_guard: ReadGuard::default(),
            agents: None,
            subagent_tally: Mutex::new(agent::SubagentTally::default()),
            shell_cwd: Mutex::new(cwd.clone()),
            shells: bash::background::BackgroundShells::default(),
            evidence: Arc::new(crate::evidence::Evidence::in_memory(&cwd, &session_dir)),
            checkpoints: Arc::new(crate::checkpoint::Checkpoints::new(&session_dir)),
            mcp: None,
            skill_runner: None,
            skills: crate::skills::SkillState::default(),
            tasks: Arc::default(),
            verifier_facts: Mutex::new(Default::default()),
            cwd,
        }
    }

    /// Whether `path` lies inside the workspace (where the shell's `cd` may stay): the working
    /// directory or an added one.
    pub fn is_in_workspace(&self, path: &std::path::Path) -> bool {
        path.starts_with(&self.cwd) || self.extra_dirs().iter().any(|d| path.starts_with(d))
    }

    /// The workspace roots (canonical) below which file tools open files.
    pub fn roots(&self) -> Vec<PathBuf> {
        let mut roots = vec![self.cwd.clone()];
        roots.extend(self.extra_dirs());
        roots
    }

    pub fn extra_dirs(&self) -> Vec<PathBuf> {
        self.extra_dirs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the working directories besides `cwd` (a program's permission update).
    pub fn set_extra_dirs(&self, dirs: Vec<PathBuf>) {
        *self.extra_dirs.write().unwrap_or_else(|p| p.into_inner()) = dirs;
    }

    /// Takes over the startup decisions of another session's state (sandbox, added
    /// directories, permission mode, verification settings) when a front end swaps sessions.
    pub fn inherit_from(&mut self, other: &SessionShared) {
        self.sandbox = other.sandbox.clone();
        self.confiner = other.confiner.clone();
        self.output_cap = other.output_cap;
        self.extra_dirs = std::sync::RwLock::new(other.extra_dirs());
        self.read_guard = other.read_guard.clone();
        self.agents = other.agents.clone();
        self.mcp = other.mcp.clone();
        self.evidence = Arc::new(other.evidence.for_session(&self.session_dir));
        self.skill_runner = other.skill_runner.clone();
        self.set_mode(other.mode());
    }

    /// Where SessionStart hooks write `export` lines (`CLAUDE_ENV_FILE`); every shell command
    /// of the session reads it first.
    pub fn hook_env_file(&self) -> PathBuf {
        self.session_dir.join("hook-env.sh")
    }

    /// Ends the session's processes: every background shell is killed, every background
    /// sub-agent cancelled.
    pub fn end(&self) {
        self.shells.kill_all();
        self.tasks.cancel_all();
    }

    pub fn mode(&self) -> crate::permissions::Mode {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_mode(&self, mode: crate::permissions::Mode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }

    pub fn todos(&self) -> Vec<Todo> {
        self.todos.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Logs the previous content of `path` before a tool changes it (`None`: absent; else with
    /// the file's metadata, read when it was loaded), so the change can be rewound. Returns a
    /// note for the tool result when it cannot be.
    pub fn checkpoint(
        &self,
        path: &std::path::Path,
        before: Option<(Hashed<'_>, &std::fs::Metadata)>,
        after: Hashed<'_>,
        by: &str,
    ) -> Option<String> {
        use std::os::unix::fs::PermissionsExt;
        let mode = before.map_or(0o666 & !0o022, |(_, meta)| meta.permissions().mode() & 0o7777);
        match self
            .checkpoints
            .record_hashed(path, before.map(|(content, _)| content), Some(after), mode, by)
        {
            Ok(note) => note,
            Err(e) => Some(format!("Note: {e}; this change cannot be rewound.")),
        }
    }

    /// Locks the read-file state; a poisoned lock (a panicking tool) is recovered because the
    /// map holds plain data that stays consistent per entry.
    pub fn files(&self) -> std::sync::MutexGuard<'_, FileStateMap> {
        self.file_state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What one tool call gets to work with.
#[derive(Clone)]
pub struct ToolContext {
    pub shared: Arc<SessionShared>,
    pub cancel: CancellationToken,
    pub tool_use_id: String,
    /// How the permission step approved this call (Bash confines the command accordingly).
    pub confinement: crate::sandbox::Confinement,
    /// The call's path as the permission check resolved it (symbolic links followed once).
    pub resolved: Option<PathBuf>,
}

impl ToolContext {
    pub fn cwd(&self) -> &std::path::Path {
        &self.shared.cwd
    }

    /// Where to open `path`: exactly where the permission check resolved it, so nothing
    /// swapped in since can redirect the tool; resolved now for a call that had no check.
    pub fn resolved_path(&self, path: &std::path::Path) -> PathBuf {
        self.resolved.clone().unwrap_or_else(|| paths::real_path(path))
    }
}

/// The result of a tool call as the model and hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: ToolResultContent,
    pub is_error: bool,
    /// Structured form for `tool_use_result` (stream-json) and hooks' `tool_response`.
    pub structured: Value,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolOutput {
            structured: Value::String(text.clone()),
            content: ToolResultContent::Text(text),
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolOutput {
            structured: Value::String(format!("Error: {text}")),
            content: ToolResultContent::Text(format!("<tool_use_error>{text}</tool_use_error>")),
            is_error: true,
        }
    }

    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = structured;
        self
    }
}

/// A failure of a tool call; becomes an `is_error` result, never an empty one.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    Invalid(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the call was interrupted before it finished")]
    Cancelled,
}

impl ToolError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        ToolError::Invalid(msg.into())
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            context: context.into(),
            source,
        }
    }
}

#[async_trait]
pub trait Tool: Send + Sync {
    /// The exact name the model calls (same string as in permission rules and hook matchers).
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> Value;
    /// Whether this call only observes. Read-only calls of one message run concurrently.
    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }
    /// Whether this call may run at the same time as the other concurrent calls of its message
    /// (read-only calls; sub-agents, which work in their own conversations).
    fn runs_concurrently(&self, input: &Value) -> bool {
        self.is_read_only(input)
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
    /// Whether the registry appends the names of deferred tools to this tool's description
    /// (the tool that loads them: ToolSearch).
    fn lists_deferred(&self) -> bool {
        false
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Deserializes an already schema-validated input into the tool's parameter struct.
pub fn parse_input<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::invalid(format!("invalid input: {e}")))
}

/// The built-in tool set.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadTool),
        Arc::new(glob::GlobTool),
        Arc::new(grep::GrepTool),
        Arc::new(edit::EditTool),
        Arc::new(write::WriteTool),
        Arc::new(bash::BashTool),
        Arc::new(bash::manage::BashOutputTool),
        Arc::new(bash::manage::KillShellTool),
        Arc::new(todo::TodoWriteTool),
        Arc::new(plan::ExitPlanModeTool),
        Arc::new(agent::AgentTool),
    ]
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
