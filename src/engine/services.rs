//! A session's services: built once by [`ServicesBuilder`] when the session starts and never
//! patched afterwards. Mutable state sits behind narrow typed handles; tools get only the
//! handles they declare ([`crate::tools::Capability`]), through [`SessionServices::grants`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::skill_state::SkillState;
use crate::agents::tasks::BackgroundTasks;
use crate::agents::verifier::Facts;
use crate::checkpoint::Checkpoints;
use crate::evidence::Evidence;
use crate::mcp::McpHub;
use crate::sandbox::{Confiner, Limits, SandboxMode};
use crate::tools::bash::gate::CommandGate;
use crate::tools::file_state::FileStateMap;
use crate::tools::{FileAccess, Grants, ModeCell, ReadGuard, ShellEnv, TaskList, Workspace};
use crate::types::permission::Mode;
use crate::types::tool::Todo;

/// Everything one session runs on besides its conversation.
#[derive(Debug)]
pub struct SessionServices {
    /// The workspace root (also `workspace.cwd`).
    pub cwd: PathBuf,
    /// Where spill files and other per-session artefacts live (also `workspace.session_dir`).
    pub session_dir: PathBuf,
    pub workspace: Arc<Workspace>,
    pub files: Arc<FileAccess>,
    pub shell: Arc<ShellEnv>,
    pub task_list: Arc<TaskList>,
    pub mode_cell: Arc<ModeCell>,
    /// The verification ledger of this engine (a sub-agent's is its own, see
    /// [`Evidence::for_subagent`]).
    pub evidence: Arc<Evidence>,
    /// Previous contents of changed files, for rewinding (also in `files`).
    pub checkpoints: Arc<Checkpoints>,
    /// The session's MCP servers (shared with sub-agents and sessions swapped in by /clear).
    pub mcp: Option<Arc<McpHub>>,
    /// Temporary allow rules, pending instructions and the record of loaded skills.
    pub skills: SkillState,
    /// Sub-agents running in the background, and their notifications.
    pub tasks: Arc<BackgroundTasks>,
    /// What the turn driver knows of the work so far, for a verifier sub-agent's brief.
    pub verifier_facts: Mutex<Facts>,
}

impl SessionServices {
    pub fn builder(cwd: PathBuf, session_dir: PathBuf) -> ServicesBuilder {
        ServicesBuilder::new(cwd, session_dir)
    }

    /// The capabilities this session can give tool calls (sub-agent and skill runners are the
    /// engine's and come with it).
    pub fn grants(&self) -> Grants {
        Grants {
            files: Some(self.files.clone()),
            shell: Some(self.shell.clone()),
            tasks: Some(self.task_list.clone()),
            mode: Some(self.mode_cell.clone()),
            agents: None,
            skills: None,
        }
    }

    pub fn files(&self) -> MutexGuard<'_, FileStateMap> {
        self.files.files()
    }

    pub fn mode(&self) -> Mode {
        self.mode_cell.get()
    }

    pub fn set_mode(&self, mode: Mode) {
        self.mode_cell.set(mode);
    }

    pub fn todos(&self) -> Vec<Todo> {
        self.task_list.get()
    }

    pub fn roots(&self) -> Vec<PathBuf> {
        self.workspace.roots()
    }

    pub fn extra_dirs(&self) -> Vec<PathBuf> {
        self.workspace.extra_dirs()
    }

    pub fn set_extra_dirs(&self, dirs: Vec<PathBuf>) {
        self.workspace.set_extra_dirs(dirs);
    }

    pub fn is_in_workspace(&self, path: &Path) -> bool {
        self.workspace.is_in_workspace(path)
    }

    pub fn hook_env_file(&self) -> PathBuf {
        self.workspace.hook_env_file()
    }

    /// Ends the session's processes: every background shell is killed, every background
    /// sub-agent cancelled.
    pub fn end(&self) {
        self.shell.shells.kill_all();
        self.tasks.cancel_all();
        if let Some(lsp) = self.files.lsp.clone() {
            // Stopped in the background where a runtime runs; their process groups are killed
            // on drop and by the forced exit otherwise.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move { lsp.stop_all().await });
            }
        }
    }
}

/// Assembles a session's services; [`ServicesBuilder::build`] is the only way to make them.
pub struct ServicesBuilder {
    cwd: PathBuf,
    session_dir: PathBuf,
    mode: Mode,
    file_state: FileStateMap,
    read_guard: ReadGuard,
    sandbox: SandboxMode,
    confiner: Option<Arc<Confiner>>,
    output_cap: u64,
    limits: Limits,
    gate: Option<Arc<CommandGate>>,
    extra_dirs: Vec<PathBuf>,
    evidence: Option<Arc<Evidence>>,
    checkpoints: Option<Arc<Checkpoints>>,
    mcp: Option<Arc<McpHub>>,
    lsp: Option<Arc<crate::tools::lsp::Lsp>>,
}

impl ServicesBuilder {
    fn new(cwd: PathBuf, session_dir: PathBuf) -> Self {
        ServicesBuilder {
            cwd,
            session_dir,
            mode: Mode::Default,
            file_state: FileStateMap::default(),
            read_guard: ReadGuard::default(),
            sandbox: SandboxMode::Off,
            confiner: None,
            output_cap: crate::sandbox::contain::DEFAULT_OUTPUT_CAP,
            limits: Limits::default(),
            gate: None,
            extra_dirs: Vec::new(),
            evidence: None,
            checkpoints: None,
            mcp: None,
            lsp: None,
        }
    }

    /// Takes over the startup decisions of another session (sandbox, confinement, added
    /// directories, read guard, MCP servers, permission mode, verification settings) when a
    /// front end swaps sessions.
    pub fn inherit(mut self, other: &SessionServices) -> Self {
        self.sandbox = other.shell.sandbox.clone();
        self.confiner = other.shell.confiner.clone();
        self.output_cap = other.shell.output_cap;
        self.limits = other.shell.limits;
        self.gate = Some(other.shell.gate.clone());
        self.extra_dirs = other.extra_dirs();
        self.read_guard = other.files.read_guard.clone();
        self.mcp = other.mcp.clone();
        self.lsp = other.files.lsp.clone();
        self.evidence = Some(Arc::new(other.evidence.for_session(&self.session_dir)));
        self.mode = other.mode();
        self
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// What the model has already seen (a sub-agent starts with a copy of its parent's).
    pub fn file_state(mut self, state: FileStateMap) -> Self {
        self.file_state = state;
        self
    }

    pub fn read_guard(mut self, guard: ReadGuard) -> Self {
        self.read_guard = guard;
        self
    }

    pub fn sandbox(mut self, sandbox: SandboxMode) -> Self {
        self.sandbox = sandbox;
        self
    }

    pub fn confiner(mut self, confiner: Option<Arc<Confiner>>) -> Self {
        self.confiner = confiner;
        self
    }

    pub fn output_cap(mut self, cap: u64) -> Self {
        self.output_cap = cap;
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn extra_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.extra_dirs = dirs;
        self
    }

    pub fn evidence(mut self, evidence: Arc<Evidence>) -> Self {
        self.evidence = Some(evidence);
        self
    }

    pub fn checkpoints(mut self, checkpoints: Arc<Checkpoints>) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// The session's language servers (diagnostics after edits).
    pub fn lsp(mut self, lsp: Option<Arc<crate::tools::lsp::Lsp>>) -> Self {
        self.lsp = lsp;
        self
    }

    pub fn mcp(mut self, hub: Option<Arc<McpHub>>) -> Self {
        self.mcp = hub;
        self
    }

    pub fn build(self) -> Arc<SessionServices> {
        let evidence = self
            .evidence
            .unwrap_or_else(|| Arc::new(Evidence::in_memory(&self.cwd, &self.session_dir)));
        let checkpoints = self
            .checkpoints
            .unwrap_or_else(|| Arc::new(Checkpoints::new(&self.session_dir)));
        let workspace = Arc::new(Workspace::new(
            self.cwd.clone(),
            self.session_dir.clone(),
            self.extra_dirs,
        ));
        Arc::new(SessionServices {
            files: Arc::new(FileAccess::new(self.file_state, self.read_guard, checkpoints.clone()).with_lsp(self.lsp)),
            shell: Arc::new(ShellEnv {
                limits: self.limits,
                gate: self.gate.unwrap_or_default(),
                ..ShellEnv::new(self.sandbox, self.confiner, self.output_cap, self.cwd.clone())
            }),
            task_list: Arc::default(),
            mode_cell: Arc::new(ModeCell::new(self.mode)),
            evidence,
            checkpoints,
            mcp: self.mcp,
            skills: SkillState::default(),
            tasks: Arc::default(),
            verifier_facts: Mutex::new(Facts::default()),
            workspace,
            cwd: self.cwd,
            session_dir: self.session_dir,
        })
    }
}
